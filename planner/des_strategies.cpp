// Strategy names to DES sync programs.
#include "planner/des_strategies.hpp"

#include "core/errors.hpp"
#include "planner/algorithm_table.hpp"

#include <cmath>

namespace syncplan {

BackpropTimes backprop_times_for_des(const DesStrategyContext& context) {
  const DesLayers& layers = context.layers;
  BackpropTimes times;
  double ready = 0;
  for (std::size_t j = 0; j < layers.size(); ++j) {
    times.names.push_back(layers.names[j]);
    times.backward_s.push_back(layers.backward_s[j]);
    // A layer whose parameters another layer's sync carries (tied), or with nothing to average,
    // runs no all-reduce: the DES engine's rule (issues_allreduce).
    const bool synced = layers.synced.empty() || layers.synced[j];
    const bool issued = issues_allreduce(context.sync_time, layers.param_bytes[j], layers.sync_s[j]);
    times.sync_s.push_back(synced && issued
                               ? des_allreduce_s(layers, context.model, context.sync_time, {static_cast<int>(j)})
                               : 0.0);
    ready += layers.backward_s[j];
    times.ready_s.push_back(ready);
    times.forward_total_s += layers.forward_s[j];
    times.update_total_s += layers.update_s[j];
  }
  times.carrier = layers.carrier;
  return times;
}

namespace {
std::vector<double> required_param_bytes(const DesLayers& layers, const std::string& strategy) {
  for (std::size_t j = 0; j < layers.size(); ++j)
    if (std::isnan(layers.param_bytes[j]))
      throw InputError("--strategy " + strategy + ": layer '" + layers.names[j] +
                       "' has no param_bytes in the profile; buckets are filled by size");
  return layers.param_bytes;
}
}  // namespace

SyncProgram des_program(const std::string& name, const DesStrategyContext& context, const BackpropTimes& times,
                        int period) {
  require_valid_period(period);
  if (name == "ssgd") return ssgd_program(times.size(), period);
  if (name == "flsgd") return flsgd_program(times.size(), period);
  if (name == "ddp") {
    if (!(context.bucket_cap_bytes > 0)) throw InputError("--bucket-cap-mb: must be > 0");
    return ddp_program(required_param_bytes(context.layers, name), period, context.bucket_cap_bytes,
                       std::min(context.first_bucket_bytes, context.bucket_cap_bytes));
  }
  if (name == "mgwfbp") {
    // Measured per-layer times say nothing about the start-up cost a merge saves: MG-WFBP's rule
    // needs the cost model.
    const auto bytes = required_param_bytes(context.layers, name);
    if (context.sync_time != SyncTimeSource::kModel)
      throw InputError("--strategy mgwfbp: needs the cluster's cost model (--sync-time model)");
    return mgwfbp_program(times, bytes, period,
                          [&](double bytes) { return context.model.time_s(bytes); });
  }
  if (!is_strategy_name(name))
    throw InputError("--strategy: unknown '" + name + "' (choose from " + des_strategy_names_text() + ")");
  const StrategyResult result = run_strategy(name, times, period);  // throws for unknown names
  if (!result.assignment) throw InternalError("strategy " + name + " has no assignment");
  return program_from_assignment(*result.assignment);
}

std::string des_strategy_names_text() { return strategy_names_text() + ", ddp, mgwfbp"; }

}  // namespace syncplan
