// The simulate job (`syncplan simulate` without its command line): time a plan or a strategy under
// the period model (SPEC section 5) or the discrete-event simulator of a cluster (docs/des.md), and
// return the typed result with its syncplan.result/v1 document.
#pragma once

#include "core/plan.hpp"
#include "core/result.hpp"
#include "planner/strategy_table.hpp"
#include "simulator/bucket_fusion.hpp"
#include "simulator/des/engine.hpp"
#include "simulator/sync_times.hpp"

#include <optional>
#include <string>

namespace syncplan {

/// What to simulate: a plan (checked against the profile) or a strategy of the table with a period.
/// The numbers are as the caller was given them (wide integers, so that a command line's value
/// is reported as typed); validate_simulate_request checks their ranges, naming these fields.
struct SimulateRequest {
  SyncTimes sync;            ///< the profile and where its all-reduce times come from (choose_sync_times)
  std::string origin;        ///< the profile's path, for messages and the result
  std::optional<Plan> plan;  ///< a plan of sync.profile; unset: `strategy`
  std::string plan_origin;   ///< the plan's path
  std::string strategy;      ///< a strategy name (when no plan)
  int period = 0;            ///< H for `strategy`, 1..kMaxPeriod
  // The DES only (sync.cluster set, or ddp/mgwfbp on a link fit alone):
  std::optional<std::int64_t> iterations;  ///< iterations to run (1..limits::kMaxIterations); unset: one period
  std::int64_t comm_streams = 1;           ///< communication streams per worker (1..limits::kMaxCommStreams)
  double bucket_cap_bytes = kDdpBucketCapMiB * units::kBytesPerMiB;  ///< ddp's bucket cap (bytes, > 0, <= limits::kMaxSizeBytes)
  std::int64_t trace_workers = 0;  ///< record the timelines of this many workers (0: no trace; at most the workers)
  /// Report bytes per directed link (DesOptions::link_bytes): 2 links per worker and 2 per node,
  /// the only part of a run of identical workers that grows with the worker count (about 45 MB
  /// at 100,000 workers, docs/des.md section 5). false: the result's link_bytes is empty.
  bool link_bytes = true;
  /// The result will be written as JSON (simulate -o): the DES's memory estimate counts the
  /// document (DesOptions::result_document).
  bool result_document = false;
};

/// The one check of a simulate request's ranges, made by both engines' jobs before anything is
/// simulated (and by the command line and the what-if job before any file is read). Throws
/// FieldError naming the field: "period" (with a strategy and no plan: 1..kMaxPeriod, require_valid_period),
/// "iterations" (when set: 1..limits::kMaxIterations), "comm_streams" (1..limits::kMaxCommStreams),
/// "bucket_cap_bytes" (> 0 and at most limits::kMaxSizeBytes; the message gives MiB, as
/// `--bucket-cap-mb` does), "trace_workers" (>= 0, and at most the workers of request.sync's
/// cluster or link fit when it has one). The strategy's name is checked where the engine is
/// known (strategy_for with StrategyUse::kDes or kPeriodModel).
void validate_simulate_request(const SimulateRequest& request);

/// Refuses a trace that compare could not read back (what the tool writes it reads back, SPEC
/// section 2): `latest_us` is the end of its latest event (microseconds); past
/// limits::kLongestTraceTime_us (1e15 us) it throws FieldError(field, "FIELD: the simulated time
/// reaches N s, past the 1e9 s ... (docs/formats.md, limits)"). `field` is the flag or job field
/// named ("--trace", "trace_workers").
void check_trace_extent(double latest_us, const std::string& field);

/// Refuses a result (`simulate -o`) whose iteration times (s) compare could not read back: any
/// past limits::kLongestPredictedIteration_s (1e12 s) throws FieldError(field, "FIELD: iteration I
/// lasts N s, past the 1e12 s ..."), naming the first such iteration. `field`: the flag or job
/// field named ("result_document", which `syncplan simulate` shows as -o).
void check_result_iterations(const std::vector<double>& iteration_s, const std::string& field);

/// The period model's answer.
struct PeriodModelOutcome {
  BackpropTimes times;
  PeriodTiming timing;
  std::optional<Assignment> assignment;  ///< the layers each iteration syncs; unset for ssgd, flsgd
  std::optional<Buckets> buckets;        ///< the plan's buckets, when it has them
  double lower_bound_s = 0;              ///< fused bound when buckets are set, for a delayed plan delayed_lower_bound_s at its largest delay (s)
  /// With a plan that stores `predicted`: the largest relative difference between it and `timing`
  /// (period, each iteration and wait).
  std::optional<double> prediction_difference;
  /// The kind of the plan's own bound ("exact", ...) when lower_bound_s is the one the plan file
  /// carries (its prediction equals these figures); empty when the bound was computed here.
  std::string lower_bound_from_plan;
  PeriodModelResult document;            ///< the syncplan.result/v1 document
};

/// The DES's answer.
struct DesOutcome {
  DesLayers layers;
  BackpropTimes times;                   ///< backprop_times_for_des: what plans are made on for this cluster
  SyncProgram program;
  std::optional<Assignment> assignment;  ///< for plans and plannable strategies
  std::optional<Buckets> buckets;        ///< the plan's buckets
  DesResult result;
  /// The period model on the same all-reduce times, for comparison (when there is an assignment).
  std::optional<PeriodTiming> period_model;
  DesRunResult document;                 ///< the syncplan.result/v1 document ("engine": "des")
  /// With a plan that has predicted figures and whole periods simulated: the relative difference
  /// between its predicted period_s and the DES's mean per period (0 to 1e-9 with identical
  /// workers and the plan's all-reduce times, docs/des.md); none otherwise.
  std::optional<double> prediction_difference;
};

/// The period model: request.sync without a cluster's cost model. Throws FieldError "strategy ..."
/// for unknown or DES-only strategies, InputError naming the plan or profile for bad inputs.
PeriodModelOutcome simulate_period_model(const SimulateRequest& request);

/// The DES on request.sync.cluster, or with a link fit in use and no cluster on link_cluster (the
/// fit's workers; ddp and mgwfbp with --link alone); one of them is required (InternalError
/// otherwise). With a link fit in use every all-reduce, a bucket included, costs the link model on
/// its bytes. Throws FieldError "strategy ..." and InputError naming the cluster (or link) when the
/// simulated time is not finite.
DesOutcome simulate_des(const SimulateRequest& request);

}  // namespace syncplan
