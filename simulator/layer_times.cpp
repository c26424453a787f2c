// Reading per-layer times from a profile in backprop order, and the tied-layer rule.
#include "simulator/layer_times.hpp"

#include "core/errors.hpp"

#include <algorithm>
#include <limits>
#include <tuple>

namespace syncplan {

namespace {
constexpr double kUnknownTime = std::numeric_limits<double>::quiet_NaN();
}  // namespace

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

std::vector<double> carried_by_ties(const TieGroups& ties, const std::vector<double>& own) {
  std::vector<double> carried(own.size(), 0.0);
  for (std::size_t j = 0; j < own.size(); ++j)
    if (ties.carrier[j] == static_cast<int>(j)) carried[j] = own[ties.owner[j]];
  return carried;
}

DesLayers des_layers(const Profile& profile, const std::string& origin, SyncTimeSource source, LayerTimesUser user) {
  DesLayers layers;
  const bool period_model = user == LayerTimesUser::kPeriodModel;
  for (auto it = profile.layers.rbegin(); it != profile.layers.rend(); ++it) {
    const LayerProfile& layer = *it;
    const auto need = [&](const std::string& field, bool present) {
      if (present) return;
      std::string hint;
      if (period_model && field == "sync_s") hint = " (or a cluster or link fit to derive it from param_bytes)";
      if (!period_model && field == "param_bytes") hint = " for the cluster's cost model (or use the profile's measured sync_s)";
      throw InputError(origin + ": layer '" + layer.name + "': field '" + field + "' is null; the " +
                       (period_model ? "period model" : "simulator") + " needs it" + hint);
    };
    need("backward_s", layer.backward_s.has_value());
    // A frozen layer has nothing to average: its sync time and size are never read.
    if (!layer.frozen) {
      if (source == SyncTimeSource::kMeasured) need("sync_s", layer.sync_s.has_value());
      else need("param_bytes", layer.param_bytes.has_value());
    }
    layers.names.push_back(layer.name);
    layers.forward_s.push_back(layer.forward_s.value_or(0.0));
    layers.backward_s.push_back(*layer.backward_s);
    layers.update_s.push_back(layer.update_s.value_or(0.0));
    layers.sync_s.push_back(layer.sync_s.value_or(kUnknownTime));
    layers.param_bytes.push_back(layer.param_bytes ? static_cast<double>(*layer.param_bytes) : kUnknownTime);
    layers.frozen.push_back(layer.frozen);
    layers.forward_spread.push_back(layer.forward_spread);
    layers.backward_spread.push_back(layer.backward_spread);
    layers.update_spread.push_back(layer.update_spread);
  }
  // Tied parameters are all-reduced once, by the tie group's carrier (docs/time-model.md 11).
  const TieGroups ties = tie_groups(profile);
  layers.carrier = ties.carrier;
  for (std::size_t j = 0; j < layers.size(); ++j) layers.synced.push_back(ties.carrier[j] == static_cast<int>(j));
  layers.sync_s = carried_by_ties(ties, layers.sync_s);
  layers.param_bytes = carried_by_ties(ties, layers.param_bytes);
  // Frozen parameters are not averaged (docs/formats.md "frozen"); a tie group is frozen whole
  // (validate_profile), so clearing each member clears the group's carrier too.
  for (std::size_t j = 0; j < layers.size(); ++j) {
    if (!layers.frozen[j]) continue;
    layers.synced[j] = false;
    layers.sync_s[j] = 0;
    layers.param_bytes[j] = 0;
  }
  if (profile.unattributed) {
    layers.unattributed_forward_s = profile.unattributed->forward_s.value_or(0.0);
    layers.unattributed_backward_s = profile.unattributed->backward_s.value_or(0.0);
  }
  return layers;
}

void require_compute_spreads(const Profile& profile, const std::string& origin, const std::string& cluster_origin) {
  for (const LayerProfile& layer : profile.layers) {
    const std::tuple<const char*, const std::optional<double>&, const std::optional<TimeSpread>&> passes[] = {
        {"forward_spread", layer.forward_s, layer.forward_spread},
        {"backward_spread", layer.backward_s, layer.backward_spread},
        {"update_spread", layer.update_s, layer.update_spread}};
    for (const auto& [field, time_s, spread] : passes)
      if (time_s && *time_s > 0 && !spread)
        throw InputError(origin + ": layer '" + layer.name + "': field '" + field +
                         "' is absent; the jitter \"measured\" of " + cluster_origin +
                         " draws every compute time from the profile's spread (syncplan profile --device cpu or "
                         "cuda writes it)");
  }
}

}  // namespace syncplan
