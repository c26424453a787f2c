// flsgd: full local SGD; period = H (F + B_L + U) + sum c, the average after the period's last step
// (SPEC section 5); in the DES every layer's all-reduce is issued after that step's update.
#include "simulator/strategies/strategies.hpp"

namespace syncplan {

StrategyResult run_flsgd(const BackpropTimes& times, int period) {
  require_valid_period(period);
  std::vector<bool> syncs(period, false);
  syncs.back() = true;
  return {time_unoverlapped(times, syncs, /*after_update=*/true), {}};
}

SyncProgram flsgd_program(std::size_t layer_count, int period) {
  return all_layers_program(layer_count, period, IssuePoint::kAfterUpdate, /*every_iteration=*/false);
}

SyncProgram flsgd_des_program(const DesStrategyContext&, const BackpropTimes& times, int period) {
  return flsgd_program(times.size(), period);
}

}  // namespace syncplan
