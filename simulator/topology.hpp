// The cluster as a graph (Boost.Graph): workers, node switches, a core switch; paths between
// workers and the load that concurrent rings put on each directed link (docs/collectives.md 1-2).
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

/// Concurrent rings of one phase (docs/collectives.md 2): the slowest hop, and bytes per link.
struct RingPhase {
  int steps = 0;              ///< number of ring steps
  double chunk_fraction = 0;  ///< each step moves this fraction of the phase's data per hop
  double latency_s = 0;       ///< alpha of the slowest hop (s)
  int bottleneck_link = -1;   ///< directed link id with the smallest B / load (-1: no transfer)
  double bottleneck_Bps = 0;  ///< B / load of that link (bytes per second)
  double bottleneck_load = 0; ///< how many hops cross the bottleneck link
  std::vector<std::pair<int, double>> link_loads;  ///< (directed link, hops crossing it)

  /// Time of the phase for `bytes` of data per ring (s): steps * (alpha + chunk / B).
  double time_s(double bytes) const;
};

/// The graph of a cluster. Vertices: workers 0..p-1, then node switches, then the core switch.
class Topology {
 public:
  /// Builds the graph of `cluster` (docs/collectives.md 1).
  explicit Topology(const Cluster& cluster);

  int workers() const { return workers_; }
  const std::vector<DirectedLink>& links() const { return links_; }

  /// The path from worker `from` to worker `to` (empty when equal). Throws InternalError on a bad id.
  Path path(int from, int to) const;

  /// The phase in which every ring of `rings` (worker ids in ring order, all of one size k) runs
  /// passes * (k - 1) steps at once, each hop moving 1/k of the ring's data per step
  /// (passes = 1: a reduce-scatter or an all-gather; 2: an all-reduce).
  RingPhase ring_phase(const std::vector<std::vector<int>>& rings, int passes) const;

 private:
  int workers_;
  std::vector<DirectedLink> links_;
  // parent_[v]: the next vertex towards the root (core, or the only node switch); parent_link_up_[v]
  // and parent_link_down_[v]: the directed links v -> parent and parent -> v.
  std::vector<int> parent_, parent_link_up_, parent_link_down_, depth_;
  std::vector<double> parent_latency_s_;
};

}  // namespace syncplan
