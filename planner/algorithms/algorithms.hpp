// The planning algorithms, one file each in this folder (dreamddp, dp, search, best), and what they
// take and return; planner/strategy_table.cpp registers them with every other strategy.
#pragma once

#include "simulator/period_model.hpp"

#include <array>
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace syncplan {

/// Why `search` stopped (docs/time-model.md section 7).
enum class SearchStop {
  kBound,      ///< the plan met the lower bound: it is optimal
  kConverged,  ///< `patience` rounds in a row found no strict improvement
  kRounds,     ///< the round cap was reached (or there was nothing to search: H = 1 or no layer to move)
  kTimeLimit,  ///< the time limit (or the job's deadline) cut it short: the best plan so far
};

/// The name of a stop in reports and docs: "bound", "converged", "rounds", "time_limit".
const char* search_stop_name(SearchStop stop);

/// What one run of `search` did.
struct SearchRun {
  SearchStop stop = SearchStop::kRounds;
  int rounds = 0;        ///< perturbation rounds completed after the first descent
  double elapsed_s = 0;  ///< wall-clock time of the run (s)
};

/// A plan found by an algorithm; `algorithm` names the one that found it (for `best`, the winner).
struct PlanCandidate {
  std::string algorithm;
  Assignment assignment;
  /// Set by `search`, and by `best` (its search's run, whichever algorithm won).
  std::optional<SearchRun> search_run = std::nullopt;
};

/// Options of the planning algorithms (only `search` and `best` read all but every_iteration).
/// Rounds, not seconds, decide search's plan: the time limit is a cap a converged search misses.
struct SearchOptions {
  double time_limit_s = 1.0;  ///< a cap: stop improving after this long (s); the plan so far is kept
  int rounds = 1000;          ///< a cap: the most perturbation rounds after the first descent (>= 0)
  std::uint64_t seed = 1;     ///< the same seed gives the same plan when the time limit is not hit
  /// Layers (by backprop index) that sync in every iteration (pinned layers); every algorithm
  /// honors it: dp and search plan around them, the others get them added (with_pins).
  std::vector<bool> every_iteration;
  /// When set (bucket fusion): the all-reduce start-up time alpha (s, >= 0) with which the plan's
  /// iterations will be fused into buckets; `search` then minimizes the fused period
  /// (fused_iteration_wait_s) and `best` compares fused periods (docs/time-model.md section 12).
  std::optional<double> bucket_alpha_s;
  /// When set, `search` also stops at this instant: one deadline shared by every search of a
  /// `plan` job, so that time_limit_s bounds the job's whole search (planner/plan_job.hpp).
  std::optional<std::chrono::steady_clock::time_point> deadline = std::nullopt;
  /// Converged: `search` stops after this many perturbation rounds in a row without a strict
  /// improvement (>= 0; docs/time-model.md section 7 measures the default). Last, so that brace
  /// initializers of the fields above keep their meaning.
  int patience = 40;
  /// When set: dp's plan of this period with these pins (plan_dp(times, period, every_iteration)),
  /// which the caller already has (the `plan` job plans dp first): `search` starts from it instead
  /// of running dp again. Unset: search runs dp itself.
  std::optional<Assignment> dp_plan = std::nullopt;
};

/// The algorithms `best` compares, in its tie order (docs/time-model.md section 3).
inline constexpr std::array<const char*, 4> kBestCandidates = {"dp", "dreamddp", "plsgd-even", "search"};

/// Periods within this relative difference are a tie for `best` (and go to the earlier candidate
/// of kBestCandidates): the candidates sum the same times in different orders, so equal periods
/// differ by rounding (6e-15 s on a real profile), far below 1e-9 of a period.
inline constexpr double kBestTieRelative = 1e-9;

/// `candidate` with the pinned layers (`every_iteration`, backprop index) added to every iteration.
PlanCandidate with_pins(PlanCandidate candidate, const std::vector<bool>& every_iteration);

/// DreamDDP's depth-first search (arXiv 2502.11058, SPEC section 5's pseudocode), memoized on
/// (first unassigned layer, iteration); the link state follows the model exactly.
PlanCandidate plan_dreamddp(const BackpropTimes& times, int period);
/// Exact optimum over contiguous groups in backprop order (docs/time-model.md, "dp").
PlanCandidate plan_dp(const BackpropTimes& times, int period);
/// The same with the layers marked in `every_iteration` (backprop index) synced in every iteration
/// and the groups made of the others (docs/time-model.md section 10).
PlanCandidate plan_dp(const BackpropTimes& times, int period, const std::vector<bool>& every_iteration);

/// Free assignment (docs/time-model.md section 7): any layer to any iteration, starting from dp's
/// plan and keeping only strict improvements, so never worse than dp: a descent over relocations
/// and swaps, then seeded perturbation rounds until options.patience rounds in a row gain nothing
/// (or options.rounds ran). Deterministic for a seed, on any machine, unless options.time_limit_s
/// (or options.deadline) cuts it short; search_run says which of the bound, convergence, the
/// round cap or the time limit stopped it. Layers without an all-reduce (frozen, tied to another)
/// stay where dp put them: they change no wait.
PlanCandidate plan_search(const BackpropTimes& times, int period, const SearchOptions& options);
/// The lowest period any of dp, dreamddp, plsgd-even and search found (ties, within
/// kBestTieRelative, go to that order: choose_best),
/// fused when search.bucket_alpha_s is set. All throw FieldError "period: ..." when period < 1.
PlanCandidate plan_best(const BackpropTimes& times, int period, const SearchOptions& search = {});
/// best's choice among `candidates`, the plans of kBestCandidates in that order (4 entries): the
/// lowest period (fused with alpha_s when set), a later candidate winning only when its period is
/// lower by more than kBestTieRelative of the earlier one's. The winner carries the search
/// candidate's search_run. Throws InternalError when candidates is not 4 plans.
PlanCandidate choose_best(const BackpropTimes& times, std::vector<PlanCandidate> candidates,
                          const std::optional<double>& alpha_s);

/// The algorithm name of delayed-averaging plans (`plan --max-delay TAU`, TAU >= 1) in plans and
/// reports (docs/time-model.md section 13).
inline constexpr const char* kDelayedAlgorithm = "delayed-search";

/// Delayed averaging (docs/time-model.md section 13, "Planning"): which layers sync in which
/// iteration, timed with the largest delays d = min(max_delay, H - 1 - h), searched from a
/// link-filling greedy and the best of `starts` (plans of this period, e.g. the TAU = 0
/// strategies'; their delays are ignored) by relocations and swaps, then options.rounds seeded
/// perturbation rounds (options.seed; options.every_iteration pins layers), stopping at the bound
/// (delayed_lower_bound_s), after the rounds, or at options.time_limit_s / options.deadline; then
/// choose_delays. The period is never above the best start's under the largest delays, which is
/// never above its TAU = 0 period. Returns algorithm kDelayedAlgorithm with search_run set.
/// Throws FieldError "period: ..." when period is outside 1..kMaxPeriod, InternalError when
/// max_delay < 0 or a start has another period.
PlanCandidate plan_delayed(const BackpropTimes& times, int period, int max_delay,
                           const std::vector<Assignment>& starts, const SearchOptions& options);

}  // namespace syncplan

namespace syncplan {

/// Limits of the exact method (docs/time-model.md section 14). The defaults keep it to about a
/// quarter of a second on profiles it cannot finish (a node costs O(L + H log H)).
struct ExactOptions {
  int max_layers = 1024;        ///< most layers with a sync (not pinned) it takes on; more: not run
  long long node_limit = 1000000;  ///< most branch-and-bound nodes; reaching it: "not proven"
  /// When set, it also stops at this instant (checked every 1024 nodes, the first included): the
  /// `plan` job's search deadline (SearchOptions::deadline), which then bounds it too.
  std::optional<std::chrono::steady_clock::time_point> deadline = std::nullopt;
  /// The plan job's policy: it runs the method at any gap above 0 on profiles of at most this many
  /// layers to place, and on larger ones (up to max_layers) only when the gap to the suffix bound
  /// exceeds large_min_gap (a fraction), since a node costs O(L + H log H).
  int always_layers = 96;
  double large_min_gap = 0.01;
};

/// The relaxed bound's run: the exact method on the profile with its smallest syncs removed.
struct RelaxedBound {
  double fraction = 0;     ///< syncs below this fraction of the largest were removed
  int dropped_layers = 0;  ///< how many layers' syncs that removed
  long long nodes = 0;     ///< the exact method's nodes on that profile
  double period_s = 0;     ///< its proven optimum: a bound for every plan of the whole profile (s)
};

/// What relaxed_lower_bound found.
struct RelaxedResult {
  std::optional<RelaxedBound> bound;        ///< the first proven relaxation; unset: none proven
  /// The best plan the last run that improved on `incumbent` found (algorithm "exact"; the
  /// relaxation's optimum when proven): a plan of the whole profile too, with the removed layers
  /// where the exact method puts layers without a sync (block 0). Unset: no run improved.
  std::optional<PlanCandidate> candidate;
  bool time_limited = false;                ///< options.deadline cut a run short (then nothing more was tried)
  long long nodes = 0;                      ///< the nodes of all its runs together
};

/// The relaxed bound (docs/time-model.md section 14, "Dropped syncs"): for each fraction in
/// order, the layers whose sync_s is above 0 and below fraction x the largest sync_s get sync 0,
/// and plan_exact runs on that profile from `incumbent` within min(options.node_limit,
/// relaxed_nodes) nodes; the first relaxation it proves optimal gives the bound (its optimum's
/// period, s, on the relaxed profile): removing syncs never lengthens a plan, so it bounds every
/// plan of `times` with these pinned layers. Fractions that remove nothing are skipped. Throws
/// what plan_exact throws.
RelaxedResult relaxed_lower_bound(const BackpropTimes& times, int period, const std::vector<bool>& every_iteration,
                                  const PlanCandidate& incumbent, const ExactOptions& options,
                                  const std::vector<double>& fractions = {0.002, 0.01, 0.03},
                                  long long relaxed_nodes = 200000);

/// The layers the exact method places (docs/time-model.md section 14): those with a sync of their
/// own (sync_s > 0) that are not pinned (`every_iteration`, backprop index).
int exact_placeable_layers(const BackpropTimes& times, const std::vector<bool>& every_iteration);

/// What the exact method did.
struct ExactRun {
  bool ran = false;             ///< false when the profile has more than max_layers layers to place
  bool proven_optimal = false;  ///< the whole tree was searched: no plan is shorter by more than kBestTieRelative
  bool time_limited = false;    ///< the deadline cut it short
  bool improved = false;        ///< it found a plan shorter than the incumbent by more than kBestTieRelative
  long long nodes = 0;          ///< branch-and-bound nodes visited
};

/// The exact method's plan and run.
struct ExactResult {
  PlanCandidate candidate;  ///< algorithm "exact" when improved, else the incumbent as given
  ExactRun run;
};

/// Branch and bound over set partitions (docs/time-model.md section 14): under SPEC section 5 a
/// plan's period is H (F + B_L + U) plus the sum of its iterations' waits, the iterations are
/// interchangeable and syncing a layer twice never lowers a wait, so an optimal plan puts each layer
/// with a sync in exactly one of H blocks; pinned layers (`every_iteration`, backprop index) are in
/// every block, layers without a sync (frozen, tied non-carriers) change no wait and go to block 0.
/// Layers are placed in backprop order into blocks told apart only by their link-free time
/// (symmetry breaking); a node is pruned when a lower bound on its final total wait (the suffix
/// bound's water-filling over the blocks' link-free times, only over as many blocks as there are
/// layers left to receive, and the unplaced layers' overflows) comes within kBestTieRelative of
/// the incumbent's, or when a transposition table (a 128-bit fingerprint per node, at most 2^21
/// entries) shows an equivalent node searched with no more wait so far. `incumbent` (any plan of
/// `period` iterations) starts the search. Deterministic: nodes, not seconds, limit it.
ExactResult plan_exact(const BackpropTimes& times, int period, const std::vector<bool>& every_iteration,
                       const PlanCandidate& incumbent, const ExactOptions& options = {});

}  // namespace syncplan
