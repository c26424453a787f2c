// The cluster as a two-level tree (workers, node switches, a core switch) described by arithmetic,
// not stored: paths between workers and the load that concurrent rings put on each directed link
// (docs/collectives.md 1-2), in O(1) memory whatever the worker count.
#pragma once

#include "core/cluster.hpp"

#include <string>
#include <vector>

namespace syncplan {

/// A directed link: one direction of a full-duplex cable of the topology.
struct DirectedLink {
  std::string name;        ///< e.g. "node3<->core (up)"
  double bandwidth_Bps = 0;///< bytes per second in this direction
  double latency_s = 0;    ///< one-way latency of the link kind (docs/collectives.md 1)
};

/// A path between two workers: the directed links it crosses, and its latency.
struct Path {
  std::vector<int> links;  ///< directed link ids, in order
  double latency_s = 0;    ///< largest latency of the link kinds crossed
};

/// Directed links that a phase loads alike: ids first, first + stride, ..., `count` of them, each
/// crossed by `load` hops (or carrying `load` bytes per byte all-reduced, in CollectivePhase).
/// A ring over 100,000 workers loads 225,000 links as four ranges, not as a list.
struct LinkRange {
  int first = 0;    ///< the lowest directed link id
  int count = 1;    ///< how many links, >= 1
  int stride = 1;   ///< id step between them, >= 1
  double load = 0;  ///< hops crossing each (or bytes per byte all-reduced)
};

/// Concurrent rings of one phase (docs/collectives.md 2): the slowest hop, and the load per link.
struct RingPhase {
  int steps = 0;              ///< number of ring steps
  double chunk_fraction = 0;  ///< each step moves this fraction of the phase's data per hop
  double latency_s = 0;       ///< alpha of the slowest hop (s)
  int bottleneck_link = -1;   ///< directed link id with the smallest B / load (-1: no transfer); the lowest id on a tie
  double bottleneck_Bps = 0;  ///< B / load of that link (bytes per second)
  double bottleneck_load = 0; ///< how many hops cross the bottleneck link
  std::vector<LinkRange> link_loads;  ///< every link crossed, with the hops crossing it

  /// Time of the phase for `bytes` of data per ring (s): steps * (alpha + chunk / B).
  double time_s(double bytes) const;
};

/// The rings the cluster's all-reduces run (docs/collectives.md 3-5), each over workers in index order.
enum class RingFamily {
  kAllWorkers,   ///< one ring over every worker, node by node (ring and tree all-reduce)
  kInsideNodes,  ///< one ring per node over its workers, all nodes at once (hierarchical, intra-node)
  kAcrossNodes,  ///< one ring per local rank over the nodes, q rings at once (hierarchical, inter-node)
};

/// The tree of a cluster (docs/collectives.md 1). Vertices: workers 0..p-1, node switches, and a
/// core switch when there are several nodes. Directed link ids: worker w's cable to its node's
/// switch is 2w (up) and 2w + 1 (down); node n's cable to the core, when there are several nodes,
/// 2p + 2n (up) and 2p + 2n + 1 (down). Nothing per worker is stored.
class Topology {
 public:
  /// The tree of `cluster` (O(1): its worker and node counts and its two link kinds).
  explicit Topology(const Cluster& cluster);

  int workers() const { return workers_; }
  int nodes() const { return nodes_; }
  /// Directed links: 2 per worker, plus 2 per node when there are several nodes.
  int link_count() const;
  /// Directed link `id` (0..link_count()-1), its name made on demand. Throws InternalError on a bad id.
  DirectedLink link(int id) const;
  /// link(id).bandwidth_Bps without making the name (bytes per second).
  double link_bandwidth_Bps(int id) const;

  /// The path from worker `from` to worker `to` (empty when equal). Throws InternalError on a bad id.
  Path path(int from, int to) const;

  /// The phase in which every ring of `rings` (worker ids in ring order, all of one size k) runs
  /// passes * (k - 1) steps at once, each hop moving 1/k of the ring's data per step
  /// (passes = 1: a reduce-scatter or an all-gather; 2: an all-reduce). Walks every hop's path:
  /// O(ring members); for explicit rings (tests, other orders).
  RingPhase ring_phase(const std::vector<std::vector<int>>& rings, int passes) const;

  /// The same phase for one of the cluster's ring families, in closed form (O(1)): the loads that
  /// walking the family's hops gives (tests/des/test_collectives.cpp checks one against the other).
  /// A family of rings of one worker (p = 1, q = 1 or one node) is an empty phase: no steps, no time.
  RingPhase ring_phase(RingFamily family, int passes) const;

 private:
  int workers_ = 1;
  int workers_per_node_ = 1;
  int nodes_ = 1;
  LinkSpec intra_node_, inter_node_;
};

}  // namespace syncplan
