// The simulate job (planner/simulate_job.hpp): both engines on a plan or a strategy by name.
#include "planner/simulate_job.hpp"

#include "core/errors.hpp"
#include "core/field_error.hpp"
#include "core/limits.hpp"
#include "core/statistics.hpp"
#include "core/units.hpp"
#include "planner/lower_bound.hpp"
#include "simulator/topology.hpp"

#include <algorithm>
#include <cmath>
#include <memory>

namespace syncplan {

namespace {

// Relative difference used to say whether a plan's stored prediction is reproduced.
double relative_difference(double a, double b) {
  const double scale = std::max(std::fabs(a), std::fabs(b));
  return scale == 0 ? 0.0 : std::fabs(a - b) / scale;
}

ResultSubject subject_of(const SimulateRequest& request) {
  return {request.sync.profile.model, request.origin, request.plan ? request.plan_origin : "",
          request.plan ? "" : request.strategy};
}

}  // namespace

void validate_simulate_request(const SimulateRequest& request) {
  // A strategy's period (a plan brings its own, checked when it was read).
  if (!request.plan && !request.strategy.empty()) require_valid_period(request.period);
  if (request.iterations && (*request.iterations < 1 || *request.iterations > limits::kMaxIterations))
    throw FieldError("iterations", "iterations: must be in 1.." + std::to_string(limits::kMaxIterations) + ", got " +
                                       std::to_string(*request.iterations));
  if (request.comm_streams < 1 || request.comm_streams > limits::kMaxCommStreams)
    throw FieldError("comm_streams", "comm_streams: must be in 1.." + std::to_string(limits::kMaxCommStreams) +
                                         ", got " + std::to_string(request.comm_streams));
  if (!(request.bucket_cap_bytes > 0 && request.bucket_cap_bytes <= static_cast<double>(limits::kMaxSizeBytes)))
    throw FieldError("bucket_cap_bytes", "bucket_cap_bytes: must be > 0 and at most 1 PiB, got " +
                                             format_shortest(request.bucket_cap_bytes / units::kBytesPerMiB) + " MiB");
  if (request.trace_workers < 0)
    throw FieldError("trace_workers", "trace_workers: must be >= 0 (0: no trace), got " + std::to_string(request.trace_workers));
  const SyncTimes& sync = request.sync;
  const std::optional<int> workers = sync.cluster ? std::optional<int>(sync.cluster->workers)
                                     : sync.link  ? std::optional<int>(sync.link->workers)
                                                  : std::nullopt;
  if (workers && request.trace_workers > *workers)
    throw FieldError("trace_workers", "trace_workers: " + std::to_string(request.trace_workers) + " is more than the " +
                                          std::to_string(*workers) + " worker" + (*workers == 1 ? "" : "s") + " of " +
                                          (sync.cluster ? sync.cluster_origin : "the link fit " + sync.link_origin));
}

void check_trace_extent(double latest_us, const std::string& field) {
  if (latest_us <= limits::kLongestTraceTime_us) return;
  throw FieldError(field, field + ": the simulated time reaches " +
                              std::to_string(static_cast<long long>(std::min(latest_us / units::kMicrosecondsPerSecond, 9e18))) +
                              " s, past the 1e9 s (about 31 years, 1e15 us) a trace's event times may reach "
                              "(docs/formats.md, limits): simulate it without --trace");
}

void check_result_iterations(const std::vector<double>& iteration_s, const std::string& field) {
  for (std::size_t i = 0; i < iteration_s.size(); ++i)
    if (!(iteration_s[i] <= limits::kLongestPredictedIteration_s))
      throw FieldError(field, field + ": iteration " + std::to_string(i) + " lasts " +
                                  std::to_string(static_cast<long long>(std::min(iteration_s[i], 9e18))) +
                                  " s, past the 1e12 s (about 31,700 years) a result's iteration times may reach "
                                  "(docs/formats.md, limits): simulate it without -o");
}

PeriodModelOutcome simulate_period_model(const SimulateRequest& request) {
  validate_simulate_request(request);
  PeriodModelOutcome outcome;
  // With a link fit in use, a plan's buckets are charged the link model on their bytes.
  outcome.times = sync_backprop_times(request.sync, request.origin);
  const BackpropTimes& times = outcome.times;
  if (request.plan) {
    outcome.assignment = assignment_from_plan(*request.plan, times, request.plan_origin);
    if (request.plan->buckets)
      outcome.buckets = buckets_from_plan(*request.plan->buckets, *outcome.assignment, times, request.plan_origin);
    outcome.timing = outcome.buckets ? time_buckets(times, *outcome.buckets) : time_assignment(times, *outcome.assignment);
  } else {
    StrategyResult result = run_strategy(request.strategy, times, request.period);
    outcome.timing = std::move(result.timing);
    outcome.assignment = std::move(result.assignment);
  }
  const int h_count = static_cast<int>(outcome.timing.iteration_s.size());
  require_finite_periods(times, h_count, request.origin);
  // A delayed plan may beat section 6's bounds (they assume every sync ends in its own iteration):
  // its bound is section 13's for its largest delay.
  const bool delayed = outcome.assignment && outcome.assignment->delayed();
  outcome.lower_bound_s = outcome.buckets ? fused_lower_bound_s(times, h_count, outcome.buckets->alpha_s)
                          : delayed       ? delayed_lower_bound_s(times, h_count, request.plan->max_delay())
                                          : best_lower_bound_s(times, h_count);
  if (request.plan && request.plan->predicted) {
    const PlanPrediction& predicted = *request.plan->predicted;
    double worst = relative_difference(predicted.period_s, outcome.timing.period_s);
    for (int h = 0; h < h_count; ++h) {
      worst = std::max(worst, relative_difference(predicted.iteration_s[h], outcome.timing.iteration_s[h]));
      worst = std::max(worst, relative_difference(predicted.wait_s[h], outcome.timing.wait_s[h]));
    }
    outcome.prediction_difference = worst;
    // One bound per plan: where the plan's own figures are these (the same
    // profile and sync times, within best's tie tolerance), the bound `plan` found for it, a proof
    // by the exact method included, is the bound; a weaker one is not recomputed beside it. A
    // bound above the plan's own period would be no bound of it and is not taken.
    if (worst <= kBestTieRelative && predicted.lower_bound_period_s && !predicted.lower_bound.empty() &&
        *predicted.lower_bound_period_s > outcome.lower_bound_s &&
        *predicted.lower_bound_period_s <= outcome.timing.period_s * (1 + kBestTieRelative)) {
      outcome.lower_bound_s = std::min(*predicted.lower_bound_period_s, outcome.timing.period_s);
      outcome.lower_bound_from_plan = predicted.lower_bound;
    }
  }
  if (request.result_document) check_result_iterations(outcome.timing.iteration_s, "result_document");
  outcome.document = {subject_of(request), h_count, outcome.timing.period_s, outcome.timing.total_wait_s(),
                      outcome.timing.iteration_s, outcome.timing.wait_s, outcome.lower_bound_s};
  return outcome;
}

namespace {

// A DES run whose simulated time is not finite: names the input whose numbers overflow, the
// profile's times summed over the run, else the cluster's (or link fit's). Throws InputError.
void refuse_unbounded_time(const SimulateRequest& request, const DesLayers& layers, const DesResult& result,
                           SyncTimeSource source, int iterations) {
  if (std::isfinite(result.total_s) && std::isfinite(result.comm_busy_s)) return;
  double profile_s = 0;
  for (std::size_t j = 0; j < layers.size(); ++j) {
    profile_s += layers.forward_s[j] + layers.backward_s[j] + layers.update_s[j];
    if (source == SyncTimeSource::kMeasured && std::isfinite(layers.sync_s[j])) profile_s += layers.sync_s[j];
  }
  if (!std::isfinite(profile_s * iterations))
    throw InputError(request.origin + ": the simulated time is not a finite number: the profile's per-layer times, "
                     "summed over the iterations, are out of any meaningful range");
  throw InputError((request.sync.cluster ? request.sync.cluster_origin : request.sync.link_origin) +
                   ": the simulated time is not a finite number: bandwidths, latencies "
                   "or slowdowns are out of any meaningful range");
}

// The syncplan.result/v1 document of a DES run ("engine": "des"); the median and p90 iteration
// when compute was drawn from the measured spread.
DesRunResult des_document(const SimulateRequest& request, const DesOutcome& outcome, bool measured_spread) {
  const DesResult& result = outcome.result;
  const SyncTimeSource source = request.sync.source;
  DesRunResult document;
  document.subject = subject_of(request);
  document.cluster = request.sync.cluster_origin;
  document.period = outcome.program.period();
  document.iterations = static_cast<int>(result.iteration_s.size());
  document.sync_time = request.sync.link_used ? "link" : source == SyncTimeSource::kMeasured ? "measured" : "model";
  if (request.sync.link) document.link = request.sync.link_origin;
  document.workers = result.workers;
  document.simulated_workers = result.simulated_workers;
  document.total_s = result.total_s;
  document.iteration_s = result.iteration_s;
  document.worker_iteration_s = result.worker_iteration_s;
  document.exposed_comm_s = result.exposed_comm_s();
  document.worker_exposed_comm_s = result.worker_exposed_comm_s;
  document.comm_busy_s = result.comm_busy_s;
  document.overlap_fraction = result.overlap_fraction();
  if (measured_spread) {
    document.median_iteration_s = median(result.iteration_s);
    document.p90_iteration_s = quantile(result.iteration_s, 0.9);
  }
  // Without a cluster file the links are link_cluster's stand-ins: their bytes describe nothing.
  if (request.sync.cluster) document.link_bytes = result.link_bytes;
  return document;
}

}  // namespace

DesOutcome simulate_des(const SimulateRequest& request) {
  SYNCPLAN_CHECK(request.sync.cluster.has_value() || request.sync.link_used);
  // A link fit alone: its workers, all-reduce times from the fit (link_cluster).
  const Cluster cluster = request.sync.cluster ? *request.sync.cluster : link_cluster(*request.sync.link);
  const SyncTimeSource source = request.sync.source;
  const std::shared_ptr<const LinkModel> link_model =
      request.sync.link_used ? std::make_shared<const LinkModel>(*request.sync.link) : nullptr;
  const LinkModel* link = link_model.get();
  validate_simulate_request(request);
  DesOutcome outcome;
  outcome.layers = des_layers(request.sync.profile, request.origin, source);
  const bool measured_spread = cluster.jitter && cluster.jitter->distribution == JitterSpec::Distribution::kMeasured;
  if (measured_spread) require_compute_spreads(request.sync.profile, request.origin, request.sync.cluster_origin);
  const Topology topology(cluster);
  const AllreduceModel model(cluster, topology);
  const DesStrategyContext context{outcome.layers, model, source, request.bucket_cap_bytes,
                                   kDdpFirstBucketMiB * units::kBytesPerMiB, link};
  outcome.times = backprop_times_for_des(context, request.origin);
  charge_buckets_by_link(outcome.times, request.sync, outcome.layers);
  const BackpropTimes& times = outcome.times;
  if (request.plan) {
    outcome.assignment = assignment_from_plan(*request.plan, times, request.plan_origin);
    if (request.plan->buckets) {
      outcome.buckets = buckets_from_plan(*request.plan->buckets, *outcome.assignment, times, request.plan_origin);
      // The cost model charges one start-up per all-reduce itself; measured times need the plan's.
      if (source == SyncTimeSource::kModel) outcome.buckets->alpha_s = model.time_s(0);
    }
    outcome.program = outcome.buckets ? program_from_buckets(*outcome.buckets) : program_from_assignment(*outcome.assignment);
  } else {
    const Strategy& strategy = strategy_for(request.strategy, StrategyUse::kDes);
    outcome.program = strategy.des_program(context, times, request.period);
    if (strategy.period_model()) outcome.assignment = strategy.run_period_model(times, request.period).assignment;
  }
  DesOptions options;
  options.iterations = static_cast<int>(request.iterations.value_or(outcome.program.period()));
  options.comm_streams = static_cast<int>(request.comm_streams);
  options.sync_time = source;
  options.trace_workers = static_cast<int>(request.trace_workers);
  options.link_bytes = request.link_bytes;
  options.result_document = request.result_document;
  if (outcome.buckets && source == SyncTimeSource::kMeasured) options.bucket_alpha_s = outcome.buckets->alpha_s;
  options.link = link;
  outcome.result = run_des(outcome.layers, cluster, topology, model, outcome.program, options);
  const DesResult& result = outcome.result;
  refuse_unbounded_time(request, outcome.layers, result, source, options.iterations);
  // A trace of a run longer than a trace's event times may be (compare refuses them) is not written.
  if (options.trace_workers > 0) check_trace_extent(result.total_s * units::kMicrosecondsPerSecond, "trace");
  if (request.result_document) check_result_iterations(result.iteration_s, "result_document");
  if (outcome.assignment)
    outcome.period_model = outcome.buckets ? time_buckets(times, *outcome.buckets) : time_assignment(times, *outcome.assignment);

  outcome.document = des_document(request, outcome, measured_spread);
  const DesRunResult& document = outcome.document;
  if (request.plan && request.plan->predicted && document.iterations % document.period == 0)
    outcome.prediction_difference = relative_difference(request.plan->predicted->period_s, document.period_s());
  return outcome;
}

}  // namespace syncplan
