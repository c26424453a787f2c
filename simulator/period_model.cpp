// SPEC section 5 line by line: sync start = max(gradient ready, link free); wait; iteration time.
#include "simulator/period_model.hpp"

#include "core/errors.hpp"
#include "core/field_error.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace syncplan {

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

PeriodTiming time_assignment(const BackpropTimes& times, const Assignment& assignment) {
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

Assignment assignment_from_plan(const Plan& plan, const BackpropTimes& times, const std::string& origin) {
  SYNCPLAN_CHECK(plan.layers.size() == times.size());
  Assignment assignment;
  assignment.iterations.resize(plan.period);
  for (std::size_t i = 0; i < plan.layers.size(); ++i)
    for (const int h : plan.layers[i].sync_iterations)
      assignment.iterations.at(h).push_back(static_cast<int>(times.backprop_index(i)));
  for (auto& layers : assignment.iterations) std::sort(layers.begin(), layers.end());
  for (std::size_t i = 0; i < plan.layers.size(); ++i) {
    const std::size_t j = times.backprop_index(i);
    if (times.carrier.empty() || times.carrier[j] == static_cast<int>(j)) continue;
    const std::size_t carrier_forward = times.size() - 1 - times.carrier[j];
    if (plan.layers[i].sync_iterations != plan.layers[carrier_forward].sync_iterations)
      throw InputError(origin + ": layer '" + plan.layers[i].name + "' shares its parameters with '" +
                       plan.layers[carrier_forward].name + "' (tied_to) and must sync in the same iterations");
  }
  return assignment;
}

void align_tied_layers(const BackpropTimes& times, Assignment& assignment) {
  for (auto& layers : assignment.iterations) {
    std::vector<int> aligned;
    for (const int j : layers)
      if (times.carrier.empty() || times.carrier[j] == j) aligned.push_back(j);
    for (std::size_t j = 0; j < times.carrier.size(); ++j)
      if (times.carrier[j] != static_cast<int>(j) &&
          std::binary_search(layers.begin(), layers.end(), times.carrier[j]))
        aligned.push_back(static_cast<int>(j));
    std::sort(aligned.begin(), aligned.end());
    layers = std::move(aligned);
  }
}

Plan plan_from_assignment(const Assignment& assignment, const Profile& profile,
                          const BackpropTimes& times, const std::string& algorithm) {
  SYNCPLAN_CHECK(profile.layers.size() == times.size());
  Plan plan;
  plan.model = profile.model;
  plan.period = assignment.period();
  plan.algorithm = algorithm;
  std::vector<std::vector<int>> by_backprop(times.size());
  for (int h = 0; h < assignment.period(); ++h)
    for (const int j : assignment.iterations[h]) by_backprop.at(j).push_back(h);
  for (std::size_t i = 0; i < profile.layers.size(); ++i) {
    const std::size_t j = times.backprop_index(i);
    const auto& iterations = by_backprop[times.carrier.empty() ? j : times.carrier[j]];
    SYNCPLAN_CHECK(!iterations.empty());
    plan.layers.push_back(LayerSchedule{profile.layers[i].name, iterations});
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
