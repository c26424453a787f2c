// The DES drawing compute from measured spreads (docs/des.md section 6): each draw at the quantile
// its counter-based uniform says, the iteration times of a long run against the distribution they
// are drawn from (tolerances from the sample count, a fixed seed: no timing, no flakiness), the
// update's one quantile, reproducibility, and nothing changed without the "measured" jitter.
#include "des_support.hpp"

#include "core/statistics.hpp"
#include "planner/simulate_job.hpp"
#include "simulator/des/compute_spread.hpp"
#include "simulator/sync_times.hpp"

#include <algorithm>
#include <cmath>

using namespace syncplan;
using namespace syncplan::des_test;

namespace {

// The spread of the hand examples around a median of 4 s: min 1, p10 2, p90 8, max 10 s. Its
// inverse distribution function is piecewise linear through (0, 1), (0.1, 2), (0.5, 4), (0.9, 8),
// (1, 10), so (docs/des.md section 6):
//   mean     = 0.1 (1 + 2)/2 + 0.4 (2 + 4)/2 + 0.4 (4 + 8)/2 + 0.1 (8 + 10)/2 = 4.65
//   E[X^2]   = sum over segments of width w from a to b of w (a^2 + a b + b^2) / 3
//            = 0.1 x 7/3 + 0.4 x 28/3 + 0.4 x 112/3 + 0.1 x 244/3 = 27.0333
//   variance = 27.0333 - 4.65^2 = 5.4108, sd 2.3261
const TimeSpread kHandSpread{5, 1, 2, 8, 10};
constexpr double kHandMedian_s = 4;
constexpr double kHandMean_s = 4.65;
constexpr double kHandSd_s = 2.3261;

// One layer with backward_s 4 s and that spread; nothing to all-reduce (measured sync time 0).
DesLayers one_spread_layer() {
  DesLayers layers = backprop_layers({kHandMedian_s}, {0});
  layers.backward_spread = {kHandSpread};
  return layers;
}

// A cluster of `workers` single-worker nodes with the "measured" jitter (or none).
Cluster spread_cluster(int workers, std::uint64_t seed, bool measured = true, double correlation = 0) {
  Json document = cluster_document(workers, 1, 10, 10, 10, 10);
  if (measured) document["jitter"] = Json{{"distribution", "measured"}, {"correlation", correlation}, {"seed", seed}};
  return cluster_of(document);
}

DesResult run(const DesLayers& layers, const Cluster& cluster, int iterations) {
  DesOptions options;
  options.iterations = iterations;
  return run_des(layers, cluster, all_layers_program(layers.size(), 1, IssuePoint::kGradientReady, true), options);
}

}  // namespace

TEST_CASE("spread: each iteration's backward is the spread's quantile at its own uniform", "[des][spread]") {
  // One worker, one layer: iteration i takes exactly spread_quantile_s(spread, 4, u_i) with u_i the
  // draw of worker 0, iteration i, the backward of layer 0 (slot L + 0 = 1).
  const DesResult result = run(one_spread_layer(), spread_cluster(1, 7), 50);
  const SpreadDraws draws(7, 0);
  REQUIRE(result.iteration_s.size() == 50);
  for (int i = 0; i < 50; ++i) {
    const double u = draws.uniform(0, i, backward_slot(1, 0));
    CHECK(result.iteration_s[i] == near(spread_quantile_s(kHandSpread, kHandMedian_s, u)));
  }
}

TEST_CASE("spread: 20,000 drawn iterations follow the measured distribution", "[des][spread]") {
  // K = 20,000 iterations of one layer. Tolerances are 5 standard errors of each estimate (a chance
  // below 1e-6 each for a correct engine): the mean's is sd / sqrt(K) = 2.3261 / 141.42 = 0.01645,
  // so 0.082; the share of iterations below a knot at probability q is binomial,
  // sqrt(q (1 - q) / K): 0.00212 at q = 0.1 and 0.9 (so 0.0106), 0.00354 at 0.5 (0.0177).
  constexpr int kIterations = 20000;
  const DesResult result = run(one_spread_layer(), spread_cluster(1, 11), kIterations);
  const std::vector<double>& times = result.iteration_s;
  CHECK(mean(times) == Approx(kHandMean_s).margin(5 * kHandSd_s / std::sqrt(kIterations)));
  const auto share_below = [&](double time_s) {
    return static_cast<double>(std::count_if(times.begin(), times.end(), [&](double t) { return t < time_s; })) /
           kIterations;
  };
  CHECK(share_below(2) == Approx(0.1).margin(0.0106));
  CHECK(share_below(4) == Approx(0.5).margin(0.0177));
  CHECK(share_below(8) == Approx(0.9).margin(0.0106));
  CHECK(*std::min_element(times.begin(), times.end()) >= 1);
  CHECK(*std::max_element(times.begin(), times.end()) <= 10);
}

TEST_CASE("spread: two layers drawn together or apart (the copula's correlation)", "[des][spread]") {
  // Two layers of the hand spread. Independent (r = 0): the iteration's variance is the sum of the
  // layers', 2 x 5.4108 = 10.82; at one quantile (r = 1): the sum is twice one draw, variance
  // 4 x 5.4108 = 21.64. The sample variance of K = 20,000 draws has a relative standard error of
  // about sqrt(2 / K) = 1 % (more for a skewed distribution: sqrt((kurtosis - 1) / K), kurtosis
  // below 3 here, so under 1 %); 6 % is more than 5 of them.
  DesLayers layers = backprop_layers({kHandMedian_s, kHandMedian_s}, {0, 0});
  layers.backward_spread = {kHandSpread, kHandSpread};
  constexpr int kIterations = 20000;
  const auto variance = [](const std::vector<double>& x) {
    const double average = mean(x);
    double squares = 0;
    for (const double value : x) squares += (value - average) * (value - average);
    return squares / static_cast<double>(x.size() - 1);
  };
  const DesResult apart = run(layers, spread_cluster(1, 5, true, 0), kIterations);
  const DesResult together = run(layers, spread_cluster(1, 5, true, 1), kIterations);
  CHECK(variance(apart.iteration_s) == Approx(2 * kHandSd_s * kHandSd_s).epsilon(0.06));
  CHECK(variance(together.iteration_s) == Approx(4 * kHandSd_s * kHandSd_s).epsilon(0.06));
  CHECK(mean(apart.iteration_s) == Approx(2 * kHandMean_s).margin(5 * std::sqrt(2.0) * kHandSd_s / std::sqrt(kIterations)));
}

TEST_CASE("spread: the update's layers share one quantile", "[des][spread]") {
  // The update shares of two layers, 1 s and 3 s, with spreads proportional to them (the profiler
  // apportions one timed AdamW step): min 0.5, p10 0.75, p90 1.5, max 2 x their medians. At one
  // quantile u their sum is 4 x Q(u) of the 1 s share's spread, Q(u) = spread_quantile_s(S, 1, u),
  // u the draw of slot 2 L = 4 of the iteration. Backward times 0: the iteration is the update.
  const TimeSpread share{5, 0.5, 0.75, 1.5, 2};
  DesLayers layers = backprop_layers({0, 0}, {0, 0});
  layers.update_s = {1, 3};
  layers.update_spread = {share, share.scaled(3)};
  const DesResult result = run(layers, spread_cluster(1, 3), 40);
  const SpreadDraws draws(3, 0);
  for (int i = 0; i < 40; ++i)
    CHECK(result.iteration_s[i] == near(4 * spread_quantile_s(share, 1, draws.uniform(0, i, update_slot(2)))));
}

TEST_CASE("spread: reproducible for a seed, every worker its own draws, slowdown applied", "[des][spread]") {
  // Two workers, the second at half speed (slowdown 2): each draws its own times, so both are
  // simulated; the same seed gives the same run, another seed another.
  Json document = cluster_document(2, 1, 10, 10, 10, 10);
  document["jitter"] = Json{{"distribution", "measured"}, {"seed", 9}};
  document["compute_slowdown"] = Json::array({1, 2});
  const Cluster cluster = cluster_of(document);
  const DesResult first = run(one_spread_layer(), cluster, 30);
  const DesResult again = run(one_spread_layer(), cluster, 30);
  CHECK(first.simulated_workers == 2);
  CHECK(first.iteration_s == again.iteration_s);
  CHECK(first.worker_iteration_s == again.worker_iteration_s);
  document["jitter"]["seed"] = 10;
  CHECK(run(one_spread_layer(), cluster_of(document), 30).iteration_s != first.iteration_s);
  // Worker 1's backward of iteration 0 is its draw times 2: it ends at 2 Q(u) (nothing to sync, so
  // no worker waits for the other).
  const SpreadDraws draws(9, 0);
  CHECK(first.worker_iteration_s[1][0] == near(2 * spread_quantile_s(kHandSpread, kHandMedian_s, draws.uniform(1, 0, 1))));
  CHECK(first.worker_iteration_s[0][0] == near(spread_quantile_s(kHandSpread, kHandMedian_s, draws.uniform(0, 0, 1))));
}

TEST_CASE("spread: without the measured jitter a profile's spreads change nothing", "[des][spread]") {
  // The same layers with and without spreads, on a cluster without jitter and on one with
  // lognormal jitter: bit for bit the same iteration times.
  DesLayers plain = backprop_layers({1e-3, 2e-3}, {5e-4, 5e-4}, 1e-3, 2e-4);
  DesLayers spread = plain;
  spread.backward_spread = {kHandSpread.scaled(1e-3 / 4), kHandSpread.scaled(2e-3 / 4)};
  spread.forward_spread = {std::nullopt, kHandSpread.scaled(1e-3 / 4)};
  const Cluster quiet = spread_cluster(4, 1, false);
  CHECK(run(spread, quiet, 5).iteration_s == run(plain, quiet, 5).iteration_s);
  Json document = cluster_document(4, 1, 10, 10, 10, 10);
  document["jitter"] = Json{{"distribution", "lognormal"}, {"sigma", 0.1}, {"seed", 3}};
  const Cluster lognormal = cluster_of(document);
  CHECK(run(spread, lognormal, 5).iteration_s == run(plain, lognormal, 5).iteration_s);
}

TEST_CASE("spread: the simulate job reports the median and p90, and refuses a profile without spreads", "[des][spread]") {
  // Profile (forward order) embed, head: backward 4 s each with the hand spread; no all-reduce
  // (sync_s 0). On one worker with the measured jitter the result carries the median and p90 of
  // its iteration times; the same profile without head's spread is refused, naming it.
  Profile profile;
  profile.source = "measured:cpu";
  profile.workers = 1;
  for (const char* name : {"embed", "head"}) {
    LayerProfile layer;
    layer.name = name;
    layer.param_bytes = 0;
    layer.backward_s = kHandMedian_s;
    layer.backward_spread = kHandSpread;
    layer.sync_s = 0.0;
    profile.layers.push_back(layer);
  }
  const auto request_on = [](Profile p, const Cluster& cluster) {
    SyncTimeInputs inputs;
    inputs.cluster = cluster;
    inputs.cluster_origin = "cluster.json";
    inputs.mode = SyncTimeMode::kMeasured;
    SimulateRequest request;
    request.sync = choose_sync_times(std::move(p), "profile.json", std::move(inputs));
    request.origin = "profile.json";
    request.strategy = "wfbp";
    request.period = 1;
    request.iterations = 101;
    return request;
  };
  const DesOutcome outcome = simulate_des(request_on(profile, spread_cluster(1, 4)));
  REQUIRE(outcome.document.median_iteration_s.has_value());
  CHECK(*outcome.document.median_iteration_s == median(outcome.result.iteration_s));
  CHECK(*outcome.document.p90_iteration_s == quantile(outcome.result.iteration_s, 0.9));
  const Json written = result_to_json(outcome.document);
  CHECK(written.contains("median_iteration_s"));
  // Without the measured jitter the keys are absent.
  const DesOutcome quiet = simulate_des(request_on(profile, spread_cluster(1, 4, false)));
  CHECK_FALSE(quiet.document.median_iteration_s.has_value());
  CHECK_FALSE(result_to_json(quiet.document).contains("median_iteration_s"));
  profile.layers[1].backward_spread.reset();
  try {
    simulate_des(request_on(profile, spread_cluster(1, 4)));
    FAIL("a profile without head's backward_spread was simulated");
  } catch (const InputError& e) {
    CHECK_THAT(std::string(e.what()), Catch::Contains("profile.json: layer 'head': field 'backward_spread' is absent") &&
                                          Catch::Contains("cluster.json"));
  }
}
