// The trainer's watch over the buckets and checkpoint agreements of a run (docs/runtime.md
// section 6): every bucket and agreement is one comm/arrivals.hpp sequence number, in the same
// order on every rank; while a rank waits it sends heartbeats, and its fatal-signal line and its
// timeout line name the ranks that are late.
#pragma once

#include "comm/arrivals.hpp"
#include "comm/fatal_signal.hpp"
#include "runtime/executor.hpp"

#include <cstdint>
#include <map>
#include <string>

namespace syncplan {

/// Follows a run's buckets (through the executor's BucketWatch hooks) and checkpoint agreements
/// as Arrivals sequence numbers 0, 1, 2, ... The buckets in flight belong to the current
/// iteration (the executor waits for them before it ends) or, delayed, to earlier iterations of
/// the same period (no sync crosses a period's end), so the first layer of each bucket started in
/// the current period is kept by sequence number. Keeps references to `arrivals` and `line` (may
/// be null), which must outlive it. Not thread-safe: the training loop's thread only.
class LateRankWatch {
 public:
  /// How long a peer may give no sign of life before the late-rank text calls it silent or absent
  /// (s; Arrivals::late's quiet_s), and how often the fatal-signal line's note is refreshed (s).
  static constexpr double kQuiet_s = 1.0;
  static constexpr double kNoteInterval_s = 0.5;

  /// `period` is the schedule's H (>= 1).
  LateRankWatch(Arrivals& arrivals, int period, FatalSignalLine* line);

  /// The executor's hooks (ExecutorOptions::watch), bound to this watch.
  BucketWatch hooks();

  /// A bucket of `iteration` whose first layer is `first_layer` starts: the next sequence number,
  /// announced (Arrivals::arrive) and named in the fatal-signal line. Returns the number.
  std::int64_t bucket_started(std::int64_t iteration, const std::string& first_layer);
  /// The executor waited `waited_s` seconds so far for bucket `sequence`: progress and a
  /// heartbeat; after kQuiet_s of waiting the fatal-signal line names the late ranks (refreshed
  /// every kNoteInterval_s), so that a rank mpirun ends before its own deadline still says who.
  void bucket_waiting(std::int64_t sequence, double waited_s);
  /// A checkpoint agreement starts: the next sequence number, announced like a bucket's so that
  /// its timeout can name the late ranks. Returns the number.
  std::int64_t agreement_started();
  /// While waiting in agreement `sequence`: progress and a heartbeat.
  void agreement_waiting(std::int64_t sequence);
  /// Who is late at `sequence`, for a timeout line (late_ranks_text). A rank stopped later in
  /// backprop has arrived at the waited bucket and looks alive there (its arrival at a later
  /// one), so the first of this rank's later buckets where someone is late is named instead:
  /// "at bucket 'h.3': rank 1 did not arrive ...".
  std::string late(std::int64_t sequence);

 private:
  Arrivals& arrivals_;
  int period_;
  FatalSignalLine* line_;
  std::int64_t next_sequence_ = 0;     // the next number to hand out
  std::int64_t newest_ = -1;           // the newest number handed out
  std::int64_t place_iteration_ = -1;  // the iteration of the newest bucket
  std::map<std::int64_t, std::string> period_buckets_;  // sequence -> first layer, this period's
  std::int64_t noted_sequence_ = -1;   // the bucket the line's note was last written for
  double noted_s_ = 0;                 // ... after this many seconds of waiting
};

}  // namespace syncplan
