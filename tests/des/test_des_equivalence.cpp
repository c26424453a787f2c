// docs/des.md 2: with identical workers, no jitter and measured all-reduce times the DES reproduces
// the period model (docs/time-model.md) for every strategy. The two sides are computed by
// independent code: the DES runs events on a simulated clock; the period model evaluates SPEC
// section 5's formulas on backprop_times(profile). The GPT-2 case is in test_des_gpt2.cpp (it
// needs the reference data, and skips without it).
#include "des_support.hpp"
#include "equivalence.hpp"

#include "planner/strategy_table.hpp"
#include "simulator/bucket_fusion.hpp"

#include <cmath>
#include <random>

namespace syncplan {
namespace {

using des_test::check_equivalence;
using des_test::relative_difference;

// A random profile of `count` layers (forward order) with measured sync times; forward and update
// times on a random subset of layers (the others unknown), so F and U are sums of known values.
Profile random_profile(std::mt19937_64& random, int count) {
  std::uniform_real_distribution<double> backward(1e-4, 5e-3), sync(1e-5, 8e-3), small(0, 1e-3);
  std::bernoulli_distribution known(0.5);
  Profile profile;
  profile.model = "random";
  profile.source = "estimated:random test profile";
  profile.workers = 4;
  for (int k = 0; k < count; ++k) {
    LayerProfile layer;
    layer.name = "layer" + std::to_string(k);
    layer.backward_s = backward(random);
    layer.sync_s = sync(random);
    if (known(random)) layer.forward_s = small(random);
    if (known(random)) layer.update_s = small(random);
    profile.layers.push_back(layer);
  }
  return profile;
}

// Fused plans (docs/time-model.md 12): dp's plan fused into buckets with start-up alpha, timed by
// the DES (one SyncOp per bucket; measured times fused with bucket_alpha_s, or the cost model on
// the bucket's bytes) and by time_buckets on the DES's own per-layer times.
// Returns how many buckets hold more than one layer.
int check_fused_equivalence(const Profile& profile, const Cluster& cluster, int period, SyncTimeSource source,
                            double measured_alpha_s) {
  const DesLayers layers = des_layers(profile, "profile.json", source);
  const Topology topology(cluster);
  const AllreduceModel model(cluster, topology);
  const BackpropTimes times = backprop_times_for_des(DesStrategyContext{layers, model, source});
  const double alpha = source == SyncTimeSource::kModel ? model.time_s(0) : measured_alpha_s;
  const Buckets buckets = fuse_buckets(times, plan_search(times, period, {}).assignment, alpha);
  const PeriodTiming expected = time_buckets(times, buckets);
  DesOptions options;
  options.iterations = period;
  options.sync_time = source;
  options.bucket_alpha_s = source == SyncTimeSource::kMeasured ? alpha : 0.0;
  const DesResult result = run_des(layers, cluster, topology, model, program_from_buckets(buckets), options);
  INFO("H = " << period << ", alpha " << alpha << ", " << allreduce_count(buckets) << " buckets; DES total "
              << result.total_s << ", period model " << expected.period_s);
  REQUIRE(relative_difference(result.total_s, expected.period_s) <= 1e-9);
  for (int i = 0; i < period; ++i) REQUIRE(relative_difference(result.iteration_s[i], expected.iteration_s[i]) <= 1e-9);
  int multi = 0;
  for (const auto& iteration : buckets.iterations)
    for (const auto& bucket : iteration) multi += bucket.size() > 1 ? 1 : 0;
  return multi;
}

}  // namespace

TEST_CASE("DES equals the period model on seeded random profiles", "[des][equivalence]") {
  std::mt19937_64 random(20240611);
  // 4 identical workers in 2 nodes: measured times ignore the wiring.
  const Cluster cluster = des_test::cluster_of(des_test::cluster_document(4, 2, 80, 1, 8, 10));
  for (const int count : {1, 2, 3, 5, 8, 13}) {
    for (int repeat = 0; repeat < 3; ++repeat) {
      const Profile profile = random_profile(random, count);
      for (const int period : {1, 2, 3, 5, 8}) check_equivalence(profile, cluster, period, 1);
    }
  }
  // Repeating periods: the DES carries the clock over; each period takes the same time.
  const Profile profile = random_profile(random, 6);
  for (const int period : {2, 4}) check_equivalence(profile, cluster, period, 3);
}

TEST_CASE("DES equals the period model with forward and update on every layer", "[des][equivalence]") {
  std::mt19937_64 random(7);
  Profile profile = random_profile(random, 7);
  for (LayerProfile& layer : profile.layers) {
    layer.forward_s = 2e-4;
    layer.update_s = 1e-4;
  }
  // The same equal slowdown for everyone scales nothing away from identical (factor 1 given).
  Json document = des_test::cluster_document(2, 2, 8, 10);
  document["compute_slowdown"] = Json::array({1.0, 1.0});
  const Cluster cluster = des_test::cluster_of(document);
  for (const int period : {1, 3, 7, 10}) check_equivalence(profile, cluster, period, 1);
}

TEST_CASE("DES equals the period model with tied parameters", "[des][equivalence][tied]") {
  // The input-most layer shares its weight with the output-most one (GPT-2's wte and lm_head) and
  // a middle layer with it too: one sync per group, carried by the latest-ready member, on both
  // sides; the DES issues nothing for the other members.
  std::mt19937_64 random(99);
  Profile profile = random_profile(random, 6);
  profile.layers.back().tied_to = profile.layers.front().name;
  profile.layers[3].tied_to = profile.layers.front().name;
  validate_profile(profile, "tied.json");
  const Cluster cluster = des_test::cluster_of(des_test::cluster_document(4, 2, 80, 1, 8, 10));
  for (const int period : {1, 2, 4}) check_equivalence(profile, cluster, period, 2);
}

TEST_CASE("DES equals the period model on fused plans", "[des][equivalence][buckets]") {
  std::mt19937_64 random(20261129);
  const Cluster cluster = des_test::cluster_of(des_test::cluster_document(4, 2, 80, 1, 8, 10));
  std::uniform_real_distribution<double> alpha_of(0, 4e-3);
  std::uniform_int_distribution<std::int64_t> bytes_of(0, 4'000'000);
  int fused = 0, multi = 0;
  for (const int count : {2, 5, 13, 30}) {
    Profile profile = random_profile(random, count);
    for (LayerProfile& layer : profile.layers) layer.param_bytes = bytes_of(random);
    for (const int period : {1, 3, 6}) {
      multi += check_fused_equivalence(profile, cluster, period, SyncTimeSource::kMeasured, alpha_of(random));
      multi += check_fused_equivalence(profile, cluster, period, SyncTimeSource::kModel, 0);
      ++fused;
    }
  }
  REQUIRE(fused == 12);
  REQUIRE(multi > 10);  // the cases do fuse layers
}

TEST_CASE("layers without parameters run no all-reduce under the cost model", "[des][equivalence]") {
  // Backprop order: head (b 1 ms, 2,400 B), act (b 1 ms, 0 B: a parameterless module), embed
  // (b 1 ms, 400 B); ring over 2 workers in one node, 8 Gbit/s = 1e9 B/s, 10 us per hop:
  // T(n) = 2 x 10e-6 + 2 x (1/2) x n / 1e9 = 2e-5 + 1e-9 n. head 1 -> 1.0224 ms; act issues nothing
  // (an all-reduce of 0 bytes would still pay 2e-5 s); embed 3 -> 3.0204 ms. wfbp, H = 1, no forward
  // or update: 3.0204 ms. Issuing act would give the same end here, so the count of collectives
  // is checked too: 2 per iteration in the trace.
  Profile profile;
  profile.model = "zero";
  profile.source = "estimated:test";
  profile.workers = 8;  // not the cluster's 2: the cost model
  for (const auto& [name, bytes] : {std::pair{"embed", 400}, std::pair{"act", 0}, std::pair{"head", 2400}}) {
    LayerProfile layer;
    layer.name = name;
    layer.param_bytes = bytes;
    layer.backward_s = 1e-3;
    profile.layers.push_back(layer);
  }
  const Cluster cluster = des_test::cluster_of(des_test::cluster_document(2, 2, 8, 10));
  const DesLayers layers = des_layers(profile, "zero.json", SyncTimeSource::kModel);
  const Topology topology(cluster);
  const AllreduceModel model(cluster, topology);
  const BackpropTimes times = backprop_times_for_des(DesStrategyContext{layers, model, SyncTimeSource::kModel});
  REQUIRE(times.sync_s[1] == 0);
  DesOptions options;
  options.sync_time = SyncTimeSource::kModel;
  options.trace_workers = 1;
  const DesResult result = run_des(layers, cluster, topology, model, des_test::des_program("wfbp", {layers, model, SyncTimeSource::kModel}, times, 1), options);
  REQUIRE(result.total_s == Approx(3.0204e-3).epsilon(1e-12));
  REQUIRE(run_strategy("wfbp", times, 1).timing.period_s == Approx(3.0204e-3).epsilon(1e-12));
  int allreduces = 0;
  for (const DesTraceEvent& event : result.trace) allreduces += std::string(event.category) == "allreduce" ? 1 : 0;
  REQUIRE(allreduces == 2);
}

}  // namespace syncplan
