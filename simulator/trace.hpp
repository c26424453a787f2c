// Chrome traces (Trace Event Format, open in Perfetto): the one writer of the timeline events
// that the discrete-event simulator and the runtime's measured trace share (docs/formats.md,
// "Measured trace": `syncplan compare` reads both alike), and the period model's one-period trace.
#pragma once

#include "core/json_io.hpp"
#include "simulator/period_model.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace syncplan {

/// What a slice of a worker's timeline is. The checkpoint is written between two iterations by
/// the runtime (no DES slice: `compare` leaves its time out of the iterations, as the log does).
enum class EventKind { kForward, kBackward, kUpdate, kAllreduce, kCheckpoint };

/// The slice's category ("cat"): "forward", "backward", "update", "allreduce", "checkpoint".
const char* event_category(EventKind kind);

/// One slice of a DES worker's or a rank's timeline.
struct TimelineSlice {
  EventKind kind = EventKind::kForward;
  int pid = 0;                      ///< the worker (DES) or rank (runtime)
  int tid = 0;                      ///< 0: compute; 1 + s: communication stream s
  double start_s = 0;               ///< s from the run's start
  double duration_s = 0;            ///< s
  std::int64_t iteration = 0;       ///< the iteration it belongs to; a checkpoint: the one it follows
  /// Layer names: a compute slice's layer (none: compute not attributed to a layer), an
  /// all-reduce's bucket in backprop order (not empty).
  std::vector<std::string> layers = {};
  std::optional<double> bytes = {}; ///< all-reduced bytes, when known (all-reduces)
  int delay = 0;                    ///< delayed averaging: applied before the update of iteration + delay
};

/// The slice's name: "forward NAME" / "backward NAME" ("forward (unattributed)" without a layer),
/// "update", "all-reduce FIRST" or "all-reduce FIRST .. LAST (n layers)", "checkpoint".
std::string timeline_slice_name(EventKind kind, const std::vector<std::string>& layers);

/// The slice as one complete ("ph": "X") event: name (timeline_slice_name), cat, pid, tid, ts and
/// dur in microseconds, and args: "iteration" ("after_iteration" for a checkpoint, which belongs to
/// no iteration), "layer" (one layer) or "layers" (several), "bytes" when known, and with a delay
/// d > 0 "delay" and "applied_iteration" (iteration + d).
Json timeline_slice_json(const TimelineSlice& slice);

/// The metadata events naming the tracks of `pid`: the process `process` ("worker 3", "rank 1"),
/// tid 0 "compute" and tid 1 + s "comm stream s" for each of `comm_streams` streams; appended to
/// `events` (a JSON array).
void append_timeline_tracks(Json& events, int pid, const std::string& process, int comm_streams);

/// The trace of `timing` for one worker: pid 0; tid 0 = compute stream (forward, backward per
/// layer in backprop order, update), tid 1 = link (one "X" event per all-reduce, args: layer,
/// iteration; none for a layer without an all-reduce of its own, has_allreduce: frozen, tied or
/// sync time 0). `ts`/`dur` are microseconds from the period's start.
Json period_trace(const BackpropTimes& times, const PeriodTiming& timing);

/// The memory period_trace and its writer need for `timing` (bytes): per event (forward, backward
/// per layer, update, each all-reduce; every iteration of the period) its JSON object and text,
/// about 1,600 bytes as the DES trace's (docs/des.md section 5, "Memory"), plus the layer names.
/// The helper's re-check: 200 layers at H = 10,000 (4 million events) took 6.4 GB and a ulimit
/// ended it with std::bad_alloc; simulate refuses such a trace first.
double period_trace_memory_bytes(const BackpropTimes& times, const PeriodTiming& timing);

}  // namespace syncplan
