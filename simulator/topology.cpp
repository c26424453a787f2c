// The cluster's two-level tree by arithmetic: link ids and names, paths between workers, and the
// loads and bottleneck of ring phases (docs/collectives.md sections 1-2).
#include "simulator/topology.hpp"

#include "core/errors.hpp"

#include <algorithm>
#include <limits>
#include <map>

namespace syncplan {

double RingPhase::time_s(double bytes) const {
  if (steps == 0) return 0;
  const double transfer = bottleneck_link < 0 ? 0.0 : steps * bytes * chunk_fraction / bottleneck_Bps;
  return steps * latency_s + transfer;
}

Topology::Topology(const Cluster& cluster)
    : workers_(cluster.workers), workers_per_node_(cluster.workers_per_node), nodes_(cluster.nodes()),
      intra_node_(cluster.intra_node), inter_node_(cluster.inter_node) {
  SYNCPLAN_CHECK(workers_ >= 1 && workers_per_node_ >= 1 && workers_ % workers_per_node_ == 0);
}

int Topology::link_count() const { return 2 * workers_ + (nodes_ > 1 ? 2 * nodes_ : 0); }

DirectedLink Topology::link(int id) const {
  SYNCPLAN_CHECK(id >= 0 && id < link_count());
  const char* direction = id % 2 == 0 ? " (up)" : " (down)";
  if (id < 2 * workers_) {
    const int worker = id / 2;
    return {"worker" + std::to_string(worker) + "<->node" + std::to_string(worker / workers_per_node_) + direction,
            intra_node_.bandwidth_Bps(), intra_node_.latency_s()};
  }
  return {"node" + std::to_string((id - 2 * workers_) / 2) + "<->core" + direction, inter_node_.bandwidth_Bps(),
          inter_node_.latency_s()};
}

double Topology::link_bandwidth_Bps(int id) const {
  SYNCPLAN_CHECK(id >= 0 && id < link_count());
  return id < 2 * workers_ ? intra_node_.bandwidth_Bps() : inter_node_.bandwidth_Bps();
}

Path Topology::path(int from, int to) const {
  SYNCPLAN_CHECK(from >= 0 && from < workers_ && to >= 0 && to < workers_);
  Path result;
  if (from == to) return result;
  // Up from the sender to its node's switch; across the core when the nodes differ; down to `to`.
  result.links.push_back(2 * from);
  result.latency_s = intra_node_.latency_s();
  const int from_node = from / workers_per_node_, to_node = to / workers_per_node_;
  if (from_node != to_node) {
    result.links.push_back(2 * workers_ + 2 * from_node);
    result.links.push_back(2 * workers_ + 2 * to_node + 1);
    result.latency_s = std::max(result.latency_s, inter_node_.latency_s());
  }
  result.links.push_back(2 * to + 1);
  return result;
}

namespace {

// The bottleneck of a phase over `loads` (disjoint ranges): the smallest B / load, the lowest link
// id on a tie (as walking the ids in order finds it).
void choose_bottleneck(RingPhase& phase, const Topology& topology) {
  double slowest = std::numeric_limits<double>::infinity();
  int lowest = std::numeric_limits<int>::max();
  for (const LinkRange& range : phase.link_loads) {
    const double share = topology.link_bandwidth_Bps(range.first) / range.load;
    if (share < slowest || (share == slowest && range.first < lowest)) {
      slowest = share;
      lowest = range.first;
      phase.bottleneck_link = range.first;
      phase.bottleneck_Bps = share;
      phase.bottleneck_load = range.load;
    }
  }
}

}  // namespace

RingPhase Topology::ring_phase(const std::vector<std::vector<int>>& rings, int passes) const {
  RingPhase phase;
  if (rings.empty() || rings.front().size() < 2) return phase;
  const int k = static_cast<int>(rings.front().size());
  phase.steps = passes * (k - 1);
  phase.chunk_fraction = 1.0 / k;
  std::map<int, double> loads;
  for (const std::vector<int>& ring : rings) {
    SYNCPLAN_CHECK(static_cast<int>(ring.size()) == k);
    for (int i = 0; i < k; ++i) {
      const Path hop = path(ring[i], ring[(i + 1) % k]);
      phase.latency_s = std::max(phase.latency_s, hop.latency_s);
      for (const int link : hop.links) loads[link] += 1;
    }
  }
  for (const auto& [link, load] : loads) phase.link_loads.push_back({link, 1, 1, load});
  choose_bottleneck(phase, *this);
  return phase;
}

RingPhase Topology::ring_phase(RingFamily family, int passes) const {
  // Ring size k and the load of each node's links to the core (0: the rings stay inside nodes).
  // Every worker sends one hop and receives one in each family, so its two links carry load 1.
  int k = workers_;
  double node_load = nodes_ > 1 ? 1 : 0;  // kAllWorkers: one hop leaves and one enters each node
  switch (family) {
    case RingFamily::kAllWorkers: break;
    case RingFamily::kInsideNodes:
      k = workers_per_node_;
      node_load = 0;
      break;
    case RingFamily::kAcrossNodes:
      // q rings of m workers, each with one hop out of and one into every node.
      k = nodes_;
      node_load = workers_per_node_;
      break;
  }
  RingPhase phase;
  if (k < 2) return phase;
  phase.steps = passes * (k - 1);
  phase.chunk_fraction = 1.0 / k;
  phase.latency_s = intra_node_.latency_s();
  phase.link_loads = {{0, workers_, 2, 1.0}, {1, workers_, 2, 1.0}};
  if (node_load > 0) {
    phase.latency_s = std::max(phase.latency_s, inter_node_.latency_s());
    phase.link_loads.push_back({2 * workers_, nodes_, 2, node_load});
    phase.link_loads.push_back({2 * workers_ + 1, nodes_, 2, node_load});
  }
  choose_bottleneck(phase, *this);
  return phase;
}

}  // namespace syncplan
