// The lower bounds on any plan's period (SPEC section 5, docs/time-model.md 6 and 12) and a plan's gap to one.
#include "planner/lower_bound.hpp"

#include "core/errors.hpp"
#include "simulator/bucket_fusion.hpp"
#include "simulator/period_model.hpp"

#include <algorithm>
#include <cmath>

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

double fused_lower_bound_s(const BackpropTimes& times, int period, double alpha_s) {
  require_valid_period(period);
  // A measured link's curve need not be monotone or have one start-up, nor an "auto" cluster's one
  // line: only the per-byte share of excess_sync_times is sure to hold for its buckets (docs/link.md).
  if (times.bucket_time_by_bytes()) return best_lower_bound_s(excess_sync_times(times, alpha_s), period);
  const double backprop = times.backprop_s();
  // A bucket holding layer j ends at or after B_j + c_j (fused_sync_s >= each member's c_j).
  double wait = 0;
  for (std::size_t j = 0; j < times.size(); ++j) wait = std::max(wait, times.ready_s[j] + times.sync_s[j] - backprop);
  // Threshold t = B_j: the layers ready at or after t need their excess e_j plus, in each iteration
  // that syncs any of them, one start-up of at least m_t = their least min(c, alpha); u such
  // iterations (1 <= u <= H) hide at most u (B_L - t), so the wait is at least
  // sum e + u (m_t - (B_L - t)), least at u = 1 or u = H.
  double suffix_excess = 0, least_startup = INFINITY;
  for (std::size_t j = times.size(); j-- > 0;) {
    if (has_allreduce(times, static_cast<int>(j))) {
      suffix_excess += std::max(times.sync_s[j] - alpha_s, 0.0);
      least_startup = std::min(least_startup, std::min(times.sync_s[j], alpha_s));
    }
    if (!std::isfinite(least_startup) || (j > 0 && times.ready_s[j - 1] == times.ready_s[j])) continue;
    const double per_iteration = least_startup - (backprop - times.ready_s[j]);
    wait = std::max(wait, suffix_excess + (per_iteration >= 0 ? per_iteration : period * per_iteration));
  }
  return std::max(period * times.compute_s() + wait, best_lower_bound_s(excess_sync_times(times, alpha_s), period));
}

double gap_to_lower_bound(double period_s, double bound_s) {
  if (bound_s == 0) return 0.0;
  const double gap = period_s / bound_s - 1.0;
  // Within rounding of 0 either way (a what-if page once showed a gap of
  // 9.54792e-15 where the plan met its bound): the plan meets the bound.
  if (std::fabs(gap) <= kGapRoundingRelative) return 0.0;
  if (gap > 0) return gap;
  throw InternalError("lower bound " + format_shortest(bound_s) + " s exceeds the plan's period " + format_shortest(period_s) +
                      " s: the bound does not hold (a bug)");
}

double link_limit_s(const BackpropTimes& times, int period) {
  require_valid_period(period);
  const double compute_bound = period * times.compute_s();
  // ready_s ascends: the first layer with a sync time is the first gradient the link can carry.
  for (std::size_t j = 0; j < times.size(); ++j)
    if (times.sync_s[j] > 0)
      return std::max(compute_bound, times.backward_start_s() + times.ready_s[j] + times.sync_total_s() +
                                         times.update_total_s);
  return compute_bound;
}

double delayed_lower_bound_s(const BackpropTimes& times, int period, int max_delay) {
  const double compute = times.compute_s();
  const double delay = std::min(max_delay, period - 1);
  double wait = 0;
  for (std::size_t j = 0; j < times.size(); ++j)
    if (times.sync_s[j] > 0)
      wait = std::max(wait, times.ready_s[j] + times.sync_s[j] - times.backprop_s() - delay * compute);
  return std::max(link_limit_s(times, period), period * compute + wait);
}

}  // namespace syncplan
