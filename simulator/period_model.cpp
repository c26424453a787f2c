// SPEC section 5 line by line: sync start = max(gradient ready, link free); wait; iteration time.
#include "simulator/period_model.hpp"

#include "core/errors.hpp"
#include "core/field_error.hpp"
#include "simulator/collectives.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <utility>

namespace syncplan {

double BackpropTimes::bucket_time_s(double bytes) const {
  SYNCPLAN_CHECK(bucket_time_by_bytes());
  return link ? link->time_s(bytes) : allreduce->time_s(bytes);
}

double BackpropTimes::bucket_least_s_per_byte() const {
  SYNCPLAN_CHECK(bucket_time_by_bytes());
  return link ? link->least_s_per_byte() : allreduce->least_s_per_byte();
}

double BackpropTimes::sync_total_s() const {
  return std::accumulate(sync_s.begin(), sync_s.end(), 0.0);
}

double PeriodTiming::total_wait_s() const {
  return std::accumulate(wait_s.begin(), wait_s.end(), 0.0);
}

void PeriodTiming::add_overlapped_iteration(const BackpropTimes& times, double link_end_s, std::vector<SyncEvent> events) {
  const double wait = std::max(0.0, link_end_s - times.backprop_s());
  wait_s.push_back(wait);
  iteration_s.push_back(times.compute_s() + wait);
  update_start_s.push_back(times.backward_start_s() + times.backprop_s() + wait);
  period_s += iteration_s.back();
  syncs.push_back(std::move(events));
}

BackpropTimes backprop_times(const DesLayers& layers, const std::vector<double>& sync_s, const std::string& origin) {
  SYNCPLAN_CHECK(sync_s.size() == layers.size());
  BackpropTimes times;
  double ready = 0;
  for (std::size_t j = 0; j < layers.size(); ++j) {
    times.names.push_back(layers.names[j]);
    times.backward_s.push_back(layers.backward_s[j]);
    times.sync_s.push_back(sync_s[j]);
    ready += layers.backward_s[j];
    times.ready_s.push_back(ready);
    times.forward_total_s += layers.forward_s[j];
    times.update_total_s += layers.update_s[j];
  }
  times.carrier = layers.carrier;
  times.forward_total_s += layers.unattributed_forward_s;
  times.unattributed_backward_s = layers.unattributed_backward_s;
  if (!std::isfinite(times.compute_s() + times.sync_total_s()))
    throw InputError(origin + ": field 'layers': the times add up to more than a double can hold");
  return times;
}

BackpropTimes backprop_times(const Profile& profile, const std::string& origin) {
  const DesLayers layers = des_layers(profile, origin, SyncTimeSource::kMeasured, LayerTimesUser::kPeriodModel);
  return backprop_times(layers, layers.sync_s, origin);
}

void require_finite_periods(const BackpropTimes& times, int period, const std::string& origin) {
  if (!std::isfinite(period * (times.compute_s() + times.sync_total_s())))
    throw InputError(origin + ": field 'layers': the times of H = " + std::to_string(period) +
                     " iterations add up to more than a double can hold");
}

double link_end_s(const BackpropTimes& times, std::span<const int> layers) {
  double link_free = 0;
  for (const int j : layers) link_free = std::max(times.ready_s[j], link_free) + times.sync_s[j];
  return link_free;
}

double iteration_wait_s(const BackpropTimes& times, std::span<const int> layers) {
  return std::max(0.0, link_end_s(times, layers) - times.backprop_s());
}

namespace {

// Section 13's rule on an assignment's delays: none, or one per sync with 0 <= d <= H - 1 - h.
void check_assignment_delays(const Assignment& assignment) {
  if (assignment.delays.empty()) return;
  const int period = assignment.period();
  SYNCPLAN_CHECK(static_cast<int>(assignment.delays.size()) == period);
  for (int h = 0; h < period; ++h) {
    SYNCPLAN_CHECK(assignment.delays[h].size() == assignment.iterations[h].size());
    for (const int d : assignment.delays[h]) SYNCPLAN_CHECK(d >= 0 && d <= period - 1 - h);
  }
}

}  // namespace

PeriodTiming time_assignment(const BackpropTimes& times, const Assignment& assignment) {
  check_assignment_delays(assignment);
  if (assignment.delayed()) return time_delayed(times, assignment);
  PeriodTiming timing;
  const int layer_count = static_cast<int>(times.size());
  for (const std::vector<int>& layers : assignment.iterations) {
    std::vector<SyncEvent> events;
    double link_free = 0;
    int previous = -1;
    for (const int j : layers) {
      SYNCPLAN_CHECK(j >= 0 && j < layer_count && j > previous);
      previous = j;
      const double start = std::max(times.ready_s[j], link_free);
      link_free = start + times.sync_s[j];
      events.push_back({j, times.backward_start_s() + start, times.backward_start_s() + link_free, {}});
    }
    timing.add_overlapped_iteration(times, link_free, std::move(events));
  }
  return timing;
}

namespace {

// Section 13's schedule of a delayed assignment, in seconds from the period's start.
struct DelayedPeriodSchedule {
  std::vector<double> start_s;                   // T_h
  std::vector<double> update_s;                  // update_h: when iteration h's step starts
  std::vector<std::vector<double>> sync_start_s;  // per sync of iterations[h]
  std::vector<std::vector<double>> sync_end_s;
};

DelayedPeriodSchedule delayed_period_schedule(const BackpropTimes& times, const Assignment& assignment) {
  const int period = assignment.period();
  const int layer_count = static_cast<int>(times.size());
  check_assignment_delays(assignment);
  DelayedPeriodSchedule schedule;
  // due[k]: the latest end of the syncs applied before the step of iteration k.
  std::vector<double> due(period, -INFINITY);
  double iteration_start = 0;  // T_h
  double link_free = 0;        // the FIFO link runs on across iterations
  for (int h = 0; h < period; ++h) {
    const std::vector<int>& layers = assignment.iterations[h];
    const double backprop_start = iteration_start + times.backward_start_s();  // A_h
    schedule.start_s.push_back(iteration_start);
    schedule.sync_start_s.emplace_back();
    schedule.sync_end_s.emplace_back();
    int previous = -1;
    for (std::size_t i = 0; i < layers.size(); ++i) {
      const int j = layers[i];
      const int delay = assignment.delay(h, i);
      SYNCPLAN_CHECK(j >= 0 && j < layer_count && j > previous);
      previous = j;
      const double ready = backprop_start + times.ready_s[j];
      if (times.sync_s[j] == 0) {  // no all-reduce (frozen, tied, no parameters): not on the link
        schedule.sync_start_s.back().push_back(ready);
        schedule.sync_end_s.back().push_back(ready);
        continue;
      }
      const double start = std::max(ready, link_free);
      link_free = start + times.sync_s[j];
      due[h + delay] = std::max(due[h + delay], link_free);
      schedule.sync_start_s.back().push_back(start);
      schedule.sync_end_s.back().push_back(link_free);
    }
    const double update = std::max(backprop_start + times.backprop_s(), due[h]);
    schedule.update_s.push_back(update);
    iteration_start = update + times.update_total_s;  // T_(h+1)
  }
  return schedule;
}

}  // namespace

PeriodTiming time_delayed(const BackpropTimes& times, const Assignment& assignment) {
  const DelayedPeriodSchedule schedule = delayed_period_schedule(times, assignment);
  PeriodTiming timing;
  for (int h = 0; h < assignment.period(); ++h) {
    const double iteration_start = schedule.start_s[h];
    const double wait = schedule.update_s[h] - (iteration_start + times.backward_start_s() + times.backprop_s());
    timing.wait_s.push_back(wait);
    timing.iteration_s.push_back(times.compute_s() + wait);
    timing.update_start_s.push_back(schedule.update_s[h] - iteration_start);
    timing.period_s += timing.iteration_s.back();
    std::vector<SyncEvent> events;
    for (std::size_t i = 0; i < assignment.iterations[h].size(); ++i)
      events.push_back({assignment.iterations[h][i], schedule.sync_start_s[h][i] - iteration_start,
                        schedule.sync_end_s[h][i] - iteration_start, {}});
    timing.syncs.push_back(std::move(events));
  }
  return timing;
}

Assignment choose_delays(const BackpropTimes& times, Assignment assignment, int max_delay) {
  Assignment delayed = with_max_delays(std::move(assignment), max_delay);
  const DelayedPeriodSchedule schedule = delayed_period_schedule(times, delayed);
  // update_s ascends (each step starts at least a whole compute after the one before), so the
  // first step at or after a sync's end is a binary search among its allowed iterations.
  for (int h = 0; h < delayed.period(); ++h)
    for (std::size_t i = 0; i < delayed.iterations[h].size(); ++i) {
      const auto first = schedule.update_s.begin() + h;
      const auto allowed_end = first + delayed.delays[h][i] + 1;
      const auto at = std::lower_bound(first, allowed_end, schedule.sync_end_s[h][i]);
      SYNCPLAN_CHECK(at != allowed_end);  // the largest delay's step waited for it
      delayed.delays[h][i] = static_cast<int>(at - first);
    }
  return delayed;
}

Assignment with_max_delays(Assignment assignment, int max_delay) {
  SYNCPLAN_CHECK(max_delay >= 0);
  const int period = assignment.period();
  assignment.delays.assign(period, {});
  for (int h = 0; h < period; ++h)
    assignment.delays[h].assign(assignment.iterations[h].size(), std::min(max_delay, period - 1 - h));
  return assignment;
}

Assignment assignment_from_plan(const Plan& plan, const BackpropTimes& times, const std::string& origin) {
  SYNCPLAN_CHECK(plan.layers.size() == times.size());
  // Per iteration, (backprop index, delay) pairs sorted by index.
  std::vector<std::vector<std::pair<int, int>>> syncs(plan.period);
  for (std::size_t i = 0; i < plan.layers.size(); ++i)
    for (std::size_t s = 0; s < plan.layers[i].sync_iterations.size(); ++s)
      syncs.at(plan.layers[i].sync_iterations[s])
          .emplace_back(static_cast<int>(times.backprop_index(i)), plan.layers[i].delay(s));
  Assignment assignment;
  const bool delayed = plan.max_delay() > 0;
  for (auto& pairs : syncs) {
    std::sort(pairs.begin(), pairs.end());
    assignment.iterations.emplace_back();
    if (delayed) assignment.delays.emplace_back();
    for (const auto& [j, d] : pairs) {
      assignment.iterations.back().push_back(j);
      if (delayed) assignment.delays.back().push_back(d);
    }
  }
  for (std::size_t i = 0; i < plan.layers.size(); ++i) {
    const std::size_t j = times.backprop_index(i);
    if (times.carrier.empty() || times.carrier[j] == static_cast<int>(j)) continue;
    const std::size_t carrier_forward = times.size() - 1 - times.carrier[j];
    const LayerSchedule& layer = plan.layers[i];
    const LayerSchedule& carrier = plan.layers[carrier_forward];
    if (layer.sync_iterations != carrier.sync_iterations)
      throw InputError(origin + ": layer '" + layer.name + "' shares its parameters with '" + carrier.name +
                       "' (tied_to) and must sync in the same iterations");
    for (std::size_t s = 0; s < layer.sync_iterations.size(); ++s)
      if (layer.delay(s) != carrier.delay(s))
        throw InputError(origin + ": layer '" + layer.name + "' shares its parameters with '" + carrier.name +
                         "' (tied_to) and must sync with the same sync_delays");
  }
  return assignment;
}

void align_tied_layers(const BackpropTimes& times, Assignment& assignment) {
  for (int h = 0; h < assignment.period(); ++h) {
    const std::vector<int>& layers = assignment.iterations[h];
    // (layer, delay): a tied layer takes its carrier's delay.
    std::vector<std::pair<int, int>> aligned;
    for (std::size_t i = 0; i < layers.size(); ++i)
      if (times.carrier.empty() || times.carrier[layers[i]] == layers[i]) aligned.emplace_back(layers[i], assignment.delay(h, i));
    for (std::size_t j = 0; j < times.carrier.size(); ++j) {
      if (times.carrier[j] == static_cast<int>(j)) continue;
      const auto at = std::lower_bound(layers.begin(), layers.end(), times.carrier[j]);
      if (at != layers.end() && *at == times.carrier[j])
        aligned.emplace_back(static_cast<int>(j), assignment.delay(h, static_cast<std::size_t>(at - layers.begin())));
    }
    std::sort(aligned.begin(), aligned.end());
    std::vector<int> indices, delays;
    for (const auto& [j, d] : aligned) {
      indices.push_back(j);
      delays.push_back(d);
    }
    assignment.iterations[h] = std::move(indices);
    if (!assignment.delays.empty()) assignment.delays[h] = std::move(delays);
  }
}

bool Assignment::delayed() const {
  for (const auto& row : delays)
    for (const int d : row)
      if (d > 0) return true;
  return false;
}

Plan plan_from_assignment(const Assignment& assignment, const Profile& profile,
                          const BackpropTimes& times, const std::string& algorithm) {
  SYNCPLAN_CHECK(profile.layers.size() == times.size());
  Plan plan;
  plan.model = profile.model;
  plan.period = assignment.period();
  plan.algorithm = algorithm;
  std::vector<std::vector<int>> by_backprop(times.size()), delays_by_backprop(times.size());
  const bool delayed = assignment.delayed();
  for (int h = 0; h < assignment.period(); ++h)
    for (std::size_t i = 0; i < assignment.iterations[h].size(); ++i) {
      by_backprop.at(assignment.iterations[h][i]).push_back(h);
      if (delayed) delays_by_backprop.at(assignment.iterations[h][i]).push_back(assignment.delay(h, i));
    }
  for (std::size_t i = 0; i < profile.layers.size(); ++i) {
    const std::size_t j = times.backprop_index(i);
    const std::size_t source = times.carrier.empty() ? j : times.carrier[j];
    SYNCPLAN_CHECK(!by_backprop[source].empty());
    plan.layers.push_back(LayerSchedule{profile.layers[i].name, by_backprop[source], delays_by_backprop[source]});
  }
  return plan;
}

void require_valid_period(long long period) {
  if (period < 1) throw FieldError("period", "period: must be >= 1, got " + std::to_string(period));
  if (period > kMaxPeriod)
    throw FieldError("period", "period: at most " + std::to_string(kMaxPeriod) + ", got " + std::to_string(period));
}

PeriodTiming time_unoverlapped(const BackpropTimes& times, const std::vector<bool>& after_compute,
                               bool after_update) {
  PeriodTiming timing;
  const double sync_start = times.backward_start_s() + times.backprop_s() +
                            (after_update ? times.update_total_s : 0.0);
  for (const bool syncs : after_compute) {
    std::vector<SyncEvent> events;
    double link_free = sync_start;
    if (syncs) {
      for (int j = 0; j < static_cast<int>(times.size()); ++j) {
        events.push_back({j, link_free, link_free + times.sync_s[j], {}});
        link_free += times.sync_s[j];
      }
    }
    const double wait = syncs ? times.sync_total_s() : 0.0;
    timing.wait_s.push_back(wait);
    timing.iteration_s.push_back(times.compute_s() + wait);
    timing.update_start_s.push_back(times.backward_start_s() + times.backprop_s() +
                                    (after_update ? 0.0 : wait));
    timing.period_s += timing.iteration_s.back();
    timing.syncs.push_back(std::move(events));
  }
  return timing;
}

PlanPrediction prediction_from_timing(const PeriodTiming& timing, double lower_bound_period_s) {
  PlanPrediction prediction;
  prediction.period_s = timing.period_s;
  prediction.iteration_s = timing.iteration_s;
  prediction.wait_s = timing.wait_s;
  prediction.lower_bound_period_s = lower_bound_period_s;
  return prediction;
}

}  // namespace syncplan
