// dp: the exact optimum over contiguous groups in backprop order (docs/time-model.md, "dp").
//
// Every iteration costs F + B_L + U plus its wait, so the period is H (F + B_L + U) plus the sum of
// the groups' waits. With W(s, e) the wait of the block of backprop layers s..e-1 synced alone,
//   best[k][e] = min over s < e of best[k-1][s] + W(s, e),   best[0][0] = 0,
// and the answer is min over k <= min(H, L) of best[k][L] (fewer groups leave iterations empty).
// W(s, e) for all e is one left-to-right pass of the FIFO link from s, so each layer of the table
// costs O(L^2) and the whole search O(min(H, L) L^2) time and O(min(H, L) L) memory.
#include "planner/algorithms/algorithms.hpp"

#include "simulator/strategies/strategies.hpp"

#include <algorithm>
#include <limits>

namespace syncplan {

PlanCandidate plan_dp(const BackpropTimes& times, int period) { return plan_dp(times, period, {}); }

PlanCandidate plan_dp(const BackpropTimes& times, int period, const std::vector<bool>& every_iteration) {
  require_valid_period(period);
  // Pinned layers sync in every iteration; the groups partition the others (docs/time-model.md 10).
  std::vector<int> free, pinned;
  for (int j = 0; j < static_cast<int>(times.size()); ++j)
    (j < static_cast<int>(every_iteration.size()) && every_iteration[j] ? pinned : free).push_back(j);
  const int layer_count = static_cast<int>(free.size());
  const int max_groups = std::min(period, layer_count);
  const double backprop = times.backprop_s();
  constexpr double kUnreachable = std::numeric_limits<double>::infinity();
  const auto advance = [&](double link_free, int j) { return std::max(times.ready_s[j], link_free) + times.sync_s[j]; };
  double pins_only_wait = 0;  // an iteration that syncs only the pinned layers
  {
    double link_free = 0;
    for (const int p : pinned) link_free = advance(link_free, p);
    pins_only_wait = std::max(0.0, link_free - backprop);
  }

  // best[k][e]: least total wait of free layers 0..e-1 in exactly k non-empty groups; start[k][e]:
  // where the last of those groups begins.
  std::vector<std::vector<double>> best(max_groups + 1,
                                        std::vector<double>(layer_count + 1, kUnreachable));
  std::vector<std::vector<int>> start(max_groups + 1, std::vector<int>(layer_count + 1, -1));
  best[0][0] = 0;
  for (int k = 1; k <= max_groups; ++k) {
    for (int s = k - 1; s < layer_count; ++s) {
      if (best[k - 1][s] == kUnreachable) continue;
      double link_free = 0;
      std::size_t next_pin = 0;  // pinned layers before the block's layers run first (FIFO order)
      for (int e = s + 1; e <= layer_count; ++e) {
        const int j = free[e - 1];
        for (; next_pin < pinned.size() && pinned[next_pin] < j; ++next_pin) link_free = advance(link_free, pinned[next_pin]);
        link_free = advance(link_free, j);
        double end = link_free;  // pinned layers after j close the iteration
        for (std::size_t p = next_pin; p < pinned.size(); ++p) end = advance(end, pinned[p]);
        const double total = best[k - 1][s] + std::max(0.0, end - backprop);
        if (total < best[k][e]) {
          best[k][e] = total;
          start[k][e] = s;
        }
      }
    }
  }
  int groups = 0;
  double least = pinned.empty() || layer_count > 0 ? kUnreachable : period * pins_only_wait;
  for (int k = 1; k <= max_groups; ++k) {
    const double total = best[k][layer_count] + (period - k) * pins_only_wait;
    if (total < least) {
      least = total;
      groups = k;
    }
  }

  Assignment assignment;
  assignment.iterations.resize(period);
  for (int k = groups, e = layer_count; k > 0; --k) {
    const int s = start[k][e];
    for (int i = s; i < e; ++i) assignment.iterations[k - 1].push_back(free[i]);
    e = s;
  }
  for (auto& layers : assignment.iterations) {
    layers.insert(layers.end(), pinned.begin(), pinned.end());
    std::sort(layers.begin(), layers.end());
  }
  return {"dp", std::move(assignment)};
}

}  // namespace syncplan
