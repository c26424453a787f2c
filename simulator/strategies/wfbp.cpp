// wfbp: S-SGD with wait-free backprop; every layer in every iteration under the period model.
#include "simulator/strategies/strategies.hpp"

#include <numeric>

namespace syncplan {

Assignment wfbp_assignment(std::size_t layer_count, int period) {
  require_valid_period(period);
  std::vector<int> all(layer_count);
  std::iota(all.begin(), all.end(), 0);
  Assignment assignment;
  assignment.iterations.assign(period, all);
  return assignment;
}

}  // namespace syncplan
