// best: the lowest period of dp, dreamddp, plsgd-even and search, each found through the strategy
// table (fused periods when a bucket alpha is set).
#include "planner/algorithms/algorithms.hpp"

#include "planner/strategy_table.hpp"
#include "simulator/bucket_fusion.hpp"

#include <algorithm>

namespace syncplan {

PlanCandidate plan_best(const BackpropTimes& times, int period, const SearchOptions& search) {
  PlanCandidate best;
  double best_period = 0;
  // search starts from dp and keeps only strict improvements: it wins only when it found better.
  for (const char* name : {"dp", "dreamddp", "plsgd-even", "search"}) {
    PlanCandidate candidate = find_strategy(name)->plan(times, period, search);
    const double candidate_period = time_planned(times, candidate.assignment, search.bucket_alpha_s).period_s;
    if (best.algorithm.empty() || candidate_period < best_period) {
      best = std::move(candidate);
      best_period = candidate_period;
    }
  }
  return best;
}

}  // namespace syncplan
