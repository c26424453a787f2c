// The choice between measured, cost-model and link-fit all-reduce times (simulator/sync_times.hpp).
#include "simulator/sync_times.hpp"

#include "core/errors.hpp"
#include "core/units.hpp"
#include "simulator/des/engine.hpp"
#include "simulator/topology.hpp"

#include <algorithm>
#include <memory>

namespace syncplan {

namespace {

// Every layer's sync_s from the link model on its param_bytes (SPEC section 7, docs/link.md); a
// layer with nothing to average issues no all-reduce (issues_allreduce, as under a cluster's cost
// model) and gets 0, not the link's start-up time.
Profile with_link_times(Profile profile, const LinkFit& link, const std::string& profile_origin,
                        const std::string& link_origin) {
  const LinkModel model(link);
  for (LayerProfile& layer : profile.layers) {
    if (layer.frozen) continue;  // no all-reduce to time (des_layers' frozen rule)
    if (!layer.param_bytes)
      throw InputError(profile_origin + ": layer '" + layer.name + "': field 'param_bytes' is null; the link fit " +
                       link_origin + " needs it (or use the profile's measured sync_s)");
    const double bytes = static_cast<double>(*layer.param_bytes);
    layer.sync_s = issues_allreduce(SyncTimeSource::kModel, bytes, 0) ? model.time_s(bytes) : 0.0;
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
  BackpropTimes times = backprop_times(layers, sync_s, origin);
  // "auto": a bucket runs the cheapest algorithm for its summed bytes, which the members' times less
  // the start-ups saved do not give (docs/collectives.md 6).
  if (context.sync_time == SyncTimeSource::kModel && context.model.piecewise()) {
    times.allreduce = std::make_shared<const AllreduceModel>(context.model);
    times.sync_bytes = layers.param_bytes;
  }
  return times;
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
                     count_text(choice.link->workers, "worker") + " but " + inputs.cluster_origin + " has " +
                     std::to_string(choice.cluster->workers) + "; a fit holds for the group size it was measured at");
  choice.text = "the profile's sync_s";
  if (!choice.cluster && !choice.link) return choice;

  const int workers = choice.link ? choice.link->workers : choice.cluster->workers;
  // kAuto takes the profile's sync_s only when it has them: a profile of param_bytes alone (a
  // model spec's, a trace's) measured at the same worker count has nothing to measure with. A
  // frozen layer runs no all-reduce, so it needs no sync_s (docs/formats.md "frozen").
  const bool has_sync_s = !choice.profile.layers.empty() &&
                          std::all_of(choice.profile.layers.begin(), choice.profile.layers.end(),
                                      [](const LayerProfile& layer) { return layer.frozen || layer.sync_s.has_value(); });
  const bool measured = inputs.mode == SyncTimeMode::kMeasured ||
                        (inputs.mode == SyncTimeMode::kAuto && has_sync_s && choice.profile.workers &&
                         *choice.profile.workers == workers);
  if (measured) {
    choice.text = "the profile's sync_s (measured at " + count_text(workers, "worker") + ")";
  } else if (choice.link) {
    choice.profile = with_link_times(std::move(choice.profile), *choice.link, origin, inputs.link_origin);
    choice.link_used = true;
    choice.text = "the link fit of " + inputs.link_origin + " on param_bytes";
  } else {
    choice.source = SyncTimeSource::kModel;
    choice.text = "the cost model of " + inputs.cluster_origin + " on param_bytes";
    // A group of one moves nothing (docs/collectives.md section 3): say so rather than print zeros.
    if (workers == 1) choice.text += " (1 worker: an all-reduce over a group of one costs nothing, 0 s)";
  }
  if (choice.link) {
    choice.alpha_s = choice.link->startup_s();
    choice.alpha_text = "the link fit's alpha (its start-up time at the smallest sizes), " + inputs.link_origin;
  } else {
    const Topology topology(*choice.cluster);
    choice.alpha_s = AllreduceModel(*choice.cluster, topology).time_s(0);
    choice.alpha_text = "the all-reduce start-up of " + inputs.cluster_origin;
  }
  return choice;
}

void charge_buckets_by_link(BackpropTimes& times, const SyncTimes& choice, const DesLayers& layers) {
  if (!choice.link_used) return;
  times.link = std::make_shared<const LinkModel>(*choice.link);
  times.sync_bytes = layers.param_bytes;
}

Cluster link_cluster(const LinkFit& link) {
  Cluster cluster;
  cluster.name = "the link fit's " + count_text(link.workers, "worker");
  cluster.workers = link.workers;
  cluster.workers_per_node = 1;
  // Never charged (the DES charges the link fit's times, kMeasured); a ring over these links
  // has the link's bandwidth, so that the per-link byte counts stay meaningful.
  const double bandwidth_Gbps =
      link.beta_s_per_byte > 0 ? units::kBitsPerByte / link.beta_s_per_byte / units::kBitsPerGigabit : 1e6;
  cluster.intra_node = cluster.inter_node = LinkSpec{std::min(bandwidth_Gbps, 1e6), 0};
  return cluster;
}

BackpropTimes sync_backprop_times(const SyncTimes& choice, const std::string& origin) {
  if (choice.link_used) {
    const DesLayers layers = des_layers(choice.profile, origin, SyncTimeSource::kMeasured, LayerTimesUser::kPeriodModel);
    BackpropTimes times = backprop_times(layers, layers.sync_s, origin);
    charge_buckets_by_link(times, choice, layers);
    return times;
  }
  if (!choice.cluster || choice.source == SyncTimeSource::kMeasured) return backprop_times(choice.profile, origin);
  const DesLayers layers = des_layers(choice.profile, origin, choice.source);
  const Topology topology(*choice.cluster);
  const AllreduceModel model(*choice.cluster, topology);
  return backprop_times_for_des(DesStrategyContext{layers, model, choice.source}, origin);
}

}  // namespace syncplan
