// syncplan.plan/v1 reading (checked against a profile) and writing.
#include "core/plan.hpp"

#include "core/errors.hpp"

#include <algorithm>
#include <limits>
#include <map>
#include <set>
#include <tuple>
#include <utility>

namespace syncplan {

namespace {

std::vector<double> read_seconds_array(const Json& value, const std::string& where,
                                       std::size_t expected_size) {
  if (!value.is_array()) throw InputError(where + ": expected an array, got " + json_type_name(value));
  if (value.size() != expected_size)
    throw InputError(where + ": expected " + std::to_string(expected_size) + " entries (one per "
                     "iteration), got " + std::to_string(value.size()));
  std::vector<double> out;
  for (std::size_t i = 0; i < value.size(); ++i)
    out.push_back(read_nonnegative_number(value[i], where + "[" + std::to_string(i) + "]"));
  return out;
}

PlanPrediction prediction_from_json(const Json& value, const std::string& where, int period) {
  ObjectReader reader(value, where);
  PlanPrediction prediction;
  prediction.period_s = read_nonnegative_number(reader.required("period_s"), where + ": field 'period_s'");
  prediction.iteration_s =
      read_seconds_array(reader.required("iteration_s"), where + ": field 'iteration_s'", period);
  prediction.wait_s = read_seconds_array(reader.required("wait_s"), where + ": field 'wait_s'", period);
  prediction.lower_bound_period_s = reader.optional_nonnegative("lower_bound_period_s");
  if (const std::optional<std::string> kind = reader.optional_string("lower_bound")) {
    if (*kind != "exact" && *kind != "relaxed" && *kind != "suffix" && *kind != "fused" && *kind != "delayed")
      throw InputError(where + ": field 'lower_bound': expected \"exact\", \"relaxed\", \"suffix\", \"fused\" or \"delayed\", got \"" +
                       *kind + "\"");
    if (!prediction.lower_bound_period_s)
      throw InputError(where + ": field 'lower_bound': names a bound, but 'lower_bound_period_s' is absent or null");
    prediction.lower_bound = *kind;
  }
  // A lower bound above the period it bounds contradicts itself (both are written by `plan` from
  // the same run; 1e-9 relative slack for the decimal round trip).
  if (prediction.lower_bound_period_s && *prediction.lower_bound_period_s > prediction.period_s * (1 + 1e-9))
    throw InputError(where + ": field 'lower_bound_period_s': " + format_shortest(*prediction.lower_bound_period_s) +
                     " s is above the predicted 'period_s' " + format_shortest(prediction.period_s) +
                     " s that it bounds (a lower bound cannot exceed the plan's own period)");
  reader.reject_unknown_keys();
  return prediction;
}

// The `buckets` block: H iterations, each a list of buckets, each a non-empty list of layer names
// that are profile layers syncing in that iteration, none twice per iteration.
PlanBuckets buckets_from_json(const Json& value, const std::string& where, const Plan& plan,
                              const Profile& profile) {
  ObjectReader reader(value, where);
  PlanBuckets buckets;
  buckets.alpha_s = read_number_in(reader.required("alpha_s"), where + ": field 'alpha_s'", 0, limits::kLongestTime_s);
  const Json& iterations = reader.required("iterations");
  reader.reject_unknown_keys();
  const std::string field = where + ": field 'iterations'";
  if (!iterations.is_array()) throw InputError(field + ": expected an array, got " + json_type_name(iterations));
  if (iterations.size() != static_cast<std::size_t>(plan.period))
    throw InputError(field + ": expected " + std::to_string(plan.period) + " entries (one per iteration), got " +
                     std::to_string(iterations.size()));
  std::map<std::string, const LayerSchedule*> schedules;
  for (const LayerSchedule& layer : plan.layers) schedules.emplace(layer.name, &layer);
  for (int h = 0; h < plan.period; ++h) {
    const std::string at = where + ": iterations[" + std::to_string(h) + "]";
    const Json& list = iterations[h];
    if (!list.is_array()) throw InputError(at + ": expected an array of buckets, got " + json_type_name(list));
    std::set<std::string> seen;
    std::vector<std::vector<std::string>> iteration;
    for (const Json& bucket : list) {
      if (!bucket.is_array() || bucket.empty())
        throw InputError(at + ": each bucket must be a non-empty array of layer names, got " +
                         (bucket.is_array() ? std::string("an empty array") : json_type_name(bucket)));
      std::vector<std::string> names;
      for (const Json& name : bucket) {
        if (!name.is_string() || is_nonfinite_token(name))
          throw InputError(at + ": expected layer names (strings), got " + json_type_name(name));
        const std::string text = name.get<std::string>();
        require_printable_name(text, at + ": a bucket's layer");
        if (!profile.find(text)) throw InputError(at + ": layer '" + text + "': not a layer of the profile");
        const auto& syncs = schedules.at(text)->sync_iterations;
        if (!std::binary_search(syncs.begin(), syncs.end(), h))
          throw InputError(at + ": layer '" + text + "': in a bucket of iteration " + std::to_string(h) +
                           " but its sync_iterations do not include it");
        if (!seen.insert(text).second)
          throw InputError(at + ": layer '" + text + "': in more than one bucket of the iteration");
        names.push_back(text);
      }
      iteration.push_back(std::move(names));
    }
    buckets.iterations.push_back(std::move(iteration));
  }
  return buckets;
}

// `sync_delays` of a layer whose (unsorted) iterations are `iterations`: one whole number per
// iteration, each d >= 0 with h + d <= period - 1 (no sync crosses the period's end).
std::vector<int> read_sync_delays(const Json& value, const std::string& where, const std::vector<int>& iterations,
                                  std::int64_t period) {
  const std::string field = where + ": field 'sync_delays'";
  if (!value.is_array()) throw InputError(field + ": expected an array, got " + json_type_name(value));
  if (value.size() != iterations.size())
    throw InputError(field + ": expected " + std::to_string(iterations.size()) +
                     (iterations.size() == 1 ? " entry" : " entries") + " (one per sync iteration), got " +
                     std::to_string(value.size()));
  std::vector<int> delays;
  for (std::size_t i = 0; i < value.size(); ++i) {
    const std::optional<std::int64_t> whole = integer_value(value[i]);
    if (!whole || *whole < 0)
      throw InputError(field + ": expected whole numbers >= 0, got " + json_type_name(value[i]) +
                       (value[i].is_number() ? " " + value[i].dump() : ""));
    // Compared as d > period - 1 - h: h + d overflows for d near 2^63.
    if (*whole > period - 1 - iterations[i])
      throw InputError(field + ": the sync of iteration " + std::to_string(iterations[i]) + " with delay " +
                       std::to_string(*whole) + " would end after the period's last iteration " +
                       std::to_string(period - 1));
    delays.push_back(static_cast<int>(*whole));
  }
  return delays;
}

// Sorts a layer's sync iterations ascending, its delays (when any) with them.
void sort_by_iteration(LayerSchedule& schedule) {
  if (schedule.sync_delays.empty()) {
    std::sort(schedule.sync_iterations.begin(), schedule.sync_iterations.end());
    return;
  }
  std::vector<std::pair<int, int>> pairs;
  for (std::size_t i = 0; i < schedule.sync_iterations.size(); ++i)
    pairs.emplace_back(schedule.sync_iterations[i], schedule.sync_delays[i]);
  std::sort(pairs.begin(), pairs.end());
  for (std::size_t i = 0; i < pairs.size(); ++i) std::tie(schedule.sync_iterations[i], schedule.sync_delays[i]) = pairs[i];
}

}  // namespace

int Plan::max_delay() const {
  int most = 0;
  for (const LayerSchedule& layer : layers)
    for (const int d : layer.sync_delays) most = std::max(most, d);
  return most;
}

Plan plan_from_json(const Json& document, const std::string& origin, const Profile& profile) {
  ObjectReader top(document, origin);
  top.require_format(kPlanFormat);
  Plan plan;
  plan.model = top.optional_string("model");
  const std::int64_t period = top.required_integer("period", 1, kMaxPeriod);
  plan.period = static_cast<int>(period);
  plan.algorithm = top.required_string("algorithm");
  if (plan.model) require_printable(*plan.model, origin, "model");
  require_printable(plan.algorithm, origin, "algorithm");
  const Json& layers = top.required("layers");
  if (!layers.is_array())
    throw InputError(origin + ": field 'layers': expected an array, got " + json_type_name(layers));
  if (const Json* predicted = top.optional("predicted", Null::kRejected))
    plan.predicted = prediction_from_json(*predicted, origin + ": field 'predicted'", plan.period);
  const Json* buckets = top.optional("buckets", Null::kRejected);
  top.reject_unknown_keys();

  if (plan.model && profile.model && *plan.model != *profile.model)
    throw InputError(origin + ": field 'model': plan is for '" + *plan.model +
                     "' but the profile is for '" + *profile.model + "'");

  std::map<std::string, LayerSchedule> by_name;
  for (std::size_t i = 0; i < layers.size(); ++i) {
    const Json& item = layers[i];
    std::string where = origin + ": layers[" + std::to_string(i) + "]";
    if (item.is_object() && item.contains("name") && item["name"].is_string() &&
        !is_nonfinite_token(item["name"]) && !has_control_character(item["name"].get<std::string>()))
      where = origin + ": layer '" + item["name"].get<std::string>() + "'";
    ObjectReader reader(item, where);
    LayerSchedule schedule;
    schedule.name = reader.required_string("name");
    require_printable_name(schedule.name, where);
    const Json& iterations = reader.required("sync_iterations");
    const Json* delays = reader.optional("sync_delays", Null::kRejected);
    reader.reject_unknown_keys();
    if (!profile.find(schedule.name))
      throw InputError(where + ": not a layer of the profile");
    if (by_name.count(schedule.name)) throw InputError(where + ": layer listed twice");
    if (!iterations.is_array())
      throw InputError(where + ": field 'sync_iterations': expected an array, got " +
                       json_type_name(iterations));
    if (iterations.empty())
      throw InputError(where + ": field 'sync_iterations': a layer must sync at least once per period");
    for (const Json& value : iterations) {
      const std::optional<std::int64_t> whole = integer_value(value);
      if (!whole)
        throw InputError(where + ": field 'sync_iterations': expected whole numbers, got " +
                         json_type_name(value) + (value.is_number() ? " " + value.dump() : ""));
      const std::int64_t h = *whole;
      if (h < 0 || h >= period)
        throw InputError(where + ": field 'sync_iterations': iteration " + std::to_string(h) +
                         " is outside 0.." + std::to_string(period - 1));
      schedule.sync_iterations.push_back(static_cast<int>(h));
    }
    if (delays) schedule.sync_delays = read_sync_delays(*delays, where, schedule.sync_iterations, period);
    sort_by_iteration(schedule);
    if (std::adjacent_find(schedule.sync_iterations.begin(), schedule.sync_iterations.end()) !=
        schedule.sync_iterations.end())
      throw InputError(where + ": field 'sync_iterations': an iteration is listed twice");
    by_name.emplace(schedule.name, std::move(schedule));
  }
  for (const LayerProfile& layer : profile.layers) {
    auto it = by_name.find(layer.name);
    if (it == by_name.end())
      throw InputError(origin + ": layer '" + layer.name + "': in the profile but missing from the plan");
    plan.layers.push_back(std::move(it->second));
  }
  if (buckets && plan.max_delay() > 0)
    throw InputError(origin + ": field 'buckets': a plan with sync_delays has no buckets (docs/time-model.md section 13)");
  if (buckets) plan.buckets = buckets_from_json(*buckets, origin + ": field 'buckets'", plan, profile);
  return plan;
}

Plan read_plan_file(const std::string& path, const Profile& profile) {
  return plan_from_json(read_json_file(path), path, profile);
}

Json plan_to_json(const Plan& plan) {
  Json document;
  document["format"] = kPlanFormat;
  document["model"] = plan.model ? Json(*plan.model) : Json(nullptr);
  document["period"] = plan.period;
  document["algorithm"] = plan.algorithm;
  Json layers = Json::array();
  for (const LayerSchedule& layer : plan.layers) {
    Json item{{"name", layer.name}, {"sync_iterations", layer.sync_iterations}};
    // Only a layer with a non-zero delay writes them: a plan without delays is the v1 of SPEC 4.
    if (std::any_of(layer.sync_delays.begin(), layer.sync_delays.end(), [](int d) { return d > 0; }))
      item["sync_delays"] = layer.sync_delays;
    layers.push_back(std::move(item));
  }
  document["layers"] = std::move(layers);
  if (plan.predicted) {
    Json predicted;
    predicted["period_s"] = plan.predicted->period_s;
    predicted["iteration_s"] = plan.predicted->iteration_s;
    predicted["wait_s"] = plan.predicted->wait_s;
    predicted["lower_bound_period_s"] = plan.predicted->lower_bound_period_s
                                            ? Json(*plan.predicted->lower_bound_period_s)
                                            : Json(nullptr);
    if (!plan.predicted->lower_bound.empty()) predicted["lower_bound"] = plan.predicted->lower_bound;
    document["predicted"] = std::move(predicted);
  }
  if (plan.buckets) document["buckets"] = Json{{"alpha_s", plan.buckets->alpha_s}, {"iterations", plan.buckets->iterations}};
  return document;
}

}  // namespace syncplan
