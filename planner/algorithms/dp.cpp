// dp: the exact optimum over contiguous groups in backprop order (docs/time-model.md, "dp").
//
// Every iteration costs F + B_L + U plus its wait, so the period is H (F + B_L + U) plus the sum of
// the groups' waits. With W(s, e) the wait of the block of backprop layers s..e-1 synced alone,
//   best[k][e] = min over s < e of best[k-1][s] + W(s, e),   best[0][0] = 0,
// and the answer is min over k <= min(H, L) of best[k][L] (fewer groups leave iterations empty).
// W(s, e) for all e is one left-to-right pass of the FIFO link from s, so each layer of the table
// costs O(L^2) and the whole search O(min(H, L) L^2) time and O(min(H, L) L) memory.
#include "planner/algorithm_table.hpp"

#include "simulator/strategy_table.hpp"

#include <algorithm>
#include <limits>

namespace syncplan {

PlanCandidate plan_dp(const BackpropTimes& times, int period) {
  require_valid_period(period);
  const int layer_count = static_cast<int>(times.size());
  const int max_groups = std::min(period, layer_count);
  const double backprop = times.backprop_s();
  constexpr double kUnreachable = std::numeric_limits<double>::infinity();

  // best[k][e]: least total wait of layers 0..e-1 in exactly k non-empty groups; start[k][e]: where
  // the last of those groups begins.
  std::vector<std::vector<double>> best(max_groups + 1,
                                        std::vector<double>(layer_count + 1, kUnreachable));
  std::vector<std::vector<int>> start(max_groups + 1, std::vector<int>(layer_count + 1, -1));
  best[0][0] = 0;
  for (int k = 1; k <= max_groups; ++k) {
    for (int s = k - 1; s < layer_count; ++s) {
      if (best[k - 1][s] == kUnreachable) continue;
      double link_free = 0;
      for (int e = s + 1; e <= layer_count; ++e) {
        const int j = e - 1;
        link_free = std::max(times.ready_s[j], link_free) + times.sync_s[j];
        const double total = best[k - 1][s] + std::max(0.0, link_free - backprop);
        if (total < best[k][e]) {
          best[k][e] = total;
          start[k][e] = s;
        }
      }
    }
  }
  int groups = 1;
  for (int k = 2; k <= max_groups; ++k)
    if (best[k][layer_count] < best[groups][layer_count]) groups = k;

  Assignment assignment;
  assignment.iterations.resize(period);
  for (int k = groups, e = layer_count; k > 0; --k) {
    const int s = start[k][e];
    for (int j = s; j < e; ++j) assignment.iterations[k - 1].push_back(j);
    e = s;
  }
  return {"dp", std::move(assignment)};
}

}  // namespace syncplan
