// The simulator at cluster scale: the ring grows with workers, a group of one costs
// nothing, the topology's closed-form ring families against walking every hop, 100,000 identical
// workers as one representative, and the up-front memory refusal when every worker is simulated.
// Link numbers chosen for hand arithmetic: 8 Gbit/s = 1e9 bytes/s, 80 Gbit/s = 1e10 bytes/s.
#include "des_support.hpp"

#include "core/errors.hpp"
#include "simulator/collectives.hpp"
#include "simulator/des/sync_program.hpp"
#include "simulator/sync_times.hpp"
#include "simulator/topology.hpp"

#include <map>

namespace syncplan {
namespace {

using Catch::Matchers::Contains;
using des_test::backprop_layers;
using des_test::cluster_document;
using des_test::cluster_of;
using des_test::model_time_s;
using des_test::near;

constexpr double kBytes = 1e6;

// One layer of 1 ms backward and kBytes parameters, synced as soon as it is ready (wfbp, H = 1),
// timed by the cluster's cost model: an iteration is 1 ms plus one all-reduce of kBytes.
DesResult one_layer_run(const Cluster& cluster, int iterations = 1, DesOptions options = {}) {
  const DesLayers layers = backprop_layers({1e-3}, {}, 0, 0, {kBytes});
  options.iterations = iterations;
  options.sync_time = SyncTimeSource::kModel;
  return run_des(layers, cluster, all_layers_program(1, 1, IssuePoint::kGradientReady, true), options);
}

// Every directed link's load, expanded from the ranges (a link in two ranges adds up).
std::map<int, double> expanded(const std::vector<LinkRange>& ranges) {
  std::map<int, double> loads;
  for (const LinkRange& range : ranges)
    for (int i = 0; i < range.count; ++i) loads[range.first + i * range.stride] += range.load;
  return loads;
}

void require_same_phase(const RingPhase& closed, const RingPhase& walked) {
  REQUIRE(closed.steps == walked.steps);
  REQUIRE(closed.chunk_fraction == walked.chunk_fraction);
  REQUIRE(closed.latency_s == walked.latency_s);
  REQUIRE(closed.bottleneck_link == walked.bottleneck_link);
  REQUIRE(closed.bottleneck_Bps == walked.bottleneck_Bps);
  REQUIRE(closed.bottleneck_load == walked.bottleneck_load);
  REQUIRE(expanded(closed.link_loads) == expanded(walked.link_loads));
}

}  // namespace

TEST_CASE("scale: the ring all-reduce grows with workers, 32 against 64 (SimAI #208)", "[des][scale]") {
  // docs/collectives.md 3: T_ring = 2(p-1) alpha + 2(p-1)/p n / B. 8 workers per node, intra
  // 80 Gbit/s and 1 us, inter 8 Gbit/s (1e9 bytes/s) and 10 us: the bottleneck hop crosses the
  // node links, alpha = 1e-5 s, n / B = 1e6 / 1e9 = 1e-3 s.
  //   p = 32: 62 x 1e-5 + 62/32 x 1e-3 = 6.2e-4 + 1.9375e-3  = 2.5575e-3 s
  //   p = 64: 126 x 1e-5 + 126/64 x 1e-3 = 1.26e-3 + 1.96875e-3 = 3.22875e-3 s
  // The latency term grows by 64 alpha = 6.4e-4 s, the bandwidth term by (63/32 - 31/16) n/B = 3.125e-5 s.
  const Json at32 = cluster_document(32, 8, 80, 1, 8, 10, "ring");
  const Json at64 = cluster_document(64, 8, 80, 1, 8, 10, "ring");
  REQUIRE(model_time_s(at32, kBytes) == near(2.5575e-3));
  REQUIRE(model_time_s(at64, kBytes) == near(3.22875e-3));
  REQUIRE(model_time_s(at64, 0) - model_time_s(at32, 0) == near(6.4e-4));
  REQUIRE((model_time_s(at64, kBytes) - model_time_s(at64, 0)) - (model_time_s(at32, kBytes) - model_time_s(at32, 0)) ==
          near(3.125e-5));
  // The DES charges the same: an iteration is 1 ms of backward plus one all-reduce.
  REQUIRE(one_layer_run(cluster_of(at32)).total_s == near(1e-3 + 2.5575e-3));
  REQUIRE(one_layer_run(cluster_of(at64)).total_s == near(1e-3 + 3.22875e-3));
  // Hierarchical (docs/collectives.md 5), q = 8: the two intra-node phases 2 x 7 x 1e-6 +
  // 2 x 7/8 x 1e6 / 1e10 = 1.4e-5 + 1.75e-4 at both sizes; across m = 4 nodes 6 x 1e-5 + 6/4 x 1e-3
  // = 1.56e-3, across m = 8 nodes 14 x 1e-5 + 14/8 x 1e-3 = 1.89e-3: 1.749e-3 and 2.079e-3 s.
  REQUIRE(model_time_s(cluster_document(32, 8, 80, 1, 8, 10, "hierarchical"), kBytes) == near(1.749e-3));
  REQUIRE(model_time_s(cluster_document(64, 8, 80, 1, 8, 10, "hierarchical"), kBytes) == near(2.079e-3));
}

TEST_CASE("scale: a collective over a group of one costs nothing, and simulate says so", "[des][scale]") {
  SECTION("one worker: no phase, 0 s, whatever the algorithm and size") {
    for (const char* algorithm : {"ring", "tree", "hierarchical"}) {
      INFO(algorithm);
      const Cluster single = cluster_of(cluster_document(1, 1, 8, 10, 0, 0, algorithm));
      const Topology topology(single);
      const AllreduceModel model(single, topology);
      REQUIRE(model.phases().empty());
      REQUIRE(model.time_s(1e12) == 0);
      REQUIRE(model.slowest_link() == -1);
      // The DES: the iteration is the 1 ms of compute, nothing exposed, no all-reduce running.
      const DesResult result = one_layer_run(single);
      REQUIRE(result.total_s == near(1e-3));
      REQUIRE(result.exposed_comm_s() == 0);
      REQUIRE(result.comm_busy_s == 0);
    }
  }
  SECTION("node-local groups of one: hierarchical with 1 worker per node has no intra-node phase") {
    // 4 nodes of 1 worker: only the inter-node all-reduce, the ring over the 4 nodes:
    // 6 x 1e-5 + 6/4 x 1e-3 = 1.56e-3 s, as the flat ring over the same cluster.
    const Cluster cluster = cluster_of(cluster_document(4, 1, 80, 1, 8, 10, "hierarchical"));
    const Topology topology(cluster);
    const AllreduceModel model(cluster, topology);
    REQUIRE(model.phases().size() == 1);
    REQUIRE(model.time_s(kBytes) == near(1.56e-3));
    REQUIRE(model.time_s(kBytes) == near(model_time_s(cluster_document(4, 1, 80, 1, 8, 10, "ring"), kBytes)));
    // The intra-node ring family is empty (rings of one worker).
    REQUIRE(topology.ring_phase(RingFamily::kInsideNodes, 1).steps == 0);
    REQUIRE(topology.ring_phase(RingFamily::kInsideNodes, 1).time_s(kBytes) == 0);
  }
  SECTION("one node: no inter-node phase") {
    const Cluster cluster = cluster_of(cluster_document(8, 8, 80, 1, 0, 0, "hierarchical"));
    const Topology topology(cluster);
    REQUIRE(AllreduceModel(cluster, topology).phases().size() == 2);
    REQUIRE(topology.ring_phase(RingFamily::kAcrossNodes, 2).steps == 0);
  }
  SECTION("the note: where the times come from says that they cost nothing") {
    Profile profile;
    profile.source = "estimated:hand";
    LayerProfile layer;
    layer.name = "fc";
    layer.backward_s = 1e-3;
    layer.param_bytes = 1000000;
    profile.layers.push_back(layer);
    SyncTimeInputs inputs;
    inputs.cluster = cluster_of(cluster_document(1, 1, 8, 10));
    inputs.cluster_origin = "one.json";
    const SyncTimes one = choose_sync_times(profile, "p.json", inputs);
    REQUIRE_THAT(one.text, Contains("1 worker: an all-reduce over a group of one costs nothing"));
    REQUIRE(sync_backprop_times(one, "p.json").sync_s.front() == 0);
    inputs.cluster = cluster_of(cluster_document(2, 2, 8, 10));
    REQUIRE_THAT(choose_sync_times(profile, "p.json", inputs).text, !Contains("costs nothing"));
  }
}

TEST_CASE("scale: the closed-form ring families equal walking every hop's path", "[des][scale]") {
  // The independent method: Topology::ring_phase over the explicit rings walks every hop's path
  // and counts the hops per directed link; the families compute the same in O(1).
  struct Shape { int workers, per_node; double intra_Gbps, inter_Gbps; };
  for (const Shape shape : {Shape{1, 1, 80, 8}, Shape{2, 1, 80, 8}, Shape{2, 2, 80, 8}, Shape{8, 1, 8, 80},
                            Shape{8, 8, 80, 8}, Shape{8, 2, 80, 8}, Shape{12, 4, 8, 80}, Shape{16, 8, 80, 8},
                            Shape{16, 4, 80, 80}, Shape{24, 8, 100, 1000}}) {
    INFO(shape.workers << " workers, " << shape.per_node << " per node, intra " << shape.intra_Gbps << " Gbit/s, inter "
                       << shape.inter_Gbps);
    const Cluster cluster =
        cluster_of(cluster_document(shape.workers, shape.per_node, shape.intra_Gbps, 1, shape.inter_Gbps, 10));
    const Topology topology(cluster);
    const int q = shape.per_node, m = shape.workers / shape.per_node;
    std::vector<int> all(shape.workers);
    std::vector<std::vector<int>> node_rings(m), rank_rings(q);
    for (int w = 0; w < shape.workers; ++w) {
      all[w] = w;
      node_rings[w / q].push_back(w);
      rank_rings[w % q].push_back(w);
    }
    for (const int passes : {1, 2}) {
      require_same_phase(topology.ring_phase(RingFamily::kAllWorkers, passes), topology.ring_phase({all}, passes));
      require_same_phase(topology.ring_phase(RingFamily::kInsideNodes, passes), topology.ring_phase(node_rings, passes));
      require_same_phase(topology.ring_phase(RingFamily::kAcrossNodes, passes), topology.ring_phase(rank_rings, passes));
    }
  }
}

TEST_CASE("scale: 100,000 identical workers cost one representative, at every step", "[des][scale]") {
  // 12,500 nodes of 8; intra 3600 Gbit/s and 5 us, inter 100 Gbit/s (1.25e10 bytes/s) and 10 us.
  const Json document = cluster_document(100000, 8, 3600, 5, 100, 10, "ring");
  const Cluster cluster = cluster_of(document);
  const Topology topology(cluster);
  // 2 directed links per worker and per node: 2 x 100,000 + 2 x 12,500 = 225,000, none stored.
  REQUIRE(topology.link_count() == 225000);
  REQUIRE(topology.link(224999).name == "node12499<->core (down)");
  REQUIRE(topology.path(99999, 0).links == std::vector<int>{199998, 224998, 200001, 1});
  // docs/collectives.md 3, the bottleneck the node links: 2 x 99,999 x 1e-5 + 2 x 99,999/100,000 x 1e6 / 1.25e10
  // = 1.99998 + 1.599984e-4 = 2.0001399984 s.
  const AllreduceModel model(cluster, topology);
  REQUIRE(model.time_s(kBytes) == near(2.0001399984));
  REQUIRE(model.time_s(kBytes) == near(ring_allreduce_s(kBytes, 100000, 1e-5, 1.25e10)));

  // The memory estimate without the per-link bytes is the same as for 8 workers: nothing per worker.
  const DesLayers layers = backprop_layers({1e-3}, {}, 0, 0, {kBytes});
  const SyncProgram program = all_layers_program(1, 1, IssuePoint::kGradientReady, true);
  const Cluster eight = cluster_of(cluster_document(8, 8, 3600, 5));
  DesOptions options;
  options.iterations = 10;
  options.sync_time = SyncTimeSource::kModel;
  options.link_bytes = false;
  REQUIRE(des_memory_bytes(layers, cluster, model, program, options) ==
          des_memory_bytes(layers, eight, model, program, options));
  // With them: 225,000 - 16 links more, each a count while summing and a named entry (at least 48 bytes).
  options.link_bytes = true;
  const AllreduceModel eight_model(eight, Topology(eight));
  REQUIRE(des_memory_bytes(layers, cluster, model, program, options) -
              des_memory_bytes(layers, eight, eight_model, program, options) >=
          (225000 - 16) * 48.0);

  // The run: one representative, as many events as 8 identical workers, and the period model's
  // time (an iteration is 1 ms plus the all-reduce; nothing hides it).
  options.link_bytes = false;
  const DesResult result = run_des(layers, cluster, topology, model, program, options);
  const DesResult small = run_des(layers, eight, program, options);
  REQUIRE(result.workers == 100000);
  REQUIRE(result.simulated_workers == 1);
  REQUIRE(result.worker_iteration_s.size() == 1);
  REQUIRE(result.events == small.events);
  REQUIRE(result.link_bytes.empty());
  REQUIRE(result.total_s == near(10 * (1e-3 + 2.0001399984)));
  // With the per-link bytes: every worker link carries 2 x 99,999/100,000 bytes per byte, each
  // node link as much: 10 all-reduces of 1e6 bytes give 1.99998e7 bytes on each of the 225,000.
  options.link_bytes = true;
  const DesResult with_links = run_des(layers, cluster, topology, model, program, options);
  REQUIRE(with_links.link_bytes.size() == 225000);
  REQUIRE(with_links.link_bytes.front().first == "worker0<->node0 (up)");
  REQUIRE(with_links.link_bytes.front().second == near(1.99998e7));
  REQUIRE(with_links.link_bytes.back().second == near(1.99998e7));
}

TEST_CASE("scale: the cap, 2^24 workers, keeps link ids and ring counts exact", "[des][scale]") {
  // 16,777,216 workers of 8 per node: 2^21 nodes, 2 x 2^24 + 2 x 2^21 = 37,748,736 directed links (< 2^31).
  const Cluster cluster = cluster_of(cluster_document(16777216, 8, 3600, 5, 100, 10, "ring"));
  const Topology topology(cluster);
  REQUIRE(topology.link_count() == 37748736);
  REQUIRE(topology.link(37748735).name == "node2097151<->core (down)");
  // T_ring = 2 (2^24 - 1) x 1e-5 + 2 (2^24 - 1)/2^24 x 1e6 / 1.25e10
  //        = 335.5443 + 1.6e-4 x (1 - 2^-24) = 335.5443 + 1.5999999046325685e-4 s.
  const AllreduceModel model(cluster, topology);
  REQUIRE(model.phases().front().latency_s == near(2.0 * 16777215 * 1e-5));
  REQUIRE(model.time_s(kBytes) == near(335.5443 + 1.5999999046325685e-4));
  // One past the cap is refused, naming the field.
  REQUIRE_THROWS_WITH(cluster_of(cluster_document(16777217, 1, 8, 1, 8, 1)),
                      Contains("field 'workers'") && Contains("16777216"));
}

TEST_CASE("scale: a straggler among 100,000 workers simulates each; what does not fit is refused first",
          "[des][scale]") {
  Json document = cluster_document(100000, 8, 3600, 5, 100, 10, "ring");
  document["compute_slowdown"] = Json{{"3", 2.0}};
  const Cluster cluster = cluster_of(document);
  const Topology topology(cluster);
  const AllreduceModel model(cluster, topology);
  const DesLayers layers = backprop_layers({1e-3}, {}, 0, 0, {kBytes});
  const SyncProgram program = all_layers_program(1, 1, IssuePoint::kGradientReady, true);
  DesOptions options;
  options.iterations = 2;
  options.sync_time = SyncTimeSource::kModel;
  options.link_bytes = false;
  // At least 40 bytes per worker and iteration (docs/des.md section 5): 100,000 x 2 x 40 = 8 MB.
  const double needed = des_memory_bytes(layers, cluster, model, program, options);
  REQUIRE(needed >= 100000 * 2 * 40.0);
  options.memory_limit_bytes = needed - 1;
  try {
    run_des(layers, cluster, topology, model, program, options);
    FAIL("the run was not refused");
  } catch (const InputError& error) {
    REQUIRE_THAT(error.what(), Contains("needs about") && Contains("100000 simulated worker(s) x 2 iterations") &&
                                   Contains("available"));
  }
  // At the estimate it runs: the straggler's 2 ms backward delays every all-reduce, so each
  // iteration is 2 ms + 2.0001399984 s (as above).
  options.memory_limit_bytes = needed;
  const DesResult result = run_des(layers, cluster, topology, model, program, options);
  REQUIRE(result.simulated_workers == 100000);
  REQUIRE(result.total_s == near(2 * (2e-3 + 2.0001399984)));
}

}  // namespace syncplan
