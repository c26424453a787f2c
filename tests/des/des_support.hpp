// Helpers shared by the DES tests: clusters and layers written in backprop order, as the hand
// derivations in the test files are written.
#pragma once

#include "core/cluster.hpp"
#include "core/errors.hpp"
#include "core/profile.hpp"
#include "planner/strategy_table.hpp"
#include "simulator/des/engine.hpp"

#include <catch2/catch.hpp>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

namespace syncplan::des_test {

/// A syncplan.cluster/v1 document: `workers` workers, `per_node` per node, links given in
/// Gbit/s and microseconds (a single node gets no inter_node link).
inline Json cluster_document(int workers, int per_node, double intra_Gbps, double intra_us,
                             double inter_Gbps = 0, double inter_us = 0,
                             const std::string& allreduce = "ring") {
  Json document{{"format", "syncplan.cluster/v1"},
                {"workers", workers},
                {"workers_per_node", per_node},
                {"intra_node", {{"bandwidth_Gbps", intra_Gbps}, {"latency_us", intra_us}}},
                {"allreduce", allreduce}};
  if (workers / per_node > 1)
    document["inter_node"] = Json{{"bandwidth_Gbps", inter_Gbps}, {"latency_us", inter_us}};
  return document;
}

inline Cluster cluster_of(const Json& document) { return cluster_from_json(document, "cluster.json"); }

/// The cost model's time of one all-reduce of `bytes` on the cluster `document` (s).
inline double model_time_s(const Json& document, double bytes) {
  const Cluster cluster = cluster_of(document);
  const Topology topology(cluster);
  return AllreduceModel(cluster, topology).time_s(bytes);
}

/// Layers in backprop order (index 0 = output-most), named "j0", "j1", ... with the forward time
/// F and update time U on the input-most layer (so F and U are exactly the values given).
/// `sync_s` or `param_bytes` may be empty (unknown: NaN).
inline DesLayers backprop_layers(const std::vector<double>& backward_s, const std::vector<double>& sync_s,
                                 double forward_s = 0, double update_s = 0,
                                 const std::vector<double>& param_bytes = {}) {
  const double unknown = std::numeric_limits<double>::quiet_NaN();
  DesLayers layers;
  for (std::size_t j = 0; j < backward_s.size(); ++j) {
    const bool input_most = j + 1 == backward_s.size();
    layers.names.push_back("j" + std::to_string(j));
    layers.backward_s.push_back(backward_s[j]);
    layers.forward_s.push_back(input_most ? forward_s : 0.0);
    layers.update_s.push_back(input_most ? update_s : 0.0);
    layers.sync_s.push_back(sync_s.empty() ? unknown : sync_s.at(j));
    layers.param_bytes.push_back(param_bytes.empty() ? unknown : param_bytes.at(j));
  }
  return layers;
}

/// Relative-and-absolute tolerance for hand-derived figures that are sums of a few terms.
inline Approx near(double expected) { return Approx(expected).epsilon(1e-12).margin(1e-15); }

/// The DES program of the table's strategy `name` (strategy_for, then Strategy::des_program).
inline SyncProgram des_program(const std::string& name, const DesStrategyContext& context, const BackpropTimes& times,
                               int period) {
  return strategy_for(name, StrategyUse::kDes).des_program(context, times, period);
}

}  // namespace syncplan::des_test
