// The choice between measured, cost-model and link-fit all-reduce times (tools/sync_times.hpp).
#include "tools/sync_times.hpp"

#include "core/errors.hpp"
#include "planner/des_strategies.hpp"
#include "simulator/collectives.hpp"
#include "simulator/topology.hpp"

namespace syncplan::cli {

namespace {

// Every layer's sync_s from the link fit: alpha + beta x param_bytes (SPEC section 7).
Profile with_link_times(Profile profile, const LinkFit& link, const std::string& profile_path,
                        const std::string& link_path) {
  for (LayerProfile& layer : profile.layers) {
    if (!layer.param_bytes)
      throw InputError(profile_path + ": layer '" + layer.name + "': field 'param_bytes' is null; the link fit " +
                       link_path + " needs it (or use --sync-time measured)");
    layer.sync_s = link.time_s(static_cast<double>(*layer.param_bytes));
  }
  profile.workers = link.workers;
  profile.source += "; sync_s from " + link.source + " link fit";
  return profile;
}

}  // namespace

SyncTimes read_sync_times(const std::string& profile_path, const SyncTimeOptions& options) {
  if (options.sync_time_given && options.cluster_path.empty() && options.link_path.empty())
    throw InputError("--sync-time: needs --cluster or --link (without them the profile's sync_s are used)");
  return read_sync_times(read_profile_file(profile_path), profile_path, options);
}

SyncTimes read_sync_times(Profile profile, const std::string& profile_path, const SyncTimeOptions& options) {
  if (options.sync_time_given && options.cluster_path.empty() && options.link_path.empty())
    throw InputError("--sync-time: needs --cluster or --link (without them the profile's sync_s are used)");
  SyncTimes choice;
  choice.profile = std::move(profile);
  if (!options.cluster_path.empty()) choice.cluster = read_cluster_file(options.cluster_path);
  if (!options.link_path.empty()) choice.link = read_link_file(options.link_path);
  if (choice.cluster && choice.link && choice.cluster->workers != choice.link->workers)
    throw InputError(options.link_path + ": field 'workers': the link fit was measured at " +
                     std::to_string(choice.link->workers) + " workers but " + options.cluster_path + " has " +
                     std::to_string(choice.cluster->workers) + "; a fit holds for the group size it was measured at");
  choice.text = "the profile's sync_s";
  if (!choice.cluster && !choice.link) return choice;

  const int workers = choice.link ? choice.link->workers : choice.cluster->workers;
  const bool measured = options.sync_time == "measured" ||
                        (options.sync_time == "auto" && choice.profile.workers && *choice.profile.workers == workers);
  if (measured) {
    choice.text = "the profile's sync_s (measured at " + std::to_string(workers) + " workers)";
  } else if (choice.link) {
    choice.profile = with_link_times(std::move(choice.profile), *choice.link, profile_path, options.link_path);
    choice.link_used = true;
    choice.text = "the link fit of " + options.link_path + " on param_bytes";
  } else {
    choice.source = SyncTimeSource::kModel;
    choice.text = "the cost model of " + options.cluster_path + " on param_bytes";
  }
  if (choice.link) {
    choice.alpha_s = choice.link->alpha_s;
    choice.alpha_text = "the link fit's alpha, " + options.link_path;
  } else {
    const Topology topology(*choice.cluster);
    choice.alpha_s = AllreduceModel(*choice.cluster, topology).time_s(0);
    choice.alpha_text = "the all-reduce start-up of " + options.cluster_path;
  }
  return choice;
}

BackpropTimes sync_backprop_times(const SyncTimes& choice, const std::string& profile_path) {
  if (!choice.cluster || choice.source == SyncTimeSource::kMeasured)
    return backprop_times(choice.profile, profile_path);
  const DesLayers layers = des_layers(choice.profile, profile_path, choice.source);
  const Topology topology(*choice.cluster);
  const AllreduceModel model(*choice.cluster, topology);
  return backprop_times_for_des(DesStrategyContext{layers, model, choice.source});
}

}  // namespace syncplan::cli
