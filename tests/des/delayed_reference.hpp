// Section 13's timing rule of delayed averaging (docs/time-model.md), written from the doc alone
// (not from simulator/period_model.cpp), and the comparison of the DES with it on random delayed
// assignments; shared by test_des_delayed.cpp and test_des_gpt2.cpp.
#pragma once

#include "des_support.hpp"
#include "equivalence.hpp"

#include "simulator/des/sync_program.hpp"
#include "simulator/layer_times.hpp"
#include "simulator/period_model.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>
#include <vector>

namespace syncplan::des_test {

/// One period of one worker under section 13, on `layers` in backprop order with their measured
/// sync_s as c_j (s). With T_h the start of iteration h and A_h = T_h + F' + u_B:
///   start_(j,h) = max(A_h + B_j, end of the previous sync in (h, j) order),  end = start + c_j
///   update_k = max(A_k + B_L, ends of the syncs with h + d = k),  T_(k+1) = update_k + U.
/// A sync with nothing to average (c_j 0 or unknown, or a layer another's sync carries) issues no
/// all-reduce (docs/des.md section 2) and takes no turn on the link. Returns iteration_k =
/// T_(k+1) - T_k (s) for k = 0..H-1.
inline std::vector<double> section13_iterations(const DesLayers& layers, const Assignment& assignment) {
  const int period = assignment.period();
  double forward = layers.unattributed_forward_s, update = 0, ready = 0;
  std::vector<double> ready_s;  // B_j
  for (std::size_t j = 0; j < layers.size(); ++j) {
    forward += layers.forward_s[j];
    update += layers.update_s[j];
    ready_s.push_back(ready += layers.backward_s[j]);
  }
  std::vector<double> latest_end(period, 0.0);  // the latest end of the syncs applied before update_k
  std::vector<double> iteration_s;
  double start_of_iteration = 0, link_free = 0;
  for (int h = 0; h < period; ++h) {
    const double backprop_start = start_of_iteration + forward + layers.unattributed_backward_s;  // A_h
    for (std::size_t i = 0; i < assignment.iterations[h].size(); ++i) {
      const int j = assignment.iterations[h][i];
      const double c = layers.sync_s[j];
      if (!(c > 0) || (!layers.synced.empty() && !layers.synced[j])) continue;
      link_free = std::max(backprop_start + ready_s[j], link_free) + c;
      const int k = h + assignment.delay(h, i);
      latest_end[k] = std::max(latest_end[k], link_free);
    }
    const double update_start = std::max(backprop_start + ready, latest_end[h]);
    iteration_s.push_back(update_start + update - start_of_iteration);
    start_of_iteration = update_start + update;
  }
  return iteration_s;
}

/// A random delayed assignment of `count` layers over `period` iterations: each layer syncs in each
/// iteration with probability `sync_probability`, and at least once (in the last iteration when
/// nowhere before), each sync with a delay drawn uniformly from 0..H-1-h.
inline Assignment random_delayed_assignment(std::mt19937_64& random, int count, int period, double sync_probability) {
  std::bernoulli_distribution syncs(sync_probability);
  Assignment assignment;
  assignment.iterations.resize(period);
  assignment.delays.resize(period);
  std::vector<bool> synced(count, false);
  for (int h = 0; h < period; ++h)
    for (int j = 0; j < count; ++j) {
      if (!syncs(random) && (synced[j] || h < period - 1)) continue;
      synced[j] = true;
      assignment.iterations[h].push_back(j);
      assignment.delays[h].push_back(std::uniform_int_distribution<int>(0, period - 1 - h)(random));
    }
  return assignment;
}

/// Runs `assignment` in the DES for `periods` periods on identical workers (no jitter, measured
/// times) and requires every iteration, the total and the exposed communication to equal
/// section13_iterations to 1e-9, every period alike, and no all-reduce past its period's end (no
/// sync crosses a period boundary). Returns the expected wait per period (s).
inline double check_delayed_equivalence(const DesLayers& layers, const Cluster& cluster, const Assignment& assignment,
                                        int periods) {
  REQUIRE(cluster.identical_workers());
  const int period = assignment.period();
  const std::vector<double> expected = section13_iterations(layers, assignment);
  // The library's period model (simulator/period_model.cpp, time_delayed) must agree with the
  // reference above, so that the DES equals the period model to 1e-9.
  const PeriodTiming model = time_assignment(backprop_times(layers, layers.sync_s, "delayed"), assignment);
  for (int h = 0; h < period; ++h) {
    INFO("iteration " << h << ": period model " << model.iteration_s[h] << ", section 13 " << expected[h]);
    REQUIRE(relative_difference(model.iteration_s[h], expected[h]) <= 1e-9);
  }
  DesOptions options;
  options.iterations = periods * period;
  options.trace_workers = 1;
  const DesResult result = run_des(layers, cluster, program_from_assignment(assignment), options);
  REQUIRE(result.simulated_workers == 1);
  double compute_s = layers.unattributed_forward_s + layers.unattributed_backward_s;
  for (std::size_t j = 0; j < layers.size(); ++j) compute_s += layers.forward_s[j] + layers.backward_s[j] + layers.update_s[j];
  double expected_period = 0, expected_wait = 0;
  for (int h = 0; h < period; ++h) {
    expected_period += expected[h];
    expected_wait += expected[h] - compute_s;
  }
  for (int i = 0; i < periods * period; ++i) {
    INFO("iteration " << i << ": DES " << result.iteration_s[i] << ", section 13 " << expected[i % period]);
    REQUIRE(relative_difference(result.iteration_s[i], expected[i % period]) <= 1e-9);
  }
  REQUIRE(relative_difference(result.total_s, periods * expected_period) <= 1e-9);
  REQUIRE(std::fabs(result.exposed_comm_s() - periods * expected_wait) <= 1e-9 * result.total_s);
  for (const DesTraceEvent& event : result.trace) {
    if (std::string(event.category) != "allreduce") continue;
    const int last = (event.iteration / period + 1) * period;  // the next period's first iteration
    const double period_end = std::accumulate(result.iteration_s.begin(), result.iteration_s.begin() + last, 0.0);
    REQUIRE(event.start_s + event.duration_s <= period_end * (1 + 1e-12));
  }
  return expected_wait;
}

}  // namespace syncplan::des_test
