// SPEC section 5's lower bound, term by term.
#include "planner/lower_bound.hpp"

#include "simulator/strategy_table.hpp"

#include <algorithm>

namespace syncplan {

double spec_lower_bound_s(const BackpropTimes& times, int period) {
  require_valid_period(period);
  const double backprop = times.backprop_s();
  const double first_ready = times.size() ? times.ready_s.front() : 0.0;  // b_1
  const double link_capacity_term = times.sync_total_s() - period * (backprop - first_ready);
  double latest_layer_term = 0;
  for (std::size_t j = 0; j < times.size(); ++j)
    latest_layer_term = std::max(latest_layer_term, times.ready_s[j] + times.sync_s[j] - backprop);
  return period * times.compute_s() + std::max({link_capacity_term, latest_layer_term, 0.0});
}

double suffix_lower_bound_s(const BackpropTimes& times, int period) {
  require_valid_period(period);
  const double backprop = times.backprop_s();
  double wait = 0;
  // Threshold t = B_j, walking from the input-most layer: suffix holds every layer ready at >= t.
  double suffix_sync = 0;
  for (std::size_t j = times.size(); j-- > 0;) {
    suffix_sync += times.sync_s[j];
    if (j > 0 && times.ready_s[j - 1] == times.ready_s[j]) continue;  // same t: take the whole tie
    wait = std::max(wait, suffix_sync - period * (backprop - times.ready_s[j]));
  }
  double overflows = 0;
  for (std::size_t j = 0; j < times.size(); ++j)
    overflows += std::max(0.0, times.ready_s[j] + times.sync_s[j] - backprop);
  return period * times.compute_s() + std::max(wait, overflows);
}

double best_lower_bound_s(const BackpropTimes& times, int period) {
  return std::max(spec_lower_bound_s(times, period), suffix_lower_bound_s(times, period));
}

}  // namespace syncplan
