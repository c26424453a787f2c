// ssgd: S-SGD without overlap; period = H (F + B_L + U + sum c) (SPEC section 5).
#include "simulator/strategy_table.hpp"

namespace syncplan {

StrategyResult run_ssgd(const BackpropTimes& times, int period) {
  require_valid_period(period);
  return {time_unoverlapped(times, std::vector<bool>(period, true), /*after_update=*/false), {}};
}

}  // namespace syncplan
