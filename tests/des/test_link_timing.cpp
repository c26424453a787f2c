// Timing under a measured link (--link; docs/link.md, docs/des.md): parameterless layers issue no
// all-reduce, buckets (ddp's, mgwfbp's, a plan's fused ones) cost the link model on their bytes,
// ddp and mgwfbp run on the link alone, and --sync-time auto needs the profile's sync_s to take them.
#include "des_support.hpp"

#include "planner/plan_job.hpp"
#include "planner/simulate_job.hpp"
#include "simulator/sync_times.hpp"

using namespace syncplan;
using des_test::near;

namespace {

// A measured link at 4 workers: 400 kB in 500 us, 800 kB in 600 us, 1.6 MB in 1 ms (a curve: the
// 800 kB bucket costs far less than two 400 kB all-reduces); the line alpha 100 us + 5e-10 s/B
// is not the model (docs/link.md). Its start-up (three smallest sizes, t - beta n):
// min(500 - 200, 600 - 400, 1000 - 800) us = 200 us, the time of 0 bytes.
LinkFit curved_link() {
  LinkFit link;
  link.workers = 4;
  link.source = "estimated:test";
  link.alpha_s = 1e-4;
  link.beta_s_per_byte = 5e-10;
  link.r_squared = 0.9;
  link.samples = {allreduce_sample(400000, 5e-4, 4), allreduce_sample(800000, 6e-4, 4),
                  allreduce_sample(1600000, 1e-3, 4)};
  return link;
}

LayerProfile layer(const std::string& name, std::int64_t bytes, double backward_s) {
  LayerProfile out;
  out.name = name;
  out.param_count = bytes / 4;
  out.param_bytes = bytes;
  out.backward_s = backward_s;
  return out;
}

// Forward order: embed (400 kB), drop (no parameters), head (400 kB); workers 4, no sync_s.
// Backprop: head ready at b_head, drop at b_head + b_drop, embed at the sum.
Profile three_layers(double b_head, double b_drop, double b_embed) {
  Profile profile;
  profile.model = "three";
  profile.source = "estimated:test";
  profile.workers = 4;
  profile.layers = {layer("embed", 400000, b_embed), layer("drop", 0, b_drop), layer("head", 400000, b_head)};
  return profile;
}

SyncTimes link_times(Profile profile, std::optional<Cluster> cluster = std::nullopt) {
  SyncTimeInputs inputs;
  inputs.link = curved_link();
  inputs.link_origin = "link.json";
  if (cluster) inputs.cluster = std::move(cluster), inputs.cluster_origin = "cluster.json";
  return choose_sync_times(std::move(profile), "profile.json", std::move(inputs));
}

SimulateRequest strategy_request(SyncTimes sync, const std::string& strategy) {
  SimulateRequest request;
  request.sync = std::move(sync);
  request.origin = "profile.json";
  request.strategy = strategy;
  request.period = 1;
  return request;
}

}  // namespace

TEST_CASE("a link fit charges no all-reduce to a parameterless layer", "[des][link]") {
  // head and embed: 500 us each (measured sizes); drop: 0 bytes, no all-reduce (it was alpha, 100 us).
  // ssgd, H = 1: B_L + sum c = (1 + 0.5 + 1) ms + 1 ms = 3.5 ms.
  const SyncTimes sync = link_times(three_layers(1e-3, 5e-4, 1e-3));
  REQUIRE(sync.link_used);
  CHECK(*sync.profile.layers[1].sync_s == 0);
  CHECK(*sync.profile.layers[0].sync_s == near(5e-4));
  const PeriodModelOutcome ssgd = simulate_period_model(strategy_request(sync, "ssgd"));
  CHECK(ssgd.timing.period_s == near(3.5e-3));
  // The DES on a 4-worker cluster with the link: ssgd's three all-reduces after backprop are two,
  // 2.5 + 0.5 + 0.5 = 3.5 ms (3.6 ms if drop paid the start-up).
  const Cluster cluster = des_test::cluster_of(des_test::cluster_document(4, 4, 100, 1));
  const DesOutcome des = simulate_des(strategy_request(link_times(three_layers(1e-3, 5e-4, 1e-3), cluster), "ssgd"));
  CHECK(des.result.total_s == near(3.5e-3));
}

TEST_CASE("ddp on --link alone: a bucket costs the link model on its bytes", "[des][link]") {
  // Backprop: head ready 1 ms, drop 1.5 ms, embed 2.5 ms. ddp, cap 25 MiB, first bucket 1 MiB:
  // 400 kB + 0 + 400 kB = 800 kB < 1 MiB, so one bucket of all three, issued at 2.5 ms and charged
  // time_s(800 kB) = 600 us (measured), not 500 + 500 us: the iteration ends at 3.1 ms.
  SimulateRequest request = strategy_request(link_times(three_layers(1e-3, 5e-4, 1e-3)), "ddp");
  const DesOutcome outcome = simulate_des(request);
  REQUIRE(outcome.program.iterations[0].size() == 1);
  CHECK(outcome.result.workers == 4);  // the link's workers
  CHECK(outcome.result.total_s == near(3.1e-3));
  CHECK(outcome.document.sync_time == "link");
  CHECK(outcome.document.link_bytes.empty());  // no cluster file: no links to name
  // With a cap of 100 kB the first bucket still holds 1 MiB (torch's rule): one bucket again.
  request.bucket_cap_bytes = 1e5;
  CHECK(simulate_des(request).program.iterations[0].size() == 1);
}

TEST_CASE("mgwfbp on --link alone merges by the link model", "[des][link]") {
  // T(n) = time_s: T(400 kB) = 500 us, T(0) = the start-up 200 us (docs/link.md: the chord below
  // the smallest size starts there). Ready: head 1, drop 1.5, embed 2.5 ms.
  // drop: bucket {head} ends 1 + 0.5 = 1.5; separately drop ends 1.5 + 0.2 = 1.7; merged 1.5 +
  //   0.5 = 2.0 > 1.7: a bucket {drop} of its own (link free before it: 1.5).
  // embed: {drop} ends 1.5 + 0.2 = 1.7; separately 2.5 + 0.5 = 3.0; merged max(2.5, 1.5) + 0.5 =
  //   3.0 <= 3.0: merge {drop, embed}. The DES: {head} 1 -> 1.5 ms; {drop, embed} (400 kB) 2.5 -> 3.0 ms.
  const DesOutcome outcome = simulate_des(strategy_request(link_times(three_layers(1e-3, 5e-4, 1e-3)), "mgwfbp"));
  REQUIRE(outcome.program.iterations[0].size() == 2);
  CHECK(outcome.program.iterations[0][1].layers == std::vector<int>{1, 2});
  CHECK(outcome.result.total_s == near(3.0e-3));
}

TEST_CASE("fused plan buckets under --link cost the link model on their bytes", "[des][link]") {
  // Ready: head 1 ms, drop 1.05, embed 1.1 ms (B_L). Unfused: head 1 -> 1.5, embed 1.5 -> 2.0 ms.
  // Fused {head, embed} (drop has no all-reduce): from 1.1 ms, time_s(800 kB) = 600 us -> 1.7 ms,
  // which wins. (fused_sync_s with the start-up 200 us would say 200 + 300 + 300 = 800 us: 1.9 ms.)
  // Iteration = B_L + wait = 1.1 + 0.6 = 1.7 ms.
  const SyncTimes sync = link_times(three_layers(1e-3, 5e-5, 5e-5));
  REQUIRE(sync.alpha_s);
  CHECK(*sync.alpha_s == near(2e-4));
  PlanRequest plan;
  plan.profile = sync.profile;
  plan.origin = "profile.json";
  plan.times = sync_backprop_times(sync, "profile.json");
  plan.period = 1;
  plan.algorithm = "wfbp";
  plan.bucket_alpha_s = sync.alpha_s;
  const PlanOutcome planned = run_plan_job(plan);
  REQUIRE(planned.buckets);
  REQUIRE(planned.buckets->iterations[0].size() == 1);
  CHECK(planned.timing.period_s == near(1.7e-3));
  CHECK(planned.lower_bound_s <= planned.timing.period_s);
  // simulate --plan --link reproduces it, in the period model and in the DES on a 4-worker cluster.
  SimulateRequest request = strategy_request(sync, "");
  request.plan = planned.plan;
  request.plan_origin = "plan.json";
  CHECK(simulate_period_model(request).timing.period_s == near(1.7e-3));
  request.sync = link_times(three_layers(1e-3, 5e-5, 5e-5), des_test::cluster_of(des_test::cluster_document(4, 4, 100, 1)));
  const DesOutcome des = simulate_des(request);
  CHECK(des.result.total_s == near(1.7e-3));
  REQUIRE(des.period_model);
  CHECK(des.period_model->period_s == near(1.7e-3));
}

TEST_CASE("sync-time auto takes the profile's sync_s only when it has them", "[des][link]") {
  // three_layers has workers 4 = the link's, but no sync_s: auto uses the link, not the profile.
  const SyncTimes sync = link_times(three_layers(1e-3, 5e-4, 1e-3));
  CHECK(sync.link_used);
  CHECK_THAT(sync.text, Catch::Contains("link fit"));
  // With every layer's sync_s at the link's worker count, auto takes them.
  Profile measured = three_layers(1e-3, 5e-4, 1e-3);
  for (LayerProfile& l : measured.layers) l.sync_s = 1e-3;
  const SyncTimes kept = link_times(std::move(measured));
  CHECK_FALSE(kept.link_used);
  CHECK(*kept.profile.layers[0].sync_s == 1e-3);
}
