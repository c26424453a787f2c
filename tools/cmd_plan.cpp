// `syncplan plan`: compare the strategies, plan with the chosen algorithm, write the plan and report.
#include "core/errors.hpp"
#include "core/json_io.hpp"
#include "planner/algorithm_table.hpp"
#include "planner/fill.hpp"
#include "planner/lower_bound.hpp"
#include "simulator/bucket_fusion.hpp"
#include "tools/cli_common.hpp"
#include "tools/model_profile.hpp"
#include "tools/sync_times.hpp"

#include <cmath>
#include <iostream>
#include <limits>
#include <memory>
#include <regex>

namespace syncplan::cli {

namespace {

struct PlanOptions {
  std::string profile_path, output_path, report_path, algorithm = "best";
  std::string profile_out_path;  // --profile-out: the profile --model made
  std::string period;
  SearchOptions search;
  bool fill_bubbles = false;
  std::string every_iteration;  // regular expression on layer names; empty: none pinned
  std::string seed_text = "1";
  double max_overhead = 0;   // with --period auto: planned wait / compute at most this (fraction)
  bool max_overhead_given = false;
  // Per-layer all-reduce times from a cluster or a link fit instead of the profile.
  SyncTimeOptions sync;
  // --model: profile a model spec first (the built-in default of the main job, SPEC section 1).
  ProfileOptions model{"", "bf16", "auto", "H100-SXM", "", 8, 0};
  // Bucket fusion (--fuse-buckets) and its all-reduce start-up time (--alpha-s; NaN: from --cluster).
  bool fuse_buckets = false;
  double alpha_s = 0;
  bool alpha_given = false;
  bool dtype_given = false;  // --dtype; otherwise bf16 on a GPU or an estimate, fp32 on the CPU
};

// Where the plan's sync times and the fusion's alpha come from.
struct PlanInputs {
  Profile profile;
  BackpropTimes times;
  std::string sync_times_text;  // for the printout
  std::string origin;           // the profile's file, or "--model NAME"
  Profile model_profile;        // --model: the profile made, as written by --profile-out
  std::optional<double> alpha_s;  // set when --fuse-buckets
  std::string alpha_text;
};

std::string ratio_text(double ratio) {
  if (!std::isfinite(ratio)) return "n/a";  // e.g. a profile whose times are all zero
  return format_short(ratio, 2) + "x";
}

Json finite_or_null(double value) { return std::isfinite(value) ? Json(value) : Json(nullptr); }

// A percentage to 2 decimals; rounding noise (e.g. a gap of 7e-12%) reads 0.00%, never an exponent.
std::string percent_text(double fraction) {
  const double percent = std::round(100.0 * fraction * 100.0) / 100.0 + 0.0;  // + 0.0: -0 reads 0
  return format_short(percent, 2) + "%";
}

// The chosen plan, one row per iteration: how many layers sync (of which extra, from bubble
// filling), the output-most and input-most of them (backprop order), and the iteration's wait.
void print_assignment(std::ostream& out, const BackpropTimes& times, const Assignment& assignment,
                      const Assignment& planned, const PeriodTiming& timing, const Buckets* buckets) {
  std::vector<std::vector<std::string>> table = {
      {"iteration", "syncs", "extra", "first_synced (backprop order)", "last_synced", "wait_s"}};
  if (buckets) table[0].insert(table[0].begin() + 3, "buckets");
  for (int h = 0; h < assignment.period(); ++h) {
    const std::vector<int>& layers = assignment.iterations[h];
    if (layers.empty()) {  // a run of iterations without syncs is one row, "first-last"
      int last = h;
      while (last + 1 < assignment.period() && assignment.iterations[last + 1].empty()) ++last;
      table.push_back({last == h ? std::to_string(h) : std::to_string(h) + "-" + std::to_string(last),
                       "0", "0", "-", "-", seconds_text(0.0)});
      if (buckets) table.back().insert(table.back().begin() + 3, "0");
      h = last;
      continue;
    }
    table.push_back({std::to_string(h), std::to_string(layers.size()),
                     std::to_string(layers.size() - planned.iterations[h].size()), times.names[layers.front()],
                     times.names[layers.back()], seconds_text(timing.wait_s[h])});
    if (buckets) table.back().insert(table.back().begin() + 3, std::to_string(buckets->iterations[h].size()));
  }
  print_table(out, table);
}

// The largest --alpha-s: an all-reduce start-up of a minute is already far outside any network.
constexpr double kLongestAlpha_s = 60;

// The largest H `--period auto` tries.
constexpr int kAutoMaxPeriod = 1000;
// The most each candidate H's search may take under --period auto (s).
constexpr double kAutoSearchLimit_s = 0.05;

// --period auto: the smallest H whose planned wait is at most max_overhead of the period's compute
// (fewer local steps between averages is better for convergence). Prints why.
int auto_period(const BackpropTimes& times, const PlanAlgorithm& algorithm, const PlanOptions& options,
                const std::optional<double>& alpha_s) {
  if (!options.max_overhead_given)
    throw InputError("--max-overhead: required with --period auto, a fraction > 0 (e.g. 0.05 for 5%)");
  double best_overhead = std::numeric_limits<double>::infinity();
  int best_period = 1;
  // Up to kAutoMaxPeriod candidates: each search gets a small share of --time-limit-s.
  SearchOptions search = options.search;
  search.time_limit_s = std::min(search.time_limit_s, kAutoSearchLimit_s);
  for (int period = 1; period <= kAutoMaxPeriod; ++period) {
    const PeriodTiming timing = time_planned(times, algorithm.plan(times, period, search).assignment, alpha_s);
    const double compute = period * times.compute_s();
    const double overhead = compute > 0 ? timing.total_wait_s() / compute : (timing.total_wait_s() > 0 ? INFINITY : 0.0);
    if (overhead <= options.max_overhead) {
      std::cout << "period: H = " << period << " (--period auto): the smallest H whose planned wait, "
                << seconds_text(timing.total_wait_s()) << " s, is at most " << percent_text(options.max_overhead)
                << " of the period's compute, " << seconds_text(compute) << " s (it is " << percent_text(overhead)
                << ")\n";
      return period;
    }
    if (overhead < best_overhead) {
      best_overhead = overhead;
      best_period = period;
    }
  }
  throw InputError("--max-overhead: no period H up to " + std::to_string(kAutoMaxPeriod) + " keeps the wait within " +
                   percent_text(options.max_overhead) + " of compute (the least is " + percent_text(best_overhead) +
                   " at H = " + std::to_string(best_period) + ")");
}

// The layers (backprop index) whose names match --every-iteration (std::regex_search, ECMAScript).
std::vector<bool> pinned_layers(const BackpropTimes& times, const std::string& pattern) {
  if (pattern.empty()) return {};
  std::regex expression;
  try {
    expression = std::regex(pattern);
  } catch (const std::regex_error& e) {
    throw InputError("--every-iteration: invalid regular expression '" + pattern + "' (" + e.what() + ")");
  }
  std::vector<bool> pinned(times.size(), false);
  bool any = false;
  for (std::size_t j = 0; j < times.size(); ++j) any |= pinned[j] = std::regex_search(times.names[j], expression);
  if (!any) throw InputError("--every-iteration: '" + pattern + "' matches no layer of the profile");
  return pinned;
}

// plan --model: the model's profile, measured on the GPU when this build has the CUDA backend and
// sees a device, else the roofline estimate for --gpu (said so: an estimate is never a measurement).
Profile model_profile_for_plan(const PlanOptions& options) {
  if (!options.profile_path.empty()) throw InputError("--model: give either --profile or --model, not both");
  if (options.sync.cluster_path.empty() && options.sync.link_path.empty())
    throw InputError("--model: needs --cluster or --link for the all-reduce times (a model spec has none)");
  ProfileOptions profile_options = options.model;
  if (!options.dtype_given && profile_options.device == "cpu") profile_options.dtype = "fp32";
  if (profile_options.device == "auto") {
    profile_options.device = cuda_profiling_available() ? "cuda" : "estimate";
    if (profile_options.device == "cuda")
      std::cout << "profile: measured on the GPU (--device cuda)\n";
    else
      std::cout << "profile: roofline estimate for " << profile_options.gpu
                << ", not a measurement (no CUDA device in this build or machine; --gpu NAME chooses the GPU)\n";
  }
  return make_model_profile(profile_options);
}

// Reads the profile, and the cluster or link fit when given: the sync times the plan is made for,
// and the start-up time bucket fusion assumes.
PlanInputs read_plan_inputs(const PlanOptions& options) {
  if (options.alpha_given && !(options.alpha_s >= 0 && options.alpha_s <= kLongestAlpha_s))
    throw InputError("--alpha-s: must be a number from 0 to " + format_exact(kLongestAlpha_s) + " (seconds), got " +
                     format_exact(options.alpha_s));
  if (options.alpha_given && !options.fuse_buckets) throw InputError("--alpha-s: only with --fuse-buckets");
  PlanInputs inputs;
  inputs.origin = options.model.model.empty() ? options.profile_path : "--model " + options.model.model;
  if (!options.model.model.empty()) inputs.model_profile = model_profile_for_plan(options);
  SyncTimes choice = options.model.model.empty()
                         ? read_sync_times(options.profile_path, options.sync)
                         : read_sync_times(inputs.model_profile, inputs.origin, options.sync);
  inputs.times = sync_backprop_times(choice, inputs.origin);
  inputs.sync_times_text = choice.text;
  if (options.fuse_buckets) {
    inputs.alpha_s = options.alpha_given ? std::optional<double>(options.alpha_s) : choice.alpha_s;
    inputs.alpha_text = options.alpha_given ? "--alpha-s" : choice.alpha_text;
  }
  if (options.fuse_buckets && !inputs.alpha_s)
    throw InputError("--fuse-buckets: needs the all-reduce start-up time alpha: give --cluster, --link or --alpha-s");
  inputs.profile = std::move(choice.profile);
  return inputs;
}

int run_plan(const PlanOptions& options_in) {
  PlanOptions options = options_in;
  if (!(options.search.time_limit_s > 0 && options.search.time_limit_s <= 86400))
    throw InputError("--time-limit-s: must be in (0, 86400] seconds");
  if (options.search.rounds < 0) throw InputError("--search-rounds: must be >= 0");
  if (options.seed_text.empty() || options.seed_text.size() > 19 ||
      options.seed_text.find_first_not_of("0123456789") != std::string::npos)
    throw InputError("--seed: expected a whole number from 0 to 10^19 - 1, got '" + options.seed_text + "'");
  options.search.seed = std::stoull(options.seed_text);
  if (options.max_overhead_given && !(options.max_overhead > 0 && options.max_overhead <= 100))
    throw InputError("--max-overhead: must be a fraction of compute in (0, 100], got " +
                     format_exact(options.max_overhead));
  const bool automatic = options.period == "auto";
  if (!automatic && options.max_overhead_given)
    throw InputError("--max-overhead: only with --period auto");
  const int fixed_period = automatic ? 0 : checked_period(options.period);
  const PlanAlgorithm& algorithm = find_plan_algorithm(options.algorithm);
  if (options.profile_path.empty() && options.model.model.empty())
    throw InputError("plan: give --profile PROFILE.json, or --model NAME with --cluster or --link");
  check_output_paths({{"-o", options.output_path}, {"--report", options.report_path},
                      {"--profile-out", options.profile_out_path}},
                     {{"--profile", options.profile_path}, {"--cluster", options.sync.cluster_path},
                      {"--link", options.sync.link_path}});

  const PlanInputs inputs = read_plan_inputs(options);
  const Profile& profile = inputs.profile;
  const BackpropTimes& times = inputs.times;
  options.search.every_iteration = pinned_layers(times, options.every_iteration);
  // The table compares the strategies unfused; the chosen plan is searched for its fused period.
  const SearchOptions unfused_search = options.search;
  options.search.bucket_alpha_s = inputs.alpha_s;
  if (!automatic) require_finite_periods(times, fixed_period, inputs.origin);
  const int period = automatic ? auto_period(times, algorithm, options, inputs.alpha_s) : fixed_period;

  struct Row {
    std::string name;
    PeriodTiming timing;
  };
  std::vector<Row> rows;
  for (const std::string& name : compared_strategy_names())
    rows.push_back({name, run_strategy(name, times, period, unfused_search).timing});
  const double ssgd_period = rows.at(0).timing.period_s;
  const double flsgd_period = rows.at(2).timing.period_s;
  const double spec_bound = spec_lower_bound_s(times, period);
  const double suffix_bound = suffix_lower_bound_s(times, period);
  const double unfused_bound = best_lower_bound_s(times, period);
  const double lower_bound = inputs.alpha_s ? fused_lower_bound_s(times, period, *inputs.alpha_s) : unfused_bound;

  PlanCandidate chosen = algorithm.plan(times, period, options.search);
  align_tied_layers(times, chosen.assignment);
  const Assignment planned = chosen.assignment;
  const int extra_syncs = options.fill_bubbles ? fill_bubbles(times, chosen.assignment) : 0;
  const PeriodTiming unfused_timing = time_assignment(times, chosen.assignment);
  std::optional<Buckets> buckets;
  if (inputs.alpha_s) buckets = fuse_buckets(times, chosen.assignment, *inputs.alpha_s);
  const PeriodTiming chosen_timing = buckets ? time_buckets(times, *buckets) : unfused_timing;
  Plan plan = plan_from_assignment(chosen.assignment, profile, times, chosen.algorithm);
  plan.predicted = prediction_from_timing(chosen_timing, lower_bound);
  if (buckets) plan.buckets = plan_buckets(*buckets, times);
  const double gap = lower_bound > 0 ? chosen_timing.period_s / lower_bound - 1.0 : 0.0;

  std::cout << "profile: " << describe_profile(profile, inputs.origin) << '\n';
  if (!options.sync.cluster_path.empty() || !options.sync.link_path.empty())
    std::cout << "all-reduce times: " << inputs.sync_times_text << '\n';
  std::cout << "period H = " << period << " iterations; times in seconds per period\n\n";
  std::vector<std::vector<std::string>> table = {
      {"strategy", "period_s", "mean_iteration_s", "total_wait_s", "vs_ssgd", "vs_flsgd"}};
  Json strategies = Json::object();
  for (const Row& row : rows) {
    const double mean = row.timing.period_s / period;
    table.push_back({row.name, seconds_text(row.timing.period_s), seconds_text(mean),
                     seconds_text(row.timing.total_wait_s()), ratio_text(ssgd_period / row.timing.period_s),
                     ratio_text(flsgd_period / row.timing.period_s)});
    strategies[row.name] = Json{{"period_s", row.timing.period_s},
                                {"mean_iteration_s", mean},
                                {"wait_s", row.timing.total_wait_s()},
                                {"speedup_over_ssgd", finite_or_null(ssgd_period / row.timing.period_s)},
                                {"speedup_over_flsgd", finite_or_null(flsgd_period / row.timing.period_s)}};
  }
  print_table(std::cout, table);
  std::cout << "\nlower bound: " << seconds_text(lower_bound) << " s per period ("
            << (buckets ? "for fused plans: suffix bound on sync times minus alpha; unfused " + seconds_text(unfused_bound) +
                              " s, "
                        : "suffix bound; ")
            << "SPEC section 5's: " << seconds_text(spec_bound) << " s)\n"
            << "chosen: " << chosen.algorithm
            << (chosen.algorithm != algorithm.name ? " (via --algorithm " + std::string(algorithm.name) + ")" : "")
            << ", period " << seconds_text(chosen_timing.period_s) << " s, gap to lower bound "
            << percent_text(gap) << '\n';
  Json pinned_names = Json::array();
  for (std::size_t j = 0; j < options.search.every_iteration.size(); ++j)
    if (options.search.every_iteration[j]) pinned_names.push_back(times.names[j]);
  if (!pinned_names.empty())
    std::cout << "every iteration (--every-iteration '" << options.every_iteration << "'): " << pinned_names.size()
              << " layers synced in all " << period << " iterations\n";
  std::size_t unfused_allreduces = 0;
  for (const auto& layers : chosen.assignment.iterations)
    for (const int j : layers) unfused_allreduces += has_allreduce(times, j) ? 1 : 0;
  if (buckets)
    std::cout << "bucket fusion (alpha " << seconds_text(buckets->alpha_s) << " s, " << inputs.alpha_text
              << "): " << allreduce_count(*buckets) << " all-reduces per period instead of " << unfused_allreduces
              << ", period " << seconds_text(chosen_timing.period_s) << " s (unfused "
              << seconds_text(unfused_timing.period_s) << " s)\n";
  if (options.fill_bubbles)
    std::cout << "bubble filling: " << extra_syncs << " extra syncs in idle link time, period unchanged ("
              << (times.size() + extra_syncs) << " syncs per period for " << times.size() << " layers)\n";

  std::cout << '\n';
  print_assignment(std::cout, times, chosen.assignment, planned, chosen_timing, buckets ? &*buckets : nullptr);

  OutputFiles outputs;
  outputs.add_json(options.output_path, plan_to_json(plan));
  if (!options.profile_out_path.empty()) outputs.add_json(options.profile_out_path, profile_to_json(inputs.model_profile));
  if (!options.report_path.empty()) {
    Json report;
    report["format"] = "syncplan.report/v1";
    report["model"] = profile.model ? Json(*profile.model) : Json(nullptr);
    report["profile"] = inputs.origin;
    report["period"] = period;
    report["strategies"] = std::move(strategies);
    report["lower_bound_period_s"] = lower_bound;
    report["lower_bounds"] = Json{{"spec_s", spec_bound}, {"suffix_s", suffix_bound}};
    report["chosen"] = Json{{"algorithm", chosen.algorithm},
                            {"requested_algorithm", algorithm.name},
                            {"period_s", chosen_timing.period_s},
                            {"gap_to_lower_bound", gap},
                            {"extra_syncs", extra_syncs}};
    if (buckets)
      report["chosen"]["buckets"] = Json{{"alpha_s", buckets->alpha_s},
                                         {"allreduces", allreduce_count(*buckets)},
                                         {"unfused_allreduces", unfused_allreduces},
                                         {"unfused_period_s", unfused_timing.period_s},
                                         {"unfused_lower_bound_period_s", unfused_bound}};
    if (!options.sync.cluster_path.empty()) report["cluster"] = options.sync.cluster_path;
    if (!options.sync.link_path.empty()) report["link"] = options.sync.link_path;
    report["sync_times"] = inputs.sync_times_text;
    report["period_chosen_by"] = automatic ? "auto" : "--period";
    report["every_iteration"] = pinned_names;
    if (automatic) report["max_overhead"] = options.max_overhead;
    outputs.add_json(options.report_path, report);
  }
  outputs.commit();
  std::cout << "plan written to " << options.output_path << '\n';
  if (!options.profile_out_path.empty()) std::cout << "profile written to " << options.profile_out_path << '\n';
  if (!options.report_path.empty()) std::cout << "report written to " << options.report_path << '\n';
  return 0;
}

}  // namespace

void add_plan_command(CLI::App& app, Action& action) {
  auto options = std::make_shared<PlanOptions>();
  CLI::App* plan = app.add_subcommand(
      "plan", "Plan which layers sync in which iteration of a period; prints a table comparing "
              "ssgd, wfbp, flsgd, plsgd-even, dreamddp, dp and search (seconds per period)");
  plan->add_option("--profile", options->profile_path, "syncplan.profile/v1 file (or --model)");
  CLI::Option* model = plan->add_option("--model", options->model.model,
                   "instead of --profile: a model spec (name in data/models, e.g. gpt2, or a file), profiled first "
                   "(see --device); needs --cluster or --link");
  plan->add_option("--batch", options->model.batch, "with --model: sequences per step and worker (default: 8)")
      ->check(CLI::Range(1LL, 1LL << 20))
      ->needs(model);
  plan->add_option("--seq", options->model.seq,
                   "with --model: tokens per sequence (default: the model's context, at most 1024)")
      ->check(CLI::Range(1LL, 1LL << 24))
      ->needs(model);
  CLI::Option* dtype = plan->add_option("--dtype", options->model.dtype,
                                        "with --model: fp32 or bf16 (default: bf16; fp32 with --device cpu)")
      ->check(CLI::IsMember({"fp32", "bf16"}))
      ->needs(model);
  plan->add_option("--device", options->model.device,
                   "with --model: estimate (roofline, data/gpus.json), cpu or cuda (measured), or auto: cuda when "
                   "this build has the CUDA profiler and sees a GPU, else the estimate (default: auto)")
      ->check(CLI::IsMember({"auto", "estimate", "cpu", "cuda"}))
      ->needs(model);
  plan->add_option("--profile-out", options->profile_out_path,
                   "with --model: also write the profile it made (syncplan.profile/v1), for simulate --profile")
      ->needs(model);
  plan->add_option("--gpu", options->model.gpu,
                   "with --model and an estimate: GPU name in data/gpus.json (default: H100-SXM)")
      ->needs(model);
  plan->add_option("--period", options->period,
                   "H: iterations per period, 1..10000, or 'auto': the smallest H whose planned wait is at most "
                   "--max-overhead of compute")->required();
  CLI::Option* max_overhead = plan->add_option("--max-overhead", options->max_overhead,
                   "with --period auto: the largest planned wait as a fraction of compute (e.g. 0.05)");
  plan->add_option("--every-iteration", options->every_iteration,
                   "regular expression (ECMAScript, matched anywhere in the name): layers to sync in every "
                   "iteration, e.g. 'ln_|wpe' (default: none)");
  plan->add_flag("--fill-bubbles", options->fill_bubbles,
                 "add extra syncs in idle link time that delay nothing (period unchanged; default: off)");
  plan->add_option("--algorithm", options->algorithm,
                   "plsgd-even, wfbp, dreamddp, dp, search or best (default: best, the lowest period found)");
  plan->add_option("--time-limit-s", options->search.time_limit_s,
                   "search: stop improving after this many seconds, in (0, 86400] (default: 1)");
  plan->add_option("--search-rounds", options->search.rounds,
                   "search: random perturbation rounds after the first descent, >= 0 (default: 30)");
  plan->add_option("--seed", options->seed_text, "search: random seed, a whole number >= 0 (default: 1)");
  plan->add_option("--cluster", options->sync.cluster_path,
                   "syncplan.cluster/v1 file: plan for its all-reduce times (see --sync-time) and take bucket "
                   "fusion's alpha from it (default: the profile's sync_s)");
  plan->add_option("--link", options->sync.link_path, kLinkHelp);
  CLI::Option* sync_time = plan->add_option("--sync-time", options->sync.sync_time, kSyncTimeHelp)
                               ->check(CLI::IsMember({"auto", "measured", "model"}));
  plan->add_flag("--fuse-buckets", options->fuse_buckets,
                 "group the layers of each iteration into buckets, one all-reduce each, where the start-up time "
                 "saved exceeds the delay (alpha-beta model; needs --cluster, --link or --alpha-s; default: off); "
                 "search and best then plan for the fused period");
  CLI::Option* alpha = plan->add_option("--alpha-s", options->alpha_s,
                   "with --fuse-buckets: all-reduce start-up time alpha in seconds (default: from --link or --cluster)");
  plan->add_option("-o,--output", options->output_path, "plan to write (syncplan.plan/v1 JSON)")->required();
  plan->add_option("--report", options->report_path,
                   "also write a JSON report: strategies' period_s, lower_bound_period_s, chosen plan");
  plan->callback([&action, options, sync_time, max_overhead, alpha, dtype] {
    options->dtype_given = dtype->count() > 0;
    options->max_overhead_given = max_overhead->count() > 0;
    options->alpha_given = alpha->count() > 0;
    options->sync.sync_time_given = sync_time->count() > 0;
    action = [options] { return run_plan(*options); };
  });
}

}  // namespace syncplan::cli
