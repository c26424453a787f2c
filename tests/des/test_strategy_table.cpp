// The strategy table enumerated: every entry runs where it says it can, through the library API
// only: plan (the planning job, plannable entries), the period model and the DES (simulate job).
// The DES and the period model are independent code; where both apply they must agree (identical
// workers, measured times: docs/des.md 2), and every plan must be valid and reproducible.
#include "des_support.hpp"
#include "equivalence.hpp"

#include "core/field_error.hpp"
#include "planner/plan_job.hpp"
#include "planner/simulate_job.hpp"
#include "planner/whatif_job.hpp"
#include "test_strategy_row.hpp"

#include <set>

namespace syncplan {
namespace {

// Five layers (forward order) with measured sync times at 4 workers and parameter bytes, so every
// strategy can run: DES-only ones fill buckets by bytes; mgwfbp uses the cost model on them.
Profile table_profile() {
  Profile profile;
  profile.model = "table";
  profile.source = "estimated:hand-written test profile";
  profile.workers = 4;
  const double backward_s[] = {2e-3, 1e-3, 3e-3, 1e-3, 2e-3};
  const double sync_s[] = {4e-3, 5e-4, 2e-3, 1e-3, 3e-3};
  const std::int64_t bytes[] = {4'000'000, 20'000'000, 2'000'000, 1'000'000, 30'000'000};
  for (int k = 0; k < 5; ++k) {
    LayerProfile layer;
    layer.name = "layer" + std::to_string(k);
    layer.backward_s = backward_s[k];
    layer.sync_s = sync_s[k];
    layer.param_bytes = bytes[k];
    layer.forward_s = 5e-4;
    profile.layers.push_back(layer);
  }
  return profile;
}

// Every layer exactly once, in profile order, syncing in ascending iterations of 0..H-1.
void require_valid_plan(const Plan& plan, const Profile& profile, int period) {
  REQUIRE(plan.period == period);
  REQUIRE(plan.layers.size() == profile.layers.size());
  for (std::size_t i = 0; i < plan.layers.size(); ++i) {
    REQUIRE(plan.layers[i].name == profile.layers[i].name);
    const std::vector<int>& iterations = plan.layers[i].sync_iterations;
    REQUIRE_FALSE(iterations.empty());
    for (std::size_t k = 0; k < iterations.size(); ++k) {
      REQUIRE(iterations[k] >= 0);
      REQUIRE(iterations[k] < period);
      if (k > 0) REQUIRE(iterations[k] > iterations[k - 1]);
    }
  }
}

}  // namespace

TEST_CASE("strategy table: names unique, capabilities consistent", "[des][table]") {
  std::set<std::string> names;
  for (const Strategy& strategy : strategies()) {
    INFO(strategy.name);
    REQUIRE(names.insert(strategy.name).second);
    REQUIRE(find_strategy(strategy.name) == &strategy);
    REQUIRE(std::string(strategy.summary).size() > 10);
    REQUIRE(strategy.des());  // every strategy runs in the DES
    REQUIRE(strategy.needs_cluster() == !strategy.period_model());
    if (strategy.compared) REQUIRE(strategy.period_model());
    if (strategy.plannable()) REQUIRE(strategy.time == nullptr);  // a plan is timed as its assignment
    // A plan's DES program is its assignment; a non-plan brings its own.
    REQUIRE((strategy.plan != nullptr) != (strategy.program != nullptr));
    // The runtime builds its rows' programs without a cost model; a row planned first is a plan.
    if (strategy.runs_in_runtime()) REQUIRE_FALSE(strategy.needs_cost_model);
    if (strategy.runtime == RuntimeExecution::kPlanFirst) REQUIRE(strategy.plannable());
    for (const char* member : strategy.members) REQUIRE((find_strategy(member) && find_strategy(member)->plannable()));
    if (strategy.starts_from) REQUIRE((find_strategy(strategy.starts_from) && find_strategy(strategy.starts_from)->plannable()));
    if (strategy.proven) REQUIRE(strategy.plannable());
  }
  std::vector<std::string> compared;
  for (const Strategy& strategy : strategies())
    if (strategy.compared) compared.push_back(strategy.name);
  REQUIRE(compared_strategy_names() == compared);
  REQUIRE(find_strategy("no-such-strategy") == nullptr);
}

TEST_CASE("strategy table: every entry through plan, the period model and the DES", "[des][table]") {
  const Profile profile = table_profile();
  const Json cluster_json = des_test::cluster_document(4, 2, 80, 1, 8, 10);
  int planned = 0, timed = 0, simulated = 0;
  for (const Strategy& strategy : strategies()) {
    for (const int period : {1, 2, 3}) {
      INFO(strategy.name << ", H = " << period);
      const BackpropTimes times = backprop_times(profile, "table.json");
      const double compute_s = period * times.compute_s();
      std::optional<double> period_model_s;
      if (strategy.plannable()) {
        PlanRequest request;
        request.profile = profile;
        request.origin = "table.json";
        request.period = period;
        request.algorithm = strategy.name;
        request.fill_bubbles = true;
        const PlanOutcome outcome = run_plan_job(request);
        require_valid_plan(outcome.plan, profile, period);
        REQUIRE(outcome.timing.period_s >= outcome.lower_bound_s * (1 - 1e-12));
        // Bubble filling never changes the period (docs/time-model.md section 8).
        REQUIRE(outcome.timing.period_s ==
                Approx(time_assignment(times, outcome.planned).period_s).epsilon(1e-12));
        // simulate --plan reproduces the plan's predicted figures (SPEC section 4).
        SimulateRequest replay;
        replay.sync = choose_sync_times(profile, "table.json", {});
        replay.origin = "table.json";
        replay.plan = outcome.plan;
        replay.plan_origin = "plan.json";
        REQUIRE(*simulate_period_model(replay).prediction_difference <= 1e-12);
        ++planned;
      }
      if (strategy.period_model()) {
        const StrategyResult result = strategy.run_period_model(times, period);
        REQUIRE(result.timing.iteration_s.size() == static_cast<std::size_t>(period));
        REQUIRE(result.timing.period_s >= compute_s * (1 - 1e-12));
        REQUIRE(result.assignment.has_value() == strategy.plannable());
        period_model_s = result.timing.period_s;
        ++timed;
      } else {
        REQUIRE_THROWS_AS(strategy.run_period_model(times, period), FieldError);
      }
      // The DES, through the simulate job; measured times unless the strategy needs the cost model.
      SyncTimeInputs inputs;
      inputs.cluster = des_test::cluster_of(cluster_json);
      inputs.cluster_origin = "cluster.json";
      inputs.mode = strategy.needs_cost_model ? SyncTimeMode::kModel : SyncTimeMode::kMeasured;
      SimulateRequest request;
      request.sync = choose_sync_times(profile, "table.json", inputs);
      request.origin = "table.json";
      request.strategy = strategy.name;
      request.period = period;
      const DesOutcome outcome = simulate_des(request);
      REQUIRE(outcome.result.iteration_s.size() == static_cast<std::size_t>(period));
      REQUIRE(std::isfinite(outcome.result.total_s));
      REQUIRE(outcome.result.total_s >= compute_s * (1 - 1e-12));
      // Identical workers and measured times: the DES reproduces the period model (docs/des.md 2).
      if (period_model_s) REQUIRE(des_test::relative_difference(outcome.result.total_s, *period_model_s) <= 1e-9);
      REQUIRE(result_to_json(outcome.document)["strategy"] == strategy.name);
      ++simulated;
    }
  }
  const int count = static_cast<int>(strategies().size());
  REQUIRE(simulated == 3 * count);
  REQUIRE(timed > 0);
  REQUIRE(planned > 0);
  REQUIRE(timed < simulated);  // the DES-only entries ran too
}

TEST_CASE("strategy table: a row added in one place runs in plan, simulate and whatif", "[des][table]") {
  // test::kStrideRow, at H = 2 on the five layers: backprop order is layer4 .. layer0 (j = 0..4),
  // so iteration 0 syncs j 0, 2, 4 (layer4, layer2, layer0) and iteration 1 j 1, 3 (layer3, layer1).
  const ScopedStrategyRow row(test::kStrideRow);
  const Profile profile = table_profile();
  const std::vector<std::vector<int>> expected = {{0}, {1}, {0}, {1}, {0}};  // layer0 .. layer4
  // plan --algorithm test-stride, and its row in plan's comparison table.
  PlanRequest plan_request;
  plan_request.profile = profile;
  plan_request.origin = "table.json";
  plan_request.period = 2;
  plan_request.algorithm = "test-stride";
  const PlanOutcome planned = run_plan_job(plan_request);
  REQUIRE(planned.plan.algorithm == "test-stride");
  for (std::size_t i = 0; i < profile.layers.size(); ++i) CHECK(planned.plan.layers[i].sync_iterations == expected[i]);
  const auto compared = std::find_if(planned.strategies.begin(), planned.strategies.end(),
                                     [](const auto& entry) { return entry.name == "test-stride"; });
  REQUIRE(compared != planned.strategies.end());
  CHECK(compared->timing.period_s == planned.timing.period_s);
  // simulate --strategy test-stride: the period model gives the plan's period, the DES with
  // identical workers and measured times the same (docs/des.md 2).
  SimulateRequest simulate;
  simulate.sync = choose_sync_times(profile, "table.json", {});
  simulate.origin = "table.json";
  simulate.strategy = "test-stride";
  simulate.period = 2;
  CHECK(simulate_period_model(simulate).timing.period_s == planned.timing.period_s);
  SyncTimeInputs inputs;
  inputs.cluster = des_test::cluster_of(des_test::cluster_document(4, 2, 80, 1, 8, 10));
  inputs.cluster_origin = "cluster.json";
  inputs.mode = SyncTimeMode::kMeasured;
  simulate.sync = choose_sync_times(profile, "table.json", inputs);
  CHECK(des_test::relative_difference(simulate_des(simulate).result.total_s, planned.timing.period_s) <= 1e-9);
  // whatif --strategies test-stride: one row per point, each simulated.
  WhatifRequest whatif;
  whatif.profile = profile;
  whatif.origin = "table.json";
  whatif.base = *inputs.cluster;
  whatif.cluster_origin = "cluster.json";
  whatif.workers = {4, 8};
  whatif.bandwidth_Gbps = {8};
  whatif.latency_us = {10};
  whatif.periods = {2};
  whatif.strategies = {"test-stride"};
  const WhatifOutcome swept = run_whatif_job(whatif);
  REQUIRE(swept.rows.size() == 2);
  for (const WhatifRow& point : swept.rows) {
    CHECK(point.strategy == "test-stride");
    CHECK(point.status == WhatifStatus::kOk);
    REQUIRE(point.period_s.has_value());
    CHECK(*point.period_s > 0);
  }
  // Gone with the row.
}

TEST_CASE("period model: a plan's own bound is the bound where its figures are these, else not", "[des][bound]") {
  // One bound per plan. The plan's bound is taken when the plan's predicted
  // figures equal the period model's and the bound lies between the computed one and the plan's
  // period; a bound above the plan's own period, or a plan timed on other sync times, is not.
  const Profile profile = table_profile();
  PlanRequest request;
  request.profile = profile;
  request.origin = "table.json";
  request.period = 2;
  request.algorithm = "wfbp";  // a plan above the computed bound, so that a bound between them exists
  PlanOutcome outcome = run_plan_job(request);
  SimulateRequest replay;
  replay.sync = choose_sync_times(profile, "table.json", {});
  replay.origin = "table.json";
  replay.plan_origin = "plan.json";
  PlanPrediction& predicted = *outcome.plan.predicted;
  const double period_s = predicted.period_s;
  replay.plan = outcome.plan;
  const double computed = simulate_period_model(replay).lower_bound_s;
  REQUIRE(computed < period_s * (1 - 1e-6));
  // A bound halfway between the computed one and the period, named "exact": taken, and said.
  predicted.lower_bound = "exact";
  predicted.lower_bound_period_s = (computed + period_s) / 2;
  replay.plan = outcome.plan;
  PeriodModelOutcome taken = simulate_period_model(replay);
  CHECK(taken.lower_bound_s == *predicted.lower_bound_period_s);
  CHECK(taken.lower_bound_from_plan == "exact");
  CHECK(taken.document.lower_bound_period_s == *predicted.lower_bound_period_s);
  // Above the plan's own period: no bound of this plan, the computed one stays.
  predicted.lower_bound_period_s = 2 * period_s;
  replay.plan = outcome.plan;
  PeriodModelOutcome refused = simulate_period_model(replay);
  CHECK(refused.lower_bound_s == computed);
  CHECK(refused.lower_bound_from_plan.empty());
  // Figures that are not these (another prediction): the computed bound.
  predicted.lower_bound_period_s = (computed + period_s) / 2;
  predicted.period_s = 1.5 * period_s;
  replay.plan = outcome.plan;
  CHECK(simulate_period_model(replay).lower_bound_s == computed);
  // Without a kind (a file from before the field existed): the computed bound.
  predicted.period_s = period_s;
  predicted.lower_bound.clear();
  replay.plan = outcome.plan;
  CHECK(simulate_period_model(replay).lower_bound_s == computed);
}

}  // namespace syncplan
