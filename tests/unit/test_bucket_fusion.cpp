// Bucket fusion (docs/time-model.md section 12): the fused cost by hand, the per-iteration dynamic
// program against every contiguous partition, and the fused lower bound against brute force.
#include "planner/strategy_table.hpp"
#include "planner/lower_bound.hpp"
#include "simulator/bucket_fusion.hpp"
#include "test_support.hpp"

#include <cmath>
#include <random>

namespace syncplan {
namespace {

using test::assignment_of;
using test::backprop_times_of;
using test::exactly;

TEST_CASE("fused_sync_s: k start-ups become one, never below the largest member") {
  const double alpha = 0.5;
  // Every member >= alpha: sum c - (k-1) alpha = (3 + 2 + 1) - 2 x 0.5 = 5.
  REQUIRE(fused_sync_s(std::vector<double>{3, 2, 1}, alpha) == exactly(5));
  // A member below alpha adds nothing beyond the start-up: max(min(3, .5), min(.2, .5)) + 2.5 + 0 = 3.
  REQUIRE(fused_sync_s(std::vector<double>{3, 0.2}, alpha) == exactly(3));
  // One member costs exactly its own time, also when it is below alpha.
  REQUIRE(fused_sync_s(std::vector<double>{0.25}, alpha) == exactly(0.25));
  REQUIRE(fused_sync_s(std::vector<double>{4}, alpha) == exactly(4));
  // alpha = 0: no saving, the sum.
  REQUIRE(fused_sync_s(std::vector<double>{3, 0.25, 1}, 0) == exactly(4.25));
  REQUIRE(fused_sync_s(std::vector<double>{}, alpha) == 0);
}

TEST_CASE("fused_sync_s matches one all-reduce of the summed bytes under alpha-beta") {
  // c_j = alpha + beta n_j; one all-reduce of n_1 + n_2 + n_3 bytes takes alpha + beta (n_1+n_2+n_3).
  const double alpha = 7e-4, beta = 1.4e-9;
  const std::vector<double> bytes = {2400, 800, 400};
  std::vector<double> c;
  for (const double n : bytes) c.push_back(alpha + beta * n);
  REQUIRE(fused_sync_s(c, alpha) == Approx(alpha + beta * 3600).epsilon(1e-13));
}

TEST_CASE("fuse_buckets: hand-derived three-layer iteration") {
  // Backprop order: b = 1, 1, 1 (ready at 1, 2, 3), c = 1.5 each, alpha = 1.
  //   unfused:      j1 1 -> 2.5, j2 2.5 -> 4, j3 4 -> 5.5               end 5.5
  //   {j1 j2} {j3}: bucket at 2, 3 - 1 = 2 -> 4; j3 4 -> 5.5             end 5.5
  //   {j1 j2 j3}:   at 3, 4.5 - 2 = 2.5 -> 5.5                           end 5.5
  //   {j1} {j2 j3}: j1 1 -> 2.5; bucket at max(3, 2.5) = 3, cost 2 -> 5  end 5 (best)
  const BackpropTimes times = backprop_times_of({1, 1, 1}, {1.5, 1.5, 1.5});
  const Buckets buckets = fuse_buckets(times, assignment_of({{0, 1, 2}}), 1.0);
  REQUIRE(buckets.iterations == std::vector<std::vector<std::vector<int>>>{{{0}, {1, 2}}});
  const PeriodTiming timing = time_buckets(times, buckets);
  REQUIRE(timing.wait_s[0] == exactly(2));  // 5 - B_L (3)
  REQUIRE(timing.syncs[0].size() == 2);
  REQUIRE(timing.syncs[0][1].start_s == exactly(3));
  REQUIRE(timing.syncs[0][1].end_s == exactly(5));
  REQUIRE(timing.syncs[0][1].bucket == std::vector<int>{1, 2});
  // Equal ends keep layers apart: with alpha = 0 nothing is gained, so nothing is fused.
  REQUIRE(allreduce_count(fuse_buckets(times, assignment_of({{0, 1, 2}}), 0.0)) == 3);
}

TEST_CASE("fuse_buckets leaves out tied layers and layers with no sync time") {
  // j2 has sync time 0 (no parameters): it belongs to no bucket; j1 and j3 fuse around it.
  // ready 1, 2, 3; c = 2, 0, 2; alpha = 1.5. Unfused: j1 1 -> 3, j3 3 -> 5. Fused at 3: 4 - 1.5 = 2.5 -> 5.5.
  // Unfused ends earlier, so they stay apart.
  const BackpropTimes times = backprop_times_of({1, 1, 1}, {2, 0, 2});
  const Buckets buckets = fuse_buckets(times, assignment_of({{0, 1, 2}}), 1.5);
  REQUIRE(buckets.iterations == std::vector<std::vector<std::vector<int>>>{{{0}, {2}}});
  REQUIRE_FALSE(has_allreduce(times, 1));
}

// All 2^(m-1) partitions of `layers` into contiguous buckets; the earliest link end among them.
double best_partition_end(const BackpropTimes& times, const std::vector<int>& layers, double alpha) {
  const std::size_t m = layers.size();
  double best = INFINITY;
  for (unsigned cuts = 0; cuts < (1u << (m - 1)); ++cuts) {
    Buckets buckets;
    buckets.alpha_s = alpha;
    buckets.iterations.resize(1);
    buckets.iterations[0].push_back({layers[0]});
    for (std::size_t i = 1; i < m; ++i) {
      if (cuts & (1u << (i - 1))) buckets.iterations[0].push_back({});
      buckets.iterations[0].back().push_back(layers[i]);
    }
    const PeriodTiming timing = time_buckets(times, buckets);
    best = std::min(best, timing.syncs[0].back().end_s);
  }
  return best;
}

TEST_CASE("fuse_buckets finds the best contiguous partition (brute force, 2,000 random iterations)") {
  std::mt19937_64 random(20261129);
  std::uniform_real_distribution<double> backward(0.1, 2.0), sync(0.01, 3.0), alpha_of(0.0, 1.5);
  for (int trial = 0; trial < 2000; ++trial) {
    const int m = 1 + static_cast<int>(random() % 8);
    std::vector<double> b, c;
    for (int j = 0; j < m; ++j) {
      b.push_back(backward(random));
      c.push_back(sync(random));
    }
    const double alpha = alpha_of(random);
    const BackpropTimes times = backprop_times_of(b, c);
    std::vector<int> all;
    for (int j = 0; j < m; ++j) all.push_back(j);
    INFO("trial " << trial << ", " << m << " layers, alpha " << alpha);
    const Buckets fused = fuse_buckets(times, assignment_of({all}), alpha);
    const PeriodTiming timing = time_buckets(times, fused);
    const double fused_end = timing.syncs[0].back().end_s;
    REQUIRE(fused_end == Approx(best_partition_end(times, all, alpha)).epsilon(1e-12));
    REQUIRE(timing.wait_s[0] <= time_assignment(times, assignment_of({all})).wait_s[0] + 1e-12);
    // The search's per-iteration objective is the same wait, computed without building buckets.
    REQUIRE(fused_iteration_wait_s(times, all, alpha) == exactly(timing.wait_s[0]));
  }
}

// The best fused period over every assignment of each layer to one iteration, each fused optimally
// (the DP is checked against every partition above): the optimum over fused plans syncing each
// layer once.
double fused_optimum_s(const BackpropTimes& times, int period, double alpha) {
  const int layers = static_cast<int>(times.size());
  double optimum = INFINITY;
  int codes = 1;
  for (int j = 0; j < layers; ++j) codes *= period;
  for (int code = 0; code < codes; ++code) {
    Assignment assignment;
    assignment.iterations.resize(period);
    for (int j = 0, rest = code; j < layers; ++j, rest /= period) assignment.iterations[rest % period].push_back(j);
    optimum = std::min(optimum, time_buckets(times, fuse_buckets(times, assignment, alpha)).period_s);
  }
  return optimum;
}

// `layers` layers with backward times in [0.1, 2] s, sync times in [0.01, 3] s, forward 0.25 s
// and update 0.125 s in all.
BackpropTimes random_times(std::mt19937_64& random, int layers) {
  std::uniform_real_distribution<double> backward(0.1, 2.0), sync(0.01, 3.0);
  std::vector<double> b, c;
  for (int j = 0; j < layers; ++j) {
    b.push_back(backward(random));
    c.push_back(sync(random));
  }
  return backprop_times_of(b, c, 0.25, 0.125);
}

TEST_CASE("fused lower bound holds for every fused plan (brute force over assignments, L <= 6, H <= 3)") {
  std::mt19937_64 random(7);
  std::uniform_real_distribution<double> alpha_of(0.0, 1.0);
  int tight = 0;
  const int trials = 400;
  for (int trial = 0; trial < trials; ++trial) {
    const int layers = 1 + static_cast<int>(random() % 6);
    const int period = 1 + static_cast<int>(random() % 3);
    const BackpropTimes times = random_times(random, layers);
    const double alpha = alpha_of(random);
    const double optimum = fused_optimum_s(times, period, alpha);
    const double bound = fused_lower_bound_s(times, period, alpha);
    INFO("trial " << trial << ": L " << layers << ", H " << period << ", alpha " << alpha);
    REQUIRE(bound <= optimum + 1e-12);
    if (bound >= optimum - 1e-12) ++tight;
  }
  WARN("fused lower bound tight on " << tight << " of " << trials << " random profiles");
  // alpha = 0: the fused bound is the unfused one.
  const BackpropTimes times = backprop_times_of({1, 2}, {3, 0.5});
  REQUIRE(fused_lower_bound_s(times, 2, 0) == best_lower_bound_s(times, 2));
}

TEST_CASE("buckets survive the plan's JSON and are checked against the assignment") {
  const BackpropTimes times = backprop_times_of({1, 1, 1}, {1.5, 1.5, 1.5});
  const Assignment assignment = assignment_of({{0, 1, 2}});
  const Buckets buckets = fuse_buckets(times, assignment, 1.0);
  const Buckets back = buckets_from_plan(plan_buckets(buckets, times), assignment, times, "plan.json");
  REQUIRE(back.iterations == buckets.iterations);
  REQUIRE(back.alpha_s == 1.0);
  PlanBuckets split;  // j3 before j2: not in issue order
  split.alpha_s = 1;
  split.iterations = {{{"j1"}, {"j3"}, {"j2"}}};
  REQUIRE_THROWS_WITH(buckets_from_plan(split, assignment, times, "plan.json"),
                      Catch::Contains("plan.json") && Catch::Contains("'j3'") && Catch::Contains("issue"));
  PlanBuckets missing;
  missing.iterations = {{{"j1", "j2"}}};
  REQUIRE_THROWS_WITH(buckets_from_plan(missing, assignment, times, "plan.json"),
                      Catch::Contains("'j3'") && Catch::Contains("none of its buckets"));
}

TEST_CASE("search with a bucket alpha plans for the fused period (brute force, L <= 7, H <= 3)") {
  // Searching on the fused objective is never worse than fusing dp's plan (it starts there and keeps
  // only strict improvements) and never better than the brute-force fused optimum; over many random
  // profiles it must also beat fusing the plan searched unfused, which ignores what fusion saves.
  std::mt19937_64 random(11);
  std::uniform_real_distribution<double> alpha_of(0.0, 1.5);
  double fused_search_total = 0, unfused_search_total = 0;
  int optimal = 0, better = 0, worse = 0;
  const int trials = 300;
  for (int trial = 0; trial < trials; ++trial) {
    const int layers = 2 + static_cast<int>(random() % 6);
    const int period = 2 + static_cast<int>(random() % 2);
    const BackpropTimes times = random_times(random, layers);
    const double alpha = alpha_of(random);
    SearchOptions unfused;
    unfused.time_limit_s = 60;  // never reached on these sizes: the result depends on the seed only
    SearchOptions fused = unfused;
    fused.bucket_alpha_s = alpha;
    const double with_fusion = time_planned(times, plan_search(times, period, fused).assignment, alpha).period_s;
    const double after_fusion = time_planned(times, plan_search(times, period, unfused).assignment, alpha).period_s;
    const double dp_fused = time_planned(times, plan_dp(times, period).assignment, alpha).period_s;
    const double optimum = fused_optimum_s(times, period, alpha);
    const double best = time_planned(times, plan_best(times, period, fused).assignment, alpha).period_s;
    INFO("trial " << trial << ": L " << layers << ", H " << period << ", alpha " << alpha);
    REQUIRE(with_fusion <= dp_fused + 1e-12);
    REQUIRE(with_fusion >= optimum - 1e-12);
    REQUIRE(best <= with_fusion + 1e-12);  // best keeps the lowest fused period of its candidates
    fused_search_total += with_fusion;
    unfused_search_total += after_fusion;
    optimal += with_fusion <= optimum + 1e-12;
    better += with_fusion < after_fusion - 1e-12;
    worse += with_fusion > after_fusion + 1e-12;
  }
  WARN("fused search optimal on " << optimal << " of " << trials << "; better than fusing the unfused search on "
                                  << better << ", worse on " << worse);
  REQUIRE(better > worse);
  REQUIRE(fused_search_total < unfused_search_total);
}

}  // namespace
}  // namespace syncplan
