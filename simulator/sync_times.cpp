// The choice between measured, cost-model and link-fit all-reduce times (simulator/sync_times.hpp).
#include "simulator/sync_times.hpp"

#include "core/errors.hpp"
#include "simulator/des/engine.hpp"
#include "simulator/topology.hpp"

namespace syncplan {

namespace {

// Every layer's sync_s from the link fit: alpha + beta x param_bytes (SPEC section 7).
Profile with_link_times(Profile profile, const LinkFit& link, const std::string& profile_origin,
                        const std::string& link_origin) {
  for (LayerProfile& layer : profile.layers) {
    if (!layer.param_bytes)
      throw InputError(profile_origin + ": layer '" + layer.name + "': field 'param_bytes' is null; the link fit " +
                       link_origin + " needs it (or use the profile's measured sync_s)");
    layer.sync_s = link.time_s(static_cast<double>(*layer.param_bytes));
  }
  profile.workers = link.workers;
  profile.source += "; sync_s from " + link.source + " link fit";
  return profile;
}

}  // namespace

BackpropTimes backprop_times_for_des(const DesStrategyContext& context, const std::string& origin) {
  const DesLayers& layers = context.layers;
  std::vector<double> sync_s(layers.size(), 0.0);
  for (std::size_t j = 0; j < layers.size(); ++j) {
    // A layer whose parameters another layer's sync carries (tied), or with nothing to average,
    // runs no all-reduce: the DES engine's rule (issues_allreduce).
    const bool synced = layers.synced.empty() || layers.synced[j];
    if (synced && issues_allreduce(context.sync_time, layers.param_bytes[j], layers.sync_s[j]))
      sync_s[j] = des_allreduce_s(layers, context.model, context.sync_time, {static_cast<int>(j)});
  }
  return backprop_times(layers, sync_s, origin);
}

SyncTimes choose_sync_times(Profile profile, const std::string& origin, SyncTimeInputs inputs) {
  SyncTimes choice;
  choice.profile = std::move(profile);
  choice.cluster = std::move(inputs.cluster);
  choice.link = std::move(inputs.link);
  choice.cluster_origin = inputs.cluster_origin;
  choice.link_origin = inputs.link_origin;
  if (choice.cluster && choice.link && choice.cluster->workers != choice.link->workers)
    throw InputError(inputs.link_origin + ": field 'workers': the link fit was measured at " +
                     std::to_string(choice.link->workers) + " workers but " + inputs.cluster_origin + " has " +
                     std::to_string(choice.cluster->workers) + "; a fit holds for the group size it was measured at");
  choice.text = "the profile's sync_s";
  if (!choice.cluster && !choice.link) return choice;

  const int workers = choice.link ? choice.link->workers : choice.cluster->workers;
  const bool measured = inputs.mode == SyncTimeMode::kMeasured ||
                        (inputs.mode == SyncTimeMode::kAuto && choice.profile.workers && *choice.profile.workers == workers);
  if (measured) {
    choice.text = "the profile's sync_s (measured at " + std::to_string(workers) + " workers)";
  } else if (choice.link) {
    choice.profile = with_link_times(std::move(choice.profile), *choice.link, origin, inputs.link_origin);
    choice.link_used = true;
    choice.text = "the link fit of " + inputs.link_origin + " on param_bytes";
  } else {
    choice.source = SyncTimeSource::kModel;
    choice.text = "the cost model of " + inputs.cluster_origin + " on param_bytes";
  }
  if (choice.link) {
    choice.alpha_s = choice.link->alpha_s;
    choice.alpha_text = "the link fit's alpha, " + inputs.link_origin;
  } else {
    const Topology topology(*choice.cluster);
    choice.alpha_s = AllreduceModel(*choice.cluster, topology).time_s(0);
    choice.alpha_text = "the all-reduce start-up of " + inputs.cluster_origin;
  }
  return choice;
}

BackpropTimes sync_backprop_times(const SyncTimes& choice, const std::string& origin) {
  if (!choice.cluster || choice.source == SyncTimeSource::kMeasured) return backprop_times(choice.profile, origin);
  const DesLayers layers = des_layers(choice.profile, origin, choice.source);
  const Topology topology(*choice.cluster);
  const AllreduceModel model(*choice.cluster, topology);
  return backprop_times_for_des(DesStrategyContext{layers, model, choice.source}, origin);
}

}  // namespace syncplan
