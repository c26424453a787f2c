// Ring, double-binary-tree and hierarchical all-reduce phases, and "auto"'s cheapest per size
// (docs/collectives.md 3-6).
#include "simulator/collectives.hpp"

#include <algorithm>
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

// Two candidates' times within this relative difference are equal (the first is taken).
constexpr double kTieRelative = 1e-12;

// True when `a` is never slower than `b` at any size: its latency and its seconds per byte are
// both at most b's (within kTieRelative), and one is smaller, or `a` comes first.
bool dominates(const AllreduceCandidate& a, const AllreduceCandidate& b, bool a_first) {
  const auto at_most = [](double x, double y) { return x <= y * (1 + kTieRelative); };
  const auto below = [](double x, double y) { return x < y * (1 - kTieRelative); };
  return at_most(a.latency_s, b.latency_s) && at_most(a.s_per_byte, b.s_per_byte) &&
         (below(a.latency_s, b.latency_s) || below(a.s_per_byte, b.s_per_byte) || a_first);
}

// A double binary tree phase (docs/collectives.md 4): `worker_load` and `node_load` bytes per byte
// all-reduced on every worker link and every node link (0: none), at kTreeBandwidthEfficiency; the
// bottleneck is the link of least B / load, the lowest id (a worker link) on a tie.
CollectivePhase tree_phase(const Topology& topology, const char* name, double latency_s, double worker_load,
                           double node_load) {
  CollectivePhase phase;
  phase.name = name;
  phase.latency_s = latency_s;
  phase.efficiency = kTreeBandwidthEfficiency;
  const int p = topology.workers(), m = topology.nodes();
  if (worker_load > 0) {
    phase.link_bytes_per_byte.push_back(LinkRange{0, 2 * p, 1, worker_load});
    phase.bottleneck_link = 0;
    phase.bottleneck_bytes_per_byte = worker_load;
  }
  if (node_load > 0 && m > 1) {
    phase.link_bytes_per_byte.push_back(LinkRange{2 * p, 2 * m, 1, node_load});
    const double node_Bps = topology.link_bandwidth_Bps(2 * p);
    if (phase.bottleneck_link < 0 ||
        node_Bps / node_load < topology.link_bandwidth_Bps(0) / phase.bottleneck_bytes_per_byte) {
      phase.bottleneck_link = 2 * p;
      phase.bottleneck_bytes_per_byte = node_load;
    }
  }
  if (phase.bottleneck_link >= 0) phase.bottleneck_link_Bps = topology.link_bandwidth_Bps(phase.bottleneck_link);
  return phase;
}

}  // namespace

double ring_allreduce_s(double bytes, int workers, double alpha_s, double bandwidth_Bps) {
  if (workers <= 1) return 0;
  return 2.0 * (workers - 1) * alpha_s + 2.0 * (workers - 1) / workers * bytes / bandwidth_Bps;
}

double tree_allreduce_s(double bytes, int workers, double alpha_s, double bandwidth_Bps) {
  if (workers <= 1) return 0;
  return 2.0 * ceil_log2(workers) * alpha_s + 2.0 * bytes / (kTreeBandwidthEfficiency * bandwidth_Bps);
}

namespace {

// Builds the model's candidates and their phases (docs/collectives.md sections 3-6): each
// candidate is opened, then its phases are pushed until the next one opens.
struct CandidateBuilder {
  const Topology& topology;
  std::vector<CollectivePhase>& phases;
  std::vector<AllreduceCandidate>& candidates;
  int q, m;                       // workers per node, nodes
  double alpha_intra, alpha_inter;  // link latencies (s)

  void open(const char* name) {
    close();
    candidates.push_back(AllreduceCandidate{name, static_cast<int>(phases.size()), 0, 0, 0});
  }
  void close() {
    if (!candidates.empty()) candidates.back().end_phase = static_cast<int>(phases.size());
  }
  void ring() {
    const RingPhase ring = topology.ring_phase(RingFamily::kAllWorkers, 2);
    phases.push_back(phase_from_rings(topology, "all-reduce (ring)", ring, ring.steps * ring.latency_s));
  }
  // NCCL's layout: a chain of the q workers inside each node, a double binary tree across the m
  // nodes; every worker link and node link carries 2 bytes per byte (section 4).
  void tree() {
    phases.push_back(tree_phase(topology, "all-reduce (tree)", 2.0 * ((q - 1) * alpha_intra + ceil_log2(m) * alpha_inter),
                                2.0, 2.0));
  }
  // Section 5: reduce-scatter in nodes, q concurrent all-reduces of n/q across nodes (rings or
  // trees, one per local rank), all-gather in nodes.
  void hierarchical(bool tree_across) {
    if (q > 1) {
      const RingPhase intra = topology.ring_phase(RingFamily::kInsideNodes, 1);
      phases.push_back(phase_from_rings(topology, "reduce-scatter (intra-node)", intra, intra.steps * intra.latency_s));
    }
    if (m > 1 && !tree_across) {
      // Each of the q rings carries n/q bytes: scale its per-byte volume by 1/q.
      const RingPhase across = topology.ring_phase(RingFamily::kAcrossNodes, 2);
      CollectivePhase inter = phase_from_rings(topology, "all-reduce (inter-node)", across, across.steps * across.latency_s);
      inter.bottleneck_bytes_per_byte /= q;
      for (LinkRange& range : inter.link_bytes_per_byte) range.load /= q;
      phases.push_back(inter);
    }
    if (m > 1 && tree_across) {
      // q trees of n/q bytes: 2 n/q on each worker link, 2 n on each node link (shared by q).
      phases.push_back(tree_phase(topology, "all-reduce (inter-node tree)", 2.0 * ceil_log2(m) * alpha_inter, 2.0 / q, 2.0));
    }
    if (q > 1) {
      const RingPhase intra = topology.ring_phase(RingFamily::kInsideNodes, 1);
      phases.push_back(phase_from_rings(topology, "all-gather (intra-node)", intra, intra.steps * intra.latency_s));
    }
  }
  // The candidates of `algorithm` on p workers: one, or auto's ring, tree and (with several
  // workers per node and several nodes) both hierarchical ones. One worker: no phase at all.
  void build(AllreduceAlgorithm algorithm, int p) {
    switch (algorithm) {
      case AllreduceAlgorithm::kRing: open("ring"); if (p > 1) ring(); break;
      case AllreduceAlgorithm::kTree: open("tree"); if (p > 1) tree(); break;
      case AllreduceAlgorithm::kHierarchical: open("hierarchical"); if (p > 1) hierarchical(false); break;
      case AllreduceAlgorithm::kAuto:
        open("ring");
        if (p == 1) break;
        ring();
        open("tree");
        tree();
        if (q > 1 && m > 1) {
          open("hierarchical (ring across nodes)");
          hierarchical(false);
          open("hierarchical (tree across nodes)");
          hierarchical(true);
        }
        break;
    }
    close();
  }
};

// A candidate that another is never slower than at any size (latency and seconds per byte both at
// most its own, within rounding; the earlier on a tie) is never chosen: dropped, so that a cluster
// where one algorithm always wins is one line again (piecewise() false).
std::vector<AllreduceCandidate> undominated(const std::vector<AllreduceCandidate>& candidates) {
  std::vector<AllreduceCandidate> kept;
  for (std::size_t b = 0; b < candidates.size(); ++b) {
    bool dominated = false;
    for (std::size_t a = 0; a < candidates.size() && !dominated; ++a)
      dominated = a != b && dominates(candidates[a], candidates[b], a < b);
    if (!dominated) kept.push_back(candidates[b]);
  }
  return kept;
}

}  // namespace

AllreduceModel::AllreduceModel(const Cluster& cluster, const Topology& topology) {
  CandidateBuilder builder{topology, phases_, candidates_, cluster.workers_per_node, cluster.nodes(),
                           cluster.intra_node.latency_s(), cluster.inter_node.latency_s()};
  builder.build(cluster.allreduce, cluster.workers);
  for (AllreduceCandidate& c : candidates_)
    for (int i = c.first_phase; i < c.end_phase; ++i) {
      c.latency_s += phases_[i].latency_s;
      c.s_per_byte += phases_[i].s_per_byte();
    }
  candidates_ = undominated(candidates_);
  double slowest = -1;
  for (const CollectivePhase& phase : phases_) {
    if (phase.bottleneck_link < 0) continue;
    const double seconds_per_byte = phase.s_per_byte();
    if (seconds_per_byte > slowest) {
      slowest = seconds_per_byte;
      slowest_link_ = phase.bottleneck_link;
    }
  }
}

int AllreduceModel::most_phases() const {
  int most = 0;
  for (const AllreduceCandidate& c : candidates_) most = std::max(most, c.end_phase - c.first_phase);
  return most;
}

double AllreduceModel::candidate_time_s(int candidate, double bytes) const {
  const AllreduceCandidate& c = candidates_[candidate];
  double total = 0;
  for (int i = c.first_phase; i < c.end_phase; ++i) {
    const CollectivePhase& phase = phases_[i];
    total += phase.latency_s;
    if (phase.bottleneck_link >= 0)
      total += bytes * phase.bottleneck_bytes_per_byte / (phase.bottleneck_link_Bps * phase.efficiency);
  }
  return total;
}

int AllreduceModel::choose(double bytes) const {
  int best = 0;
  double best_s = candidate_time_s(0, bytes);
  for (int c = 1; c < static_cast<int>(candidates_.size()); ++c) {
    // Within rounding of the best so far (sums of the same terms in another order) is a tie.
    const double seconds = candidate_time_s(c, bytes);
    if (seconds < best_s * (1 - kTieRelative)) {
      best = c;
      best_s = seconds;
    }
  }
  return best;
}

double AllreduceModel::time_s(double bytes) const { return candidate_time_s(choose(bytes), bytes); }

double AllreduceModel::least_s_per_byte() const {
  double least = candidates_.front().s_per_byte;
  for (const AllreduceCandidate& c : candidates_) least = std::min(least, c.s_per_byte);
  return least;
}

}  // namespace syncplan
