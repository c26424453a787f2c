// plsgd-even: partial sync, backprop order cut into H contiguous groups of ceil(L/H) layers.
#include "simulator/strategies/strategies.hpp"

namespace syncplan {

Assignment plsgd_even_assignment(std::size_t layer_count, int period) {
  require_valid_period(period);
  const std::size_t group = (layer_count + period - 1) / period;  // ceil(L/H)
  Assignment assignment;
  assignment.iterations.resize(period);
  for (std::size_t j = 0; j < layer_count; ++j)
    assignment.iterations[j / group].push_back(static_cast<int>(j));
  return assignment;
}

}  // namespace syncplan
