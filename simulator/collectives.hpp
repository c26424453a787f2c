// All-reduce cost models on a topology: ring, double binary tree, two-level hierarchical
// (docs/collectives.md sections 3-6).
#pragma once

#include "core/cluster.hpp"
#include "simulator/topology.hpp"

#include <vector>

namespace syncplan {

/// The share of a link's bandwidth a double binary tree reaches: NCCL's tuning model takes the
/// tree's bus bandwidth as 0.9 of the ring's (NVIDIA/nccl src/graph/tuning.cc, ncclTopoTuneModel;
/// docs/collectives.md 4).
inline constexpr double kTreeBandwidthEfficiency = 0.9;

/// One phase of an all-reduce: a fixed latency, then a transfer on its bottleneck link.
struct CollectivePhase {
  const char* name = "";               ///< "all-reduce", "reduce-scatter", ...
  double latency_s = 0;                ///< alpha terms of the whole phase (s)
  int bottleneck_link = -1;            ///< directed link id of the topology (-1: nothing moves)
  double bottleneck_link_Bps = 0;      ///< that link's bandwidth (bytes per second)
  double bottleneck_bytes_per_byte = 0;///< bytes crossing that link per byte all-reduced
  /// The share of the bottleneck's bandwidth the phase reaches, in (0, 1]: 1 for rings,
  /// kTreeBandwidthEfficiency for trees. The phase's transfer takes
  /// bytes x bottleneck_bytes_per_byte / (bottleneck_link_Bps x efficiency) seconds.
  double efficiency = 1;
  std::vector<LinkRange> link_bytes_per_byte;  ///< every link crossed; `load`: bytes per byte all-reduced

  /// Seconds per byte all-reduced of the transfer (0 when nothing moves).
  double s_per_byte() const {
    return bottleneck_link < 0 ? 0.0 : bottleneck_bytes_per_byte / (bottleneck_link_Bps * efficiency);
  }
};

/// One way of carrying out a cluster's all-reduce: the phases phases()[first_phase, end_phase) of
/// its AllreduceModel, run one after the other. Its time is affine in the bytes n:
/// latency_s + s_per_byte x n.
struct AllreduceCandidate {
  const char* name = "";  ///< "ring", "tree", "hierarchical (ring across nodes)", "hierarchical (tree across nodes)"
  int first_phase = 0;    ///< index of its first phase in AllreduceModel::phases()
  int end_phase = 0;      ///< one past its last phase (== first_phase: nothing moves, 0 s)
  double latency_s = 0;   ///< the sum of its phases' latencies (s)
  double s_per_byte = 0;  ///< the sum of its phases' seconds per byte (s/byte)

};

/// The all-reduce of a cluster (its `allreduce` algorithm over all its workers), precomputed so
/// that the time of n bytes is O(phases). Building it is O(1) in the worker count (the phases'
/// ring families in closed form, Topology::ring_phase(RingFamily, ...)). Over one worker (p = 1)
/// it has no phases and every all-reduce costs 0 s; the hierarchical one skips the intra-node
/// phases when q = 1 and the inter-node one with a single node (a group of one moves nothing).
/// "ring", "tree" and "hierarchical" have one candidate; "auto" has up to four (docs/collectives.md
/// 6), and each all-reduce runs the cheapest for its size (choose()).
class AllreduceModel {
 public:
  /// Builds the phases for `cluster` on `topology` (the same cluster's graph).
  AllreduceModel(const Cluster& cluster, const Topology& topology);

  /// Every candidate's phases, candidate after candidate.
  const std::vector<CollectivePhase>& phases() const { return phases_; }
  /// The ways the all-reduce may run (at least one; one unless the algorithm is "auto"), in the
  /// order ring, tree, hierarchical with rings, hierarchical with trees, less those that another is
  /// never slower than at any size (both latency and seconds per byte at most its own).
  const std::vector<AllreduceCandidate>& candidates() const { return candidates_; }
  /// The most phases of any candidate (the phases one all-reduce runs, at most).
  int most_phases() const;

  /// The candidate an all-reduce of `bytes` runs: the least candidate_time_s(c, bytes), the first
  /// of them on a tie within 1e-12 relative (candidates() order: ring, tree, then the hierarchical
  /// ones). O(candidates).
  int choose(double bytes) const;

  /// Time of candidate `candidate`'s all-reduce of `bytes` bytes when it has every link to itself
  /// (s): the sum over its phases of latency_s + bytes x bottleneck_bytes_per_byte /
  /// (bottleneck_link_Bps x efficiency).
  double candidate_time_s(int candidate, double bytes) const;

  /// Time of an all-reduce of `bytes` bytes when it has every link to itself (s): T_ring, T_tree,
  /// T_hier or T_auto (the least of the candidates) of docs/collectives.md.
  double time_s(double bytes) const;

  /// The least seconds per byte of any candidate: time_s(n) >= time_s(0) + this x n for n >= 0,
  /// since each candidate's latency is at least the least latency time_s(0) (s/byte).
  double least_s_per_byte() const;

  /// True when time_s is not one line in the bytes (several candidates): a fused bucket's time is
  /// then time_s of its summed bytes, not its members' times less the start-ups saved.
  bool piecewise() const { return candidates_.size() > 1; }

  /// The bottleneck link of the slowest phase (-1 when there is a single worker): where this
  /// cluster's all-reduces are limited. (The DES charges measured times to one shared resource of
  /// its own instead, docs/des.md section 2.)
  int slowest_link() const { return slowest_link_; }

 private:
  std::vector<CollectivePhase> phases_;
  std::vector<AllreduceCandidate> candidates_;
  int slowest_link_ = -1;
};

/// T_ring = 2(p-1) alpha + 2(p-1)/p n / B (docs/collectives.md 3), for hand calculations and tests.
double ring_allreduce_s(double bytes, int workers, double alpha_s, double bandwidth_Bps);
/// T_tree = 2 ceil(log2 p) alpha + 2 n / (0.9 B), one worker per node (docs/collectives.md 4).
double tree_allreduce_s(double bytes, int workers, double alpha_s, double bandwidth_Bps);

}  // namespace syncplan
