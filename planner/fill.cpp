// Bubble filling (docs/time-model.md section 8).
#include "planner/fill.hpp"

#include <algorithm>
#include <numeric>

namespace syncplan {

namespace {

// Start times of the syncs of `layers` (ascending backprop indices) under SPEC section 5's rule.
std::vector<double> sync_starts(const BackpropTimes& times, const std::vector<int>& layers) {
  std::vector<double> starts;
  double link_free = 0;
  for (const int j : layers) {
    starts.push_back(std::max(times.ready_s[j], link_free));
    link_free = starts.back() + times.sync_s[j];
  }
  return starts;
}

}  // namespace

int fill_bubbles(const BackpropTimes& times, Assignment& assignment) {
  const int layer_count = static_cast<int>(times.size());
  std::vector<int> syncs_per_period(layer_count, 0);
  for (const auto& layers : assignment.iterations)
    for (const int j : layers) ++syncs_per_period[j];
  int added = 0;
  for (auto& layers : assignment.iterations) {
    std::vector<int> candidates;
    for (int j = 0; j < layer_count; ++j)
      if (!std::binary_search(layers.begin(), layers.end(), j)) candidates.push_back(j);
    std::stable_sort(candidates.begin(), candidates.end(),
                     [&](int a, int b) { return syncs_per_period[a] < syncs_per_period[b]; });
    for (const int j : candidates) {
      if (times.sync_s[j] <= 0) continue;  // nothing to average or nothing measured: no gain shown
      const std::vector<double> before = sync_starts(times, layers);
      const double wait_before = iteration_wait_s(times, layers);
      std::vector<int> with = layers;
      const auto position = std::upper_bound(with.begin(), with.end(), j) - with.begin();
      with.insert(with.begin() + position, j);
      const std::vector<double> after = sync_starts(times, with);
      bool delays_nothing = iteration_wait_s(times, with) <= wait_before;
      for (std::size_t k = 0; k < before.size() && delays_nothing; ++k) {
        const std::size_t shifted = k < static_cast<std::size_t>(position) ? k : k + 1;
        delays_nothing = after[shifted] == before[k];
      }
      if (!delays_nothing) continue;
      layers = std::move(with);
      ++syncs_per_period[j];
      ++added;
    }
  }
  return added;
}

}  // namespace syncplan
