// Ring, double-binary-tree and hierarchical all-reduce phases (docs/collectives.md 3-6).
#include "simulator/collectives.hpp"

#include <cmath>

namespace syncplan {

namespace {

int ceil_log2(int p) {
  int levels = 0;
  while ((1 << levels) < p) ++levels;
  return levels;
}

CollectivePhase phase_from_rings(const Topology& topology, const char* name, const RingPhase& ring, double latency_s) {
  CollectivePhase phase;
  phase.name = name;
  phase.latency_s = latency_s;
  phase.bottleneck_link = ring.bottleneck_link;
  if (ring.bottleneck_link >= 0) phase.bottleneck_link_Bps = topology.link_bandwidth_Bps(ring.bottleneck_link);
  const double per_hop = ring.steps * ring.chunk_fraction;  // bytes per hop per byte of ring data
  phase.bottleneck_bytes_per_byte = per_hop * ring.bottleneck_load;
  for (LinkRange range : ring.link_loads) {
    range.load *= per_hop;
    phase.link_bytes_per_byte.push_back(range);
  }
  return phase;
}

}  // namespace

double ring_allreduce_s(double bytes, int workers, double alpha_s, double bandwidth_Bps) {
  if (workers <= 1) return 0;
  return 2.0 * (workers - 1) * alpha_s + 2.0 * (workers - 1) / workers * bytes / bandwidth_Bps;
}

double tree_allreduce_s(double bytes, int workers, double alpha_s, double bandwidth_Bps) {
  if (workers <= 1) return 0;
  return 2.0 * ceil_log2(workers) * alpha_s + 2.0 * (workers - 1) / workers * bytes / bandwidth_Bps;
}

AllreduceModel::AllreduceModel(const Cluster& cluster, const Topology& topology) {
  const int p = cluster.workers;
  if (p > 1) {
    switch (cluster.allreduce) {
      case AllreduceAlgorithm::kRing: {
        const RingPhase ring = topology.ring_phase(RingFamily::kAllWorkers, 2);
        phases_.push_back(phase_from_rings(topology, "all-reduce (ring)", ring, ring.steps * ring.latency_s));
        break;
      }
      case AllreduceAlgorithm::kTree: {
        const RingPhase ring = topology.ring_phase(RingFamily::kAllWorkers, 2);
        phases_.push_back(phase_from_rings(topology, "all-reduce (tree)", ring, 2.0 * ceil_log2(p) * ring.latency_s));
        break;
      }
      case AllreduceAlgorithm::kHierarchical: {
        const int q = cluster.workers_per_node, m = cluster.nodes();
        if (q > 1) {
          const RingPhase intra = topology.ring_phase(RingFamily::kInsideNodes, 1);
          phases_.push_back(phase_from_rings(topology, "reduce-scatter (intra-node)", intra, intra.steps * intra.latency_s));
        }
        if (m > 1) {
          // Each of the q rings carries n/q bytes: scale its per-byte volume by 1/q.
          const RingPhase ring = topology.ring_phase(RingFamily::kAcrossNodes, 2);
          CollectivePhase inter = phase_from_rings(topology, "all-reduce (inter-node)", ring, ring.steps * ring.latency_s);
          inter.bottleneck_bytes_per_byte /= q;
          for (LinkRange& range : inter.link_bytes_per_byte) range.load /= q;
          phases_.push_back(inter);
        }
        if (q > 1) {
          const RingPhase intra = topology.ring_phase(RingFamily::kInsideNodes, 1);
          phases_.push_back(phase_from_rings(topology, "all-gather (intra-node)", intra, intra.steps * intra.latency_s));
        }
        break;
      }
    }
  }
  double slowest = -1;
  for (const CollectivePhase& phase : phases_) {
    if (phase.bottleneck_link < 0) continue;
    const double seconds_per_byte = phase.bottleneck_bytes_per_byte / phase.bottleneck_link_Bps;
    if (seconds_per_byte > slowest) {
      slowest = seconds_per_byte;
      measured_link_ = phase.bottleneck_link;
    }
  }
}

double AllreduceModel::time_s(double bytes) const {
  double total = 0;
  for (const CollectivePhase& phase : phases_) {
    total += phase.latency_s;
    if (phase.bottleneck_link >= 0)
      total += bytes * phase.bottleneck_bytes_per_byte / phase.bottleneck_link_Bps;
  }
  return total;
}

}  // namespace syncplan
