// `syncplan whatif`: parse the lists to sweep, run the what-if job (planner/whatif_job.hpp) on this
// process's threads and the MPI job's ranks, show progress on a terminal, write the CSV and JSON.
#include "comm/mpi_session.hpp"
#include "core/cluster.hpp"
#include "core/errors.hpp"
#include "core/json_io.hpp"
#include "core/limits.hpp"
#include "core/plan.hpp"
#include "planner/strategy_table.hpp"
#include "planner/whatif_job.hpp"
#include "report/whatif_page.hpp"
#include "tools/cli_common.hpp"
#include "tools/model_profile.hpp"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <memory>
#include <thread>

namespace syncplan::cli {

namespace {

struct WhatifOptions {
  std::string profile_path, cluster_path, csv_path, json_path, plot_path, html_path;
  std::string plot_metric = "throughput";
  std::string model, dtype = "bf16", gpu;
  long long batch = 0, seq = 0;  // 0: not given
  std::string workers, bandwidth, latency, periods, strategies;  // comma-separated; empty: not given
  double jitter_sigma = 0, straggler = 1;
  bool jitter_given = false, straggler_given = false;
  std::string scaling = "weak";
  std::string allreduce;  // empty: the cluster file's
  long long global_batch = 0;
  bool global_batch_given = false;
  double max_overhead = kWhatifDefaultMaxOverhead;
  bool fill_bubbles = false, fuse_buckets = false;
  double time_limit_s = kWhatifSearchLimit_s;
  int rounds = SearchOptions{}.rounds;
  std::string seed_text = "1";
  long long iterations = 0;
  bool iterations_given = false;
  long long jobs = 0;  // 0: every core
  // Flags that apply only with another (--max-overhead: a --period auto; --plot-metric: --plot or
  // --html; the plan flags: a planned strategy), given on the command line: refused without it.
  bool max_overhead_given = false, plot_metric_given = false;
  std::vector<std::string> plan_flags_given;
};

// The request's fields and the flags that set them.
constexpr std::initializer_list<FieldFlag> kWhatifFlags = {
    {"workers", "--workers"},          {"bandwidth_Gbps", "--bandwidth-Gbps"}, {"latency_us", "--latency-us"},
    {"periods", "--period"},           {"strategies", "--strategies"},         {"jitter_sigma", "--jitter-sigma"},
    {"straggler", "--straggler"},      {"global_batch", "--global-batch"},     {"batch", "--batch"},
    {"max_overhead", "--max-overhead"}, {"iterations", "--iterations"},        {"search.rounds", "--search-rounds"},
    {"search.time_limit_s", "--time-limit-s"}, {"plot_metric", "--plot-metric"}};

// A comma-separated list's elements; an empty list or element is an error naming the flag.
std::vector<std::string> split_list(const std::string& text, const std::string& flag) {
  std::vector<std::string> elements;
  std::size_t start = 0;
  while (true) {
    const std::size_t comma = text.find(',', start);
    const std::string element = text.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    if (element.empty()) throw InputError(flag + ": empty element in '" + text + "' (give values separated by commas)");
    elements.push_back(element);
    if (comma == std::string::npos) return elements;
    start = comma + 1;
  }
}

// A whole decimal number in [1, 10^9] (workers, periods), or an error quoting the element and
// naming the other words the list takes (`alternatives`, e.g. " or 'auto'").
int whole_element(const std::string& element, const std::string& flag, const std::string& list, std::int64_t most,
                  const std::string& alternatives = "") {
  if (element.empty() || element.find_first_not_of("0123456789") != std::string::npos || element[0] == '0')
    throw InputError(flag + ": '" + element + "' in '" + list + "' is not a whole number >= 1" + alternatives);
  // Too many digits for any integer, or past the flag's limit: said as such (it once read "not a
  // whole number" for 1000000000 workers).
  if (element.size() > 18 || std::stoll(element) > most)
    throw InputError(flag + ": '" + element + "' in '" + list + "' is above the limit " + std::to_string(most) +
                     " (docs/formats.md, Limits)");
  return static_cast<int>(std::stoll(element));
}

// A finite decimal number (bandwidths, latencies), or an error quoting the element.
double number_element(const std::string& element, const std::string& flag, const std::string& list) {
  char* end = nullptr;
  const double value = std::strtod(element.c_str(), &end);
  if (end != element.c_str() + element.size() || !std::isfinite(value) || element.find_first_of("xXpP") != std::string::npos)
    throw InputError(flag + ": '" + element + "' in '" + list + "' is not a number");
  return value;
}

// Prints "points done, rate, time left" over one line of the terminal.
class ProgressBar {
 public:
  void operator()(int done, int total) {
    const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
    const double rate = elapsed > 0 ? done / elapsed : 0;
    constexpr int kWidth = 30;
    const int filled = total > 0 ? done * kWidth / total : kWidth;
    std::string bar(static_cast<std::size_t>(filled), '#');
    bar.resize(kWidth, ' ');
    const double left = rate > 0 ? (total - done) / rate : 0;
    std::fprintf(stderr, "\r[%s] %d/%d points, %.1f points/s, %.0f s left ", bar.c_str(), done, total, rate, left);
    if (done == total) std::fputc('\n', stderr);
    std::fflush(stderr);
  }

 private:
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
};

// Whether a strategy (a name validate_whatif_request accepted) runs a time-limited search (search;
// best, one of whose members is search): what --time-limit-s, --search-rounds and --seed change.
bool runs_search(const std::string& name) {
  const Strategy& strategy = strategy_for(name, StrategyUse::kDes);
  return strategy.time_limited || std::any_of(strategy.members.begin(), strategy.members.end(), [](const char* member) {
           return find_plan_algorithm(member).time_limited;
         });
}

// The names of the strategies in the table for which `applies` holds, comma-separated.
template <class Predicate>
std::string names_where(Predicate applies) {
  std::string names;
  for (const Strategy& strategy : strategies())
    if (applies(strategy.name)) names += (names.empty() ? "" : ", ") + std::string(strategy.name);
  return names;
}

// A flag that changes nothing in this sweep is refused rather than ignored: --max-overhead without
// a --period auto, --plot-metric without --plot or --html, --fill-bubbles and --fuse-buckets without
// a planned strategy, --time-limit-s, --search-rounds and --seed without one that searches. Called
// after validate_whatif_request: every value and strategy name is known good.
void check_flags_apply(const WhatifOptions& options, const WhatifRequest& request) {
  if (options.max_overhead_given &&
      std::none_of(request.periods.begin(), request.periods.end(), [](const auto& period) { return !period; }))
    throw InputError("--max-overhead: applies to --period auto only, and --period " + options.periods + " has none");
  if (options.plot_metric_given && options.plot_path.empty() && options.html_path.empty())
    throw InputError("--plot-metric: the plotted metric, with --plot OUT.svg or --html OUT.html, and neither is given");
  const auto planned = [](const std::string& name) { return strategy_for(name, StrategyUse::kDes).plannable(); };
  for (const std::string& flag : options.plan_flags_given) {
    const bool search_flag = flag != "--fill-bubbles" && flag != "--fuse-buckets";
    const auto applies = [&](const std::string& name) { return search_flag ? runs_search(name) : planned(name); };
    if (std::none_of(request.strategies.begin(), request.strategies.end(), applies))
      throw InputError(flag + ": applies to " + (search_flag ? "the strategies that search (" : "planned strategies (") +
                       names_where(applies) + "), and --strategies " + options.strategies + " has none");
  }
}

// The link between nodes against the points' node counts: a one-node base has none (its
// inter_node copies intra_node), so a point of several nodes needs the sweep to name one (it
// borrowed the intra-node link); and where every point is one node, --bandwidth-Gbps and
// --latency-us would change nothing (identical rows under different link columns). Called after
// validate_whatif_request (every worker count a multiple of the node's).
void check_node_links(const WhatifOptions& options, const WhatifRequest& request) {
  const int per_node = request.base.workers_per_node;
  const auto multi = std::find_if(request.workers.begin(), request.workers.end(),
                                  [&](int workers) { return workers / per_node > 1; });  // multiples, validated
  if (multi == request.workers.end()) {
    for (const auto& [flag, given] : {std::pair<const char*, bool>{"--bandwidth-Gbps", !options.bandwidth.empty()},
                                      {"--latency-us", !options.latency.empty()}})
      if (given)
        throw InputError(std::string(flag) + ": sets the link between nodes, and every point is one node (" +
                         std::to_string(per_node) + (per_node == 1 ? " worker" : " workers") + " a node in " +
                         options.cluster_path +
                         "): it would change nothing");
    return;
  }
  if (request.base.inter_node_given || (!options.bandwidth.empty() && !options.latency.empty())) return;
  throw InputError("--workers " + std::to_string(*multi) + ": " + std::to_string(*multi / per_node) + " nodes of " +
                   std::to_string(per_node) + " workers, but " + options.cluster_path +
                   " is one node with no 'inter_node' link: give --bandwidth-Gbps and --latency-us (the link "
                   "between nodes), or an inter_node in the file");
}

WhatifRequest whatif_request(const WhatifOptions& options) {
  if (options.profile_path.empty() == options.model.empty())
    throw InputError("whatif: give either --profile PROFILE.json or --model NAME");
  if (options.strategies.empty()) throw InputError("--strategies: required (e.g. ssgd,wfbp,flsgd,dreamddp,best)");
  if (options.periods.empty()) throw InputError("--period: required (e.g. 5,10,auto)");
  if (options.seed_text.empty() || options.seed_text.size() > 19 ||
      options.seed_text.find_first_not_of("0123456789") != std::string::npos)
    throw InputError("--seed: expected a whole number from 0 to 10^19 - 1, got '" + options.seed_text + "'");
  check_output_paths({{"--csv", options.csv_path}, {"--json", options.json_path}, {"--plot", options.plot_path},
                      {"--html", options.html_path}},
                     {{"--profile", options.profile_path}, {"--cluster", options.cluster_path}});
  WhatifRequest request;
  // A model estimate is of an NCCL cluster: a cluster file that names no algorithm runs "auto".
  request.base = read_cluster_file(options.cluster_path,
                                   options.model.empty() ? AllreduceAlgorithm::kRing : AllreduceAlgorithm::kAuto);
  request.cluster_origin = options.cluster_path;
  if (!options.allreduce.empty()) request.base.allreduce = *allreduce_algorithm(options.allreduce);
  for (const std::string& e : split_list(options.workers.empty() ? std::to_string(request.base.workers) : options.workers, "--workers"))
    request.workers.push_back(whole_element(e, "--workers", options.workers, limits::kMaxWorkers));
  const std::string bandwidth = options.bandwidth.empty() ? format_exact(request.base.inter_node.bandwidth_Gbps) : options.bandwidth;
  for (const std::string& e : split_list(bandwidth, "--bandwidth-Gbps"))
    request.bandwidth_Gbps.push_back(number_element(e, "--bandwidth-Gbps", bandwidth));
  const std::string latency = options.latency.empty() ? format_exact(request.base.inter_node.latency_us) : options.latency;
  for (const std::string& e : split_list(latency, "--latency-us"))
    request.latency_us.push_back(number_element(e, "--latency-us", latency));
  for (const std::string& e : split_list(options.periods, "--period"))
    request.periods.push_back(e == "auto" ? std::nullopt
                                          : std::optional<int>(whole_element(e, "--period", options.periods, kMaxPeriod,
                                                                             " or 'auto'")));
  request.strategies = split_list(options.strategies, "--strategies");
  if (options.jitter_given) request.jitter_sigma = options.jitter_sigma;
  if (options.straggler_given) request.straggler = options.straggler;
  request.scaling = options.scaling == "strong" ? WhatifScaling::kStrong : WhatifScaling::kWeak;
  if (options.global_batch_given) request.global_batch = options.global_batch;
  request.max_overhead = options.max_overhead;
  request.fill_bubbles = options.fill_bubbles;
  request.fuse_buckets = options.fuse_buckets;
  request.search.time_limit_s = options.time_limit_s;
  request.search.rounds = options.rounds;
  request.search.seed = std::stoull(options.seed_text);
  if (options.iterations_given) request.iterations = options.iterations;
  if (options.seq > 0) request.seq = options.seq;
  if (!options.model.empty()) {
    ModelProfileRequest model;
    model.spec_path = model_spec_path(options.model);
    model.gpu_catalog_path = data_dir() / "gpus.json";
    model.device = "estimate";
    model.dtype = options.dtype;
    model.gpu = options.gpu.empty() ? kDefaultEstimateGpu : options.gpu;
    model.batch = options.batch > 0 ? options.batch : 8;
    model.seq = options.seq;
    request.model = model;
    request.origin = "--model " + options.model;
  } else {
    request.profile = read_profile_file(options.profile_path);
    request.origin = options.profile_path;
    // The workload a profile records (`syncplan profile` writes it) is the batch and sequence it
    // was made at: samples/s and tokens/s without --batch and --seq; a --batch or --seq that
    // contradicts it is refused rather than silently scaling the wrong compute.
    const std::optional<ProfileWorkload>& recorded = request.profile->workload;
    if (options.batch > 0 && recorded && recorded->batch != options.batch)
      throw InputError("--batch " + std::to_string(options.batch) + ": " + options.profile_path +
                       " was made at batch " + std::to_string(recorded->batch) +
                       " (its field 'workload'); --batch with --profile is the batch the profile was made at");
    // The same for --seq (tokens/s would be counted at the wrong length; the helper's re-check).
    if (options.seq > 0 && recorded && recorded->seq != options.seq)
      throw InputError("--seq " + std::to_string(options.seq) + ": " + options.profile_path + " was made at seq " +
                       std::to_string(recorded->seq) + " (its field 'workload'); --seq with --profile is the sequence "
                       "length the profile was made at");
    if (options.batch > 0) request.batch = options.batch;
    else if (recorded) request.batch = recorded->batch;
    if (options.seq == 0 && recorded) request.seq = recorded->seq;
  }
  return request;
}

// The sweep's files (--csv, --json, --plot, --html), written together: all or none.
void write_whatif_files(const WhatifOptions& options, const WhatifOutcome& outcome, report::WhatifMetric metric) {
  OutputFiles outputs;
  if (!options.csv_path.empty()) outputs.add(options.csv_path, whatif_csv(outcome), "--csv");
  if (!options.json_path.empty()) outputs.add_json(options.json_path, whatif_to_json(outcome), "--json");
  if (!options.plot_path.empty() || !options.html_path.empty()) {
    // The message names the flag given (the helper's re-check: --html alone was told "--plot").
    const std::string flag = !options.plot_path.empty() ? "--plot" : "--html";
    const std::string plot = report::line_plot_svg([&] {
      try {
        return report::whatif_plot(outcome, metric);
      } catch (const InputError& e) {
        throw InputError("whatif " + flag + ": " + e.what());
      }
    }());
    if (!options.plot_path.empty()) outputs.add(options.plot_path, plot, "--plot");
    if (!options.html_path.empty()) outputs.add(options.html_path, report::html_page(report::whatif_page(outcome, plot)), "--html");
  }
  outputs.commit();
}

int whatif(const MpiSession& mpi, const WhatifOptions& options) {
  const WhatifRequest request = whatif_request(options);
  const report::WhatifMetric metric = with_flags(kWhatifFlags, [&] { return report::whatif_metric(options.plot_metric); });
  const int points = with_flags(kWhatifFlags, [&] { return validate_whatif_request(request); });
  // After every value is checked (a bad one is said as such, not as a flag that changes nothing).
  check_flags_apply(options, request);
  check_node_links(options, request);
  // A throughput plot needs samples/s, which needs the batch: known with --model, --batch, a
  // profile's `workload` or strong scaling. Said before the sweep, not "every point failed" after
  // it.
  const bool plots = !options.plot_path.empty() || !options.html_path.empty();
  if (plots && metric == report::WhatifMetric::kThroughput && request.scaling == WhatifScaling::kWeak &&
      !request.model && !request.batch)
    throw InputError("--plot-metric throughput: samples/s needs the batch " + options.profile_path +
                     " was made at, and it records none (its field 'workload' is absent or null): give --batch B, or --plot-metric speedup");
  WhatifRun run;
  run.jobs = options.jobs > 0 ? static_cast<int>(options.jobs)
                              : std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
  run.ranks = mpi.size();
  run.rank = mpi.rank();
  // The rows between the ranks: each rank in turn broadcasts its text's length, then the text.
  run.share = [&mpi](const std::string& own) {
    std::vector<std::string> texts(static_cast<std::size_t>(mpi.size()));
    for (int rank = 0; rank < mpi.size(); ++rank) {
      std::string& text = texts[static_cast<std::size_t>(rank)];
      if (rank == mpi.rank()) text = own;
      std::int64_t size = static_cast<std::int64_t>(text.size());
      mpi.broadcast(&size, sizeof size, rank);
      SYNCPLAN_CHECK(size >= 0 && size < (std::int64_t{1} << 31));
      text.resize(static_cast<std::size_t>(size));
      mpi.broadcast(text.data(), static_cast<int>(size), rank);
    }
    return texts;
  };
  ProgressBar bar;
  if (mpi.is_root() && isatty(STDERR_FILENO)) run.progress = [&bar](int done, int total) { bar(done, total); };
  const WhatifOutcome outcome = with_flags(kWhatifFlags, [&] { return run_whatif_job(request, run); });
  if (!mpi.is_root()) return 0;

  write_whatif_files(options, outcome, metric);
  // The CSV on stdout when no file is named; the summary then goes to stderr, else to stdout.
  const bool to_files = !options.csv_path.empty() || !options.json_path.empty() || !options.plot_path.empty() ||
                        !options.html_path.empty();
  if (!to_files) std::cout << whatif_csv(outcome);
  std::ostream& out = to_files ? std::cout : std::cerr;
  out << "whatif: " << count_text(points, "point") << " (" << to_string(request.scaling) << " scaling, "
      << to_string(request.base.allreduce) << " all-reduce) on "
      << count_text(mpi.size(), "rank") << ", " << outcome.failed() << " failed\n";
  for (const WhatifRow& row : outcome.rows)
    if (row.status != WhatifStatus::kOk) out << "  point " << row.index << " (" << row.strategy << "): " << row.error << '\n';
  if (!options.csv_path.empty()) out << "csv written to " << options.csv_path << '\n';
  if (!options.json_path.empty()) out << "json written to " << options.json_path << '\n';
  if (!options.plot_path.empty()) out << "plot written to " << options.plot_path << '\n';
  if (!options.html_path.empty()) out << "page written to " << options.html_path << '\n';
  return 0;
}

}  // namespace

void add_whatif_command(CLI::App& app, Action& action) {
  auto options = std::make_shared<WhatifOptions>();
  CLI::App* whatif_app = app.add_subcommand(
      "whatif", "Sweep worker counts, inter-node bandwidths, latencies, periods and strategies; plan each point "
                "when its strategy is a plan and time it on the discrete-event simulator (docs/whatif.md); "
                "under mpirun the points are divided among the ranks");
  whatif_app->add_option("--profile", options->profile_path, "syncplan.profile/v1 file (or --model)");
  CLI::Option* model = whatif_app->add_option("--model", options->model,
      "instead of --profile: a model spec (name in data/models, e.g. gpt2, or a file), estimated (roofline)");
  whatif_app->add_option("--batch", options->batch,
      "samples per step and worker: with --model the estimate's (default: 8); with --profile the one it was "
      "measured at (for samples/s and strong scaling)")->check(CLI::Range(std::int64_t{1}, limits::kMaxBatch));
  whatif_app->add_option("--seq", options->seq, "tokens per sample, for tokens/s (--model: the estimate's; default: "
                         "the model's context, at most 1024)")->check(CLI::Range(std::int64_t{1}, limits::kMaxSeq));
  whatif_app->add_option("--dtype", options->dtype, "with --model: fp32 or bf16 (default: bf16)")
      ->check(CLI::IsMember({"fp32", "bf16"}))->needs(model);
  whatif_app->add_option("--gpu", options->gpu, "with --model: GPU name in data/gpus.json (default: H100-SXM)")->needs(model);
  whatif_app->add_option("--cluster", options->cluster_path,
      "syncplan.cluster/v1 file: the base of every point (its workers_per_node, intra-node link, all-reduce "
      "algorithm)")->required();
  whatif_app->add_option("--allreduce", options->allreduce,
      "all-reduce algorithm of every point, ring, tree, hierarchical or auto (the cheapest per message size, "
      "docs/collectives.md 6; default: the cluster file's; with --model, auto where the file names none)")
      ->check(CLI::IsMember({"ring", "tree", "hierarchical", "auto"}));
  whatif_app->add_option("--workers", options->workers,
      "workers to sweep, comma-separated, each a multiple of the base's workers_per_node (default: the base's)");
  whatif_app->add_option("--bandwidth-Gbps", options->bandwidth,
      "inter-node bandwidths to sweep, Gbit/s per direction, comma-separated (default: the base's)");
  whatif_app->add_option("--latency-us", options->latency,
      "inter-node one-way latencies to sweep, microseconds, comma-separated (default: the base's)");
  whatif_app->add_option("--period", options->periods,
      "periods H to sweep, comma-separated, each 1..10000 or 'auto': the smallest H whose dp plan waits at most "
      "--max-overhead of compute (required; no default)");
  whatif_app->add_option("--strategies", options->strategies,
      "strategies to sweep, comma-separated: " + strategy_names_text(StrategyUse::kDes) + " (required; no default)");
  CLI::Option* jitter = whatif_app->add_option("--jitter-sigma", options->jitter_sigma,
      "lognormal compute jitter of every worker, 0..2 (default: the base's)");
  CLI::Option* straggler = whatif_app->add_option("--straggler", options->straggler,
      "worker 0's compute slowdown factor, 1e-3..1e3 (default: the base's)");
  whatif_app->add_option("--scaling", options->scaling,
      "weak (fixed per-worker batch, default) or strong (--global-batch split evenly among the workers)")
      ->check(CLI::IsMember({"weak", "strong"}));
  CLI::Option* global_batch = whatif_app->add_option("--global-batch", options->global_batch,
      "with --scaling strong: samples per step over all workers");
  CLI::Option* max_overhead = whatif_app->add_option("--max-overhead", options->max_overhead,
      "with --period auto: the largest planned wait as a fraction of compute (default: 0.05)");
  CLI::Option* fill_bubbles =
      whatif_app->add_flag("--fill-bubbles", options->fill_bubbles, "plans: add extra syncs in idle link time (as plan)");
  CLI::Option* fuse_buckets = whatif_app->add_flag("--fuse-buckets", options->fuse_buckets,
      "plans: fuse each iteration's syncs into buckets with the point's all-reduce start-up time (as plan)");
  CLI::Option* time_limit = whatif_app->add_option("--time-limit-s", options->time_limit_s,
      "plans: each point's search time limit in (0, 86400] s (default: 600, so that rounds, not time, end it)");
  CLI::Option* rounds = whatif_app->add_option("--search-rounds", options->rounds,
                         "plans: search's cap on perturbation rounds, >= 0 (default: 1000; it stops when converged, "
                         "as plan's)");
  CLI::Option* seed = whatif_app->add_option("--seed", options->seed_text, "plans: search random seed (default: 1)");
  CLI::Option* iterations = whatif_app->add_option("--iterations", options->iterations,
      "iterations simulated per point, 1..100000, rounded up to whole periods of each point's H (default: one period)");
  whatif_app->add_option("--jobs", options->jobs, "threads per process (default: every core)")
      ->check(CLI::Range(1LL, 4096LL));
  whatif_app->add_option("--csv", options->csv_path, "write the rows as CSV (docs/whatif.md; default: to stdout)");
  whatif_app->add_option("--json", options->json_path, "write the rows as syncplan.whatif/v1 JSON (docs/formats.md)");
  whatif_app->add_option("--plot", options->plot_path,
                         "write an SVG plot: --plot-metric against workers (log axis), one panel per bandwidth, one "
                         "line per strategy (docs/report.md)");
  CLI::Option* plot_metric = whatif_app->add_option("--plot-metric", options->plot_metric, "throughput (samples/s) or speedup (over ssgd) "
                         "(default: throughput)");
  whatif_app->add_option("--html", options->html_path, "write a self-contained HTML page: the plot and every row");
  whatif_app->callback([&action, options, jitter, straggler, global_batch, iterations, max_overhead, plot_metric,
                        plan_flags = std::vector<CLI::Option*>{fill_bubbles, fuse_buckets, time_limit, rounds, seed}] {
    options->max_overhead_given = max_overhead->count() > 0;
    options->plot_metric_given = plot_metric->count() > 0;
    for (const CLI::Option* flag : plan_flags)
      if (flag->count() > 0) options->plan_flags_given.push_back(flag->get_name());
    options->jitter_given = jitter->count() > 0;
    options->straggler_given = straggler->count() > 0;
    options->global_batch_given = global_batch->count() > 0;
    options->iterations_given = iterations->count() > 0;
    action = [options] {
      const MpiSession mpi;
      return run_on_every_rank(mpi, [&] { return whatif(mpi, *options); });
    };
  });
}

}  // namespace syncplan::cli
