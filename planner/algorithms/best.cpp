// best: the lowest period of dp, dreamddp, plsgd-even and search, each found through the strategy
// table (fused periods when a bucket alpha is set), ties within a relative 1e-9 going to that order.
#include "planner/algorithms/algorithms.hpp"

#include "core/errors.hpp"
#include "planner/strategy_table.hpp"
#include "simulator/bucket_fusion.hpp"

#include <algorithm>

namespace syncplan {

PlanCandidate choose_best(const BackpropTimes& times, std::vector<PlanCandidate> candidates,
                          const std::optional<double>& alpha_s) {
  SYNCPLAN_CHECK(candidates.size() == kBestCandidates.size());
  std::size_t best = 0;
  double best_period = 0;
  std::optional<SearchRun> search_run;
  // search starts from dp and keeps only strict improvements: it wins only when it found better.
  for (std::size_t i = 0; i < candidates.size(); ++i) {
    if (candidates[i].search_run) search_run = candidates[i].search_run;
    const double period_s = time_planned(times, candidates[i].assignment, alpha_s).period_s;
    if (i == 0 || period_s < best_period * (1 - kBestTieRelative)) {  // an infinite best stays infinite and loses
      best = i;
      best_period = period_s;
    }
  }
  PlanCandidate winner = std::move(candidates[best]);
  winner.search_run = search_run;
  return winner;
}

PlanCandidate plan_best(const BackpropTimes& times, int period, const SearchOptions& search) {
  std::vector<PlanCandidate> candidates;
  for (const char* name : kBestCandidates) candidates.push_back(find_strategy(name)->plan(times, period, search));
  return choose_best(times, std::move(candidates), search.bucket_alpha_s);
}

}  // namespace syncplan
