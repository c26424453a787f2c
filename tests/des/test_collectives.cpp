// All-reduce cost models on the cluster topology (docs/collectives.md), with numbers chosen to be
// easy by hand: 8 Gbit/s = 1e9 bytes/s, 80 Gbit/s = 1e10 bytes/s; 10 us = 1e-5 s, 1 us = 1e-6 s;
// n = 1e6 bytes, so n / (1e9 bytes/s) = 1e-3 s.
#include "des_support.hpp"

#include "simulator/collectives.hpp"
#include "simulator/topology.hpp"

namespace syncplan {
namespace {

using des_test::cluster_document;
using des_test::cluster_of;
using des_test::model_time_s;
using des_test::near;

constexpr double kBytes = 1e6;

}  // namespace

TEST_CASE("collectives: ring_allreduce_s and tree_allreduce_s by hand", "[collectives]") {
  // T_ring = 2(p-1) alpha + 2(p-1)/p n/B; alpha = 1e-5 s, n/B = 1e-3 s.
  //   p = 2: 2e-5 + 1 * 1e-3    = 1.02e-3
  //   p = 4: 6e-5 + 1.5 * 1e-3  = 1.56e-3
  //   p = 8: 1.4e-4 + 1.75e-3   = 1.89e-3
  REQUIRE(ring_allreduce_s(kBytes, 2, 1e-5, 1e9) == near(1.02e-3));
  REQUIRE(ring_allreduce_s(kBytes, 4, 1e-5, 1e9) == near(1.56e-3));
  REQUIRE(ring_allreduce_s(kBytes, 8, 1e-5, 1e9) == near(1.89e-3));
  // T_tree = 2 ceil(log2 p) alpha + 2 n / (0.9 B); 2 n / (0.9 B) = 2e-3 / 0.9 = 2.2222...e-3.
  //   p = 2: 2e-5 + 2.2222e-3; p = 4: 4e-5 + 2.2222e-3; p = 8: 6e-5 + 2.2222e-3
  //   p = 5: ceil(log2 5) = 3: 6e-5 + 2.2222e-3
  constexpr double kTreeBandwidth_s = 2e-3 / 0.9;
  REQUIRE(tree_allreduce_s(kBytes, 2, 1e-5, 1e9) == near(2e-5 + kTreeBandwidth_s));
  REQUIRE(tree_allreduce_s(kBytes, 4, 1e-5, 1e9) == near(4e-5 + kTreeBandwidth_s));
  REQUIRE(tree_allreduce_s(kBytes, 8, 1e-5, 1e9) == near(6e-5 + kTreeBandwidth_s));
  REQUIRE(tree_allreduce_s(kBytes, 5, 1e-5, 1e9) == near(6e-5 + kTreeBandwidth_s));
  // docs/collectives.md 4's example: p = 8, alpha = 10 us, n = 0: tree 60 us, ring 140 us.
  REQUIRE(tree_allreduce_s(0, 8, 1e-5, 1e9) == near(6e-5));
  REQUIRE(ring_allreduce_s(0, 8, 1e-5, 1e9) == near(1.4e-4));
  // One worker: nothing to do.
  REQUIRE(ring_allreduce_s(kBytes, 1, 1e-5, 1e9) == 0);
  REQUIRE(tree_allreduce_s(kBytes, 1, 1e-5, 1e9) == 0);
}

TEST_CASE("collectives: ring, tree and hierarchical in one node (8 Gbit/s, 10 us)", "[collectives]") {
  // In one node every hop crosses two intra-node links with load 1: B = 1e9, alpha = 1e-5.
  // Ring as the helper above; hierarchical in one node is the ring (two intra phases of (p-1)
  // steps: 2(p-1) alpha + 2(p-1)/p n/B). The tree in one node is NCCL's chain of p workers:
  // 2 (p-1) alpha + 2 n / (0.9 B) = 2 (p-1) 1e-5 + 2.2222e-3.
  struct Case { int p; double ring, tree; };
  constexpr double kTreeBandwidth_s = 2e-3 / 0.9;
  for (const Case c : {Case{2, 1.02e-3, 2e-5 + kTreeBandwidth_s}, Case{4, 1.56e-3, 6e-5 + kTreeBandwidth_s},
                       Case{8, 1.89e-3, 1.4e-4 + kTreeBandwidth_s}}) {
    INFO("p = " << c.p);
    REQUIRE(model_time_s(cluster_document(c.p, c.p, 8, 10, 0, 0, "ring"), kBytes) == near(c.ring));
    REQUIRE(model_time_s(cluster_document(c.p, c.p, 8, 10, 0, 0, "tree"), kBytes) == near(c.tree));
    REQUIRE(model_time_s(cluster_document(c.p, c.p, 8, 10, 0, 0, "hierarchical"), kBytes) == near(c.ring));
  }
  // A single worker: no phases, no time.
  const Cluster single = cluster_of(cluster_document(1, 1, 8, 10));
  const Topology topology(single);
  const AllreduceModel model(single, topology);
  REQUIRE(model.phases().empty());
  REQUIRE(model.time_s(kBytes) == 0);
  REQUIRE(model.slowest_link() == -1);
}

TEST_CASE("collectives: several nodes (intra 80 Gbit/s 1 us, inter 8 Gbit/s 10 us)", "[collectives]") {
  // 8 workers, 2 per node, 4 nodes. Ring in index order: hops 1->2, 3->4, 5->6, 7->0 cross the
  // node links (latency max(1, 10) us = 1e-5 s); every directed link carries one hop, so the
  // bottleneck is the inter-node link, 1e9 bytes/s:
  //   T_ring = 14 * 1e-5 + 1.75 * 1e-3 = 1.89e-3.
  // Tree (section 4): chains of q = 2 in nodes, a tree over m = 4 nodes: latency
  // 2 ((q-1) 1e-6 + log2(4) 1e-5) = 4.2e-5; every node link carries 2 bytes per byte at 1e9 (its
  // worker links 2 at 1e10): 2 n / (0.9 x 1e9) = 2.2222e-3. T_tree = 4.2e-5 + 2.2222e-3.
  REQUIRE(model_time_s(cluster_document(8, 2, 80, 1, 8, 10, "ring"), kBytes) == near(1.89e-3));
  REQUIRE(model_time_s(cluster_document(8, 2, 80, 1, 8, 10, "tree"), kBytes) == near(4.2e-5 + 2e-3 / 0.9));
  // Hierarchical, q = 2, m = 4:
  //   2 (q-1) alpha_intra + 2 (q-1)/q n/B_intra = 2e-6 + 1 * 1e6/1e10 = 2e-6 + 1e-4
  //   2 (m-1) alpha_inter + 2 (m-1)/m n/B_inter = 6e-5 + 1.5e-3
  //   total 1.662e-3
  REQUIRE(model_time_s(cluster_document(8, 2, 80, 1, 8, 10, "hierarchical"), kBytes) == near(1.662e-3));
  // 4 workers, 2 per node, 2 nodes: ring 6e-5 + 1.5e-3 = 1.56e-3; tree 2 (1e-6 + 1e-5) + 2.2222e-3;
  // hierarchical 2e-6 + 1e-4 + 2e-5 + 1e-3 = 1.122e-3.
  REQUIRE(model_time_s(cluster_document(4, 2, 80, 1, 8, 10, "ring"), kBytes) == near(1.56e-3));
  REQUIRE(model_time_s(cluster_document(4, 2, 80, 1, 8, 10, "tree"), kBytes) == near(2.2e-5 + 2e-3 / 0.9));
  REQUIRE(model_time_s(cluster_document(4, 2, 80, 1, 8, 10, "hierarchical"), kBytes) == near(1.122e-3));
  // 2 workers, 1 per node (2 nodes): ring 2e-5 + 1e-3 = 1.02e-3 for ring and hierarchical; the
  // tree 2e-5 + 2.2222e-3 (two nodes: one tree level, and a tree moves 2 n each way).
  for (const char* algorithm : {"ring", "hierarchical"})
    REQUIRE(model_time_s(cluster_document(2, 1, 80, 1, 8, 10, algorithm), kBytes) == near(1.02e-3));
  REQUIRE(model_time_s(cluster_document(2, 1, 80, 1, 8, 10, "tree"), kBytes) == near(2e-5 + 2e-3 / 0.9));
}

TEST_CASE("collectives: auto takes the cheapest algorithm for each size", "[collectives]") {
  // 8 workers, 2 per node, 4 nodes; intra 80 Gbit/s (1e10 B/s) 1 us, inter 8 Gbit/s (1e9 B/s) 10 us.
  // The four candidates built (docs/collectives.md 6), as latency + seconds per byte x n:
  //   ring:                 14 x 1e-5 = 1.4e-4      + 1.75 / 1e9                  = 1.75e-9
  //   tree:                 2 (1e-6 + 2 x 1e-5) = 4.2e-5 + 2 / (0.9 x 1e9)        = 2.2222e-9
  //   hierarchical, ring:   2e-6 + 6e-5 = 6.2e-5    + 1 / 1e10 + 1.5 / 1e9        = 1.6e-9
  //   hierarchical, tree:   2e-6 + 2 x 2 x 1e-5 = 4.2e-5 + 1e-10 + 2 / (0.9e9)   = 2.3222e-9
  // The ring is never the cheapest (hierarchical-ring has less latency and fewer seconds per byte),
  // nor hierarchical-tree (the tree's latency, more seconds per byte): both are dropped.
  // n = 0 and n = 1e4: the tree (4.2e-5; 4.2e-5 + 2.2222e-5 = 6.4222e-5 against 6.2e-5 + 1.6e-5).
  // n = 1e6: hierarchical-ring 6.2e-5 + 1.6e-3 = 1.662e-3 (ring 1.89e-3, tree 2.264e-3).
  // Tree and hierarchical-ring cross where 2e-5 = 0.62222e-9 n: n = 32,142.9 bytes.
  const Cluster cluster = cluster_of(cluster_document(8, 2, 80, 1, 8, 10, "auto"));
  const Topology topology(cluster);
  const AllreduceModel model(cluster, topology);
  REQUIRE(model.candidates().size() == 2);
  REQUIRE(model.piecewise());
  REQUIRE(std::string(model.candidates()[0].name) == "tree");
  REQUIRE(std::string(model.candidates()[1].name) == "hierarchical (ring across nodes)");
  REQUIRE(model.candidates()[0].latency_s == near(4.2e-5));
  REQUIRE(model.candidates()[1].latency_s == near(6.2e-5));
  REQUIRE(model.candidates()[0].s_per_byte == near(2e-9 / 0.9));
  REQUIRE(model.candidates()[1].s_per_byte == near(1.6e-9));
  REQUIRE(model.choose(0) == 0);
  REQUIRE(model.time_s(0) == near(4.2e-5));
  REQUIRE(model.choose(1e4) == 0);
  REQUIRE(model.time_s(1e4) == near(4.2e-5 + 2e-5 / 0.9));
  REQUIRE(model.choose(32142) == 0);
  REQUIRE(model.choose(32144) == 1);
  REQUIRE(model.choose(1e6) == 1);
  REQUIRE(model.time_s(1e6) == near(1.662e-3));
  REQUIRE(model.least_s_per_byte() == near(1.6e-9));
  // Each candidate's own time is what "tree" and "hierarchical" clusters give; "ring" is slower
  // at every size.
  REQUIRE(model.candidate_time_s(0, 1e6) == near(model_time_s(cluster_document(8, 2, 80, 1, 8, 10, "tree"), 1e6)));
  REQUIRE(model.candidate_time_s(1, 1e6) ==
          near(model_time_s(cluster_document(8, 2, 80, 1, 8, 10, "hierarchical"), 1e6)));
  for (const double n : {0.0, 1e4, 1e6, 1e9})
    REQUIRE(model.time_s(n) < model_time_s(cluster_document(8, 2, 80, 1, 8, 10, "ring"), n));
  // One worker per node: no hierarchical candidates (they would be the ring over nodes); ring
  // (1.4e-4 + 1.75e-9 n) and tree (6e-5 + 2.2222e-9 n) each win somewhere.
  const Cluster flat = cluster_of(cluster_document(8, 1, 80, 1, 8, 10, "auto"));
  REQUIRE(AllreduceModel(flat, Topology(flat)).candidates().size() == 2);
  // Two workers in one node: the ring (2e-5 + 1e-9 n) is never slower than the chain (2e-5 +
  // 2.2222e-9 n): one candidate, one line, as a "ring" cluster.
  const Cluster pair = cluster_of(cluster_document(2, 2, 8, 10, 0, 0, "auto"));
  const AllreduceModel pair_model(pair, Topology(pair));
  REQUIRE(pair_model.candidates().size() == 1);
  REQUIRE(std::string(pair_model.candidates()[0].name) == "ring");
  REQUIRE_FALSE(pair_model.piecewise());
  // One worker: one candidate, no phases, 0 s.
  const Cluster single = cluster_of(cluster_document(1, 1, 8, 10, 0, 0, "auto"));
  const AllreduceModel alone(single, Topology(single));
  REQUIRE(alone.candidates().size() == 1);
  REQUIRE(alone.phases().empty());
  REQUIRE(alone.time_s(1e6) == 0);
  REQUIRE_FALSE(alone.piecewise());
}

TEST_CASE("collectives: auto's busbw rises with size, latency-bound at small sizes, the link's at large", "[collectives]") {
  // The shape of an nccl-tests all_reduce_perf table (tests/link/data/allreduce_16gpu_a100_ib.log,
  // made after published ones: the time flat near its latency up to about 64 kB, busbw rising from
  // near 0 at 8 B to a plateau near the link's rate): 16 nodes of 1 GPU at 10 Gbit/s
  // (1.25e9 B/s), 50 us, sizes 8 B to 1 GiB by factors of 2. busbw = n / T x 2 (p-1)/p
  // (nccl-tests' definition for all-reduce). time_s is the least of lines with latencies >= T(0),
  // so T(n)/n falls and busbw rises with n. At 8 B the time is the tree's latency, 2 x 4 x 50 us =
  // 400 us, to within the bytes' share (8 x 2 / (0.9 x 1.25e9) = 1.4e-8 s). At 1 GiB the ring:
  // 30 x 50 us + 1.875 x 2^30 / 1.25e9 = 1.6121 s, busbw = 2^30 / 1.6121 x 1.875 = 1.2489e9 B/s,
  // above 0.99 x 1.25e9.
  const Cluster cluster = cluster_of(cluster_document(16, 1, 3600, 5, 10, 50, "auto"));
  const AllreduceModel model(cluster, Topology(cluster));
  constexpr double kBusFactor = 2.0 * 15 / 16;
  double previous = 0;
  for (double n = 8; n <= 1073741824.0; n *= 2) {
    INFO("n = " << n);
    const double busbw = n / model.time_s(n) * kBusFactor;
    REQUIRE(busbw > previous);
    previous = busbw;
  }
  REQUIRE(model.time_s(8) == Approx(4e-4).epsilon(1e-4));
  REQUIRE(model.choose(8) == 1);
  REQUIRE(model.choose(1073741824.0) == 0);
  REQUIRE(previous > 0.99 * 1.25e9);
  REQUIRE(previous < 1.25e9);
}

TEST_CASE("collectives: hierarchical with one worker per node is the ring over nodes", "[collectives]") {
  // 4 nodes of 1 worker: one inter-node ring of m = 4 over the nodes' links:
  // 6 * 1e-5 + 1.5 * 1e-3 = 1.56e-3, the same as T_ring(n, 4, 1e-5, 1e9).
  const double hierarchical = model_time_s(cluster_document(4, 1, 80, 1, 8, 10, "hierarchical"), kBytes);
  REQUIRE(hierarchical == near(1.56e-3));
  REQUIRE(hierarchical == near(ring_allreduce_s(kBytes, 4, 1e-5, 1e9)));
  REQUIRE(hierarchical == near(model_time_s(cluster_document(4, 1, 80, 1, 8, 10, "ring"), kBytes)));
}

TEST_CASE("collectives: hierarchical with one node is the ring", "[collectives]") {
  // 4 workers in one node at 80 Gbit/s, 1 us: 6e-6 + 1.5 * 1e-4 = 1.56e-4.
  const double hierarchical = model_time_s(cluster_document(4, 4, 80, 1, 0, 0, "hierarchical"), kBytes);
  REQUIRE(hierarchical == near(1.56e-4));
  REQUIRE(hierarchical == near(model_time_s(cluster_document(4, 4, 80, 1, 0, 0, "ring"), kBytes)));
}

TEST_CASE("collectives: a flat ring across 2 nodes is bottlenecked by the inter-node link", "[collectives]") {
  // 4 workers, 2 per node; intra 80 Gbit/s (1e10 bytes/s), inter 8 Gbit/s (1e9 bytes/s).
  const Cluster cluster = cluster_of(cluster_document(4, 2, 80, 1, 8, 10, "ring"));
  const Topology topology(cluster);
  const AllreduceModel model(cluster, topology);
  REQUIRE(model.phases().size() == 1);
  const CollectivePhase& phase = model.phases().front();
  // The slowest link is a node's link to the core, at 1e9 bytes/s with load 1.
  REQUIRE(phase.bottleneck_link >= 0);
  const DirectedLink bottleneck = topology.link(phase.bottleneck_link);
  REQUIRE_THAT(bottleneck.name, Catch::Matchers::Contains("<->core"));
  REQUIRE(bottleneck.bandwidth_Bps == near(1e9));
  REQUIRE(model.slowest_link() == phase.bottleneck_link);
  // Each directed link carries 2(p-1)/p = 1.5 bytes per byte all-reduced (one hop of each step).
  REQUIRE(phase.bottleneck_bytes_per_byte == near(1.5));
  // Ring latency: 2(p-1) = 6 steps of the slowest hop's 10 us.
  REQUIRE(phase.latency_s == near(6e-5));
  // Intra-node ring at the same size would take 6e-6 + 1.5e-4: the inter-node link costs 10x.
  REQUIRE(model.time_s(kBytes) == near(1.56e-3));
}

TEST_CASE("topology: paths, links and their latency", "[collectives]") {
  // 4 workers, 2 per node: workers 0,1 on node0, 2,3 on node1; intra 1 us, inter 10 us.
  const Cluster cluster = cluster_of(cluster_document(4, 2, 80, 1, 8, 10));
  const Topology topology(cluster);
  const auto names = [&](const Path& path) {
    std::vector<std::string> out;
    for (const int link : path.links) out.push_back(topology.link(link).name);
    return out;
  };
  // Full duplex cables: 4 worker cables and 2 node cables, two directions each.
  REQUIRE(topology.link_count() == 12);
  SECTION("same node: up to the node switch, down to the other worker") {
    const Path path = topology.path(0, 1);
    REQUIRE(names(path) == std::vector<std::string>{"worker0<->node0 (up)", "worker1<->node0 (down)"});
    REQUIRE(path.latency_s == near(1e-6));
  }
  SECTION("across nodes: 4 links, latency the larger of the two kinds") {
    const Path path = topology.path(1, 2);
    REQUIRE(names(path) == std::vector<std::string>{"worker1<->node0 (up)", "node0<->core (up)",
                                                    "node1<->core (down)", "worker2<->node1 (down)"});
    REQUIRE(path.latency_s == near(1e-5));
    // The way back uses the other direction of every cable.
    REQUIRE(names(topology.path(2, 1)) == std::vector<std::string>{"worker2<->node1 (up)", "node1<->core (up)",
                                                                   "node0<->core (down)", "worker1<->node0 (down)"});
  }
  SECTION("the latency is a max, not a sum: a slower intra-node link wins") {
    const Topology slow_inside(cluster_of(cluster_document(4, 2, 80, 20, 8, 10)));
    REQUIRE(slow_inside.path(0, 3).links.size() == 4);
    REQUIRE(slow_inside.path(0, 3).latency_s == near(2e-5));
  }
  SECTION("a worker to itself: empty path") {
    REQUIRE(topology.path(3, 3).links.empty());
    REQUIRE(topology.path(3, 3).latency_s == 0);
  }
  SECTION("bandwidths of the link kinds") {
    for (int id = 0; id < topology.link_count(); ++id) {
      const DirectedLink link = topology.link(id);
      const bool inter = link.name.find("core") != std::string::npos;
      INFO(link.name);
      REQUIRE(link.bandwidth_Bps == near(inter ? 1e9 : 1e10));
      REQUIRE(link.latency_s == near(inter ? 1e-5 : 1e-6));
      REQUIRE(topology.link_bandwidth_Bps(id) == link.bandwidth_Bps);
    }
  }
}

TEST_CASE("topology: concurrent rings share a link (hierarchical inter-node phase)", "[collectives]") {
  // 8 workers, 4 per node, 2 nodes. The q = 4 rings of the inter-node phase ({0,4}, {1,5}, ...)
  // all cross node0's link to the core: load 4, so each gets 1e9 / 4 bytes/s.
  const Cluster cluster = cluster_of(cluster_document(8, 4, 80, 1, 8, 10));
  const Topology topology(cluster);
  std::vector<std::vector<int>> rings = {{0, 4}, {1, 5}, {2, 6}, {3, 7}};
  const RingPhase phase = topology.ring_phase(rings, 2);
  REQUIRE(phase.steps == 2);  // 2 passes of k - 1 = 1 step
  REQUIRE(phase.chunk_fraction == near(0.5));
  REQUIRE(phase.bottleneck_load == 4);
  REQUIRE(phase.bottleneck_Bps == near(2.5e8));
  REQUIRE_THAT(topology.link(phase.bottleneck_link).name, Catch::Matchers::Contains("<->core"));
  REQUIRE(phase.latency_s == near(1e-5));
  // time for 1e6 bytes per ring: 2 * 1e-5 + 2 * 0.5e6 / 2.5e8 = 2e-5 + 4e-3.
  REQUIRE(phase.time_s(kBytes) == near(4.02e-3));
}

}  // namespace syncplan
