// The planning algorithms, one file each in this folder (dreamddp, dp, search, best), and what they
// take and return; planner/strategy_table.cpp registers them with every other strategy.
#pragma once

#include "simulator/period_model.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace syncplan {

/// A plan found by an algorithm; `algorithm` names the one that found it (for `best`, the winner).
struct PlanCandidate {
  std::string algorithm;
  Assignment assignment;
};

/// Options of the planning algorithms (only `search` and `best` read the first four).
struct SearchOptions {
  double time_limit_s = 1.0;  ///< stop improving after this long (s); the plan so far is kept
  int rounds = 30;            ///< perturbation rounds after the first descent
  std::uint64_t seed = 1;     ///< the same seed gives the same plan when the time limit is not hit
  /// Layers (by backprop index) that sync in every iteration (pinned layers); every algorithm
  /// honors it: dp and search plan around them, the others get them added (with_pins).
  std::vector<bool> every_iteration;
  /// When set (bucket fusion): the all-reduce start-up time alpha (s, >= 0) with which the plan's
  /// iterations will be fused into buckets; `search` then minimizes the fused period
  /// (fused_iteration_wait_s) and `best` compares fused periods (docs/time-model.md section 12).
  std::optional<double> bucket_alpha_s;
};

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
/// plan and keeping only strict improvements, so never worse than dp. Deterministic for a seed
/// unless options.time_limit_s cuts it short.
PlanCandidate plan_search(const BackpropTimes& times, int period, const SearchOptions& options);
/// The lowest period any of dp, dreamddp, plsgd-even and search found (ties go to that order),
/// fused when search.bucket_alpha_s is set. All throw FieldError "period: ..." when period < 1.
PlanCandidate plan_best(const BackpropTimes& times, int period, const SearchOptions& search = {});

}  // namespace syncplan
