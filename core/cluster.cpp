// syncplan.cluster/v1 reading, validation and writing.
#include "core/cluster.hpp"

#include "core/errors.hpp"
#include "core/limits.hpp"
#include "core/units.hpp"

#include <cmath>
#include <limits>

namespace syncplan {

double LinkSpec::bandwidth_Bps() const { return bandwidth_Gbps * units::kBitsPerGigabit / units::kBitsPerByte; }
double LinkSpec::latency_s() const { return latency_us / units::kMicrosecondsPerSecond; }

std::optional<AllreduceAlgorithm> allreduce_algorithm(std::string_view name) {
  if (name == "ring") return AllreduceAlgorithm::kRing;
  if (name == "tree") return AllreduceAlgorithm::kTree;
  if (name == "hierarchical") return AllreduceAlgorithm::kHierarchical;
  if (name == "auto") return AllreduceAlgorithm::kAuto;
  return std::nullopt;
}

std::string to_string(AllreduceAlgorithm algorithm) {
  switch (algorithm) {
    case AllreduceAlgorithm::kRing: return "ring";
    case AllreduceAlgorithm::kTree: return "tree";
    case AllreduceAlgorithm::kHierarchical: return "hierarchical";
    case AllreduceAlgorithm::kAuto: return "auto";
  }
  throw InternalError("to_string: AllreduceAlgorithm " + std::to_string(static_cast<int>(algorithm)) +
                      " is no algorithm");
}

double Cluster::slowdown(int worker) const {
  return compute_slowdown.empty() ? 1.0 : compute_slowdown.at(worker);
}

bool Cluster::identical_workers() const {
  if (jitter && jitter->random()) return false;
  for (const double factor : compute_slowdown)
    if (factor != compute_slowdown.front()) return false;
  return true;
}

namespace {

LinkSpec link_spec_from_json(const Json& value, const std::string& where) {
  ObjectReader reader(value, where);
  LinkSpec link;
  link.bandwidth_Gbps = read_number_in(reader.required("bandwidth_Gbps"), where + ": field 'bandwidth_Gbps'",
                                       limits::kMinBandwidth_Gbps, limits::kMaxBandwidth_Gbps);
  link.latency_us = read_number_in(reader.required("latency_us"), where + ": field 'latency_us'", 0,
                                   limits::kMaxLatency_us);
  reader.reject_unknown_keys();
  return link;
}

double slowdown_factor(const Json& value, const std::string& where) {
  return read_number_in(value, where, limits::kMinSlowdown, limits::kMaxSlowdown);
}

}  // namespace

Cluster cluster_from_json(const Json& document, const std::string& origin, AllreduceAlgorithm unnamed) {
  ObjectReader top(document, origin);
  top.require_format(kClusterFormat);
  Cluster cluster;
  cluster.name = top.optional_string("name", Null::kRejected);
  if (cluster.name) require_printable(*cluster.name, origin, "name");
  cluster.workers = static_cast<int>(top.required_integer("workers", 1, limits::kMaxWorkers));
  const std::int64_t per_node = top.optional_integer("workers_per_node", 1, Null::kRejected).value_or(cluster.workers);
  if (per_node > cluster.workers || cluster.workers % per_node != 0)
    throw InputError(origin + ": field 'workers_per_node': " + std::to_string(per_node) +
                     " does not divide workers = " + std::to_string(cluster.workers));
  cluster.workers_per_node = static_cast<int>(per_node);
  cluster.intra_node = link_spec_from_json(top.required("intra_node"), origin + ": field 'intra_node'");
  if (const Json* inter = top.optional("inter_node", Null::kRejected)) {
    cluster.inter_node = link_spec_from_json(*inter, origin + ": field 'inter_node'");
  } else if (cluster.nodes() > 1) {
    throw InputError(origin + ": missing field 'inter_node' (the cluster has " +
                     std::to_string(cluster.nodes()) + " nodes)");
  } else {
    cluster.inter_node = cluster.intra_node;
    cluster.inter_node_given = false;
  }
  const std::string algorithm = top.optional_string("allreduce", Null::kRejected).value_or(to_string(unnamed));
  if (const std::optional<AllreduceAlgorithm> named = allreduce_algorithm(algorithm)) cluster.allreduce = *named;
  else
    throw InputError(origin + ": field 'allreduce': expected " + kAllreduceAlgorithmNames + ", got \"" +
                     algorithm + "\"");

  if (const Json* slowdown = top.optional("compute_slowdown", Null::kRejected)) {
    const std::string where = origin + ": field 'compute_slowdown'";
    if (slowdown->is_array()) {
      if (slowdown->size() != static_cast<std::size_t>(cluster.workers))
        throw InputError(where + ": expected " + std::to_string(cluster.workers) + " factors (one per worker), got " +
                         std::to_string(slowdown->size()));
      for (std::size_t w = 0; w < slowdown->size(); ++w)
        cluster.compute_slowdown.push_back(slowdown_factor((*slowdown)[w], where + "[" + std::to_string(w) + "]"));
    } else if (slowdown->is_object()) {
      // Sparse form {"worker index": factor}; unnamed workers run at factor 1.
      cluster.compute_slowdown.assign(cluster.workers, 1.0);
      for (const auto& item : slowdown->items()) {
        const std::string& key = item.key();
        const bool number = !key.empty() && key.size() <= 9 && (key == "0" || key[0] != '0') &&
                            key.find_first_not_of("0123456789") == std::string::npos;
        if (!number || std::stoi(key) >= cluster.workers)
          throw InputError(where + ": key '" + key + "' is not a worker index in 0.." +
                           std::to_string(cluster.workers - 1));
        cluster.compute_slowdown[std::stoi(key)] = slowdown_factor(item.value(), where + "['" + key + "']");
      }
    } else {
      throw InputError(where + ": expected an array of factors or an object {worker: factor}, got " +
                       json_type_name(*slowdown));
    }
  }
  if (const Json* jitter = top.optional("jitter", Null::kRejected)) {
    const std::string where = origin + ": field 'jitter'";
    ObjectReader reader(*jitter, where);
    JitterSpec spec;
    const std::string distribution = reader.required_string("distribution");
    if (distribution == "lognormal") spec.distribution = JitterSpec::Distribution::kLognormal;
    else if (distribution == "normal") spec.distribution = JitterSpec::Distribution::kNormal;
    else if (distribution == "measured") spec.distribution = JitterSpec::Distribution::kMeasured;
    else
      throw InputError(where + ": field 'distribution': expected \"lognormal\", \"normal\" or \"measured\", got \"" +
                       distribution + "\"");
    if (spec.distribution == JitterSpec::Distribution::kMeasured) {
      // The spread is the profile's, measured; only how the draws go together is the cluster's.
      if (reader.has("sigma"))
        throw InputError(where + ": field 'sigma': not used with distribution \"measured\" (the spread is the "
                                 "profile's forward_spread, backward_spread and update_spread)");
      if (const Json* correlation = reader.optional("correlation", Null::kRejected))
        spec.correlation = read_number_in(*correlation, where + ": field 'correlation'", 0, 1);
    } else {
      spec.sigma = read_number_in(reader.required("sigma"), where + ": field 'sigma'", 0, limits::kMaxJitterSigma);
      if (reader.has("correlation"))
        throw InputError(where + ": field 'correlation': only with distribution \"measured\" (every lognormal or "
                                 "normal factor is drawn on its own)");
    }
    spec.seed = static_cast<std::uint64_t>(reader.optional_integer("seed", 0, Null::kRejected).value_or(1));
    reader.reject_unknown_keys();
    cluster.jitter = spec;
  }
  top.reject_unknown_keys();
  return cluster;
}

Cluster read_cluster_file(const std::string& path, AllreduceAlgorithm unnamed) {
  return cluster_from_json(read_json_file(path), path, unnamed);
}

namespace {
Json link_to_json(const LinkSpec& link) {
  return Json{{"bandwidth_Gbps", link.bandwidth_Gbps}, {"latency_us", link.latency_us}};
}
}  // namespace

Json cluster_to_json(const Cluster& cluster) {
  Json document;
  document["format"] = kClusterFormat;
  if (cluster.name) document["name"] = *cluster.name;
  document["workers"] = cluster.workers;
  document["workers_per_node"] = cluster.workers_per_node;
  document["intra_node"] = link_to_json(cluster.intra_node);
  document["inter_node"] = link_to_json(cluster.inter_node);
  document["allreduce"] = to_string(cluster.allreduce);
  if (!cluster.compute_slowdown.empty()) document["compute_slowdown"] = cluster.compute_slowdown;
  if (cluster.jitter) {
    const JitterSpec& jitter = *cluster.jitter;
    if (jitter.distribution == JitterSpec::Distribution::kMeasured)
      document["jitter"] =
          Json{{"distribution", "measured"}, {"correlation", jitter.correlation}, {"seed", jitter.seed}};
    else
      document["jitter"] = Json{
          {"distribution", jitter.distribution == JitterSpec::Distribution::kLognormal ? "lognormal" : "normal"},
          {"sigma", jitter.sigma},
          {"seed", jitter.seed}};
  }
  return document;
}

}  // namespace syncplan
