// The planning job (`syncplan plan` without its command line): compare the strategies, choose the
// period, plan with the requested algorithm, align tied layers, fill bubbles, fuse buckets, and
// return everything a printout, a plan file or a report needs.
#pragma once

#include "core/plan.hpp"
#include "core/profile.hpp"
#include "core/report.hpp"
#include "planner/strategy_table.hpp"
#include "simulator/bucket_fusion.hpp"

#include <array>
#include <optional>
#include <string>
#include <vector>

namespace syncplan {

/// Under an automatic period, the most each H's search may take (s), within the job's time limit.
inline constexpr double kAutoSearchLimit_s = 0.05;

/// The plan job's default proof budget (docs/time-model.md section 14, "Proof
/// budget"): the most branch-and-bound nodes of the exact method on the whole profile, and again
/// on each relaxation of the relaxed bound (kRelaxedFractions), so that default `plan` takes tens
/// of milliseconds on the hard family (bench_planner). Nodes, not seconds: the same plan and
/// bound on any machine.
inline constexpr long long kDefaultProofNodes = 20000;

/// The default budget is work rather than nodes: a node of the exact method costs O(layers to
/// place), so a profile with more than this many layers to place gets kDefaultProofNodes x this /
/// its layers (default_proof_nodes). A --exact-nodes given by the user is taken as it is.
inline constexpr int kProofBudgetLayers = 128;

/// The default proof budget (nodes, >= 1) for a profile with `placeable` layers to place:
/// kDefaultProofNodes up to kProofBudgetLayers layers, proportionally fewer beyond.
long long default_proof_nodes(int placeable);

/// The relaxed bound's relaxations in the order the plan job tries them: syncs below these
/// fractions of the largest removed, tightest (the highest bound) first (docs/time-model.md 14).
inline constexpr std::array<double, 3> kRelaxedFractions = {0.002, 0.01, 0.03};

/// The largest --max-delay: a delay never exceeds H - 1 <= kMaxPeriod - 1 (docs/time-model.md 13).
inline constexpr int kMaxDelay = kMaxPeriod - 1;

/// What to plan. Errors name these fields (FieldError: "period", "max_overhead", "algorithm",
/// "every_iteration", "search.time_limit_s", "search.rounds", "search.patience", "bucket_alpha_s",
/// "max_delay", "exact.node_limit", "exact.max_layers", "prove_s").
struct PlanRequest {
  Profile profile;      ///< gives the plan its model name and layer order (after the sync-time choice)
  std::string origin;   ///< names the profile in messages and the report (a path, or "--model NAME")
  /// Per-layer times to plan on (e.g. sync_backprop_times for a cluster); unset: the profile's own
  /// (backprop_times(profile, origin)).
  std::optional<BackpropTimes> times;
  std::optional<int> period;           ///< H in 1..kMaxPeriod; unset: automatic (max_overhead required)
  std::optional<double> max_overhead;  ///< automatic H: largest planned wait / compute, in (0, 100]
  std::string algorithm = "best";      ///< a plannable strategy of the table
  /// time_limit_s in (0, 86400] s, rounds >= 0, patience >= 0, seed; every_iteration, bucket_alpha_s and
  /// deadline are set by the job. time_limit_s bounds the job's whole search: every run of
  /// `search` in the job (the table's row, best's, the automatic period's) stops at one deadline,
  /// time_limit_s after the job starts.
  SearchOptions search;
  std::string every_iteration;         ///< RE2 regex matched anywhere in layer names (<= 4096 chars); empty: none pinned
  bool fill_bubbles = false;           ///< add extra syncs in idle link time (planner/fill.hpp)
  std::optional<double> bucket_alpha_s;  ///< fuse buckets with this all-reduce start-up time (s, 0..60)
  /// With bucket_alpha_s: plan without fusion (every search unfused, as the comparison table's
  /// plans) and fuse the plan chosen; `best` chooses among its candidates by their fused periods.
  /// No search weighs fusion, so the job costs about an unfused one (whatif's `best`); false: the chosen plan is searched for its fused period (`plan --fuse-buckets`).
  bool fuse_after_planning = false;
  /// Delayed averaging (docs/time-model.md section 13): TAU in 0..kMaxDelay; 0 (the default) plans
  /// as sections 2-12. With TAU >= 1 the chosen plan is plan_delayed's (algorithm "delayed-search",
  /// delays d <= min(TAU, H - 1 - h)), started from the requested algorithm's plan and best's
  /// candidates, and its gap is to delayed_lower_bound_s. Needs a given period; not with fill_bubbles or
  /// bucket_alpha_s.
  int max_delay = 0;
  /// With algorithm "best" and no bucket fusion: the exact method's limits (docs/time-model.md 14).
  /// It runs after best when the plan's gap to the suffix bound is not 0 and the profile has at
  /// most exact.always_layers layers to place, or at most exact.max_layers and a gap above
  /// exact.large_min_gap; a shorter plan it finds replaces best's. Unproven, the relaxed bound
  /// follows (kRelaxedFractions, exact.node_limit nodes each). Both also stop at the job's search
  /// deadline (search.time_limit_s). node_limit in 1..limits::kMaxExactNodes (default
  /// kDefaultProofNodes), max_layers >= 0.
  ExactOptions exact{.node_limit = kDefaultProofNodes};
  /// The opt-in proof (`plan --prove-s S`), in (0, 86400] s: when the budget of exact.node_limit
  /// leaves the plan unproven, the exact method runs again on the whole profile from the plan so
  /// far, limited by prove_s seconds only (and limits::kMaxExactNodes). Unset: no such run.
  std::optional<double> prove_s;
};

/// How the automatic period was chosen.
struct AutoPeriod {
  int period = 1;        ///< the smallest H whose planned wait is at most max_overhead of compute
  double wait_s = 0;     ///< that plan's total wait over the period (s)
  double compute_s = 0;  ///< H (F + B_L + U) (s)
  double overhead = 0;   ///< wait_s / compute_s (a fraction)
};

/// One row of the comparison: a strategy's period-model timing.
struct StrategyTiming {
  std::string name;
  PeriodTiming timing;
};

/// Which lower bound a plan's gap is measured against.
enum class LowerBoundKind {
  kSuffix,   ///< "suffix": best_lower_bound_s, the suffix bound (docs/time-model.md section 6)
  kFused,    ///< "fused": fused_lower_bound_s, for fused plans (section 12)
  kDelayed,  ///< "delayed": delayed_lower_bound_s, for delayed-averaging plans (section 13)
  kExact,    ///< "exact": the optimum the exact method proved (section 14)
  kRelaxed,  ///< "relaxed": the proven optimum with the smallest syncs removed (RelaxedBound, section 14)
};

/// The bound's name: "suffix", "fused", "delayed", "exact" or "relaxed".
const char* to_string(LowerBoundKind kind);

/// What the job found.
struct PlanOutcome {
  BackpropTimes times;                   ///< the per-layer times planned on
  int period = 1;                        ///< H
  std::optional<AutoPeriod> auto_period; ///< set when H was chosen automatically
  std::vector<StrategyTiming> strategies;  ///< the compared strategies, table order, unfused
  double spec_lower_bound_s = 0;         ///< SPEC section 5's bound (s)
  double suffix_lower_bound_s = 0;       ///< the suffix bound (s)
  double unfused_lower_bound_s = 0;      ///< best_lower_bound_s (s)
  double link_limit_s = 0;               ///< section 13's link limit (s), link_limit_s
  /// The bound for the chosen plan: fused when buckets are set, delayed_lower_bound_s (at least
  /// link_limit_s) for a delayed plan (s)
  double lower_bound_s = 0;
  /// Which bound lower_bound_s is (its name in the plan's `predicted.lower_bound`: to_string).
  LowerBoundKind bound = LowerBoundKind::kSuffix;
  std::optional<ExactRun> exact_run;     ///< set when the exact method ran (nodes: of its runs together)
  bool proof_extended = false;           ///< the opt-in proof (PlanRequest::prove_s) ran
  /// The node budget the default proof ran under (nodes): request.exact.node_limit, or
  /// default_proof_nodes of the profile when that is kDefaultProofNodes; 0 when no proof ran.
  long long proof_node_limit = 0;
  /// Set when the relaxed bound (docs/time-model.md section 14, "Dropped syncs") was proven: the
  /// optimum of the profile with every sync below `fraction` of the largest removed.
  std::optional<RelaxedBound> relaxed;
  /// The chosen plan is optimal: it meets lower_bound_s (gap 0, up to rounding), or the exact method
  /// proved it (among plans with the job's pinned layers) and lower_bound_s is its period.
  bool proven_optimal = false;
  std::string requested_algorithm;       ///< the algorithm asked for
  PlanCandidate chosen;                  ///< the plan, tied layers aligned, bubbles filled
  Assignment planned;                    ///< the same before bubble filling
  int extra_syncs = 0;                   ///< syncs bubble filling added
  PeriodTiming unfused_timing;           ///< the chosen plan unfused
  PeriodTiming timing;                   ///< the chosen plan as written (fused when buckets are set)
  std::optional<Buckets> buckets;        ///< set when bucket_alpha_s was given
  std::size_t unfused_allreduces = 0;    ///< all-reduces per period before fusion
  std::vector<std::string> pinned_layers;  ///< every_iteration's matches, backprop order
  double gap_to_lower_bound = 0;         ///< gap_to_lower_bound(timing.period_s, lower_bound_s): >= 0
  /// Every run of `search` the job made, in order: one per period tried and per fused or unfused
  /// plan, shared by the comparison table's `search` row, `best` and the chosen plan. Empty when
  /// the algorithm does not search (dp, dreamddp, ...): `strategies` then has no `search` row.
  std::vector<SearchRun> search_runs;
  /// The run behind the chosen plan (`search`, or `best`'s search); unset when the algorithm does
  /// not search.
  std::optional<SearchRun> chosen_search;
  Plan plan;                             ///< the syncplan.plan/v1 document, with predicted and buckets

  /// How many of search_runs the time limit cut short (their plans are the best found by then).
  int time_limited_searches() const;
  /// The compared strategy called `name`'s timing; throws InternalError when it is not compared.
  const PeriodTiming& strategy(const std::string& name) const;
};

/// Checks the request's values that need no profile (period, max_overhead, algorithm, search
/// options, bucket_alpha_s): throws FieldError naming the field. run_plan_job calls it first.
void validate_plan_request(const PlanRequest& request);

/// Runs the job. Throws FieldError for the request's fields (see above), InputError naming the
/// profile for times whose periods overflow.
PlanOutcome run_plan_job(const PlanRequest& request);

/// The syncplan.report/v1 document of an outcome (cluster, link and sync_times left for the caller).
PlanReport plan_report(const PlanOutcome& outcome, const PlanRequest& request);

}  // namespace syncplan
