// flsgd: full local SGD; period = H (F + B_L + U) + sum c, the average after the period's last step
// (SPEC section 5).
#include "simulator/strategy_table.hpp"

namespace syncplan {

StrategyResult run_flsgd(const BackpropTimes& times, int period) {
  require_valid_period(period);
  std::vector<bool> syncs(period, false);
  syncs.back() = true;
  return {time_unoverlapped(times, syncs, /*after_update=*/true), {}};
}

}  // namespace syncplan
