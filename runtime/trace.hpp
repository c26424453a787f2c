// The measured trace of a run (docs/runtime.md section 4): compute and all-reduce events timed
// with a steady clock from the run's start, written by the discrete-event simulator's own writer
// (simulator/trace.hpp timeline_slice_json: pid = rank, tid 0 compute, tid 1 all-reduces) so
// that `syncplan compare` reads both alike.
#pragma once

#include "core/json_io.hpp"
#include "simulator/trace.hpp"

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace syncplan {

/// Seconds since the run's start on this rank (std::chrono::steady_clock). The trainer starts it
/// right after a barrier, so the ranks' clocks agree to within the barrier's exit skew.
class RunClock {
 public:
  using Clock = std::chrono::steady_clock;
  RunClock() : start_(Clock::now()) {}
  /// Restarts the clock: now() is 0 from here.
  void restart() { start_ = Clock::now(); }
  /// Seconds since the start (s).
  double now_s() const { return std::chrono::duration<double>(Clock::now() - start_).count(); }
  /// The clock's start.
  Clock::time_point start() const { return start_; }
  /// The time point `seconds` after the start.
  Clock::time_point at(double seconds) const {
    return start_ + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
  }

 private:
  Clock::time_point start_;
};

/// One measured event of one rank.
struct MeasuredEvent {
  EventKind kind = EventKind::kForward;
  std::int64_t iteration = 0;       ///< the optimizer step it belongs to (0-based, global)
  std::vector<std::size_t> layers;  ///< model layer indices: the layer (compute), the bucket in backprop order (all-reduce)
  double start_s = 0;               ///< s since the run's start
  double duration_s = 0;            ///< s
  std::int64_t bytes = 0;           ///< all-reduced bytes (all-reduces only)
  /// Delayed averaging (all-reduces only): applied before the step of iteration + delay; 0: before
  /// its own iteration's step.
  int delay = 0;
};

/// The events of one rank, in the order recorded. Recording is a push_back of a small struct (no
/// strings: names are made once when written).
class MeasuredTrace {
 public:
  /// Reserves room for `events` events (the trainer: per iteration 2 L compute events, one update and
  /// its buckets), so that recording does not reallocate during the timed loop.
  void reserve(std::size_t events) { events_.reserve(events); }
  void record(MeasuredEvent event) { events_.push_back(std::move(event)); }
  const std::vector<MeasuredEvent>& events() const { return events_; }

 private:
  std::vector<MeasuredEvent> events_;
};

/// The Chrome trace events of `trace` for rank `rank` (the "traceEvents" entries): process and
/// thread names ("rank R", "compute", "comm stream 0"), then one "X" event per measured event
/// (timeline_slice_json, the DES's writer) with ts/dur in microseconds: tid 0 "forward NAME"/"backward NAME" (cat forward/backward, args layer,
/// iteration) and "update" (cat update); tid 1 "all-reduce FIRST .. LAST (n layers)" (cat
/// allreduce, args iteration, layer or layers in backprop order, bytes, and for a delayed one
/// delay and applied_iteration = iteration + delay); tid 0 "checkpoint" (cat checkpoint, args
/// after_iteration: the iteration it follows, and no `iteration`: it belongs to none).
/// `layer_names` are the model's, forward order.
Json measured_trace_events(const MeasuredTrace& trace, int rank, const std::vector<std::string>& layer_names);

/// The whole trace document: {"traceEvents": events, "displayTimeUnit": "ms", "syncplan": about},
/// `about` saying where it came from (source "measured", strategy, plan, ranks, emulated link).
Json measured_trace_document(Json events, Json about);

}  // namespace syncplan
