// The main job through the library API only (no tools/ code): a profile -> the planning job ->
// the report -> the DES check of the plan on a cluster (simulate job), on a hand-made profile
// whose figures are derived by hand below. test_des_gpt2.cpp runs the same on GPT-2.
#include "des_support.hpp"

#include "core/field_error.hpp"
#include "core/report.hpp"
#include "core/result.hpp"
#include "planner/plan_job.hpp"
#include "planner/simulate_job.hpp"

namespace syncplan {
namespace {

// Forward order embed, mid, head; backprop order (j = 1..3) head, mid, embed with
// b = (1, 1, 1) s and c = (1.5, 1, 0.25) s; no forward or update times; measured at 2 workers.
Profile hand_profile() {
  Profile profile;
  profile.model = "hand";
  profile.source = "estimated:hand-written test profile";
  profile.workers = 2;
  for (const auto& [name, sync_s] : {std::pair{"embed", 0.25}, std::pair{"mid", 1.0}, std::pair{"head", 1.5}}) {
    LayerProfile layer;
    layer.name = name;
    layer.backward_s = 1.0;
    layer.sync_s = sync_s;
    layer.param_bytes = 1000;
    profile.layers.push_back(layer);
  }
  return profile;
}

SyncTimeInputs hand_cluster() {
  SyncTimeInputs inputs;
  inputs.cluster = des_test::cluster_of(des_test::cluster_document(2, 2, 8, 10));
  inputs.cluster_origin = "cluster.json";
  return inputs;  // auto: the profile's workers equal the cluster's, so its measured sync_s are kept
}

}  // namespace

TEST_CASE("main job by hand: plan, report, DES check", "[des][main_job]") {
  // B = (1, 2, 3), B_L = 3, H = 2, F = U = 0. By hand (SPEC section 5):
  //   ssgd  = H (B_L + sum c) = 2 (3 + 2.75) = 11.5
  //   wfbp: head 1 -> 2.5, mid 2.5 -> 3.5, embed 3.5 -> 3.75: wait 0.75, period 2 x 3.75 = 7.5
  //   flsgd = H B_L + sum c = 6 + 2.75 = 8.75
  //   plsgd-even: {head, mid} {embed}: waits 0.5 + 0.25 -> 6.75
  //   dp: {head} {mid, embed}: head 1 -> 2.5 (wait 0); mid 2 -> 3, embed 3 -> 3.25 (0.25) -> 6.25
  //   SPEC bound: 6 + max(2.75 - 2 (3 - 1), max(-0.5, 0, 0.25), 0) = 6.25, so dp's gap is 0.
  const Profile profile = hand_profile();
  const SyncTimes sync = choose_sync_times(profile, "hand.json", hand_cluster());
  REQUIRE(sync.source == SyncTimeSource::kMeasured);
  PlanRequest request;
  request.profile = sync.profile;
  request.origin = "hand.json";
  request.times = sync_backprop_times(sync, "hand.json");
  request.period = 2;
  request.algorithm = "dp";
  const PlanOutcome outcome = run_plan_job(request);
  REQUIRE(outcome.strategy("ssgd").period_s == Approx(11.5));
  REQUIRE(outcome.strategy("wfbp").period_s == Approx(7.5));
  REQUIRE(outcome.strategy("flsgd").period_s == Approx(8.75));
  REQUIRE(outcome.strategy("plsgd-even").period_s == Approx(6.75));
  REQUIRE(outcome.strategy("dp").period_s == Approx(6.25));
  REQUIRE(outcome.spec_lower_bound_s == Approx(6.25));
  REQUIRE(outcome.timing.period_s == Approx(6.25));
  REQUIRE(outcome.gap_to_lower_bound == Approx(0).margin(1e-12));
  // The plan in forward order: embed and mid in iteration 1, head in 0.
  REQUIRE(outcome.plan.layers.at(0).sync_iterations == std::vector<int>{1});
  REQUIRE(outcome.plan.layers.at(1).sync_iterations == std::vector<int>{1});
  REQUIRE(outcome.plan.layers.at(2).sync_iterations == std::vector<int>{0});

  // The report: speedups are ratios of the periods above (11.5 / 6.25 = 1.84; 8.75 / 11.5).
  const Json report = report_to_json(plan_report(outcome, request));
  REQUIRE(report["format"] == "syncplan.report/v1");
  REQUIRE(report["strategies"]["dp"]["speedup_over_ssgd"].get<double>() == Approx(1.84));
  REQUIRE(report["strategies"]["ssgd"]["speedup_over_flsgd"].get<double>() == Approx(8.75 / 11.5));
  REQUIRE(report["chosen"]["requested_algorithm"] == "dp");
  REQUIRE(report["period_chosen_by"] == "given");
  REQUIRE(report["search"]["runs"] == 0);  // dp does not search, and the table then runs none
  REQUIRE(report["search"]["stopped_by"] == "none");

  // The DES of the 2 identical workers on the plan: one period takes the plan's 6.25 s, and
  // S-SGD's 11.5 s (all-reduces after backprop, measured times).
  SimulateRequest simulate;
  simulate.sync = sync;
  simulate.origin = "hand.json";
  simulate.plan = outcome.plan;
  simulate.plan_origin = "plan.json";
  const DesOutcome des = simulate_des(simulate);
  REQUIRE(des.result.total_s == Approx(6.25).epsilon(1e-12));
  REQUIRE(des.period_model->period_s == Approx(6.25).epsilon(1e-12));
  const Json des_document = result_to_json(des.document);
  REQUIRE(des_document["engine"] == "des");
  REQUIRE(des_document["period_s"].get<double>() == Approx(6.25).epsilon(1e-12));  // one period run
  // The period model on the same plan writes the same schema: engine, period_s, iteration_s.
  const Json model_document = result_to_json(simulate_period_model(simulate).document);
  REQUIRE(model_document["engine"] == "period-model");
  REQUIRE(model_document["period_s"].get<double>() == Approx(6.25).epsilon(1e-12));
  REQUIRE(model_document["iteration_s"].size() == 2);
  simulate.plan.reset();
  simulate.strategy = "ssgd";
  simulate.period = 2;
  REQUIRE(simulate_des(simulate).result.total_s == Approx(11.5).epsilon(1e-12));
  // 3 iterations of S-SGD, not a whole number of periods: every iteration is 11.5 / 2 = 5.75 s,
  // 17.25 s in all, and period_s is the mean iteration times H = 2: 11.5 s.
  simulate.iterations = 3;
  const Json partial = result_to_json(simulate_des(simulate).document);
  REQUIRE(partial["total_s"].get<double>() == Approx(17.25).epsilon(1e-12));
  REQUIRE(partial["iteration_s"].size() == 3);
  REQUIRE(partial["period_s"].get<double>() == Approx(11.5).epsilon(1e-12));
}

TEST_CASE("main job: the automatic period and request errors name the field", "[des][main_job]") {
  // The hand profile: H = 1 waits 0.75 of 3 s (25%); H = 2 waits 0.25 of 6 (4.2%); so with at most
  // 5% of compute the smallest H is 2.
  PlanRequest request;
  request.profile = hand_profile();
  request.origin = "hand.json";
  request.max_overhead = 0.05;
  request.algorithm = "dp";
  const PlanOutcome outcome = run_plan_job(request);
  REQUIRE(outcome.auto_period.has_value());
  REQUIRE(outcome.period == 2);
  REQUIRE(outcome.auto_period->overhead == Approx(0.25 / 6));
  REQUIRE(report_to_json(plan_report(outcome, request))["max_overhead"].get<double>() == 0.05);

  request.max_overhead.reset();
  request.period = 0;
  try {
    run_plan_job(request);
    FAIL("period 0 accepted");
  } catch (const FieldError& e) {
    REQUIRE(e.field() == "period");
    REQUIRE(std::string(e.what()) == "period: must be >= 1, got 0");
    REQUIRE(e.renamed("--period") == "--period: must be >= 1, got 0");
  }
  request.period = 2;
  request.algorithm = "ssgd";  // not plannable
  REQUIRE_THROWS_WITH(run_plan_job(request), Catch::Matchers::StartsWith("algorithm ssgd: not a planning algorithm"));
  request.algorithm = "bogus";  // no strategy at all
  REQUIRE_THROWS_WITH(run_plan_job(request), Catch::Matchers::StartsWith("algorithm: unknown 'bogus'"));
  request.algorithm = "dp";
  request.every_iteration = "^nothing$";
  REQUIRE_THROWS_WITH(run_plan_job(request), Catch::Matchers::StartsWith("every_iteration: "));
  request.every_iteration = "mid";
  REQUIRE(run_plan_job(request).pinned_layers == std::vector<std::string>{"mid"});
}

}  // namespace syncplan
