// The DES and the main job on DreamDDP's measured GPT-2 profile (SPEC section 6), through the
// library API only. Built into test_des_gpt2 with the golden tests' runner, which exits 77
// (skipped) when the reference data is absent.
#include "delayed_reference.hpp"
#include "des_support.hpp"
#include "equivalence.hpp"
#include "reference_data.hpp"

#include "planner/plan_job.hpp"
#include "planner/simulate_job.hpp"

namespace syncplan {

TEST_CASE("DES equals the period model on the shared GPT-2 profile", "[equivalence]") {
  const Profile& profile = golden::gpt2_case().profile;
  REQUIRE(profile.layers.size() == 125);
  // The testbed's shape: 8 nodes of 1 GPU at 10 Gbit/s (data/clusters/8nodes-1gpu-10gbps.json).
  const Cluster cluster = des_test::cluster_of(des_test::cluster_document(8, 1, 3600, 5, 10, 50));
  for (const int period : {1, 5, 10}) des_test::check_equivalence(profile, cluster, period, 1);
}

TEST_CASE("DES of delayed plans equals section 13's rule on the shared GPT-2 profile", "[delayed]") {
  // Seeded random delayed assignments of the 125 measured layers (docs/time-model.md section 13),
  // timed by the DES on the testbed's 8 identical workers with the measured sync_s and by
  // delayed_reference.hpp's independent reading of the rule, over 3 periods.
  const DesLayers layers = des_layers(golden::gpt2_case().profile, "gpt2", SyncTimeSource::kMeasured);
  const Cluster cluster = des_test::cluster_of(des_test::cluster_document(8, 1, 3600, 5, 10, 50));
  std::mt19937_64 random(14);
  double waits_s = 0;
  for (const int period : {2, 5, 10})
    for (const double probability : {0.1, 0.5}) {
      INFO("H = " << period << ", sync probability " << probability);
      const Assignment assignment =
          des_test::random_delayed_assignment(random, static_cast<int>(layers.size()), period, probability);
      waits_s += des_test::check_delayed_equivalence(layers, cluster, assignment, 3);
    }
  REQUIRE(waits_s > 0);  // some syncs are still waited for: the comparison covers the wait rule
}

TEST_CASE("main job on GPT-2: plan, then the DES of the 8-node cluster reproduces it", "[main_job]") {
  const golden::Gpt2Case& gpt2 = golden::gpt2_case();
  const Json& expected = gpt2.expected["H10"];  // figures of an independent implementation
  SyncTimeInputs inputs;
  inputs.cluster = read_cluster_file(SYNCPLAN_DATA_DIR "/clusters/8nodes-1gpu-10gbps.json");
  inputs.cluster_origin = "8nodes-1gpu-10gbps.json";
  const SyncTimes sync = choose_sync_times(gpt2.profile, "gpt2", inputs);
  REQUIRE(sync.source == SyncTimeSource::kMeasured);  // measured at the cluster's 8 workers

  PlanRequest request;
  request.profile = sync.profile;
  request.origin = "gpt2";
  request.times = sync_backprop_times(sync, "gpt2");
  request.period = 10;
  request.algorithm = "dp";
  request.fill_bubbles = true;
  const PlanOutcome dp = run_plan_job(request);
  REQUIRE(dp.timing.period_s == Approx(expected["dp_contiguous_period_s"].get<double>()).epsilon(1e-9));
  REQUIRE(dp.strategy("flsgd").period_s == Approx(expected["flsgd_period_s"].get<double>()).epsilon(1e-9));
  REQUIRE(dp.strategy("plsgd-even").period_s == Approx(expected["plsgd_even_period_s"].get<double>()).epsilon(1e-9));
  REQUIRE(dp.spec_lower_bound_s == Approx(expected["lower_bound_period_s"].get<double>()).epsilon(1e-9));
  REQUIRE(dp.extra_syncs > 0);  // bubble filling found idle link time, period unchanged (checked above)

  request.algorithm = "best";
  const PlanOutcome best = run_plan_job(request);
  REQUIRE(best.timing.period_s <= dp.timing.period_s);
  REQUIRE(best.timing.period_s >= best.lower_bound_s * (1 - 1e-12));

  // The DES of the cluster's 8 identical workers runs the plan in its predicted period.
  SimulateRequest simulate;
  simulate.sync = sync;
  simulate.origin = "gpt2";
  simulate.plan = best.plan;
  simulate.plan_origin = "plan.json";
  const DesOutcome des = simulate_des(simulate);
  REQUIRE(des.result.simulated_workers == 1);
  REQUIRE(des_test::relative_difference(des.result.total_s, best.plan.predicted->period_s) <= 1e-9);
}

}  // namespace syncplan
