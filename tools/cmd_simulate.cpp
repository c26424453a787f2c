// `syncplan simulate`: parse the options, run the simulate job (planner/simulate_job.hpp) under the
// period model or, with --cluster, the discrete-event simulator; print, write the result and trace.
#include "core/errors.hpp"
#include "core/host_memory.hpp"
#include "core/json_io.hpp"
#include "core/limits.hpp"
#include "core/cluster.hpp"
#include "core/result.hpp"
#include "core/units.hpp"
#include "planner/simulate_job.hpp"
#include "simulator/trace.hpp"
#include "tools/cli_common.hpp"

#include <algorithm>
#include <iostream>
#include <limits>
#include <memory>
#include <optional>

namespace syncplan::cli {

namespace {

struct SimulateOptions {
  std::string profile_path, plan_path, strategy, output_path, trace_path;
  std::string period;  // empty: not given
  // All-reduce times from a cluster or a link fit; the DES with --cluster.
  SyncTimeOptions sync;
  long long iterations = 0;
  bool iterations_given = false;  // set after parsing: without it, one period
  long long comm_streams = 1;
  double bucket_cap_mb = kDdpBucketCapMiB;
  long long trace_workers = 8;
  bool trace_workers_given = false;
  bool bucket_cap_given = false;
};

// The simulate request's fields and the flags that set them.
constexpr std::initializer_list<FieldFlag> kSimulateFlags = {
    {"strategy", "--strategy"}, {"period", "--period"}, {"bucket_cap_bytes", "--bucket-cap-mb"},
    {"sync_time", "--sync-time"}, {"iterations", "--iterations"}, {"comm_streams", "--comm-streams"},
    {"trace_workers", "--trace-workers"}, {"trace", "--trace"}, {"result_document", "-o"}};

int run_simulate_des(const SimulateOptions& options, SimulateRequest request);

// The strategies only the DES runs, for the help text: "ddp and mgwfbp".
std::string cluster_only_names_text() {
  std::vector<std::string> names;
  for (const Strategy& strategy : strategies())
    if (strategy.needs_cluster()) names.push_back(strategy.name);
  return join_names(names);
}

// Writes the result and the trace together (both or neither), then says where.
void commit_and_report(OutputFiles& outputs, const SimulateOptions& options) {
  outputs.commit();
  if (!options.output_path.empty()) std::cout << "result written to " << options.output_path << '\n';
  if (!options.trace_path.empty())
    std::cout << "trace written to " << options.trace_path << " (open in https://ui.perfetto.dev)\n";
}

// The request the options ask for, its ranges checked before any file is read (the profile, plan
// and cluster are read later). Throws InputError naming the flag for options that contradict each
// other or do nothing together.
SimulateRequest simulate_request(const SimulateOptions& options) {
  if (options.plan_path.empty() && options.strategy.empty())
    throw InputError("simulate: give --plan PLAN.json, or --strategy NAME with --period H");
  if (!options.strategy.empty() && options.period.empty())
    throw InputError("--period: required with --strategy");
  const int period = options.plan_path.empty() ? checked_period(options.period) : 0;
  // Options that would do nothing in this combination are errors, not silently ignored.
  if (options.trace_workers_given && options.trace_path.empty())
    throw InputError("--trace-workers: only with --trace TRACE.json (it says how many workers' timelines to write)");
  if (options.bucket_cap_given && options.strategy != "ddp")  // the one strategy with a bucket cap
    throw InputError("--bucket-cap-mb: only with --strategy ddp" +
                     (options.strategy.empty() ? std::string(" (a plan's buckets are in the plan)")
                                               : " (not " + options.strategy + ")"));
  const std::vector<NamedPath> inputs = {{"--profile", options.profile_path}, {"--plan", options.plan_path},
                                         {"--cluster", options.sync.cluster_path}, {"--link", options.sync.link_path}};
  check_output_paths({{"-o", options.output_path}, {"--trace", options.trace_path}}, inputs);
  SimulateRequest request;
  request.origin = options.profile_path;
  request.plan_origin = options.plan_path;
  request.strategy = options.strategy;
  request.result_document = !options.output_path.empty();
  request.period = period;
  if (options.iterations_given) request.iterations = options.iterations;
  request.comm_streams = options.comm_streams;
  request.bucket_cap_bytes = options.bucket_cap_mb * units::kBytesPerMiB;
  // 0 workers is the request's "no trace": the flag itself asks for at least one.
  if (options.trace_workers < 1)
    throw InputError("--trace-workers: must be >= 1 (a trace of no worker is empty), got " +
                     std::to_string(options.trace_workers));
  request.trace_workers = options.trace_path.empty() ? 0 : options.trace_workers;
  // The ranges, before any file is read; again with the cluster's workers known (simulate_des).
  with_flags(kSimulateFlags, [&] { validate_simulate_request(request); });
  return request;
}

// The period model's trace of one worker's period, made before anything is printed: as a DES
// trace (planner/simulate_job.cpp), event times past what compare reads are not written, and
// the run is refused before its table. Throws InputError when it would not fit in memory.
Json period_model_trace(const BackpropTimes& times, const PeriodTiming& timing) {
  const double needed = period_trace_memory_bytes(times, timing), available = available_memory_bytes();
  if (needed > available)
    throw InputError("--trace: the period-model trace needs about " + format_short(needed / units::kBytesPerGiB, 2) +
                     " GiB of memory for " + std::to_string(timing.iteration_s.size()) + " iterations x " +
                     std::to_string(times.size()) + " layers, more than the " +
                     format_short(available / units::kBytesPerGiB, 2) +
                     " GiB available; trace a shorter period, or simulate without --trace");
  Json trace = period_trace(times, timing);
  double latest_us = 0;
  for (const Json& event : trace["traceEvents"])
    if (event.contains("ts")) latest_us = std::max(latest_us, event["ts"].get<double>() + event["dur"].get<double>());
  check_trace_extent(latest_us, "--trace");
  return trace;
}

// The period model's answer on stdout: the summary line, one row per iteration (its layers
// averaged and the all-reduces that average them: a fused bucket is one all-reduce; tied layers
// and layers whose sync time is 0 issue none, has_allreduce), and whether a plan's predicted
// figures are reproduced. `what` names the plan or strategy.
void print_period_model(const SimulateRequest& request, const PeriodModelOutcome& outcome, const std::string& what,
                        const std::string& profile_path) {
  const BackpropTimes& times = outcome.times;
  const PeriodTiming& timing = outcome.timing;
  const int h_count = outcome.document.period;
  std::cout << "profile: " << describe_profile(request.sync.profile, profile_path) << '\n';
  if (request.sync.link) std::cout << "all-reduce times: " << request.sync.text << '\n';
  std::cout << what << ", period H = " << h_count << '\n'
            << "period_s " << seconds_text(timing.period_s) << "  mean_iteration_s "
            << seconds_text(timing.period_s / h_count) << "  total_wait_s "
            << seconds_text(timing.total_wait_s()) << "  lower_bound_period_s "
            << seconds_text(outcome.lower_bound_s)
            << (outcome.lower_bound_from_plan.empty() ? "" : " (the plan's " + outcome.lower_bound_from_plan + " bound)")
            << '\n';
  std::vector<std::vector<std::string>> table = {{"iteration", "iteration_s", "wait_s", "layers_synced", "allreduces"}};
  for (int h = 0; h < h_count; ++h) {
    const auto& events = timing.syncs[h];
    const auto allreduces = std::count_if(events.begin(), events.end(),
                                          [&](const SyncEvent& sync) { return has_allreduce(times, sync.layer); });
    table.push_back({std::to_string(h), seconds_text(timing.iteration_s[h]), seconds_text(timing.wait_s[h]),
                     std::to_string(outcome.assignment ? outcome.assignment->iterations[h].size() : events.size()),
                     std::to_string(allreduces)});
  }
  print_table(std::cout, table);
  if (!outcome.prediction_difference) return;
  const double worst = *outcome.prediction_difference;
  if (worst <= 1e-9)
    std::cout << "reproduces the plan's predicted figures (largest relative difference " << worst << ")\n";
  else
    std::cout << "differs from the plan's predicted figures (largest relative difference " << worst
              << "; predicted period_s " << seconds_text(request.plan->predicted->period_s)
              << "): was the plan made on another profile?\n";
}

int run_simulate(const SimulateOptions& options) {
  SimulateRequest request = simulate_request(options);
  // ddp and mgwfbp run only in the DES: with --link alone, on the link fit's workers.
  const Strategy* strategy = options.plan_path.empty() ? find_strategy(options.strategy) : nullptr;
  const bool des_only = strategy && strategy->needs_cluster();
  if (!options.sync.cluster_path.empty() || (des_only && !options.sync.link_path.empty()))
    return run_simulate_des(options, std::move(request));
  if (options.iterations_given)
    throw InputError("--iterations: needs --cluster CLUSTER.json (the period model times one period)");
  if (options.comm_streams != 1)
    throw InputError("--comm-streams: needs --cluster CLUSTER.json (the period model has one link)");
  if (options.trace_workers_given)
    throw InputError("--trace-workers: needs --cluster CLUSTER.json (the period model traces one worker)");
  request.trace_workers = 0;  // the period model's trace is one worker's, whatever the workers

  request.sync = read_sync_times(options.profile_path, options.sync);
  const Profile& profile = request.sync.profile;
  std::string what;
  if (!options.plan_path.empty()) {
    request.plan = read_plan_file(options.plan_path, profile);
    what = "plan " + options.plan_path + " (" + request.plan->algorithm + ")";
  } else {
    if (des_only)
      throw InputError("--strategy " + options.strategy +
                       ": runs only in the discrete-event simulator (add --cluster CLUSTER.json or --link LINK.json)");
    what = "strategy " + options.strategy;
  }
  const PeriodModelOutcome outcome = with_flags(kSimulateFlags, [&] { return simulate_period_model(request); });
  warn_about_link(request.sync, outcome.buckets ? largest_allreduce_bytes(outcome.times, *outcome.buckets)
                                                : largest_allreduce_bytes(outcome.times, false));
  if (outcome.buckets)
    what += ", " + std::to_string(allreduce_count(*outcome.buckets)) + " fused all-reduces (alpha " +
            seconds_text(outcome.buckets->alpha_s) + " s)";
  std::optional<Json> trace;
  if (!options.trace_path.empty()) trace = period_model_trace(outcome.times, outcome.timing);
  print_period_model(request, outcome, what, options.profile_path);

  OutputFiles outputs;
  if (!options.output_path.empty()) outputs.add_json(options.output_path, result_to_json(outcome.document), "-o,--output");
  if (trace) outputs.add_json(options.trace_path, *trace, "--trace");
  commit_and_report(outputs, options);
  return 0;
}

std::string cluster_text(const Cluster& cluster, const std::string& path) {
  std::string text = cluster.name.value_or(path) + ": " + count_text(cluster.workers, "worker") + ", " +
                     std::to_string(cluster.workers_per_node) + " per node, " + to_string(cluster.allreduce) +
                     " all-reduce";
  if (!cluster.compute_slowdown.empty()) text += ", stragglers";
  if (cluster.jitter && cluster.jitter->distribution == JitterSpec::Distribution::kMeasured)
    text += ", compute drawn from the profile's measured spread (correlation " +
            format_short(cluster.jitter->correlation, 2) + ")";
  else if (cluster.jitter && cluster.jitter->sigma > 0)
    text += ", jitter";
  return text;
}

// The DES's answer on stdout: the inputs, the run's totals, and what the iterations and a plan's
// prediction say; `what` names the plan or strategy.
void print_des_summary(const SimulateOptions& options, const SimulateRequest& request, const DesOutcome& outcome,
                       const std::string& what) {
  const DesResult& result = outcome.result;
  const int period = outcome.program.period();
  const int count = static_cast<int>(result.iteration_s.size());
  std::cout << "profile: " << describe_profile(request.sync.profile, options.profile_path) << '\n'
            << "cluster: "
            << (request.sync.cluster ? cluster_text(*request.sync.cluster, options.sync.cluster_path)
                                     : "none; the " + count_text(request.sync.link->workers, "worker") +
                                           " of the link fit " + options.sync.link_path)
            << '\n'
            << what << ", period H = " << period << ", " << count_text(count, "iteration") << ", all-reduce times from "
            << request.sync.text << '\n'
            << "simulated " << result.simulated_workers << " of " << count_text(result.workers, "worker")
            << (result.simulated_workers == 1 && result.workers > 1 ? " (identical workers: one representative)" : "")
            << ", " << result.events << " events\n\n"
            << "total_s " << seconds_text(result.total_s) << "  mean_iteration_s " << seconds_text(result.total_s / count)
            << "  exposed_comm_s " << seconds_text(result.exposed_comm_s()) << "  comm_busy_s "
            << seconds_text(result.comm_busy_s) << "  overlap " << seconds_text(result.overlap_fraction()) << '\n';
  // Not whole periods (e.g. 15 iterations of H = 10): period_s (H x the mean iteration) counts the
  // period positions unequally and can fall below a plan's proven lower bound, so it is labelled.
  if (count % period != 0)
    std::cout << "note: " << count << " iterations are not whole periods of H = " << period
              << ": period_s (H x the mean iteration) counts some period positions more than others and is no "
                 "period; it can fall below a plan's lower bound (use a multiple of H)\n";
  if (outcome.document.median_iteration_s)
    std::cout << "iteration_s over the " << count << " iterations (compute drawn from the measured spread): mean "
              << seconds_text(result.total_s / count) << "  median "
              << seconds_text(*outcome.document.median_iteration_s) << "  p90 "
              << seconds_text(*outcome.document.p90_iteration_s) << '\n';
  if (outcome.period_model)
    std::cout << "period model (one worker, same all-reduce times): period_s "
              << seconds_text(outcome.period_model->period_s) << "; DES mean per period "
              << seconds_text(outcome.document.period_s()) << '\n';
  // A plan's predicted period (the period model at planning time) against the DES's: equal to 1e-9
  // with identical workers and the plan's all-reduce times; otherwise the cluster adds what the plan
  // did not model.
  if (request.plan && request.plan->predicted) {
    const double predicted = request.plan->predicted->period_s;
    if (!outcome.prediction_difference)
      std::cout << "not compared with the plan's predicted period_s " << seconds_text(predicted) << ": --iterations "
                << count << " is not a multiple of the period H = " << period << '\n';
    else if (*outcome.prediction_difference <= 1e-9)
      std::cout << "reproduces the plan's predicted period_s " << seconds_text(predicted) << " (relative difference "
                << *outcome.prediction_difference << ")\n";
    else
      std::cout << "differs from the plan's predicted period_s " << seconds_text(predicted) << " (DES mean per period "
                << seconds_text(outcome.document.period_s()) << ", relative difference "
                << *outcome.prediction_difference
                << "): the plan was made on other all-reduce times, or this cluster has what the period model "
                   "leaves out (stragglers, jitter, more workers than simulated alike)\n";
  }
}

// The iterations' times (the slowest worker's, and the slowest and fastest worker's own), the
// first and last 10 of a longer run.
void print_des_iterations(const DesResult& result) {
  const int count = static_cast<int>(result.iteration_s.size());
  std::vector<std::vector<std::string>> table = {{"iteration", "iteration_s", "slowest_worker_s", "fastest_worker_s"}};
  constexpr int kShownRows = 20;
  for (int i = 0; i < count; ++i) {
    if (i == kShownRows / 2 && count > kShownRows) {
      table.push_back({"...", "", "", ""});
      i = count - kShownRows / 2;
    }
    double slowest = 0, fastest = std::numeric_limits<double>::infinity();
    for (const auto& worker : result.worker_iteration_s) {
      slowest = std::max(slowest, worker[i]);
      fastest = std::min(fastest, worker[i]);
    }
    table.push_back({std::to_string(i), seconds_text(result.iteration_s[i]), seconds_text(slowest), seconds_text(fastest)});
  }
  print_table(std::cout, table);
}

int run_simulate_des(const SimulateOptions& options, SimulateRequest request) {
  // Measured all-reduce times hold for the worker count they were measured at (SPEC section 3).
  request.sync = read_sync_times(options.profile_path, options.sync);
  const Profile& profile = request.sync.profile;
  if (!request.sync.cluster && !request.sync.link_used)
    throw InputError("--strategy " + options.strategy + ": with --link and no --cluster the simulator needs the "
                     "link's all-reduce times, but " + request.sync.text + " were chosen (--sync-time measured "
                     "needs --cluster)");
  // --trace alone: the first 8 workers, or every worker of a smaller cluster.
  const int workers = request.sync.cluster ? request.sync.cluster->workers : request.sync.link->workers;
  if (!options.trace_workers_given) request.trace_workers = std::min<std::int64_t>(request.trace_workers, workers);
  with_flags(kSimulateFlags, [&] { validate_simulate_request(request); });  // --trace-workers against the workers
  std::string what;
  if (!options.plan_path.empty()) {
    request.plan = read_plan_file(options.plan_path, profile);
    what = "plan " + options.plan_path + " (" + request.plan->algorithm + ")";
  } else {
    what = "strategy " + options.strategy;
  }
  const DesOutcome outcome = with_flags(kSimulateFlags, [&] { return simulate_des(request); });
  warn_about_link(request.sync, largest_allreduce_bytes(outcome.program, outcome.layers.param_bytes));
  // Identical workers are simulated as one (docs/des.md section 5): a trace of several holds one.
  if (options.trace_workers_given && request.trace_workers > 1 && outcome.result.simulated_workers == 1)
    warn("--trace-workers " + std::to_string(request.trace_workers) + ": the " + std::to_string(workers) +
         " workers are identical (no straggler or jitter), so the simulator runs one for all and the trace holds "
         "that one worker's timeline (docs/des.md section 5)");
  if (outcome.buckets) what += ", " + std::to_string(allreduce_count(*outcome.buckets)) + " fused all-reduces";
  print_des_summary(options, request, outcome, what);
  print_des_iterations(outcome.result);

  OutputFiles outputs;
  if (!options.output_path.empty()) outputs.add_json(options.output_path, result_to_json(outcome.document), "-o,--output");
  if (!options.trace_path.empty()) {
    // The period in Chrome's metadata object, so that compare can group and check by it (docs/compare.md 4.1).
    Json trace = des_trace_json(outcome.result, outcome.layers);
    trace["otherData"] = Json{{"period", outcome.program.period()}};
    outputs.add_json(options.trace_path, trace, "--trace");
  }
  commit_and_report(outputs, options);
  return 0;
}

}  // namespace

void add_simulate_command(CLI::App& app, Action& action) {
  auto options = std::make_shared<SimulateOptions>();
  CLI::App* simulate = app.add_subcommand(
      "simulate", "Time a plan or a strategy under the period model (seconds; SPEC section 5). Prints per "
                  "iteration its time, wait, layers_synced and allreduces (a fused bucket is one all-reduce; a "
                  "tied layer or one whose sync_s is 0 issues none)");
  simulate->add_option("--profile", options->profile_path, "syncplan.profile/v1 file")->required();
  CLI::Option* plan = simulate->add_option("--plan", options->plan_path, "syncplan.plan/v1 file to time");
  CLI::Option* strategy = simulate->add_option(
      "--strategy", options->strategy,
      "strategy to time: " + strategy_names_text(StrategyUse::kPeriodModel) + ", and with --cluster (or --link "
          "alone: the fit's workers) also " + cluster_only_names_text() + " (needs --period)");
  CLI::Option* period = simulate->add_option("--period", options->period, "H: iterations per period, 1..10000");
  plan->excludes(strategy);
  plan->excludes(period);
  simulate->add_option("-o,--output", options->output_path,
                       "write a JSON result (s): engine, period_s, iteration_s (and iteration_wait_s without --cluster); "
                       "with --cluster also per-worker "
                       "times, exposed communication, overlap and bytes per link (docs/formats.md)");
  simulate->add_option("--trace", options->trace_path,
                       "write a Chrome trace (microseconds; opens in Perfetto): compute and link streams");
  simulate->add_option("--cluster", options->sync.cluster_path,
                       "syncplan.cluster/v1 file: run the discrete-event simulator of all its workers "
                       "(without it: the period model of one worker); its \"jitter\": {\"distribution\": "
                       "\"measured\"} draws every compute time from the profile's spread and adds the median and "
                       "p90 iteration time to the result (docs/des.md section 6)");
  CLI::Option* iterations = simulate->add_option("--iterations", options->iterations,
                       "with --cluster: iterations to simulate, 1..100000, periods repeating (default: one period)");
  simulate->add_option("--link", options->sync.link_path, kLinkHelp);
  CLI::Option* sync_time = simulate->add_option("--sync-time", options->sync.sync_time, kSyncTimeHelp)
      ->check(CLI::IsMember({"auto", "measured", "model"}));
  simulate->add_option("--comm-streams", options->comm_streams,
                       "with --cluster: communication streams per worker, 1..64 (default: 1)");
  CLI::Option* bucket_cap = simulate->add_option("--bucket-cap-mb", options->bucket_cap_mb,
                       "with --strategy ddp: bucket cap in MiB, as PyTorch DDP's bucket_cap_mb (default: 25)");
  CLI::Option* trace_workers = simulate->add_option("--trace-workers", options->trace_workers,
                       "with --cluster and --trace: how many workers' timelines to write (default: 8)");
  simulate->callback([&action, options, iterations, sync_time, trace_workers, bucket_cap] {
    options->iterations_given = iterations->count() > 0;
    options->trace_workers_given = trace_workers->count() > 0;
    options->bucket_cap_given = bucket_cap->count() > 0;
    options->sync.sync_time_given = sync_time->count() > 0;
    action = [options] { return run_simulate(*options); };
  });
}

}  // namespace syncplan::cli
