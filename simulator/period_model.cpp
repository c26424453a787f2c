// SPEC section 5 line by line: sync start = max(gradient ready, link free); wait; iteration time.
#include "simulator/period_model.hpp"

#include "core/errors.hpp"

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
  update_start_s.push_back(times.forward_total_s + times.backprop_s() + wait);
  period_s += iteration_s.back();
  syncs.push_back(std::move(events));
}

TieGroups tie_groups(const Profile& profile) {
  const std::size_t count = profile.layers.size();
  const auto backprop_index = [&](std::size_t forward) { return static_cast<int>(count - 1 - forward); };
  TieGroups ties;
  ties.owner.resize(count);
  ties.carrier.resize(count);
  for (std::size_t j = 0; j < count; ++j) ties.owner[j] = ties.carrier[j] = static_cast<int>(j);
  for (std::size_t i = 0; i < count; ++i)
    if (profile.layers[i].tied_to)
      if (const auto owner = profile.find(*profile.layers[i].tied_to))
        ties.owner[backprop_index(i)] = backprop_index(*owner);
  for (std::size_t j = 0; j < count; ++j)
    ties.carrier[ties.owner[j]] = std::max(ties.carrier[ties.owner[j]], static_cast<int>(j));
  for (std::size_t j = 0; j < count; ++j) ties.carrier[j] = ties.carrier[ties.owner[j]];
  return ties;
}

BackpropTimes backprop_times(const Profile& profile, const std::string& origin) {
  BackpropTimes times;
  const std::size_t count = profile.layers.size();
  double ready = 0;
  for (std::size_t j = 0; j < count; ++j) {
    const LayerProfile& layer = profile.layers[count - 1 - j];
    for (const auto& [field, value] : {std::pair{"backward_s", &layer.backward_s},
                                       std::pair{"sync_s", &layer.sync_s}})
      if (!value->has_value())
        throw InputError(origin + ": layer '" + layer.name + "': field '" + field +
                         "' is null; the period model needs it" +
                         (std::string(field) == "sync_s" ? " (or --cluster/--link to derive it from param_bytes)" : ""));
    times.names.push_back(layer.name);
    times.backward_s.push_back(*layer.backward_s);
    times.sync_s.push_back(*layer.sync_s);
    ready += *layer.backward_s;
    times.ready_s.push_back(ready);
    times.forward_total_s += layer.forward_s.value_or(0.0);
    times.update_total_s += layer.update_s.value_or(0.0);
  }
  // The owner's all-reduce moves to its tie group's carrier; the other members sync nothing.
  const TieGroups ties = tie_groups(profile);
  times.carrier = ties.carrier;
  const std::vector<double> own_sync(times.sync_s);
  for (std::size_t j = 0; j < count; ++j)
    times.sync_s[j] = ties.carrier[j] == static_cast<int>(j) ? own_sync[ties.owner[j]] : 0.0;
  if (!std::isfinite(times.backprop_s() + times.forward_total_s + times.update_total_s + times.sync_total_s()))
    throw InputError(origin + ": field 'layers': the times add up to more than a double can hold");
  return times;
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
      events.push_back({j, times.forward_total_s + start, times.forward_total_s + link_free, {}});
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

PlanPrediction prediction_from_timing(const PeriodTiming& timing, double lower_bound_period_s) {
  PlanPrediction prediction;
  prediction.period_s = timing.period_s;
  prediction.iteration_s = timing.iteration_s;
  prediction.wait_s = timing.wait_s;
  prediction.lower_bound_period_s = lower_bound_period_s;
  return prediction;
}

}  // namespace syncplan
