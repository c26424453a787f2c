// `syncplan plan`: parse the options, run the planning job (planner/plan_job.hpp), print the
// comparison and the chosen plan, write the plan and report.
#include "core/errors.hpp"
#include "core/json_io.hpp"
#include "core/limits.hpp"
#include "core/report.hpp"
#include "planner/plan_job.hpp"
#include "tools/cli_common.hpp"
#include "tools/model_profile.hpp"

#include <algorithm>
#include <cmath>
#include <iostream>
#include <memory>

namespace syncplan::cli {

namespace {

struct PlanOptions {
  std::string profile_path, output_path, report_path, algorithm = "best";
  std::string profile_out_path;  // --profile-out: the profile --model made
  std::string period;
  SearchOptions search;
  ExactOptions exact{.node_limit = kDefaultProofNodes};  // --exact-nodes
  double prove_s = 0;  // --prove-s: the opt-in proof's seconds
  bool prove_s_given = false;
  bool fill_bubbles = false;
  std::string every_iteration;  // regular expression on layer names; empty: none pinned
  std::string seed_text = "1";
  double max_overhead = 0;   // with --period auto: planned wait / compute at most this (fraction)
  bool max_overhead_given = false;
  // Per-layer all-reduce times from a cluster or a link fit instead of the profile.
  SyncTimeOptions sync;
  // --model: profile a model spec first (the built-in default of the main job, SPEC section 1).
  ProfileOptions model{"", "", "auto", "", "", 8, 0};  // dtype and GPU: the defaults of `profile`
  // Bucket fusion (--fuse-buckets) and its all-reduce start-up time (--alpha-s; NaN: from --cluster).
  bool fuse_buckets = false;
  std::string fusion = "search";  // --fusion: search for the fused period, or fuse after planning
  bool fusion_given = false;
  double alpha_s = 0;
  bool alpha_given = false;
  bool exact_nodes_given = false;  // --exact-nodes on the command line
  int max_delay = 0;  // --max-delay: delayed averaging (docs/time-model.md section 13); 0: none
};

// The plan request's fields and the flags that set them.
constexpr std::initializer_list<FieldFlag> kPlanFlags = {
    {"period", "--period"},
    {"max_overhead", "--max-overhead"},
    {"algorithm", "--algorithm"},
    {"every_iteration", "--every-iteration"},
    {"search.time_limit_s", "--time-limit-s"},
    {"search.rounds", "--search-rounds"},
    {"search.patience", "--patience"},
    {"exact.node_limit", "--exact-nodes"},
    {"prove_s", "--prove-s"},
    {"bucket_alpha_s", "--alpha-s"},
    {"max_delay", "--max-delay"},
};

// The chosen plan, one row per iteration: how many layers sync (of which extra, from bubble
// filling), the output-most and input-most of them (backprop order), and the iteration's wait.
void print_assignment(std::ostream& out, const BackpropTimes& times, const Assignment& assignment,
                      const Assignment& planned, const PeriodTiming& timing, const Buckets* buckets) {
  std::vector<std::vector<std::string>> table = {
      {"iteration", "syncs", "extra", "first_synced (backprop order)", "last_synced", "wait_s"}};
  if (buckets) table[0].insert(table[0].begin() + 3, "buckets");
  // A delayed plan (docs/time-model.md section 13): the largest delay of each iteration's syncs.
  const bool delayed = assignment.delayed();
  // And where a step waits for syncs: the iterations whose delayed syncs it applies (h - d for a
  // sync of delay d), so that an iteration without syncs of its own that waits says for what.
  std::vector<std::string> applies(assignment.period());
  if (delayed) {
    table[0].insert(table[0].begin() + 3, "max_delay");
    table[0].insert(table[0].begin() + 4, "applies_syncs_of");
    for (int g = 0; g < assignment.period(); ++g) {
      std::vector<int> delays = assignment.delays[g];
      std::sort(delays.begin(), delays.end());
      delays.erase(std::unique(delays.begin(), delays.end()), delays.end());
      for (const int d : delays) {
        std::string& into = applies[g + d];
        into += (into.empty() ? "" : ",") + std::to_string(g);
      }
    }
    for (std::string& text : applies)
      if (text.empty()) text = "-";
  }
  for (int h = 0; h < assignment.period(); ++h) {
    const std::vector<int>& layers = assignment.iterations[h];
    // A run of iterations without syncs and with one wait (0, or a delayed sync's) is one row, "first-last".
    if (layers.empty()) {
      int last = h;
      while (last + 1 < assignment.period() && assignment.iterations[last + 1].empty() &&
             timing.wait_s[last + 1] == timing.wait_s[h] && applies[last + 1] == applies[h])
        ++last;
      table.push_back({last == h ? std::to_string(h) : std::to_string(h) + "-" + std::to_string(last),
                       "0", "0", "-", "-", seconds_text(timing.wait_s[h])});
      if (buckets) table.back().insert(table.back().begin() + 3, "0");
      if (delayed) {
        table.back().insert(table.back().begin() + 3, "-");
        table.back().insert(table.back().begin() + 4, applies[h]);  // "-" for a run (one applies at one step only)
      }
      h = last;
      continue;
    }
    table.push_back({std::to_string(h), std::to_string(layers.size()),
                     std::to_string(layers.size() - planned.iterations[h].size()), times.names[layers.front()],
                     times.names[layers.back()], seconds_text(timing.wait_s[h])});
    if (buckets) table.back().insert(table.back().begin() + 3, std::to_string(buckets->iterations[h].size()));
    if (delayed) {
      table.back().insert(table.back().begin() + 3,
                          std::to_string(*std::max_element(assignment.delays[h].begin(), assignment.delays[h].end())));
      table.back().insert(table.back().begin() + 4, applies[h]);
    }
  }
  print_table(out, table);
}

// plan --model: the model's profile, measured on the GPU when this build has the CUDA backend and
// sees a device, else the roofline estimate for --gpu (said so: an estimate is never a measurement).
Profile model_profile_for_plan(const PlanOptions& options) {
  if (!options.profile_path.empty()) throw InputError("--model: give either --profile or --model, not both");
  if (options.sync.cluster_path.empty() && options.sync.link_path.empty())
    throw InputError("--model: needs --cluster or --link for the all-reduce times (a model spec has none)");
  ProfileOptions profile_options = options.model;
  if (profile_options.device == "auto") {
    profile_options.device = cuda_profiling_available() ? "cuda" : "estimate";
    if (profile_options.device == "cuda") {
      std::cout << "profile: measured on the GPU (--device cuda)\n";
      profile_options.gpu.clear();  // --gpu names the estimate's GPU; a measurement needs none
    } else {
      std::cout << "profile: roofline estimate for "
                << (profile_options.gpu.empty() ? kDefaultEstimateGpu : profile_options.gpu)
                << ", not a measurement (no CUDA device in this build or machine; --gpu NAME chooses the GPU)\n";
    }
  }
  return make_model_profile(profile_options);
}

// The request from the options, before any file is read: flag combinations are checked here,
// values by validate_plan_request.
PlanRequest plan_request(const PlanOptions& options) {
  if (options.seed_text.empty() || options.seed_text.size() > 19 ||
      options.seed_text.find_first_not_of("0123456789") != std::string::npos)
    throw InputError("--seed: expected a whole number from 0 to 10^19 - 1, got '" + options.seed_text + "'");
  PlanRequest request;
  request.search = options.search;
  request.exact = options.exact;
  if (options.prove_s_given) request.prove_s = options.prove_s;
  request.search.seed = std::stoull(options.seed_text);
  const bool automatic = options.period == "auto";
  if (options.max_overhead_given) request.max_overhead = options.max_overhead;
  if (!automatic && options.max_overhead_given) throw InputError("--max-overhead: only with --period auto");
  if (automatic && !options.max_overhead_given)
    throw InputError("--max-overhead: required with --period auto, a fraction > 0 (e.g. 0.05 for 5%)");
  if (!automatic) request.period = checked_period(options.period);
  request.algorithm = options.algorithm;
  request.every_iteration = options.every_iteration;
  request.fill_bubbles = options.fill_bubbles;
  if (options.alpha_given) request.bucket_alpha_s = options.alpha_s + 0.0;  // -0 written as 0, not -0.0
  // Named by their flags here (validate_plan_request names the request's fields), before any file is read.
  if (options.max_delay > 0 && options.fuse_buckets)
    throw InputError("--max-delay: not with --fuse-buckets (a delayed-averaging plan has no buckets)");
  if (options.max_delay > 0 && options.fill_bubbles) throw InputError("--max-delay: not with --fill-bubbles");
  if (options.max_delay > 0 && automatic)
    throw InputError("--max-delay: needs a given --period, not 'auto' (the automatic period is chosen without delays)");
  request.max_delay = options.max_delay;
  with_flags(kPlanFlags, [&] { validate_plan_request(request); });
  if (options.alpha_given && !options.fuse_buckets) throw InputError("--alpha-s: only with --fuse-buckets");
  if (options.fusion_given && !options.fuse_buckets) throw InputError("--fusion: only with --fuse-buckets");
  request.fuse_after_planning = options.fusion == "after";
  // The exact method runs only for the table's proven algorithms (best), unfused and without
  // delays (docs/time-model.md 14).
  const Strategy* chosen = find_strategy(options.algorithm);
  const bool exact_runs = chosen && chosen->proven && !options.fuse_buckets && options.max_delay == 0;
  std::string proven;
  for (const Strategy& strategy : strategies())
    if (strategy.proven) proven += (proven.empty() ? "" : " or ") + std::string(strategy.name);
  for (const auto& [given, flag] : {std::pair{options.exact_nodes_given, "--exact-nodes"}, std::pair{options.prove_s_given, "--prove-s"}})
    if (given && !exact_runs)
      throw InputError(std::string(flag) + ": only with --algorithm " + proven +
                       ", without --fuse-buckets and --max-delay (the exact method runs for nothing else)");
  return request;
}

// The printout above the chosen plan: the comparison table, the bounds, the choice, and what
// pinning, fusion and bubble filling did.
// The comparison table: every compared strategy's period, mean iteration, wait and speedups.
void print_strategy_rows(const PlanOutcome& outcome) {
  const int period = outcome.period;
  std::cout << "period H = " << period << " iterations; times in seconds per period\n\n";
  std::vector<std::vector<std::string>> table = {
      {"strategy", "period_s", "mean_iteration_s", "total_wait_s", "vs_ssgd", "vs_flsgd"}};
  const double ssgd_period = outcome.strategy("ssgd").period_s;
  const double flsgd_period = outcome.strategy("flsgd").period_s;
  for (const auto& [name, timing] : outcome.strategies)
    table.push_back({name, seconds_text(timing.period_s), seconds_text(timing.period_s / period),
                     seconds_text(timing.total_wait_s()), format_ratio(ssgd_period / timing.period_s),
                     format_ratio(flsgd_period / timing.period_s)});
  print_table(std::cout, table);
}

// The "lower bound: ..." line: which bound the gap is measured against, and SPEC section 5's.
void print_lower_bound(const PlanOutcome& outcome) {
  const std::optional<Buckets>& buckets = outcome.buckets;
  const bool proven_by_exact = outcome.bound == LowerBoundKind::kExact;
  const bool relaxed = outcome.bound == LowerBoundKind::kRelaxed && outcome.relaxed;
  std::cout << "\nlower bound: "
            << seconds_text(buckets || proven_by_exact || relaxed ? outcome.lower_bound_s : outcome.unfused_lower_bound_s)
            << " s per period ("
            << (buckets ? std::string(outcome.times.link
                                          ? "for fused plans: suffix bound on the syncs' bytes at the link's least "
                                            "time per byte; unfused "
                                          : "for fused plans: suffix bound on sync times minus alpha; unfused ") +
                              seconds_text(outcome.unfused_lower_bound_s) + " s, "
                         : proven_by_exact ? "the optimum, proven by the exact method; suffix bound "
                                                        + seconds_text(outcome.suffix_lower_bound_s) + " s, "
                         : relaxed ? "the proven optimum with the " + std::to_string(outcome.relaxed->dropped_layers) +
                                         " syncs below " + format_shortest(100 * outcome.relaxed->fraction) +
                                         "% of the largest removed, docs/time-model.md section 14; suffix bound " +
                                         seconds_text(outcome.suffix_lower_bound_s) + " s, "
                                                  : "suffix bound; ")
            << "SPEC section 5's: " << seconds_text(outcome.spec_lower_bound_s) << " s)\n";
}

// With --max-delay: the bound of delayed plans and what the chosen plan may delay.
void print_delays(const PlanOutcome& outcome, const PlanOptions& options) {
  if (options.max_delay == 0) return;
  const int reach = std::min(options.max_delay, outcome.period - 1);  // the largest delay a sync can have
  std::cout << "bound of delayed plans: " << seconds_text(outcome.lower_bound_s) << " s per period (link limit "
            << seconds_text(outcome.link_limit_s) << " s; docs/time-model.md section 13)\n"
            << (reach == 0
                    ? "at H = 1 no sync can end in a later iteration of the period (--max-delay " +
                          std::to_string(options.max_delay) + " allows at most H - 1 = 0): the chosen plan has no delays\n"
                    : "the table's plans have no delays; the chosen plan is a delayed-averaging plan (--max-delay " +
                          std::to_string(options.max_delay) + ": a sync may end up to " + count_text(reach, "iteration") +
                          " after its own, applied as a correction" +
                          (reach < options.max_delay ? ", at most H - 1 = " + std::to_string(reach) + " within the period"
                                                     : "") +
                          ")\n");
}

// The "chosen: ..." line: the algorithm, its period and its gap, and why it is or is not proven.
void print_chosen(const PlanOutcome& outcome, const PlanOptions& options) {
  const bool delayed = options.max_delay > 0;
  std::cout << "chosen: " << outcome.chosen.algorithm
            << (outcome.chosen.algorithm != outcome.requested_algorithm
                    ? " (via --algorithm " + outcome.requested_algorithm + ")"
                    : "")
            << ", period " << seconds_text(outcome.timing.period_s) << " s, gap to "
            << (delayed ? "bound of delayed plans " : "lower bound ") << format_percent(outcome.gap_to_lower_bound)
            << (outcome.proven_optimal ? " (proven optimal)"
                : outcome.exact_run    ? " (exact method: not proven within " +
                                          count_text(outcome.exact_run->nodes, "node") +
                                          (outcome.proof_extended              ? ", then --prove-s " + format_shortest(options.prove_s) + ")"
                                           : outcome.exact_run->time_limited ? ", stopped by --time-limit-s)"
                                           : options.exact_nodes_given       ? ", --exact-nodes)"
                                                                             : ", the default budget; --prove-s S searches longer)")
                                       : "")
            << '\n';
}

void print_comparison(const PlanOutcome& outcome, const PlanOptions& options, const std::string& alpha_text) {
  print_strategy_rows(outcome);
  print_lower_bound(outcome);
  print_delays(outcome, options);
  print_chosen(outcome, options);
  const int period = outcome.period;
  const std::optional<Buckets>& buckets = outcome.buckets;
  if (!outcome.chosen_search)
    std::cout << "search: not run (--algorithm " << outcome.requested_algorithm
              << " does not search; best or search add its row)\n";
  if (const int cut = outcome.time_limited_searches(); cut > 0)
    std::cout << "search: stopped at its time limit (--time-limit-s " << format_short(options.search.time_limit_s, 0)
              << " for the whole command"
              << (outcome.auto_period ? ", at most " + format_short(kAutoSearchLimit_s, 2) + " s for each H tried" : "")
              << ") in " << cut << " of " << outcome.search_runs.size()
              << " runs, before the lower bound or convergence: the plans are the best found by then\n";
  if (!outcome.pinned_layers.empty())
    std::cout << "every iteration (--every-iteration '" << options.every_iteration
              << "'): " << outcome.pinned_layers.size() << " layers synced in all " << period << " iterations\n";
  if (buckets)
    std::cout << "bucket fusion (alpha " << seconds_text(buckets->alpha_s) << " s, " << alpha_text
              << "): " << allreduce_count(*buckets) << " all-reduces per period instead of "
              << outcome.unfused_allreduces << ", period " << seconds_text(outcome.timing.period_s) << " s (unfused "
              << seconds_text(outcome.unfused_timing.period_s) << " s)\n";
  const std::size_t layer_count = outcome.times.size();
  if (options.fill_bubbles)
    std::cout << "bubble filling: " << outcome.extra_syncs << " extra syncs in idle link time, period unchanged ("
              << (layer_count + outcome.extra_syncs) << " syncs per period for " << layer_count << " layers)\n";
}

int run_plan(const PlanOptions& options) {
  PlanRequest request = plan_request(options);
  if (options.profile_path.empty() && options.model.model.empty())
    throw InputError("plan: give --profile PROFILE.json, or --model NAME with --cluster or --link");
  check_output_paths({{"-o", options.output_path}, {"--report", options.report_path},
                      {"--profile-out", options.profile_out_path}},
                     {{"--profile", options.profile_path}, {"--cluster", options.sync.cluster_path},
                      {"--link", options.sync.link_path}});

  // The profile, and the sync times the plan is made for and the start-up time fusion assumes.
  request.origin = options.model.model.empty() ? options.profile_path : "--model " + options.model.model;
  Profile model_profile;  // --model: the profile made, as written by --profile-out
  if (!options.model.model.empty()) model_profile = model_profile_for_plan(options);
  // A model estimate is of an NCCL cluster: a cluster file that names no algorithm runs "auto".
  SyncTimeOptions sync = options.sync;
  if (!options.model.model.empty()) sync.unnamed_allreduce = AllreduceAlgorithm::kAuto;
  SyncTimes choice = options.model.model.empty() ? read_sync_times(options.profile_path, sync)
                                                 : read_sync_times(model_profile, request.origin, sync);
  request.times = sync_backprop_times(choice, request.origin);
  std::string alpha_text = options.alpha_given ? "--alpha-s" : choice.alpha_text;
  if (options.fuse_buckets && !options.alpha_given) request.bucket_alpha_s = choice.alpha_s;
  if (options.fuse_buckets && !request.bucket_alpha_s)
    throw InputError("--fuse-buckets: needs the all-reduce start-up time alpha: give --cluster, --link or --alpha-s");
  request.profile = std::move(choice.profile);

  const PlanOutcome outcome = with_flags(kPlanFlags, [&] { return run_plan_job(request); });
  // Fused, the dynamic program times a bucket of every layer an iteration syncs: ssgd's all.
  warn_about_link(choice, largest_allreduce_bytes(outcome.times, options.fuse_buckets));
  if (outcome.auto_period) {
    const AutoPeriod& automatic = *outcome.auto_period;
    std::cout << "period: H = " << automatic.period << " (--period auto): the smallest H whose planned wait, "
              << seconds_text(automatic.wait_s) << " s, is at most " << format_percent(*request.max_overhead)
              << " of the period's compute, " << seconds_text(automatic.compute_s) << " s (it is "
              << format_percent(automatic.overhead) << ")\n";
  }
  std::cout << "profile: " << describe_profile(request.profile, request.origin) << '\n';
  if (!options.sync.cluster_path.empty() || !options.sync.link_path.empty())
    std::cout << "all-reduce times: " << choice.text << '\n';
  print_comparison(outcome, options, alpha_text);
  std::cout << '\n';
  print_assignment(std::cout, outcome.times, outcome.chosen.assignment, outcome.planned, outcome.timing,
                   outcome.buckets ? &*outcome.buckets : nullptr);

  OutputFiles outputs;
  outputs.add_json(options.output_path, plan_to_json(outcome.plan), "-o,--output");
  if (!options.profile_out_path.empty()) outputs.add_json(options.profile_out_path, profile_to_json(model_profile), "--profile-out");
  if (!options.report_path.empty()) {
    PlanReport report = plan_report(outcome, request);
    if (!options.sync.cluster_path.empty()) report.cluster = options.sync.cluster_path;
    if (!options.sync.link_path.empty()) report.link = options.sync.link_path;
    report.sync_times = choice.text;
    outputs.add_json(options.report_path, report_to_json(report), "--report");
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
      "plan", "Plan which layers sync in which iteration of a period; prints a table comparing " +
                  join_names(compared_strategy_names()) + " (seconds per period)");
  plan->add_option("--profile", options->profile_path, "syncplan.profile/v1 file (or --model)");
  CLI::Option* model = plan->add_option("--model", options->model.model,
                   "instead of --profile: a model spec (name in data/models, e.g. gpt2, or a file), profiled first "
                   "(see --device); needs --cluster or --link");
  plan->add_option("--batch", options->model.batch, "with --model: sequences per step and worker (default: 8)")
      ->check(CLI::Range(std::int64_t{1}, limits::kMaxBatch))
      ->needs(model);
  plan->add_option("--seq", options->model.seq,
                   "with --model: tokens per sequence (default: the model's context, at most 1024)")
      ->check(CLI::Range(std::int64_t{1}, limits::kMaxSeq))
      ->needs(model);
  plan->add_option("--dtype", options->model.dtype,
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
                   "regular expression (RE2 syntax: linear-time matching, no backreferences or lookaround; "
                   "at most 4096 characters; matched anywhere in the name): layers to sync in every "
                   "iteration, e.g. 'ln_|wpe' (default: none)");
  plan->add_flag("--fill-bubbles", options->fill_bubbles,
                 "add extra syncs in idle link time that delay nothing (period unchanged; default: off)");
  plan->add_option("--algorithm", options->algorithm,
                   strategy_names_text(StrategyUse::kPlan) + " (default: best, the lowest period found)");
  plan->add_option("--time-limit-s", options->search.time_limit_s,
                   "search: a cap, stop improving after this many seconds, for all of the command's searches "
                   "together (the table's search row, best, each H of --period auto), in (0, 86400] (default: 1)");
  plan->add_option("--search-rounds", options->search.rounds,
                   "search: a cap, the most random perturbation rounds after the first descent, >= 0 (default: 1000)");
  plan->add_option("--patience", options->search.patience,
                   "search: converged after this many perturbation rounds in a row without a strict improvement, "
                   ">= 0 (default: 40)");
  plan->add_option("--seed", options->seed_text, "search: random seed, a whole number >= 0 (default: 1)");
  CLI::Option* exact_nodes = plan->add_option("--exact-nodes", options->exact.node_limit,
                   "with --algorithm best: the exact method's most branch-and-bound nodes, >= 1; it proves the plan "
                   "optimal or finds a shorter one on profiles of at most 96 layers to place, or 1024 where the "
                   "gap is above 1%; the relaxed bound's relaxations get half as many each (default: " +
                       std::to_string(kDefaultProofNodes) + ", tens of milliseconds; --prove-s adds a run limited by seconds only)");
  CLI::Option* prove_s = plan->add_option("--prove-s", options->prove_s,
                   "with --algorithm best: when the default budget leaves the plan unproven, run the exact method "
                   "again from the plan so far for up to this many seconds, in (0, 86400]: it proves the plan "
                   "optimal, finds a shorter one, or stops (default: off; the report's exact.budget says which ran)");
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
  CLI::Option* fusion = plan->add_option("--fusion", options->fusion,
                   "with --fuse-buckets: 'search' plans for the fused period (default), 'after' plans without "
                   "fusion and fuses the plan chosen, best choosing among its candidates by fused period "
                   "(about the cost of an unfused plan; what `whatif` does for best)")
                              ->check(CLI::IsMember({"search", "after"}));
  CLI::Option* alpha = plan->add_option("--alpha-s", options->alpha_s,
                   "with --fuse-buckets: all-reduce start-up time alpha in seconds (default: from --link or --cluster)");
  plan->add_option("--max-delay", options->max_delay,
                   "delayed averaging: a sync may end up to this many iterations after the one it starts in, "
                   "applied as a correction before that iteration's step (docs/time-model.md section 13); "
                   "0..9999, capped at H - 1 - h for iteration h; the chosen plan is then delayed-search's "
                   "(not with --fuse-buckets, --fill-bubbles or --period auto; default: 0, no delays)");
  plan->add_option("-o,--output", options->output_path, "plan to write (syncplan.plan/v1 JSON)")->required();
  plan->add_option("--report", options->report_path,
                   "also write a JSON report: strategies' period_s, lower_bound_period_s, chosen plan");
  plan->callback([&action, options, sync_time, max_overhead, alpha, fusion, exact_nodes, prove_s] {
    options->max_overhead_given = max_overhead->count() > 0;
    options->alpha_given = alpha->count() > 0;
    options->fusion_given = fusion->count() > 0;
    options->exact_nodes_given = exact_nodes->count() > 0;
    options->prove_s_given = prove_s->count() > 0;
    options->sync.sync_time_given = sync_time->count() > 0;
    action = [options] { return run_plan(*options); };
  });
}

}  // namespace syncplan::cli
