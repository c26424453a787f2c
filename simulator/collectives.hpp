// All-reduce cost models on a topology: ring, double binary tree, two-level hierarchical
// (docs/collectives.md sections 3-6).
#pragma once

#include "core/cluster.hpp"
#include "simulator/topology.hpp"

#include <vector>

namespace syncplan {

/// One phase of an all-reduce: a fixed latency, then a transfer on its bottleneck link.
struct CollectivePhase {
  const char* name = "";               ///< "all-reduce", "reduce-scatter", ...
  double latency_s = 0;                ///< alpha terms of the whole phase (s)
  int bottleneck_link = -1;            ///< directed link id of the topology (-1: nothing moves)
  double bottleneck_link_Bps = 0;      ///< that link's bandwidth (bytes per second)
  double bottleneck_bytes_per_byte = 0;///< bytes crossing that link per byte all-reduced
  std::vector<LinkRange> link_bytes_per_byte;  ///< every link crossed; `load`: bytes per byte all-reduced
};

/// The all-reduce of a cluster (its `allreduce` algorithm over all its workers), precomputed so
/// that the time of n bytes is O(phases). Building it is O(1) in the worker count (the phases'
/// ring families in closed form, Topology::ring_phase(RingFamily, ...)). Over one worker (p = 1)
/// it has no phases and every all-reduce costs 0 s; the hierarchical one skips the intra-node
/// phases when q = 1 and the inter-node one with a single node (a group of one moves nothing).
class AllreduceModel {
 public:
  /// Builds the phases for `cluster` on `topology` (the same cluster's graph).
  AllreduceModel(const Cluster& cluster, const Topology& topology);

  const std::vector<CollectivePhase>& phases() const { return phases_; }

  /// Time of an all-reduce of `bytes` bytes when it has every link to itself (s):
  /// T_ring, T_tree or T_hier of docs/collectives.md.
  double time_s(double bytes) const;

  /// The bottleneck link of the slowest phase (-1 when there is a single worker): where this
  /// cluster's all-reduces are limited. (The DES charges measured times to one shared resource of
  /// its own instead, docs/des.md section 2.)
  int measured_link() const { return measured_link_; }

 private:
  std::vector<CollectivePhase> phases_;
  int measured_link_ = -1;
};

/// T_ring = 2(p-1) alpha + 2(p-1)/p n / B (docs/collectives.md 3), for hand calculations and tests.
double ring_allreduce_s(double bytes, int workers, double alpha_s, double bandwidth_Bps);
/// T_tree = 2 ceil(log2 p) alpha + 2(p-1)/p n / B (docs/collectives.md 4).
double tree_allreduce_s(double bytes, int workers, double alpha_s, double bandwidth_Bps);

}  // namespace syncplan
