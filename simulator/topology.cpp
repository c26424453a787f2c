// The cluster graph (Boost.Graph), paths between workers, and ring-phase bottlenecks
// (docs/collectives.md sections 1-2).
#include "simulator/topology.hpp"

#include "core/errors.hpp"

#include <boost/graph/adjacency_list.hpp>
#include <boost/graph/breadth_first_search.hpp>
#include <boost/graph/visitors.hpp>

#include <algorithm>
#include <limits>
#include <map>

namespace syncplan {

double RingPhase::time_s(double bytes) const {
  if (steps == 0) return 0;
  const double transfer = bottleneck_link < 0 ? 0.0 : steps * bytes * chunk_fraction / bottleneck_Bps;
  return steps * latency_s + transfer;
}

namespace {
struct CableProperties {
  int up_link = -1;    // directed link child -> parent
  int down_link = -1;  // directed link parent -> child
  double latency_s = 0;
};
using Graph = boost::adjacency_list<boost::vecS, boost::vecS, boost::undirectedS, boost::no_property,
                                    CableProperties>;
}  // namespace

Topology::Topology(const Cluster& cluster) : workers_(cluster.workers) {
  const int nodes = cluster.nodes();
  const int switch0 = workers_;
  const int core = nodes > 1 ? workers_ + nodes : -1;
  Graph graph(workers_ + nodes + (nodes > 1 ? 1 : 0));
  const auto add_cable = [&](int child, int parent, const LinkSpec& spec, const std::string& name) {
    CableProperties cable;
    cable.up_link = static_cast<int>(links_.size());
    links_.push_back({name + " (up)", spec.bandwidth_Bps(), spec.latency_s()});
    cable.down_link = static_cast<int>(links_.size());
    links_.push_back({name + " (down)", spec.bandwidth_Bps(), spec.latency_s()});
    cable.latency_s = spec.latency_s();
    boost::add_edge(child, parent, cable, graph);
  };
  for (int w = 0; w < workers_; ++w)
    add_cable(w, switch0 + w / cluster.workers_per_node, cluster.intra_node,
              "worker" + std::to_string(w) + "<->node" + std::to_string(w / cluster.workers_per_node));
  if (nodes > 1)
    for (int n = 0; n < nodes; ++n)
      add_cable(switch0 + n, core, cluster.inter_node, "node" + std::to_string(n) + "<->core");

  // Breadth-first search from the root gives every vertex its parent: paths are then unique.
  const int root = nodes > 1 ? core : switch0;
  const auto vertex_count = boost::num_vertices(graph);
  std::vector<Graph::vertex_descriptor> predecessor(vertex_count);
  std::vector<int> distance(vertex_count, 0);
  predecessor[root] = root;
  boost::breadth_first_search(
      graph, boost::vertex(root, graph),
      boost::visitor(boost::make_bfs_visitor(
          std::make_pair(boost::record_predecessors(predecessor.data(), boost::on_tree_edge()),
                         boost::record_distances(distance.data(), boost::on_tree_edge())))));
  parent_.assign(vertex_count, -1);
  parent_link_up_.assign(vertex_count, -1);
  parent_link_down_.assign(vertex_count, -1);
  parent_latency_s_.assign(vertex_count, 0);
  depth_ = distance;
  for (std::size_t v = 0; v < vertex_count; ++v) {
    if (static_cast<int>(v) == root) continue;
    const auto [edge, found] = boost::edge(v, predecessor[v], graph);
    SYNCPLAN_CHECK(found);
    const CableProperties& cable = graph[edge];
    parent_[v] = static_cast<int>(predecessor[v]);
    // Cables were added child-first, so "up" is always towards the root.
    parent_link_up_[v] = cable.up_link;
    parent_link_down_[v] = cable.down_link;
    parent_latency_s_[v] = cable.latency_s;
  }
}

Path Topology::path(int from, int to) const {
  SYNCPLAN_CHECK(from >= 0 && from < workers_ && to >= 0 && to < workers_);
  Path result;
  std::vector<int> down;
  int a = from, b = to;
  while (a != b) {
    if (depth_[a] >= depth_[b]) {
      result.links.push_back(parent_link_up_[a]);
      result.latency_s = std::max(result.latency_s, parent_latency_s_[a]);
      a = parent_[a];
    } else {
      down.push_back(parent_link_down_[b]);
      result.latency_s = std::max(result.latency_s, parent_latency_s_[b]);
      b = parent_[b];
    }
  }
  result.links.insert(result.links.end(), down.rbegin(), down.rend());
  return result;
}

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
  double slowest = std::numeric_limits<double>::infinity();
  for (const auto& [link, load] : loads) {
    phase.link_loads.emplace_back(link, load);
    const double share = links_[link].bandwidth_Bps / load;
    if (share < slowest) {
      slowest = share;
      phase.bottleneck_link = link;
      phase.bottleneck_Bps = share;
      phase.bottleneck_load = load;
    }
  }
  return phase;
}

}  // namespace syncplan
