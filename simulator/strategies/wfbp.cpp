// wfbp: S-SGD with wait-free backprop; every layer in every iteration under the period model.
#include "simulator/strategy_table.hpp"

#include <numeric>

namespace syncplan {

StrategyResult run_wfbp(const BackpropTimes& times, int period) {
  require_valid_period(period);
  std::vector<int> all(times.size());
  std::iota(all.begin(), all.end(), 0);
  Assignment assignment;
  assignment.iterations.assign(period, all);
  return {time_assignment(times, assignment), assignment};
}

}  // namespace syncplan
