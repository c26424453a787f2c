// The planning job (planner/plan_job.hpp): the steps `syncplan plan` runs, in order.
#include "planner/plan_job.hpp"

#include "core/errors.hpp"
#include "core/field_error.hpp"
#include "core/limits.hpp"
#include "planner/fill.hpp"
#include "planner/lower_bound.hpp"

#include <re2/re2.h>

#include <chrono>
#include <cmath>
#include <limits>
#include <string_view>
#include <utility>

namespace syncplan {

namespace {

// The largest bucket alpha: an all-reduce start-up of a minute is already far outside any network.
constexpr double kLongestAlpha_s = 60;
// The largest search time limit (s): a day.
constexpr double kLongestTimeLimit_s = 86400;
// The largest H the automatic period tries.
constexpr int kAutoMaxPeriod = 1000;

// The plans of one job at one period, each strategy planned once per bucket alpha (fused or not):
// the comparison table's rows, `best` and the chosen plan share them, so the job
// runs `search` once where they need the same plan (the time limit then bounds the job, not each
// use), and search starts from the job's dp plan. Records every search run in `runs`.
class JobPlans {
 public:
  JobPlans(const BackpropTimes& times, std::vector<SearchRun>& runs) : times_(times), runs_(runs) {}

  // Plans from now on are for `period`; those of another period are forgotten.
  void set_period(int period) {
    if (period != period_) plans_.clear();
    period_ = period;
  }

  // The plan of the plannable `strategy`; `best` chooses among its candidates' shared plans.
  PlanCandidate plan(const Strategy& strategy, const SearchOptions& options) {
    return plan(strategy, options, options.bucket_alpha_s);
  }

  // The same, `best` choosing by the candidates' periods fused with `choose_alpha_s` (unset:
  // unfused) whatever options.bucket_alpha_s their searches weighed (PlanRequest::fuse_after_planning).
  PlanCandidate plan(const Strategy& strategy, const SearchOptions& options, const std::optional<double>& choose_alpha_s) {
    if (!strategy.members.empty()) {  // a composite (best): its members' shared plans
      std::vector<PlanCandidate> candidates;
      for (const char* name : strategy.members) candidates.push_back(plan(*find_strategy(name), options));
      return choose_best(times_, std::move(candidates), choose_alpha_s);
    }
    const Key key{strategy.name, options.bucket_alpha_s};
    for (const auto& [known, candidate] : plans_)
      if (known == key) return candidate;
    // A search starts from another strategy's plan (search: dp's): the job's own, planned once.
    SearchOptions with_dp = options;
    if (strategy.starts_from) with_dp.dp_plan = plan(*find_strategy(strategy.starts_from), options).assignment;
    PlanCandidate candidate = strategy.plan(times_, period_, with_dp);
    if (candidate.search_run) runs_.push_back(*candidate.search_run);
    plans_.emplace_back(key, candidate);
    return candidate;
  }

 private:
  using Key = std::pair<std::string, std::optional<double>>;  // strategy, bucket alpha
  const BackpropTimes& times_;
  std::vector<SearchRun>& runs_;
  int period_ = 0;
  std::vector<std::pair<Key, PlanCandidate>> plans_;
};

// The smallest H whose planned wait is at most max_overhead of the period's compute (fewer local
// steps between averages is better for convergence). Leaves `plans` at that H, holding its plans.
AutoPeriod auto_period(const BackpropTimes& times, JobPlans& plans, const Strategy& algorithm, SearchOptions search,
                       double max_overhead, const std::optional<double>& alpha_s) {
  double best_overhead = std::numeric_limits<double>::infinity();
  int best_period = 1;
  // Up to kAutoMaxPeriod candidates: each search gets a small share of the time limit (and all
  // of them stop at the job's deadline).
  search.time_limit_s = std::min(search.time_limit_s, kAutoSearchLimit_s);
  for (int period = 1; period <= kAutoMaxPeriod; ++period) {
    plans.set_period(period);
    const PeriodTiming timing = time_planned(times, plans.plan(algorithm, search).assignment, alpha_s);
    const double compute = period * times.compute_s();
    const double overhead =
        compute > 0 ? timing.total_wait_s() / compute : (timing.total_wait_s() > 0 ? INFINITY : 0.0);
    if (overhead <= max_overhead) return {period, timing.total_wait_s(), compute, overhead};
    if (overhead < best_overhead) {
      best_overhead = overhead;
      best_period = period;
    }
  }
  throw FieldError("max_overhead", "max_overhead: no period H up to " + std::to_string(kAutoMaxPeriod) +
                                       " keeps the wait within " + format_percent(max_overhead) +
                                       " of compute (the least is " + format_percent(best_overhead) +
                                       " at H = " + std::to_string(best_period) + ")");
}

// The layers (backprop index) whose names match `pattern` anywhere (RE2, docs/time-model.md
// section 10). RE2 matches in time linear in the name and compiles within a memory budget, so no
// pattern can crash (std::regex recursed once per group or character: exit 139 on 20,000 nested
// groups) or backtrack for ever ('(a*)*b' took more than 20 s on an 18-character name).
std::vector<bool> pinned_layers(const BackpropTimes& times, const std::string& pattern) {
  if (pattern.empty()) return {};
  const std::string shown = pattern.size() > 64 ? pattern.substr(0, 64) + "..." : pattern;
  const auto refuse = [&](const std::string& why) {
    throw FieldError("every_iteration", "every_iteration: invalid regular expression '" + shown + "' (" + why + ")");
  };
  if (pattern.size() > limits::kLongestPattern)
    refuse("longer than " + std::to_string(limits::kLongestPattern) + " characters");
  RE2::Options options;
  options.set_log_errors(false);
  options.set_max_mem(limits::kPatternMemoryBytes);
  const RE2 expression(pattern, options);
  if (!expression.ok()) refuse(expression.error() + "; RE2 syntax: no backreferences or lookaround");
  double name_bytes = 0;
  for (const std::string& name : times.names) name_bytes += static_cast<double>(name.size());
  if (const double work = expression.ProgramSize() * name_bytes; work > limits::kPatternMatchWork)
    throw FieldError("every_iteration", "every_iteration: '" + shown + "' is too costly to match against this profile's " +
                                            "names (an automaton of " + std::to_string(expression.ProgramSize()) +
                                            " steps over " + format_shortest(name_bytes) + " bytes of names; at most " +
                                            format_shortest(limits::kPatternMatchWork) +
                                            " together): simplify it, e.g. fewer counted repetitions such as .{1000}");
  std::vector<bool> pinned(times.size(), false);
  bool any = false;
  for (std::size_t j = 0; j < times.size(); ++j) any |= pinned[j] = RE2::PartialMatch(times.names[j], expression);
  if (!any) throw FieldError("every_iteration", "every_iteration: '" + shown + "' matches no layer of the profile");
  return pinned;
}

// max_delay's range and the options it does not combine with (docs/time-model.md section 13).
void validate_max_delay(const PlanRequest& request) {
  const int tau = request.max_delay;
  if (tau < 0 || tau > kMaxDelay)
    throw FieldError("max_delay", "max_delay: must be a whole number of iterations from 0 to " +
                                      std::to_string(kMaxDelay) + ", got " + std::to_string(tau));
  if (tau == 0) return;
  if (request.fill_bubbles) throw FieldError("max_delay", "max_delay: not with bubble filling (fill_bubbles)");
  if (request.bucket_alpha_s) throw FieldError("max_delay", "max_delay: not with bucket fusion (bucket_alpha_s)");
  if (!request.period)
    throw FieldError("max_delay", "max_delay: needs a given period (the automatic one is chosen for delay 0)");
}

// With max_delay >= 1: the chosen plan becomes the delayed search's, started from the requested
// algorithm's plan and best's candidates (the job's plans: no search runs again), measured
// against the bound of delayed plans. Records the run.
void plan_delayed_averaging(PlanOutcome& outcome, JobPlans& plans, const PlanRequest& request,
                            const SearchOptions& search) {
  std::vector<Assignment> starts = {outcome.chosen.assignment};
  for (const char* name : kBestCandidates) starts.push_back(plans.plan(*find_strategy(name), search).assignment);
  outcome.chosen = plan_delayed(outcome.times, outcome.period, request.max_delay, starts, search);
  outcome.search_runs.push_back(*outcome.chosen.search_run);
  outcome.chosen_search = *outcome.chosen.search_run;
  outcome.lower_bound_s = delayed_lower_bound_s(outcome.times, outcome.period, request.max_delay);
}

// The exact method on best's plan (docs/time-model.md 14), when the plan is not already at the
// suffix bound: a shorter plan it finds is chosen; a proof makes the chosen period the bound.
// `always` (the opt-in proof, --prove-s) runs it whatever the profile's size and gap.
void prove_or_improve(PlanOutcome& outcome, const std::vector<bool>& pinned, const ExactOptions& options,
                      bool always = false) {
  const BackpropTimes& times = outcome.times;
  const double period_s = time_assignment(times, outcome.chosen.assignment).period_s;
  const double gap = gap_to_lower_bound(period_s, outcome.lower_bound_s);
  if (gap == 0) return;
  // Larger profiles cost more per node: searched only where the gap is worth it.
  const int placeable = exact_placeable_layers(times, pinned);
  if (!always && placeable > options.always_layers && gap <= options.large_min_gap) return;
  ExactResult exact = plan_exact(times, outcome.period, pinned, outcome.chosen, options);
  if (!exact.run.ran) return;
  if (outcome.exact_run) exact.run.nodes += outcome.exact_run->nodes;  // the opt-in proof's run adds to the first
  outcome.exact_run = exact.run;
  if (exact.run.improved) outcome.chosen = std::move(exact.candidate);
  if (!exact.run.proven_optimal) return;
  outcome.proven_optimal = true;
  // The optimum bounds every plan with these pinned layers; never below the suffix bound (which
  // the optimum meets or exceeds, up to rounding).
  outcome.lower_bound_s = std::max(outcome.lower_bound_s, time_assignment(times, outcome.chosen.assignment).period_s);
  outcome.bound = LowerBoundKind::kExact;
  outcome.relaxed.reset();
}

// The relaxed bound (docs/time-model.md section 14, "Dropped syncs", and "Proof budget") where
// the exact method did not prove the plan. The relaxations (kRelaxedFractions) are tried from the
// tightest (fewest syncs removed) to the loosest, each within half of options.node_limit nodes,
// until one is proven: its optimum bounds every plan of the whole profile. Every relaxation run's
// best plan that is better than its start, with the removed layers back in, is polished by
// search's descent on the whole profile (`search`'s deadline; no perturbation rounds) and
// becomes the chosen plan when shorter. A better chosen plan prunes sooner, so once one is proven,
// the tighter relaxations that were not are tried again from the improved plan, within what is
// left of 3/2 options.node_limit nodes for all runs together.
void apply_relaxed_bound(PlanOutcome& outcome, const std::vector<bool>& pinned, const ExactOptions& options,
                         const SearchOptions& search) {
  const BackpropTimes& times = outcome.times;
  const long long per_run = std::max(1LL, options.node_limit / 2);
  long long left = 3 * per_run;
  const auto period_of = [&](const Assignment& plan) { return time_assignment(times, plan).period_s; };
  // One relaxation run from the chosen plan; true when proven. Polishes what it found.
  const auto relax = [&](double fraction) {
    const RelaxedResult relaxed =
        relaxed_lower_bound(times, outcome.period, pinned, outcome.chosen, options, {fraction}, std::min(per_run, left));
    left -= relaxed.nodes;
    if (relaxed.candidate) {
      SearchOptions from = search;
      from.dp_plan = relaxed.candidate->assignment;
      from.rounds = 0;  // the descent alone: the perturbation rounds cost 10 ms here and gained nothing on the hard family
      PlanCandidate polished = plan_search(times, outcome.period, from);
      if (period_of(polished.assignment) < period_of(outcome.chosen.assignment) * (1 - kBestTieRelative)) {
        polished.algorithm = "exact";  // the exact optimum of a relaxation, then search's descent
        outcome.chosen = std::move(polished);
      }
    }
    if (!relaxed.bound) return false;
    if (relaxed.bound->period_s > outcome.lower_bound_s) {
      outcome.lower_bound_s = relaxed.bound->period_s;
      outcome.bound = LowerBoundKind::kRelaxed;
      outcome.relaxed = relaxed.bound;
    }
    return true;
  };
  // The chosen period when each relaxation was last tried: one tried from a longer plan than
  // today's may prove now.
  std::array<double, kRelaxedFractions.size()> tried_from;
  tried_from.fill(0);
  for (std::size_t k = 0; k < kRelaxedFractions.size() && left > 0; ++k) {
    tried_from[k] = period_of(outcome.chosen.assignment);
    if (!relax(kRelaxedFractions[k])) continue;
    for (std::size_t tighter = 0; tighter < k && left > 0; ++tighter)
      if (period_of(outcome.chosen.assignment) < tried_from[tighter] * (1 - kBestTieRelative) &&
          relax(kRelaxedFractions[tighter]))
        break;
    break;
  }
}

}  // namespace

long long default_proof_nodes(int placeable) {
  if (placeable <= kProofBudgetLayers) return kDefaultProofNodes;
  return std::max(1LL, kDefaultProofNodes * kProofBudgetLayers / placeable);
}

const PeriodTiming& PlanOutcome::strategy(const std::string& name) const {
  for (const StrategyTiming& row : strategies)
    if (row.name == name) return row.timing;
  throw InternalError("plan outcome: strategy '" + name + "' is not compared");
}

int PlanOutcome::time_limited_searches() const {
  int count = 0;
  for (const SearchRun& run : search_runs) count += run.stop == SearchStop::kTimeLimit ? 1 : 0;
  return count;
}

void validate_plan_request(const PlanRequest& request) {
  const SearchOptions& search = request.search;
  if (!(search.time_limit_s > 0 && search.time_limit_s <= kLongestTimeLimit_s))
    throw FieldError("search.time_limit_s", "search.time_limit_s: must be in (0, 86400] seconds");
  if (search.rounds < 0) throw FieldError("search.rounds", "search.rounds: must be >= 0");
  if (search.patience < 0) throw FieldError("search.patience", "search.patience: must be >= 0");
  if (request.exact.node_limit < 1 || request.exact.node_limit > limits::kMaxExactNodes)
    throw FieldError("exact.node_limit", "exact.node_limit: must be in 1.." + std::to_string(limits::kMaxExactNodes) +
                                             ", got " + std::to_string(request.exact.node_limit));
  if (request.prove_s && !(*request.prove_s > 0 && *request.prove_s <= kLongestTimeLimit_s))
    throw FieldError("prove_s", "prove_s: must be in (0, 86400] seconds, got " + format_shortest(*request.prove_s));
  if (request.exact.max_layers < 0)
    throw FieldError("exact.max_layers", "exact.max_layers: must be >= 0, got " + std::to_string(request.exact.max_layers));
  if (request.max_overhead && !(*request.max_overhead > 0 && *request.max_overhead <= 100))
    throw FieldError("max_overhead", "max_overhead: must be a fraction of compute in (0, 100], got " +
                                         format_shortest(*request.max_overhead));
  if (request.period && request.max_overhead)
    throw FieldError("max_overhead", "max_overhead: only with an automatic period");
  if (!request.period && !request.max_overhead)
    throw FieldError("max_overhead", "max_overhead: required with an automatic period, a fraction > 0 (e.g. 0.05 for 5%)");
  if (request.period) require_valid_period(*request.period);
  strategy_for(request.algorithm, StrategyUse::kPlan);
  if (request.bucket_alpha_s && !(*request.bucket_alpha_s >= 0 && *request.bucket_alpha_s <= kLongestAlpha_s))
    throw FieldError("bucket_alpha_s", "bucket_alpha_s: must be a number from 0 to " + format_shortest(kLongestAlpha_s) +
                                           " (seconds), got " + format_shortest(*request.bucket_alpha_s));
  validate_max_delay(request);
}

namespace {

// plan's comparison table: every compared strategy at `period`, unfused; plannable ones are the
// job's shared plans. A time-limited search (search) is in it only when the chosen algorithm
// searched (`searched`), so that the job's time limit is spent once (docs/time-model.md section 7).
std::vector<StrategyTiming> compare_strategies(const BackpropTimes& times, int period, JobPlans& plans,
                                               const SearchOptions& unfused_search, bool searched) {
  std::vector<StrategyTiming> rows;
  for (const std::string& name : compared_strategy_names()) {
    const Strategy& strategy = *find_strategy(name);
    if (!strategy.plannable()) {
      rows.push_back({name, strategy.run_period_model(times, period).timing});
      continue;
    }
    if (strategy.time_limited && !searched) continue;
    const PlanCandidate candidate = plans.plan(strategy, unfused_search);
    rows.push_back({name, time_assignment(times, candidate.assignment)});
  }
  return rows;
}

// The exact method on the chosen plan of a proven algorithm (best), unfused and undelayed: the
// default proof budget is nodes, not seconds; the whole profile first, then, unproven, the
// relaxations, whose polished optima may also shorten the plan; then the opt-in proof for up to
// prove_s seconds (docs/time-model.md section 14, "Proof budget").
void prove_chosen_plan(PlanOutcome& outcome, const PlanRequest& request, const SearchOptions& search,
                       const SearchOptions& unfused_search) {
  const BackpropTimes& times = outcome.times;
  // The default proof budget: nodes, not seconds (docs/time-model.md section 14, "Proof budget").
  ExactOptions exact = request.exact;
  exact.deadline = search.deadline;
  if (exact.node_limit == kDefaultProofNodes)
    exact.node_limit = default_proof_nodes(exact_placeable_layers(times, search.every_iteration));
  outcome.proof_node_limit = exact.node_limit;
  const auto unproven = [&] {
    return !outcome.proven_optimal &&
           gap_to_lower_bound(time_assignment(times, outcome.chosen.assignment).period_s, outcome.lower_bound_s) > 0;
  };
  // The whole profile first (docs/time-model.md section 14, "Proof budget"); unproven, the
  // relaxations, whose polished optima may also shorten the plan.
  prove_or_improve(outcome, search.every_iteration, exact);
  if (unproven()) apply_relaxed_bound(outcome, search.every_iteration, exact, unfused_search);
  // The opt-in proof: the exact method again from the plan so far, for up to prove_s seconds.
  if (request.prove_s && unproven()) {
    ExactOptions longer = request.exact;
    longer.node_limit = limits::kMaxExactNodes;  // the seconds limit it
    longer.deadline = std::chrono::steady_clock::now() +
                      std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                          std::chrono::duration<double>(*request.prove_s));
    outcome.proof_extended = true;
    prove_or_improve(outcome, search.every_iteration, longer, true);
  }
}

// The chosen plan made final: tied layers aligned, bubbles filled (request.fill_bubbles), fused
// into buckets (request.bucket_alpha_s), timed, written as a plan with its prediction and bound,
// and the pinned layers and all-reduces counted.
void finish_chosen_plan(PlanOutcome& outcome, const PlanRequest& request, const std::vector<bool>& every_iteration) {
  const BackpropTimes& times = outcome.times;
  align_tied_layers(times, outcome.chosen.assignment);
  outcome.planned = outcome.chosen.assignment;
  outcome.extra_syncs = request.fill_bubbles ? fill_bubbles(times, outcome.chosen.assignment) : 0;
  outcome.unfused_timing = time_assignment(times, outcome.chosen.assignment);
  if (request.bucket_alpha_s) outcome.buckets = fuse_buckets(times, outcome.chosen.assignment, *request.bucket_alpha_s);
  outcome.timing = outcome.buckets ? time_buckets(times, *outcome.buckets) : outcome.unfused_timing;
  outcome.plan = plan_from_assignment(outcome.chosen.assignment, request.profile, times, outcome.chosen.algorithm);
  outcome.plan.predicted = prediction_from_timing(outcome.timing, outcome.lower_bound_s);
  outcome.plan.predicted->lower_bound = to_string(outcome.bound);
  if (outcome.buckets) outcome.plan.buckets = plan_buckets(*outcome.buckets, times);
  outcome.gap_to_lower_bound = gap_to_lower_bound(outcome.timing.period_s, outcome.lower_bound_s);
  // A plan that meets a lower bound is optimal whichever bound it meets.
  outcome.proven_optimal = outcome.proven_optimal || outcome.gap_to_lower_bound == 0;

  for (std::size_t j = 0; j < every_iteration.size(); ++j)
    if (every_iteration[j]) outcome.pinned_layers.push_back(times.names[j]);
  for (const auto& layers : outcome.chosen.assignment.iterations)
    for (const int j : layers) outcome.unfused_allreduces += has_allreduce(times, j) ? 1 : 0;
}

}  // namespace

const char* to_string(LowerBoundKind kind) {
  switch (kind) {
    case LowerBoundKind::kSuffix: return "suffix";
    case LowerBoundKind::kFused: return "fused";
    case LowerBoundKind::kDelayed: return "delayed";
    case LowerBoundKind::kExact: return "exact";
    case LowerBoundKind::kRelaxed: return "relaxed";
  }
  return "";
}

PlanOutcome run_plan_job(const PlanRequest& request) {
  validate_plan_request(request);
  const Strategy& algorithm = strategy_for(request.algorithm, StrategyUse::kPlan);
  PlanOutcome outcome;
  outcome.requested_algorithm = algorithm.name;
  outcome.times = request.times ? *request.times : backprop_times(request.profile, request.origin);
  const BackpropTimes& times = outcome.times;
  const std::optional<double>& alpha_s = request.bucket_alpha_s;

  SearchOptions search = request.search;
  search.every_iteration = pinned_layers(times, request.every_iteration);
  // One deadline for every search of the job (validate_plan_request bounded the limit to a day).
  search.deadline = std::chrono::steady_clock::now() +
                    std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                        std::chrono::duration<double>(search.time_limit_s));
  // The table compares the strategies unfused; the chosen plan is searched for its fused period.
  search.bucket_alpha_s.reset();
  const SearchOptions unfused_search = search;
  if (!request.fuse_after_planning) search.bucket_alpha_s = alpha_s;
  JobPlans plans(times, outcome.search_runs);
  if (request.period) {
    require_finite_periods(times, *request.period, request.origin);
    outcome.period = *request.period;
    plans.set_period(outcome.period);
  } else {
    // The plans found at the chosen H are the job's plans there (not searched again).
    outcome.auto_period = auto_period(times, plans, algorithm, search, *request.max_overhead, alpha_s);
    outcome.period = outcome.auto_period->period;
  }
  const int period = outcome.period;

  // The chosen plan first: with fusion its (fused) search has the time left before the table's.
  outcome.chosen = plans.plan(algorithm, search, alpha_s);
  outcome.chosen_search = outcome.chosen.search_run;
  outcome.strategies = compare_strategies(times, period, plans, unfused_search, outcome.chosen_search.has_value());
  outcome.spec_lower_bound_s = spec_lower_bound_s(times, period);
  outcome.suffix_lower_bound_s = suffix_lower_bound_s(times, period);
  outcome.unfused_lower_bound_s = best_lower_bound_s(times, period);
  outcome.lower_bound_s = alpha_s ? fused_lower_bound_s(times, period, *alpha_s) : outcome.unfused_lower_bound_s;
  outcome.link_limit_s = link_limit_s(times, period);
  outcome.bound = alpha_s ? LowerBoundKind::kFused : LowerBoundKind::kSuffix;  // the suffix bound is never below SPEC's (time-model 6)
  if (!alpha_s && request.max_delay == 0 && algorithm.proven) prove_chosen_plan(outcome, request, search, unfused_search);
  if (request.max_delay > 0) {
    plan_delayed_averaging(outcome, plans, request, unfused_search);
    outcome.bound = LowerBoundKind::kDelayed;
  }

  finish_chosen_plan(outcome, request, search.every_iteration);
  return outcome;
}

PlanReport plan_report(const PlanOutcome& outcome, const PlanRequest& request) {
  PlanReport report;
  report.model = request.profile.model;
  report.profile = request.origin;
  report.period = outcome.period;
  const double ssgd_period = outcome.strategy("ssgd").period_s;
  const double flsgd_period = outcome.strategy("flsgd").period_s;
  for (const auto& [name, timing] : outcome.strategies)
    report.strategies.push_back({name, timing.period_s, timing.period_s / outcome.period, timing.total_wait_s(),
                                 ssgd_period / timing.period_s, flsgd_period / timing.period_s});
  report.lower_bound_period_s = outcome.lower_bound_s;
  report.spec_lower_bound_s = outcome.spec_lower_bound_s;
  report.suffix_lower_bound_s = outcome.suffix_lower_bound_s;
  report.link_limit_s = outcome.link_limit_s;
  report.chosen = {outcome.chosen.algorithm, outcome.requested_algorithm, outcome.timing.period_s,
                   outcome.gap_to_lower_bound, outcome.extra_syncs, std::nullopt};
  report.chosen.bound = to_string(outcome.bound);
  report.chosen.proven_optimal = outcome.proven_optimal;
  if (outcome.bound == LowerBoundKind::kExact) report.exact_lower_bound_s = outcome.lower_bound_s;
  if (outcome.relaxed && outcome.bound == LowerBoundKind::kRelaxed)
    report.relaxed = ReportRelaxed{outcome.relaxed->fraction, outcome.relaxed->dropped_layers, outcome.relaxed->nodes,
                                   outcome.relaxed->period_s};
  if (outcome.exact_run)
    report.exact = ReportExact{outcome.exact_run->nodes, outcome.proof_node_limit, outcome.exact_run->proven_optimal,
                               outcome.exact_run->improved, outcome.exact_run->time_limited,
                               outcome.proof_extended ? request.prove_s : std::nullopt};
  if (outcome.buckets)
    report.chosen.buckets = ReportBuckets{outcome.buckets->alpha_s, allreduce_count(*outcome.buckets),
                                          outcome.unfused_allreduces, outcome.unfused_timing.period_s,
                                          outcome.unfused_lower_bound_s};
  report.period_automatic = outcome.auto_period.has_value();
  report.every_iteration = outcome.pinned_layers;
  report.max_overhead = request.max_overhead;
  report.search = {request.search.time_limit_s, static_cast<int>(outcome.search_runs.size()), 0.0,
                   outcome.time_limited_searches(),
                   outcome.chosen_search ? search_stop_name(outcome.chosen_search->stop) : "none",
                   outcome.chosen_search ? outcome.chosen_search->rounds : 0};
  for (const SearchRun& run : outcome.search_runs) report.search.elapsed_s += run.elapsed_s;
  return report;
}

}  // namespace syncplan
