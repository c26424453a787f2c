// Planning algorithms (one file each under algorithms/, one table) and the comparison of every
// strategy that `syncplan plan` prints.
#pragma once

#include "simulator/strategy_table.hpp"

#include <cstdint>
#include <optional>
#include <span>
#include <vector>
#include <string>
#include <vector>

namespace syncplan {

/// A plan found by an algorithm; `algorithm` names the one that found it (for `best`, the winner).
struct PlanCandidate {
  std::string algorithm;
  Assignment assignment;
};

/// Options of `search` (free assignment).
struct SearchOptions {
  double time_limit_s = 1.0;  ///< stop improving after this long (s); the plan so far is kept
  int rounds = 30;            ///< perturbation rounds after the first descent
  std::uint64_t seed = 1;     ///< the same seed gives the same plan when the time limit is not hit
  /// Layers (by backprop index) that sync in every iteration (`--every-iteration`); every
  /// algorithm honors it: dp and search plan around them, the others get them added.
  std::vector<bool> every_iteration;
  /// When set (--fuse-buckets): the all-reduce start-up time alpha (s, >= 0) with which the plan's
  /// iterations will be fused into buckets; `search` then minimizes the fused period
  /// (fused_iteration_wait_s) and `best` compares fused periods (docs/time-model.md section 12).
  std::optional<double> bucket_alpha_s;
};

/// One planning algorithm: its `--algorithm` name, a summary, and the function that plans a
/// period of `period` iterations (throws InputError when period < 1); only `search` and `best`
/// read the search options.
struct PlanAlgorithm {
  const char* name;
  const char* summary;
  PlanCandidate (*run)(const BackpropTimes& times, int period, const SearchOptions& search);

  PlanCandidate plan(const BackpropTimes& times, int period, const SearchOptions& search = {}) const {
    return run(times, period, search);
  }
};

/// plsgd-even, wfbp, dreamddp, dp, best.
std::span<const PlanAlgorithm> plan_algorithms();

/// The algorithm called `name`; throws InputError "--algorithm: unknown 'NAME' (choose from ...)".
const PlanAlgorithm& find_plan_algorithm(const std::string& name);

// The algorithms, one file each (algorithms/*.cpp).
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
/// fused when search.bucket_alpha_s is set.
PlanCandidate plan_best(const BackpropTimes& times, int period, const SearchOptions& search = {});

/// The strategies `syncplan plan` compares, in table order (SPEC section 5).
std::vector<std::string> compared_strategy_names();

/// Times any strategy or planning algorithm by name (simulator strategies and plan algorithms).
/// Throws InputError "--strategy: unknown 'NAME' (choose from ...)".
StrategyResult run_strategy(const std::string& name, const BackpropTimes& times, int period,
                            const SearchOptions& search = {});

/// True when run_strategy accepts `name`.
bool is_strategy_name(const std::string& name);

/// All names run_strategy accepts, comma-separated, for help texts and errors.
std::string strategy_names_text();

}  // namespace syncplan
