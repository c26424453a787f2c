// The discrete-event simulator of N data-parallel workers (docs/des.md): per worker a compute
// stream and communication streams, collectives that start when every worker has issued them,
// links whose bandwidth concurrent transfers share, stragglers and jitter.
#pragma once

#include "core/cluster.hpp"
#include "core/json_io.hpp"
#include "core/link.hpp"
#include "core/profile.hpp"
#include "simulator/collectives.hpp"
#include "simulator/des/sync_program.hpp"
#include "simulator/layer_times.hpp"
#include "simulator/topology.hpp"
#include "simulator/trace.hpp"

#include <optional>
#include <string>
#include <vector>

namespace syncplan {

/// Options of one DES run.
struct DesOptions {
  int iterations = 1;          ///< iterations to run (periods repeat), >= 1
  int comm_streams = 1;        ///< communication streams per worker; all-reduces go round-robin, >= 1
  SyncTimeSource sync_time = SyncTimeSource::kMeasured;
  int trace_workers = 0;       ///< record the timelines of this many workers (0: no trace)
  /// kMeasured: the start-up time one all-reduce of a multi-layer bucket saves per extra layer (s),
  /// as the plan's bucket fusion assumed (docs/time-model.md section 12); 0: a bucket costs the sum.
  double bucket_alpha_s = 0;
  /// kMeasured with a link fit in use (--link): every all-reduce, one layer or a bucket, is
  /// charged link->time_s(its summed param_bytes) (docs/des.md, docs/link.md), so a bucket costs
  /// the link model on its bytes rather than its layers' sum. Not owned; null: no link fit.
  const LinkModel* link = nullptr;
  /// The memory the run may allocate (bytes): run_des refuses a run whose des_memory_bytes
  /// estimate is larger. Unset: the host's available memory (core/host_memory.hpp).
  std::optional<double> memory_limit_bytes;
  /// Fill DesResult::link_bytes (one entry per directed link used: 2 per worker and 2 per node,
  /// the one part of a run of identical workers that grows with the worker count; docs/des.md
  /// section 5). false: leave it empty (a sweep that reads no per-link bytes).
  bool link_bytes = true;
  /// The caller writes the result as a syncplan.result/v1 JSON document (simulate -o): the
  /// estimate counts the document's per-link and per-worker entries and their text, about 400
  /// bytes per directed link and 550 per worker (docs/des.md section 5, measured).
  bool result_document = false;
};

/// One recorded timeline event (Chrome trace "X" event), microseconds in the trace writer.
struct DesTraceEvent {
  int worker = 0;
  int stream = 0;           ///< 0 = compute, 1.. = communication stream
  EventKind kind = EventKind::kForward;
  std::string name;         ///< timeline_slice_name (simulator/trace.hpp)
  const char* category = "";///< event_category: "forward", "backward", "update", "allreduce"
  double start_s = 0, duration_s = 0;
  int iteration = 0;
  std::vector<int> layers;  ///< backprop indices (all-reduces; the layer of compute events)
  double bytes = 0;         ///< all-reduced bytes (NaN when unknown)
  /// All-reduces: the sync's delay d (docs/time-model.md section 13): it was issued in `iteration`
  /// and the update of iteration + d waited for it, so with d > 0 its slice may run on into later
  /// iterations. 0 for compute events and undelayed syncs.
  int delay = 0;
};

/// What a run produced.
struct DesResult {
  int workers = 0;                          ///< the cluster's workers
  int simulated_workers = 0;                ///< 1 when workers are identical (one representative)
  std::vector<double> iteration_s;          ///< per iteration: slowest worker's iteration end minus the previous one (s)
  std::vector<std::vector<double>> worker_iteration_s;  ///< [simulated worker][iteration] (s)
  std::vector<double> worker_exposed_comm_s;///< per simulated worker: time its compute waited for syncs (s)
  double total_s = 0;                       ///< end of the last iteration (s)
  double comm_busy_s = 0;                   ///< time at least one all-reduce is running (s)
  std::vector<double> worker_overlap_s;     ///< per simulated worker: all-reduce time during its compute (s)
  /// Bytes carried per directed link, in link id order (unused links left out; empty when
  /// DesOptions::link_bytes is false).
  std::vector<std::pair<std::string, double>> link_bytes;
  std::vector<DesTraceEvent> trace;         ///< for the first `trace_workers` simulated workers
  std::size_t events = 0;                   ///< events processed

  /// Mean over workers of the exposed communication (s).
  double exposed_comm_s() const;
  /// Share of all-reduce time that overlaps compute, mean over workers: overlap / busy (0 when
  /// nothing synced).
  double overlap_fraction() const;
};

/// An estimate of the memory one run allocates (bytes), from the simulated workers (1 when they
/// are identical), the iterations, the collectives the program issues in them, the all-reduce's
/// phases, the result's bytes per directed link (options.link_bytes: 2 links per worker and 2 per
/// node, about 100 bytes each) and, with a trace, the traced workers' events (about 1.6 kB each
/// once written as JSON, measured; docs/des.md section 5). Vectors grown by push_back are counted
/// at twice their size (the worst case of doubling), so the estimate bounds the peak from above
/// but for the event queue, which holds O(simulated workers + collectives in flight) events.
/// The topology and the all-reduce model cost O(1) whatever the worker count.
double des_memory_bytes(const DesLayers& layers, const Cluster& cluster, const AllreduceModel& model,
                        const SyncProgram& program, const DesOptions& options);

/// Runs `program` (repeated every period) on `cluster` for options.iterations iterations, with
/// the cluster's topology and all-reduce model already built (they cost O(workers) to build).
/// options.iterations and options.comm_streams must be >= 1 and options.bucket_alpha_s finite and
/// >= 0 (InternalError otherwise: the simulate job checks its request first,
/// validate_simulate_request, and a plan's alpha is checked when the plan is read). Throws InputError "the discrete-event simulation needs about N bytes
/// (G GiB) ..., more than the M bytes (G GiB) available ..." when des_memory_bytes exceeds
/// options.memory_limit_bytes, before allocating anything. A SyncOp::delay d > 0 (delayed
/// averaging, docs/time-model.md section 13) makes the update of iteration h + d, not h's, wait
/// for the op of iteration h; a negative delay, one on an op that is not kGradientReady, or one
/// with h + d > H - 1 throws InternalError "sync program: iteration h of H, all-reduce of layer
/// 'NAME': ..." (plans are checked when read; only a program built in code can hold one). A run
/// that stops inside a period simulates the delayed syncs whose update lies beyond its last
/// iteration to their end, and no iteration waits for them (docs/des.md section 1).
DesResult run_des(const DesLayers& layers, const Cluster& cluster, const Topology& topology,
                  const AllreduceModel& model, const SyncProgram& program, const DesOptions& options);

/// The same, building the topology and the all-reduce model of `cluster` first.
DesResult run_des(const DesLayers& layers, const Cluster& cluster, const SyncProgram& program,
                  const DesOptions& options);

/// The Chrome trace of a run: pid = worker, tid = stream, ts/dur in microseconds, args with the
/// layer(s), bytes and iteration (docs/formats.md "Timeline").
Json des_trace_json(const DesResult& result, const DesLayers& layers);

/// The time of one all-reduce of `bucket` (backprop indices) alone on the cluster, as the engine
/// charges it (s): the cost model on the summed bytes, the link model on them (`link` set,
/// kMeasured), or fused_sync_s of the measured times with start-up `bucket_alpha_s`.
double des_allreduce_s(const DesLayers& layers, const AllreduceModel& model, SyncTimeSource source,
                       const std::vector<int>& bucket, double bucket_alpha_s = 0, const LinkModel* link = nullptr);

}  // namespace syncplan
