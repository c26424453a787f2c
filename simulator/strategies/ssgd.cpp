// ssgd: S-SGD without overlap; period = H (F + B_L + U + sum c) (SPEC section 5); in the DES every
// layer's all-reduce is issued after backprop.
#include "simulator/strategies/strategies.hpp"

namespace syncplan {

StrategyResult run_ssgd(const BackpropTimes& times, int period) {
  require_valid_period(period);
  return {time_unoverlapped(times, std::vector<bool>(period, true), /*after_update=*/false), {}};
}

SyncProgram ssgd_program(std::size_t layer_count, int period) {
  return all_layers_program(layer_count, period, IssuePoint::kAfterBackward, /*every_iteration=*/true);
}

SyncProgram ssgd_des_program(const DesStrategyContext&, const BackpropTimes& times, int period) {
  return ssgd_program(times.size(), period);
}

}  // namespace syncplan
