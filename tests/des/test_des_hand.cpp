// The DES on cases small enough to derive by hand (docs/des.md): stragglers, links shared by
// concurrent all-reduces, local SGD's after-update averages, exposed communication and overlap.
// Times are binary fractions of a second so that the sums are exact.
#include "des_support.hpp"

#include "core/errors.hpp"

#include "simulator/bucket_fusion.hpp"
#include "simulator/collectives.hpp"
#include "simulator/des/sync_program.hpp"
#include "simulator/sync_times.hpp"
#include "simulator/topology.hpp"

#include <algorithm>

namespace syncplan {
namespace {

using des_test::backprop_layers;
using des_test::near;

// Every layer in every iteration, issued when its gradient is ready (wfbp).
SyncProgram every_layer_program(int layer_count, int period) {
  Assignment assignment;
  std::vector<int> all(layer_count);
  for (int j = 0; j < layer_count; ++j) all[j] = j;
  assignment.iterations.assign(period, all);
  return program_from_assignment(assignment);
}

// The all-reduce events of one traced worker, in start order.
std::vector<DesTraceEvent> allreduces_of(const DesResult& result, int worker) {
  std::vector<DesTraceEvent> events;
  for (const DesTraceEvent& event : result.trace)
    if (event.worker == worker && std::string(event.category) == "allreduce") events.push_back(event);
  std::sort(events.begin(), events.end(), [](const DesTraceEvent& a, const DesTraceEvent& b) {
    return a.start_s != b.start_s ? a.start_s < b.start_s : a.stream < b.stream;
  });
  return events;
}

Cluster two_workers(const std::vector<double>& slowdown = {}) {
  Json document = des_test::cluster_document(2, 2, 8, 10);
  if (!slowdown.empty()) document["compute_slowdown"] = slowdown;
  return des_test::cluster_of(document);
}

}  // namespace

TEST_CASE("DES: a 2x slower worker makes every all-reduce start when it issues", "[des][hand]") {
  // Backprop order: j0 (b 1, c 0.5), j1 (b 1, c 0.5); U = 0.25, F = 0; wfbp; measured times.
  // Worker 1 has compute_slowdown 2: its b are 2, 2 and its U 0.5.
  // Iteration 0 (both start at 0):
  //   worker 0 gradients ready at 1, 2; worker 1 at 2, 4.
  //   all-reduce j0 starts at max(1, 2) = 2, ends 2.5; j1 starts at max(2, 4) = 4, ends 4.5.
  //   worker 0 updates 4.5 -> 4.75; worker 1 4.5 -> 5.0.
  // Iteration 1 (worker 0 starts at 4.75, worker 1 at 5.0):
  //   worker 0 ready at 5.75, 6.75; worker 1 at 7.0, 9.0.
  //   j0: 7.0 -> 7.5; j1: 9.0 -> 9.5; updates 9.5 -> 9.75 and 9.5 -> 10.0.
  // iteration_s (slowest worker) = [5.0, 5.0]; worker 0: [4.75, 5.0]; worker 1: [5.0, 5.0].
  // Exposed: worker 0 (4.5 - 2) + (9.5 - 6.75) = 5.25; worker 1 (4.5 - 4) + (9.5 - 9) = 1.0.
  const DesLayers layers = backprop_layers({1, 1}, {0.5, 0.5}, 0, 0.25);
  DesOptions options;
  options.iterations = 2;
  options.trace_workers = 2;
  const DesResult result = run_des(layers, two_workers({1.0, 2.0}), every_layer_program(2, 1), options);
  REQUIRE(result.workers == 2);
  REQUIRE(result.simulated_workers == 2);
  REQUIRE(result.iteration_s == std::vector<double>{5.0, 5.0});
  REQUIRE(result.total_s == 10.0);
  REQUIRE(result.worker_iteration_s[0] == std::vector<double>{4.75, 5.0});
  REQUIRE(result.worker_iteration_s[1] == std::vector<double>{5.0, 5.0});
  REQUIRE(result.worker_exposed_comm_s[0] == near(5.25));
  REQUIRE(result.worker_exposed_comm_s[1] == near(1.0));
  // Both workers' timelines show the same all-reduces, starting when the slow worker issued them.
  for (int w = 0; w < 2; ++w) {
    INFO("worker " << w);
    const std::vector<DesTraceEvent> events = allreduces_of(result, w);
    REQUIRE(events.size() == 4);
    const double starts[] = {2.0, 4.0, 7.0, 9.0};
    const int layer[] = {0, 1, 0, 1};
    for (int k = 0; k < 4; ++k) {
      REQUIRE(events[k].start_s == near(starts[k]));
      REQUIRE(events[k].duration_s == near(0.5));
      REQUIRE(events[k].layers == std::vector<int>{layer[k]});
      REQUIRE(events[k].iteration == k / 2);
    }
  }

  // The same workers at equal speed: ready at 1, 2; j0 1 -> 1.5, j1 2 -> 2.5; update -> 2.75.
  const DesResult even = run_des(layers, two_workers(), every_layer_program(2, 1), options);
  REQUIRE(even.simulated_workers == 1);
  REQUIRE(even.iteration_s == std::vector<double>{2.75, 2.75});
}

TEST_CASE("DES: two concurrent all-reduces on one link each take twice as long", "[des][hand]") {
  // Backprop order: j0 (b 1), j1 (b 0): both gradients are ready at 1. wfbp, F = U = 0.
  DesOptions options;
  options.trace_workers = 1;

  SECTION("measured times, equal sync 1 s") {
    const DesLayers layers = backprop_layers({1, 0}, {1, 1});
    // comm_streams = 2: j0 on stream 1, j1 on stream 2 (round-robin); both start at 1 on the shared
    // measured link at rate 1/2, so each needs 2 s: both end at 3. Iteration = 3.
    options.comm_streams = 2;
    const DesResult parallel = run_des(layers, two_workers(), every_layer_program(2, 1), options);
    std::vector<DesTraceEvent> events = allreduces_of(parallel, 0);
    REQUIRE(events.size() == 2);
    REQUIRE(events[0].stream == 1);
    REQUIRE(events[1].stream == 2);
    for (const DesTraceEvent& event : events) {
      REQUIRE(event.start_s == near(1.0));
      REQUIRE(event.duration_s == near(2.0));
    }
    REQUIRE(parallel.total_s == near(3.0));
    // The link is busy 1 -> 3 in both cases.
    REQUIRE(parallel.comm_busy_s == near(2.0));

    // comm_streams = 1: j0 1 -> 2, then j1 2 -> 3; the iteration also ends at 3.
    options.comm_streams = 1;
    const DesResult serial = run_des(layers, two_workers(), every_layer_program(2, 1), options);
    events = allreduces_of(serial, 0);
    REQUIRE(events.size() == 2);
    REQUIRE(events[0].stream == 1);
    REQUIRE(events[1].stream == 1);
    REQUIRE(events[0].start_s == near(1.0));
    REQUIRE(events[0].duration_s == near(1.0));
    REQUIRE(events[1].start_s == near(2.0));
    REQUIRE(events[1].duration_s == near(1.0));
    REQUIRE(serial.total_s == near(3.0));
    REQUIRE(serial.comm_busy_s == near(2.0));
  }
  SECTION("measured times, unequal sync 1 s and 3 s: the share grows when one ends") {
    const DesLayers layers = backprop_layers({1, 0}, {1, 3});
    // 2 streams: both at rate 1/2 from 1; j0 has done its 1 s of work at 3, j1 has 3 - 1 = 2 left
    // and runs alone at rate 1: ends at 5.
    options.comm_streams = 2;
    const DesResult parallel = run_des(layers, two_workers(), every_layer_program(2, 1), options);
    const std::vector<DesTraceEvent> events = allreduces_of(parallel, 0);
    REQUIRE(events.size() == 2);
    const DesTraceEvent& j0 = events[0].layers.front() == 0 ? events[0] : events[1];
    const DesTraceEvent& j1 = events[0].layers.front() == 0 ? events[1] : events[0];
    REQUIRE(j0.start_s == near(1.0));
    REQUIRE(j0.duration_s == near(2.0));
    REQUIRE(j1.start_s == near(1.0));
    REQUIRE(j1.duration_s == near(4.0));
    REQUIRE(parallel.total_s == near(5.0));
    // 1 stream: j0 1 -> 2, j1 2 -> 5.
    options.comm_streams = 1;
    const DesResult serial = run_des(layers, two_workers(), every_layer_program(2, 1), options);
    REQUIRE(serial.total_s == near(5.0));
    REQUIRE(allreduces_of(serial, 0)[1].start_s == near(2.0));
  }
  SECTION("cost model: latency alone, then the shared transfer") {
    // 2 workers in one node, 8 Gbit/s = 1e9 bytes/s, 10 us; 1e9 bytes each:
    //   alone: 2 (p-1) alpha + 2 (p-1)/p n/B = 2e-5 + 1 s.
    //   2 streams: both wait 2e-5 from 1, then share the bottleneck link at 5e8 bytes/s each:
    //   1e9 bytes take 2 s: both end at 3.00002.
    //   1 stream: j0 1 -> 2.00002, j1 2.00002 -> 3.00004.
    const DesLayers layers = backprop_layers({1, 0}, {}, 0, 0, {1e9, 1e9});
    options.sync_time = SyncTimeSource::kModel;
    options.comm_streams = 2;
    const DesResult parallel = run_des(layers, two_workers(), every_layer_program(2, 1), options);
    for (const DesTraceEvent& event : allreduces_of(parallel, 0)) {
      REQUIRE(event.start_s == near(1.0));
      REQUIRE(event.duration_s == near(2.00002));
    }
    REQUIRE(parallel.total_s == near(3.00002));
    options.comm_streams = 1;
    const DesResult serial = run_des(layers, two_workers(), every_layer_program(2, 1), options);
    const std::vector<DesTraceEvent> events = allreduces_of(serial, 0);
    REQUIRE(events[0].duration_s == near(1.00002));
    REQUIRE(events[1].start_s == near(2.00002));
    REQUIRE(serial.total_s == near(3.00004));
  }
}

TEST_CASE("DES: flsgd's next iteration waits for the after-update all-reduces", "[des][hand]") {
  // Backprop order j0 (b 1, c 2), j1 (b 1, c 1); F = 0.5, U = 0.25; H = 2; 3 iterations.
  // Iteration 0: 0.5 + 2 + 0.25 = 2.75, no syncs.
  // Iteration 1: compute 2.75 -> 5.5; then all-reduces j0 5.5 -> 7.5, j1 7.5 -> 8.5; ends at 8.5.
  // Iteration 2 (period repeats, no syncs): forward starts at 8.5; ends at 11.25.
  // iteration_s = [2.75, 5.75, 2.75] (period model: H (F + B_L + U) + sum c = 5.5 + 3 = 8.5).
  // Exposed: 8.5 - 5.5 = 3; the link is busy 5.5 -> 8.5 while nothing computes: overlap 0.
  const DesLayers layers = backprop_layers({1, 1}, {2, 1}, 0.5, 0.25);
  DesOptions options;
  options.iterations = 3;
  options.trace_workers = 1;
  const DesResult result = run_des(layers, two_workers(), flsgd_program(2, 2), options);
  REQUIRE(result.iteration_s == std::vector<double>{2.75, 5.75, 2.75});
  REQUIRE(result.total_s == 11.25);
  REQUIRE(result.exposed_comm_s() == near(3.0));
  REQUIRE(result.comm_busy_s == near(3.0));
  REQUIRE(result.worker_overlap_s[0] == near(0.0));
  REQUIRE(result.overlap_fraction() == near(0.0));
  const std::vector<DesTraceEvent> events = allreduces_of(result, 0);
  REQUIRE(events.size() == 2);
  REQUIRE(events[0].start_s == near(5.5));
  REQUIRE(events[0].duration_s == near(2.0));
  REQUIRE(events[1].start_s == near(7.5));
  REQUIRE(events[1].duration_s == near(1.0));
  // The first compute event of iteration 2 (the forward of the input-most layer) starts at 8.5.
  double first_compute_of_2 = 1e9;
  for (const DesTraceEvent& event : result.trace)
    if (event.iteration == 2 && event.stream == 0) first_compute_of_2 = std::min(first_compute_of_2, event.start_s);
  REQUIRE(first_compute_of_2 == near(8.5));
}

TEST_CASE("DES: exposed communication and overlap, ssgd versus wfbp", "[des][hand]") {
  // Backprop order j0 (b 1, c 2), j1 (b 1, c 1); F = 0.5, U = 0.25; H = 1, one iteration.
  const DesLayers layers = backprop_layers({1, 1}, {2, 1}, 0.5, 0.25);
  DesOptions options;

  SECTION("ssgd: syncs after backprop, no overlap") {
    // forward 0 -> 0.5, backward 0.5 -> 2.5; j0 2.5 -> 4.5, j1 4.5 -> 5.5; update 5.5 -> 5.75.
    // iteration = F + B_L + U + sum c = 0.5 + 2 + 0.25 + 3 = 5.75; exposed 3; busy 3; overlap 0.
    const DesResult result = run_des(layers, two_workers(), ssgd_program(2, 1), options);
    REQUIRE(result.total_s == near(5.75));
    REQUIRE(result.exposed_comm_s() == near(3.0));
    REQUIRE(result.comm_busy_s == near(3.0));
    REQUIRE(result.worker_overlap_s[0] == near(0.0));
    REQUIRE(result.overlap_fraction() == near(0.0));
  }
  SECTION("wfbp: partial overlap") {
    // j0 ready at 1.5: 1.5 -> 3.5; j1 ready at 2.5, link free at 3.5: 3.5 -> 4.5.
    // Backprop ends at 2.5; update 4.5 -> 4.75: iteration 4.75, exposed 4.5 - 2.5 = 2.
    // Link busy 1.5 -> 4.5 = 3; of it, 1.5 -> 2.5 = 1 during compute: overlap 1/3.
    const DesResult result = run_des(layers, two_workers(), every_layer_program(2, 1), options);
    REQUIRE(result.total_s == near(4.75));
    REQUIRE(result.exposed_comm_s() == near(2.0));
    REQUIRE(result.comm_busy_s == near(3.0));
    REQUIRE(result.worker_overlap_s[0] == near(1.0));
    REQUIRE(result.overlap_fraction() == near(1.0 / 3.0));
  }
  SECTION("nothing synced: no busy time, overlap 0") {
    // flsgd with H = 2 over one iteration: iteration 0 syncs nothing. 0.5 + 2 + 0.25 = 2.75.
    const DesResult result = run_des(layers, two_workers(), flsgd_program(2, 2), options);
    REQUIRE(result.total_s == near(2.75));
    REQUIRE(result.comm_busy_s == 0);
    REQUIRE(result.overlap_fraction() == 0);
    REQUIRE(result.exposed_comm_s() == 0);
  }
}

TEST_CASE("DES: options out of range are a caller's bug (the simulate job validates its request)", "[des][hand]") {
  const DesLayers layers = backprop_layers({1}, {1});
  DesOptions options;
  options.iterations = 0;
  REQUIRE_THROWS_AS(run_des(layers, two_workers(), every_layer_program(1, 1), options), InternalError);
  options.iterations = 1;
  options.comm_streams = 0;
  REQUIRE_THROWS_AS(run_des(layers, two_workers(), every_layer_program(1, 1), options), InternalError);
  options.comm_streams = 1;
  options.bucket_alpha_s = -1;
  REQUIRE_THROWS_AS(run_des(layers, two_workers(), every_layer_program(1, 1), options), InternalError);
}

TEST_CASE("DES: an auto cluster runs each all-reduce's cheapest algorithm, and buckets by their bytes", "[des][hand]") {
  // 8 workers, 2 per node, 4 nodes; intra 80 Gbit/s 1 us, inter 8 Gbit/s (1e9 B/s) 10 us; the
  // candidates as in tests/des/test_collectives.cpp ("auto takes the cheapest"):
  //   j0, 1e4 bytes: the tree, 4.2e-5 + 2e4 / (0.9 x 1e9) = 6.42222e-5 s;
  //   j1, 1e6 bytes: hierarchical with rings, 6.2e-5 + 1.6e-9 x 1e6 = 1.662e-3 s.
  // Backprop j0 (b 1), j1 (b 0): both ready at 1; one stream, wfbp: j0 1 -> 1.0000642, then j1.
  const Cluster cluster = des_test::cluster_of(des_test::cluster_document(8, 2, 80, 1, 8, 10, "auto"));
  const DesLayers layers = backprop_layers({1, 0}, {}, 0, 0, {1e4, 1e6});
  DesOptions options;
  options.trace_workers = 1;
  options.sync_time = SyncTimeSource::kModel;
  options.comm_streams = 1;
  const DesResult result = run_des(layers, cluster, every_layer_program(2, 1), options);
  const std::vector<DesTraceEvent> events = allreduces_of(result, 0);
  REQUIRE(events.size() == 2);
  const double tree_s = 4.2e-5 + 2e4 / 0.9e9;
  REQUIRE(events[0].duration_s == near(tree_s));
  REQUIRE(events[1].start_s == near(1 + tree_s));
  REQUIRE(events[1].duration_s == near(1.662e-3));
  REQUIRE(result.total_s == near(1 + tree_s + 1.662e-3));
  // Bytes on node 0's link to the core (up): the tree moves 2 bytes per byte there (2e4); the
  // hierarchical all-reduce's q = 2 rings across the 4 nodes, each of n/q bytes, 2 (m-1) = 6 steps
  // of a quarter of it, both crossing the link: 2 x 6 x (1e6 / 2) / 4 = 1.5e6. Total 1.52e6.
  double node0_up = -1;
  for (const auto& [name, bytes] : result.link_bytes)
    if (name == "node0<->core (up)") node0_up = bytes;
  REQUIRE(node0_up == near(1.52e6));

  // The period model prices a bucket of both at the cheapest algorithm for 1.01e6 bytes
  // (hierarchical with rings: 6.2e-5 + 1.6e-9 x 1.01e6 = 1.678e-3 s), as the DES runs it; the
  // members' times less the start-ups saved would say 4.2e-5 + 2.2222e-5 + (1.662e-3 - 4.2e-5) =
  // 1.684222e-3 s.
  const Topology topology(cluster);
  const AllreduceModel model(cluster, topology);
  const BackpropTimes times = backprop_times_for_des(DesStrategyContext{layers, model, SyncTimeSource::kModel});
  REQUIRE(times.bucket_time_by_bytes());
  const std::vector<int> bucket{0, 1};
  REQUIRE(bucket_sync_s(times, bucket, model.time_s(0)) == near(1.678e-3));
  // A lower bound's per-byte share stays under every bucket's time: 1.6e-9 x (1e4 + 1e6).
  const BackpropTimes excess = excess_sync_times(times, model.time_s(0));
  REQUIRE(excess.sync_s[0] + excess.sync_s[1] == near(1.6e-9 * 1.01e6));
  // The DES agrees: one bucket of both, issued after backprop.
  SyncProgram fused;
  fused.iterations.resize(1);
  fused.iterations[0].push_back(SyncOp{bucket, IssuePoint::kAfterBackward});
  const DesResult bucketed = run_des(layers, cluster, fused, options);
  REQUIRE(allreduces_of(bucketed, 0).at(0).duration_s == near(1.678e-3));
}

}  // namespace syncplan
