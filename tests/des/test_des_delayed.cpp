// The DES on delayed-averaging programs (docs/time-model.md section 13, docs/des.md section 1):
// hand-derived 2- and 3-layer cases, equality with an independent implementation of section 13's
// timing rule on random delayed assignments, periods that repeat, stragglers and jitter, and the
// checks of bad delays. Hand-derived times are binary fractions of a second so that sums are exact.
#include "delayed_reference.hpp"

#include "simulator/des/sync_program.hpp"

#include <algorithm>
#include <random>

namespace syncplan {
namespace {

using des_test::backprop_layers;
using des_test::near;
using des_test::section13_iterations;

// The all-reduce events of traced worker 0, in start order.
std::vector<DesTraceEvent> allreduces(const DesResult& result) {
  std::vector<DesTraceEvent> events;
  for (const DesTraceEvent& event : result.trace)
    if (event.worker == 0 && std::string(event.category) == "allreduce") events.push_back(event);
  std::sort(events.begin(), events.end(),
            [](const DesTraceEvent& a, const DesTraceEvent& b) { return a.start_s < b.start_s; });
  return events;
}

// An assignment with the given syncs and delays per iteration.
Assignment delayed_assignment(std::vector<std::vector<int>> iterations, std::vector<std::vector<int>> delays) {
  Assignment assignment;
  assignment.iterations = std::move(iterations);
  assignment.delays = std::move(delays);
  return assignment;
}

// `workers` identical workers in one node; measured times ignore the wiring.
Cluster identical_cluster(int workers) { return des_test::cluster_of(des_test::cluster_document(workers, workers, 8, 10)); }

DesResult run_traced(const DesLayers& layers, const Cluster& cluster, const SyncProgram& program, int iterations,
                     int trace_workers = 1) {
  DesOptions options;
  options.iterations = iterations;
  options.trace_workers = trace_workers;
  return run_des(layers, cluster, program, options);
}

}  // namespace

TEST_CASE("DES delayed: a 2-layer sync finishes in the next iteration", "[des][delayed]") {
  // Backprop order j0 (b 1, c 0.5), j1 (b 1, c 3); F = 0, U = 0.25; H = 2.
  // Iteration 0 syncs j0 (d 0) and j1 (d 1); iteration 1 syncs j0 (d 0).
  // Iteration 0: A_0 = 0. j0 ready 1, runs 1 -> 1.5 (update 0); j1 ready 2, runs 2 -> 5 (update 1).
  //   update_0 = max(A_0 + B_L = 2, 1.5) = 2, wait 0; T_1 = 2.25.
  // Iteration 1: A_1 = 2.25. j0 ready 3.25, the link is busy with j1 until 5: runs 5 -> 5.5.
  //   update_1 = max(2.25 + 2 = 4.25, 5, 5.5) = 5.5, wait 1.25; T_2 = 5.75.
  // iteration_s = [2.25, 3.5], period 5.75, exposed 1.25. (Without the delay: update_0 = 5,
  // T_1 = 5.25; j0 6.25 -> 6.75, update_1 = 7.25, period 7.5.)
  const DesLayers layers = backprop_layers({1, 1}, {0.5, 3}, 0, 0.25);
  const SyncProgram program = program_from_assignment(delayed_assignment({{0, 1}, {0}}, {{0, 1}, {0}}));
  for (const int workers : {1, 4}) {
    INFO(workers << " identical worker(s)");
    const DesResult result = run_traced(layers, identical_cluster(workers), program, 2);
    REQUIRE(result.simulated_workers == 1);
    REQUIRE(result.iteration_s == std::vector<double>{2.25, 3.5});
    REQUIRE(result.total_s == 5.75);
    REQUIRE(result.exposed_comm_s() == near(1.25));
    // The link is busy 1 -> 1.5 and 2 -> 5.5 (4 s). Compute runs 0 -> 2.25 (iteration 0 with its
    // update), 2.25 -> 4.25 (iteration 1's forward and backward) and 5.5 -> 5.75 (its update), so
    // the overlap is 0.5 (j0) + 2.25 (j1 during 2 -> 4.25) + 0 (j0 of iteration 1, waited for).
    REQUIRE(result.comm_busy_s == near(4.0));
    REQUIRE(result.worker_overlap_s[0] == near(2.75));
    // j1's slice spans the boundary at T_1 = 2.25 and says which iteration issued it and its delay.
    const std::vector<DesTraceEvent> events = allreduces(result);
    REQUIRE(events.size() == 3);
    REQUIRE(events[1].layers == std::vector<int>{1});
    REQUIRE(events[1].start_s == near(2.0));
    REQUIRE(events[1].duration_s == near(3.0));
    REQUIRE(events[1].iteration == 0);
    REQUIRE(events[1].delay == 1);
    REQUIRE(events[2].start_s == near(5.0));
    REQUIRE(events[2].iteration == 1);
    REQUIRE(events[2].delay == 0);
    // The Chrome trace gives the delay in args (docs/formats.md "Timeline"), only where it is > 0.
    const Json trace = des_trace_json(result, layers);
    int delayed_events = 0;
    for (const Json& event : trace["traceEvents"])
      if (event["ph"] == "X" && event["args"].contains("delay")) {
        ++delayed_events;
        REQUIRE(event["args"]["layer"] == "j1");
        REQUIRE(event["args"]["delay"] == 1);
        REQUIRE(event["ts"].get<double>() == near(2e6));
        REQUIRE(event["dur"].get<double>() == near(3e6));
      }
    REQUIRE(delayed_events == 1);
  }
}

TEST_CASE("DES delayed: 3 layers, a delay of 2 and syncs queued behind it", "[des][delayed]") {
  // Backprop order j0 (b 1, c 1.25), j1 (b 1, c 0.5), j2 (b 2, c 4); F = 0.5, U = 0.5, so an
  // iteration computes 0.5 + 4 + 0.5 = 5. H = 3: iteration 0 syncs j2 (d 2); iteration 1 j0 (d 0)
  // and j1 (d 1); iteration 2 j0 (d 0).
  // Iteration 0: A_0 = 0.5. j2 ready 4.5, runs 4.5 -> 8.5 (update 2). update_0 = 4.5; T_1 = 5.
  // Iteration 1: A_1 = 5.5. j0 ready 6.5, waits for the link: 8.5 -> 9.75 (update 1); j1 ready
  //   7.5, runs 9.75 -> 10.25 (update 2). update_1 = max(5.5 + 4 = 9.5, 9.75) = 9.75, wait 0.25;
  //   T_2 = 10.25.
  // Iteration 2: A_2 = 10.75. j0 ready 11.75 on an idle link: 11.75 -> 13 (update 2).
  //   update_2 = max(14.75, 8.5, 10.25, 13) = 14.75, wait 0; T_3 = 15.25.
  // iteration_s = [5, 5.25, 5], period 15.25, exposed 0.25.
  const DesLayers layers = backprop_layers({1, 1, 2}, {1.25, 0.5, 4}, 0.5, 0.5);
  const Assignment assignment = delayed_assignment({{2}, {0, 1}, {0}}, {{2}, {0, 1}, {0}});
  const SyncProgram program = program_from_assignment(assignment);
  const std::vector<double> expected{5, 5.25, 5};
  // The reference implementation agrees with the derivation (so the random case below compares
  // the DES with something that is right on a case derived by hand).
  REQUIRE(section13_iterations(layers, assignment) == expected);
  for (const int workers : {1, 8}) {
    INFO(workers << " identical worker(s)");
    const DesResult result = run_traced(layers, identical_cluster(workers), program, 3);
    REQUIRE(result.iteration_s == expected);
    REQUIRE(result.total_s == 15.25);
    REQUIRE(result.exposed_comm_s() == near(0.25));
    const std::vector<DesTraceEvent> events = allreduces(result);
    REQUIRE(events.size() == 4);
    const double starts[] = {4.5, 8.5, 9.75, 11.75}, ends[] = {8.5, 9.75, 10.25, 13};
    const int issued[] = {0, 1, 1, 2}, delays[] = {2, 0, 1, 0};
    for (int k = 0; k < 4; ++k) {
      INFO("all-reduce " << k);
      REQUIRE(events[k].start_s == near(starts[k]));
      REQUIRE(events[k].start_s + events[k].duration_s == near(ends[k]));
      REQUIRE(events[k].iteration == issued[k]);
      REQUIRE(events[k].delay == delays[k]);
    }
  }
}

TEST_CASE("DES delayed: a 2x slower worker with a delayed sync", "[des][delayed]") {
  // The first case's program and layers on 2 workers, worker 1 with compute_slowdown 2 (b 2, 2;
  // U 0.5). All-reduces start when both workers issued them and the stream is free.
  // Iteration 0 (both start at 0): w0 ready 1, 2; w1 ready 2, 4.
  //   j0: 2 -> 2.5 (update 0); j1: 4 -> 7 (update 1).
  //   w0 updates at max(2, 2.5) = 2.5 -> 2.75; w1 at 4 -> 4.5.
  // Iteration 1: w0 starts 2.75 (j0 ready 3.75, backprop ends 4.75); w1 starts 4.5 (6.5, 8.5).
  //   j0: ready 6.5, the stream is busy with j1 until 7: 7 -> 7.5.
  //   w0 updates at max(4.75, 7, 7.5) = 7.5 -> 7.75; w1 at 8.5 -> 9.
  // Slowest worker's ends 4.5, 9: iteration_s = [4.5, 4.5]. Worker 0: [2.75, 5]; worker 1: [4.5, 4.5].
  // Exposed: w0 (2.5 - 2) + (7.5 - 4.75) = 3.25; w1 0.
  const DesLayers layers = backprop_layers({1, 1}, {0.5, 3}, 0, 0.25);
  Json document = des_test::cluster_document(2, 2, 8, 10);
  document["compute_slowdown"] = std::vector<double>{1.0, 2.0};
  const SyncProgram program = program_from_assignment(delayed_assignment({{0, 1}, {0}}, {{0, 1}, {0}}));
  const DesResult result = run_traced(layers, des_test::cluster_of(document), program, 2, 2);
  REQUIRE(result.simulated_workers == 2);
  REQUIRE(result.iteration_s == std::vector<double>{4.5, 4.5});
  REQUIRE(result.worker_iteration_s[0] == std::vector<double>{2.75, 5.0});
  REQUIRE(result.worker_iteration_s[1] == std::vector<double>{4.5, 4.5});
  REQUIRE(result.worker_exposed_comm_s[0] == near(3.25));
  REQUIRE(result.worker_exposed_comm_s[1] == near(0.0));
  const std::vector<DesTraceEvent> events = allreduces(result);
  REQUIRE(events.size() == 3);
  REQUIRE(events[1].start_s == near(4.0));
  REQUIRE(events[1].duration_s == near(3.0));
  REQUIRE(events[2].start_s == near(7.0));
}

TEST_CASE("DES delayed: equals section 13's timing rule on random delayed assignments", "[des][delayed][equivalence]") {
  // Identical workers, no jitter, measured times: one period of the DES against
  // section13_iterations, an independent reading of the doc's rule, to 1e-9; over 3 periods every
  // period is the same (no sync crosses a period boundary, so each period starts on an idle link).
  std::mt19937_64 random(20261201);
  std::uniform_real_distribution<double> backward(1e-4, 5e-3), sync(1e-5, 2e-2), small(0, 2e-3);
  const Cluster cluster = des_test::cluster_of(des_test::cluster_document(4, 2, 80, 1, 8, 10));
  int delayed_syncs = 0, waits = 0;
  for (const int count : {1, 2, 3, 5, 8}) {
    for (const int period : {1, 2, 3, 5, 8}) {
      for (int repeat = 0; repeat < 4; ++repeat) {
        std::vector<double> backward_s, sync_s;
        for (int j = 0; j < count; ++j) {
          backward_s.push_back(backward(random));
          sync_s.push_back(sync(random));  // > 0: every sync issues an all-reduce
        }
        DesLayers layers = backprop_layers(backward_s, sync_s, small(random), small(random));
        if (repeat % 2 == 1) {  // the profile's unattributed compute: A_h = T_h + F' + u_B
          layers.unattributed_forward_s = small(random);
          layers.unattributed_backward_s = small(random);
        }
        const Assignment assignment = des_test::random_delayed_assignment(random, count, period, 0.6);
        for (const auto& delays : assignment.delays)
          delayed_syncs += static_cast<int>(std::count_if(delays.begin(), delays.end(), [](int d) { return d > 0; }));
        INFO(count << " layers, H = " << period << ", repeat " << repeat);
        waits += des_test::check_delayed_equivalence(layers, cluster, assignment, 3) > 1e-12 ? 1 : 0;
      }
    }
  }
  // The cases exercise what they are for: delayed syncs, and some that still cost a wait.
  REQUIRE(delayed_syncs > 100);
  REQUIRE(waits > 10);
}

TEST_CASE("DES delayed: stragglers, jitter, several streams and the cost model run to the end", "[des][delayed]") {
  // A smoke test: 8 layers, H = 4, every layer synced in every iteration with the largest delay
  // allowed. Whatever the workers, every all-reduce finishes (run_des checks it) and the run ends.
  std::vector<double> backward_s, sync_s, param_bytes;
  for (int j = 0; j < 8; ++j) {
    backward_s.push_back(1e-3 * (1 + j % 3));
    sync_s.push_back(2e-3 * (1 + j % 4));
    param_bytes.push_back(1e6 * (1 + j));
  }
  const DesLayers layers = backprop_layers(backward_s, sync_s, 2e-3, 1e-3, param_bytes);
  Assignment assignment;
  for (int h = 0; h < 4; ++h) {
    assignment.iterations.emplace_back();
    assignment.delays.emplace_back();
    for (int j = 0; j < 8; ++j) {
      assignment.iterations[h].push_back(j);
      assignment.delays[h].push_back(3 - h);
    }
  }
  const SyncProgram program = program_from_assignment(assignment);
  Json straggler = des_test::cluster_document(4, 2, 10, 5, 1, 20);
  straggler["compute_slowdown"] = std::vector<double>{1, 1, 3, 1};
  Json jitter = des_test::cluster_document(4, 2, 10, 5, 1, 20);
  jitter["jitter"] = Json{{"distribution", "lognormal"}, {"sigma", 0.3}, {"seed", 7}};
  for (const Json& document : {straggler, jitter}) {
    for (const SyncTimeSource source : {SyncTimeSource::kMeasured, SyncTimeSource::kModel}) {
      for (const int streams : {1, 3}) {
        for (const int iterations : {4, 6, 12}) {  // 6: the run stops inside a period
          INFO((document.contains("jitter") ? "jitter" : "straggler") << ", streams " << streams << ", iterations "
                                                                       << iterations);
          DesOptions options;
          options.iterations = iterations;
          options.comm_streams = streams;
          options.sync_time = source;
          const DesResult result = run_des(layers, des_test::cluster_of(document), program, options);
          REQUIRE(result.simulated_workers == 4);
          REQUIRE(result.iteration_s.size() == static_cast<std::size_t>(iterations));
          REQUIRE(std::isfinite(result.total_s));
          for (const double seconds : result.iteration_s) REQUIRE(seconds > 0);
        }
      }
    }
  }
}

TEST_CASE("DES delayed: a delay the semantics do not allow is refused", "[des][delayed][errors]") {
  const DesLayers layers = backprop_layers({1, 1}, {0.5, 0.5}, 0, 0.25);
  const Cluster cluster = identical_cluster(2);
  DesOptions options;
  options.iterations = 2;
  const auto refused = [&](const SyncProgram& program, const std::string& message) {
    REQUIRE_THROWS_AS(run_des(layers, cluster, program, options), InternalError);
    REQUIRE_THROWS_WITH(run_des(layers, cluster, program, options), message);
  };
  SyncProgram past_period = program_from_assignment(delayed_assignment({{0}, {0, 1}}, {{0}, {0, 1}}));
  refused(past_period, "sync program: iteration 1 of 2, all-reduce of layer 'j1': delay 1 runs past the period "
                       "(h + delay = 2 > H - 1 = 1)");
  SyncProgram negative = program_from_assignment(delayed_assignment({{1}, {0}}, {{-1}, {0}}));
  refused(negative, "sync program: iteration 0 of 2, all-reduce of layer 'j1': delay -1 is negative");
  SyncProgram after_backward = all_layers_program(2, 2, IssuePoint::kAfterBackward, false);
  after_backward.iterations[0].push_back({{0}, IssuePoint::kAfterBackward, 1});
  refused(after_backward, "sync program: iteration 0 of 2, all-reduce of layer 'j0': delay 1 on an all-reduce not "
                          "issued when its gradient is ready (only those may be delayed)");
}

}  // namespace syncplan
