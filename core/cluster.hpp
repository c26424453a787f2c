// Cluster description (syncplan.cluster/v1, docs/cluster.md): workers, nodes, links, all-reduce
// algorithm, stragglers and compute jitter.
#pragma once

#include "core/json_io.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace syncplan {

inline constexpr const char* kClusterFormat = "syncplan.cluster/v1";

/// One kind of link. `latency_us` is the one-way latency of a message between two workers that
/// talk over this kind of link (docs/cluster.md).
struct LinkSpec {
  double bandwidth_Gbps = 0;  ///< per direction, gigabits per second (1e9 bit/s), 1e-6..1e6 (core/limits.hpp)
  double latency_us = 0;      ///< one-way message latency, microseconds, 0..1e7 (core/limits.hpp)

  /// Bandwidth in bytes per second.
  double bandwidth_Bps() const;
  /// Latency in seconds (alpha of the alpha-beta model).
  double latency_s() const;
};

/// How an all-reduce is carried out (docs/collectives.md).
enum class AllreduceAlgorithm {
  kRing,          ///< one ring over every worker
  kTree,          ///< NCCL's double binary tree over every worker
  kHierarchical,  ///< reduce-scatter in nodes, all-reduce across nodes, all-gather in nodes
  /// per message size the cheapest of ring, tree and (with several workers per node and several
  /// nodes) hierarchical with a ring or a tree across nodes, as NCCL's tuner picks (docs/collectives.md 6)
  kAuto,
};

/// "ring", "tree", "hierarchical" or "auto".
std::string to_string(AllreduceAlgorithm algorithm);

/// The algorithm named `name` ("ring", "tree", "hierarchical" or "auto"); std::nullopt for any other.
std::optional<AllreduceAlgorithm> allreduce_algorithm(std::string_view name);

/// The names allreduce_algorithm accepts, for error messages: "\"ring\", \"tree\", \"hierarchical\" or \"auto\"".
inline constexpr const char* kAllreduceAlgorithmNames = "\"ring\", \"tree\", \"hierarchical\" or \"auto\"";

/// Random per-operation compute times (docs/cluster.md, "jitter"): a factor on the profile's time
/// (lognormal, normal), or a draw from the profile's measured spread (measured).
struct JitterSpec {
  enum class Distribution {
    kLognormal,  ///< times exp(sigma z - sigma^2 / 2), z standard normal
    kNormal,     ///< times max(0, 1 + sigma z)
    kMeasured,   ///< each time drawn from its layer's measured spread (profile forward_spread, ...;
                 ///< docs/des.md, "Compute spread")
  };
  Distribution distribution = Distribution::kLognormal;
  double sigma = 0;        ///< lognormal, normal: spread of the factor (lognormal: of its log), 0..2
                           ///< (core/limits.hpp); 0 for measured
  std::uint64_t seed = 1;  ///< random seed; the same seed gives the same run
  /// measured: the correlation, 0..1, of one worker's draws within one iteration (a Gaussian
  /// copula: 0 independent layers and passes, 1 all at the same quantile); 0 for the others.
  double correlation = 0;

  /// True when compute times are random: a sigma above 0, or measured.
  bool random() const { return sigma > 0 || distribution == Distribution::kMeasured; }
};

/// A whole cluster.
struct Cluster {
  std::optional<std::string> name;       ///< free text, e.g. "2 sites x 16 GPUs"
  int workers = 1;                       ///< data-parallel workers (GPUs), >= 1
  int workers_per_node = 1;              ///< divides `workers`
  LinkSpec intra_node;                   ///< between workers of one node (NVLink, PCIe, LAN of a site)
  LinkSpec inter_node;                   ///< each node's link to the others (NIC, WAN)
  /// False when the document had no `inter_node` (one node): inter_node is then a copy of
  /// intra_node, which a sweep to several nodes must not take for the link between them.
  bool inter_node_given = true;
  AllreduceAlgorithm allreduce = AllreduceAlgorithm::kRing;
  std::vector<double> compute_slowdown;  ///< empty (all 1) or `workers` factors in 1e-3..1e3 multiplying compute
  std::optional<JitterSpec> jitter;      ///< none: compute times are exact

  int nodes() const { return workers / workers_per_node; }
  /// Compute-time factor of `worker` (1 when not given).
  double slowdown(int worker) const;
  /// True when every worker computes at the same speed and nothing is random.
  bool identical_workers() const;
};

/// Parses a syncplan.cluster/v1 document. Unknown keys, wrong types, workers outside 1..16,777,216 (limits::kMaxWorkers),
/// workers not divisible by workers_per_node, a bandwidth, latency, slowdown factor or jitter sigma
/// outside the limits of core/limits.hpp, a slowdown list of the wrong length, an unknown algorithm
/// or distribution, a jitter correlation outside 0..1, a sigma with "measured" or a correlation
/// without it throw InputError naming `origin` and the field. A document without `allreduce` gets
/// `unnamed`: "ring" as docs/cluster.md says, "auto" for the commands that estimate a model
/// (`plan --model`, `whatif --model`: docs/collectives.md 6).
Cluster cluster_from_json(const Json& document, const std::string& origin,
                          AllreduceAlgorithm unnamed = AllreduceAlgorithm::kRing);

/// Reads a cluster file (read_json_file + cluster_from_json).
Cluster read_cluster_file(const std::string& path, AllreduceAlgorithm unnamed = AllreduceAlgorithm::kRing);

/// The syncplan.cluster/v1 document for `cluster`.
Json cluster_to_json(const Cluster& cluster);

}  // namespace syncplan
