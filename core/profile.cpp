// syncplan.profile/v1 reading, validation and writing.
#include "core/profile.hpp"

#include "core/errors.hpp"
#include "core/statistics.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <unordered_set>

namespace syncplan {

std::optional<std::size_t> Profile::find(const std::string& name) const {
  for (std::size_t i = 0; i < layers.size(); ++i)
    if (layers[i].name == name) return i;
  return std::nullopt;
}

TimeSpread TimeSpread::scaled(double factor) const {
  SYNCPLAN_CHECK(factor > 0);
  return {samples, min_s * factor, p10_s * factor, p90_s * factor, max_s * factor};
}

TimeSpread time_spread(const std::vector<double>& samples) {
  SYNCPLAN_CHECK(!samples.empty());
  // The median is computed as the mean of the two middle samples, the percentiles by interpolation:
  // the clamps keep their order where the two roundings differ in the last bit.
  const double median_s = median(samples);
  return {static_cast<std::int64_t>(samples.size()), quantile(samples, 0), std::min(quantile(samples, 0.1), median_s),
          std::max(quantile(samples, 0.9), median_s), quantile(samples, 1)};
}

double spread_quantile_s(const TimeSpread& spread, double median_s, double u) {
  SYNCPLAN_CHECK(u >= 0 && u <= 1);
  const std::array<double, 5> knots_s = {spread.min_s, spread.p10_s, median_s, spread.p90_s, spread.max_s};
  std::size_t k = 0;  // the segment [p_k, p_k+1] that holds u
  while (k + 2 < knots_s.size() && u > kSpreadProbabilities[k + 1]) ++k;
  const double p0 = kSpreadProbabilities[k], p1 = kSpreadProbabilities[k + 1];
  return knots_s[k] + (u - p0) / (p1 - p0) * (knots_s[k + 1] - knots_s[k]);
}

namespace {
// A time of the profile: unknown, or finite and >= 0; `where` names the file and the layer or key.
void require_valid_time(const std::string& where, const char* field, const std::optional<double>& value) {
  if (!value) return;
  if (!std::isfinite(*value)) throw InputError(where + ": field '" + field + "': non-finite value");
  if (*value < 0) throw InputError(where + ": field '" + field + "': negative value " + format_shortest(*value));
}

// A pass's spread (docs/formats.md, "Compute spread"): its median `time` known, its times valid
// and ordered around that median; `where` names the file and the layer.
void require_valid_spread(const std::string& where, const char* time_field, const char* spread_field,
                          const std::optional<double>& time, const std::optional<TimeSpread>& spread) {
  if (!spread) return;
  const std::string field = where + ": field '" + spread_field + "'";
  if (!time)
    throw InputError(field + ": given, but '" + time_field + "' is null or absent (a spread is the spread of a "
                     "measured time around it, its median)");
  if (spread->samples < 1 || spread->samples > limits::kMaxSpreadSamples)
    throw InputError(field + ": field 'samples': must be in 1.." + std::to_string(limits::kMaxSpreadSamples) +
                     ", got " + std::to_string(spread->samples));
  struct Knot {
    std::string field;  // as named in messages
    double value_s;
  };
  const Knot knots[] = {{"'min_s'", spread->min_s},
                        {"'p10_s'", spread->p10_s},
                        {"'" + std::string(time_field) + "' (the median)", *time},
                        {"'p90_s'", spread->p90_s},
                        {"'max_s'", spread->max_s}};
  require_valid_time(field, "min_s", spread->min_s);
  require_valid_time(field, "p10_s", spread->p10_s);
  require_valid_time(field, "p90_s", spread->p90_s);
  require_valid_time(field, "max_s", spread->max_s);
  for (std::size_t k = 1; k < std::size(knots); ++k)
    if (knots[k - 1].value_s > knots[k].value_s)
      throw InputError(field + ": " + knots[k - 1].field + " " + format_shortest(knots[k - 1].value_s) + " is above " +
                       knots[k].field + " " + format_shortest(knots[k].value_s) +
                       "; a spread is ordered: min_s <= p10_s <= median <= p90_s <= max_s");
  if (spread->samples == 1 && spread->min_s != spread->max_s)
    throw InputError(field + ": 1 sample, but 'min_s' " + format_shortest(spread->min_s) + " and 'max_s' " +
                     format_shortest(spread->max_s) + " differ");
}
}  // namespace

void validate_profile(const Profile& profile, const std::string& origin) {
  if (profile.layers.empty()) throw InputError(origin + ": field 'layers': the profile has no layers");
  std::unordered_set<std::string> names;
  for (std::size_t i = 0; i < profile.layers.size(); ++i) {
    const LayerProfile& layer = profile.layers[i];
    if (layer.name.empty())
      throw InputError(origin + ": layers[" + std::to_string(i) + "]: empty layer name");
    // The reader's name rules hold for every profile, so what an importer writes reads back.
    const std::string at = origin + ": layers[" + std::to_string(i) + "]";
    require_printable_name(layer.name, at);
    if (layer.name.size() > kLongestLayerName)
      throw InputError(at + ": field 'name': " + std::to_string(layer.name.size()) + " bytes, at most " +
                       std::to_string(kLongestLayerName));
    if (!names.insert(layer.name).second)
      throw InputError(origin + ": layer '" + layer.name + "': duplicate layer name");
    const std::pair<const char*, const std::optional<double>*> times[] = {
        {"forward_s", &layer.forward_s},
        {"backward_s", &layer.backward_s},
        {"update_s", &layer.update_s},
        {"sync_s", &layer.sync_s}};
    if (layer.tied_to) {
      const std::string where = origin + ": layer '" + layer.name + "': field 'tied_to'";
      const auto target = profile.find(*layer.tied_to);
      if (!target) throw InputError(where + ": '" + *layer.tied_to + "' is not a layer of the profile");
      if (*layer.tied_to == layer.name) throw InputError(where + ": a layer cannot be tied to itself");
      if (profile.layers[*target].tied_to)
        throw InputError(where + ": '" + *layer.tied_to + "' is itself tied to '" + *profile.layers[*target].tied_to +
                         "'; tie every sharer to the owner");
      if (profile.layers[*target].frozen != layer.frozen)
        throw InputError(where + ": '" + *layer.tied_to + "' is " + (layer.frozen ? "not " : "") +
                         "frozen but this layer is" + (layer.frozen ? "" : " not") +
                         "; shared parameters are trained or frozen together");
    }
    if (layer.frozen && layer.sync_s && *layer.sync_s > 0)
      throw InputError(origin + ": layer '" + layer.name + "': field 'sync_s': " + format_shortest(*layer.sync_s) +
                       " s, but the layer is frozen and runs no all-reduce (give null or 0)");
    const std::string where = origin + ": layer '" + layer.name + "'";
    for (const auto& [field, value] : times) require_valid_time(where, field, *value);
    require_valid_spread(where, "forward_s", "forward_spread", layer.forward_s, layer.forward_spread);
    require_valid_spread(where, "backward_s", "backward_spread", layer.backward_s, layer.backward_spread);
    require_valid_spread(where, "update_s", "update_spread", layer.update_s, layer.update_spread);
  }
  if (profile.workload) {  // the reader's ranges, so that what a writer records reads back
    const ProfileWorkload& workload = *profile.workload;
    if (workload.batch < 1 || workload.batch > limits::kMaxBatch || workload.seq < 1 || workload.seq > limits::kMaxSeq ||
        (workload.dtype != "fp32" && workload.dtype != "bf16"))
      throw InputError(origin + ": field 'workload': batch " + std::to_string(workload.batch) + ", seq " +
                       std::to_string(workload.seq) + ", dtype '" + workload.dtype + "' outside 1.." +
                       std::to_string(limits::kMaxBatch) + ", 1.." + std::to_string(limits::kMaxSeq) + ", fp32|bf16");
  }
  if (profile.unattributed) {
    require_valid_time(origin + ": field 'unattributed'", "forward_s", profile.unattributed->forward_s);
    require_valid_time(origin + ": field 'unattributed'", "backward_s", profile.unattributed->backward_s);
  }
}

namespace {
// The optional spread `key` of a layer (docs/formats.md, "Compute spread"): an object of exactly
// samples, min_s, p10_s, p90_s and max_s; null is no spread and is refused like any wrong type.
std::optional<TimeSpread> read_spread(ObjectReader& layer, const char* key) {
  const Json* value = layer.optional(key, Null::kRejected);
  if (!value) return std::nullopt;
  ObjectReader reader(*value, layer.where() + ": field '" + key + "'");
  TimeSpread spread;
  spread.samples = reader.required_integer("samples", 1, limits::kMaxSpreadSamples);
  const auto seconds = [&](const char* field) {
    return read_number_in(reader.required(field), reader.where() + ": field '" + field + "'", 0,
                          limits::kLongestTime_s);
  };
  spread.min_s = seconds("min_s");
  spread.p10_s = seconds("p10_s");
  spread.p90_s = seconds("p90_s");
  spread.max_s = seconds("max_s");
  reader.reject_unknown_keys();
  return spread;
}

Json spread_to_json(const TimeSpread& spread) {
  return Json{{"samples", spread.samples}, {"min_s", spread.min_s}, {"p10_s", spread.p10_s},
              {"p90_s", spread.p90_s}, {"max_s", spread.max_s}};
}
}  // namespace

Profile profile_from_json(const Json& document, const std::string& origin) {
  ObjectReader top(document, origin);
  top.require_format(kProfileFormat);
  Profile profile;
  profile.model = top.optional_string("model");
  profile.source = top.required_string("source");
  if (profile.model) require_printable(*profile.model, origin, "model");
  require_printable(profile.source, origin, "source");
  profile.workers = top.optional_integer("workers", 1, limits::kMaxWorkers);
  const Json& layers = top.required("layers");
  if (!layers.is_array())
    throw InputError(origin + ": field 'layers': expected an array, got " + json_type_name(layers));
  if (const Json* unattributed = top.optional("unattributed")) {
    ObjectReader reader(*unattributed, origin + ": field 'unattributed'");
    profile.unattributed = UnattributedTimes{reader.optional_seconds("forward_s"), reader.optional_seconds("backward_s")};
    reader.reject_unknown_keys();
  }
  if (const Json* workload = top.optional("workload")) {
    ObjectReader reader(*workload, origin + ": field 'workload'");
    ProfileWorkload read;
    read.batch = reader.required_integer("batch", 1, limits::kMaxBatch);
    read.seq = reader.required_integer("seq", 1, limits::kMaxSeq);
    read.dtype = reader.required_string("dtype");
    if (read.dtype != "fp32" && read.dtype != "bf16")
      throw InputError(reader.where() + ": field 'dtype': expected \"fp32\" or \"bf16\", got \"" + read.dtype + "\"");
    reader.reject_unknown_keys();
    profile.workload = read;
  }
  top.reject_unknown_keys();

  for (std::size_t i = 0; i < layers.size(); ++i) {
    const Json& item = layers[i];
    std::string where = origin + ": layers[" + std::to_string(i) + "]";
    const bool named = item.is_object() && item.contains("name") && item["name"].is_string() &&
                       !is_nonfinite_token(item["name"]);
    const std::size_t name_size = named ? item["name"].get_ref<const std::string&>().size() : 0;
    if (name_size > 0 && name_size <= kLongestLayerName && !has_control_character(item["name"].get<std::string>()))
      where = origin + ": layer '" + item["name"].get<std::string>() + "'";
    ObjectReader reader(item, where);
    LayerProfile layer;
    layer.name = reader.required_string("name");
    require_printable_name(layer.name, where);
    // Module paths are far shorter; a huge name would also overflow std::regex's recursion
    // (plan --every-iteration).
    if (layer.name.size() > kLongestLayerName)
      throw InputError(where + ": field 'name': " + std::to_string(layer.name.size()) + " bytes, at most " +
                       std::to_string(kLongestLayerName));
    layer.param_count = reader.optional_integer("param_count", 0, limits::kMaxSizeBytes);
    layer.param_bytes = reader.optional_integer("param_bytes", 0, limits::kMaxSizeBytes);
    layer.forward_s = reader.optional_seconds("forward_s");
    layer.backward_s = reader.optional_seconds("backward_s");
    layer.update_s = reader.optional_seconds("update_s");
    layer.sync_s = reader.optional_seconds("sync_s");
    layer.tied_to = reader.optional_string("tied_to", Null::kRejected);
    if (const Json* frozen = reader.optional("frozen", Null::kRejected)) {
      if (!frozen->is_boolean())
        throw InputError(where + ": field 'frozen': expected true or false, got " + json_type_name(*frozen));
      layer.frozen = frozen->get<bool>();
    }
    layer.forward_spread = read_spread(reader, "forward_spread");
    layer.backward_spread = read_spread(reader, "backward_spread");
    layer.update_spread = read_spread(reader, "update_spread");
    reader.reject_unknown_keys();
    profile.layers.push_back(std::move(layer));
  }
  validate_profile(profile, origin);
  return profile;
}

Profile read_profile_file(const std::string& path) {
  return profile_from_json(read_json_file(path), path);
}

namespace {
template <typename T>
Json optional_to_json(const std::optional<T>& value) {
  return value ? Json(*value) : Json(nullptr);
}
}  // namespace

Json profile_to_json(const Profile& profile) {
  Json document;
  document["format"] = kProfileFormat;
  document["model"] = optional_to_json(profile.model);
  document["source"] = profile.source;
  document["workers"] = optional_to_json(profile.workers);
  if (profile.unattributed)
    document["unattributed"] = Json{{"forward_s", optional_to_json(profile.unattributed->forward_s)},
                                    {"backward_s", optional_to_json(profile.unattributed->backward_s)}};
  if (profile.workload)
    document["workload"] = Json{{"batch", profile.workload->batch}, {"seq", profile.workload->seq},
                                {"dtype", profile.workload->dtype}};
  Json layers = Json::array();
  for (const LayerProfile& layer : profile.layers) {
    Json item;
    item["name"] = layer.name;
    item["param_count"] = optional_to_json(layer.param_count);
    item["param_bytes"] = optional_to_json(layer.param_bytes);
    item["forward_s"] = optional_to_json(layer.forward_s);
    item["backward_s"] = optional_to_json(layer.backward_s);
    item["update_s"] = optional_to_json(layer.update_s);
    item["sync_s"] = optional_to_json(layer.sync_s);
    if (layer.tied_to) item["tied_to"] = *layer.tied_to;
    if (layer.frozen) item["frozen"] = true;
    if (layer.forward_spread) item["forward_spread"] = spread_to_json(*layer.forward_spread);
    if (layer.backward_spread) item["backward_spread"] = spread_to_json(*layer.backward_spread);
    if (layer.update_spread) item["update_spread"] = spread_to_json(*layer.update_spread);
    layers.push_back(std::move(item));
  }
  document["layers"] = std::move(layers);
  return document;
}

}  // namespace syncplan
