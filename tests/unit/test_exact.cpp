// The exact method (planner/algorithms/exact.cpp, docs/time-model.md 14) on hand-derived cases
// where the suffix bound is loose, against enumeration with pinned layers, at its node limit, and
// in the plan job and its report (chosen.bound, chosen.proven_optimal, lower_bounds.exact_s).
#include "core/limits.hpp"
#include "core/report.hpp"
#include "planner/lower_bound.hpp"
#include "planner/plan_job.hpp"
#include "test_support.hpp"

#include <algorithm>
#include <chrono>
#include <limits>
#include <random>

namespace syncplan {

namespace {

// Three syncs of 0.9 s ready at B = 1 s, backprop B_L = 2 s (layer 4 computes 1 s, syncs
// `last_sync_s`), H = 2. With last_sync_s = 0: each iteration hides at most B_L - 1 = 1 s, so the
// suffix bound's wait is 2.7 - 2 x 1 = 0.7 s; but one iteration must take two of the 0.9 s syncs,
// ending at 1 + 1.8 = 2.8 s (wait 0.8 s) while the other ends at 1.9 s (wait 0): the optimum wait
// is 0.8 s (all three together: 3.7 - 2 = 1.7 s), period 2 x 2 + 0.8 = 4.8 s.
const std::vector<double> kBackward = {1, 0, 0, 1};
std::vector<double> three_syncs(double last_sync_s) { return {0.9, 0.9, 0.9, last_sync_s}; }

PlanCandidate plan_of(const std::vector<std::vector<int>>& iterations) { return {"given", Assignment{iterations}}; }

// Least period over every assignment of each unpinned layer to one of `period` iterations, the
// pinned ones in all (period^L, an odometer), timed by the period model.
double enumerated_optimum_s(const BackpropTimes& times, int period, const std::vector<bool>& pinned) {
  const int layers = static_cast<int>(times.size());
  std::vector<int> iteration_of(layers, 0);
  double best = std::numeric_limits<double>::infinity();
  while (true) {
    Assignment assignment{std::vector<std::vector<int>>(period)};
    for (int j = 0; j < layers; ++j) {
      if (pinned[j]) {
        for (auto& iteration : assignment.iterations) iteration.push_back(j);
      } else {
        assignment.iterations[iteration_of[j]].push_back(j);
      }
    }
    best = std::min(best, time_assignment(times, assignment).period_s);
    int digit = 0;
    while (digit < layers && (pinned[digit] || ++iteration_of[digit] == period)) iteration_of[digit++] = 0;
    if (digit == layers) break;
  }
  return best;
}

}  // namespace

TEST_CASE("exact: proves the optimum where the suffix bound is loose (hand-derived)", "[planner][exact]") {
  const BackpropTimes times = test::backprop_times_of(kBackward, three_syncs(0));
  REQUIRE(suffix_lower_bound_s(times, 2) == Approx(4.7).epsilon(1e-12));
  // From the worst plan (everything in iteration 0: wait 1.7 s) to the optimum.
  const ExactResult result = plan_exact(times, 2, {}, plan_of({{0, 1, 2, 3}, {}}));
  REQUIRE(result.run.ran);
  REQUIRE(result.run.proven_optimal);
  REQUIRE(result.run.improved);
  REQUIRE(result.candidate.algorithm == "exact");
  REQUIRE(time_assignment(times, result.candidate.assignment).period_s == Approx(4.8).epsilon(1e-12));
  // From the optimum itself: proven, nothing better, the incumbent kept.
  const ExactResult again = plan_exact(times, 2, {}, result.candidate);
  REQUIRE(again.run.proven_optimal);
  REQUIRE_FALSE(again.run.improved);
}

TEST_CASE("exact: pinned layers sync in every block (hand-derived)", "[planner][exact]") {
  // Layer 4 (ready at B_L = 2 s, sync 0.3 s) pinned: {1, 2} with it ends 1 + 1.8 = 2.8, then
  // 2.8 + 0.3 = 3.1 (wait 1.1 s); {3} with it: 1.9, then max(2, 1.9) + 0.3 = 2.3 (wait 0.3 s):
  // 1.4 s. All three with it: 3.7 + 0.3 - 2 = 2.0 s plus 0.3 s for the pin alone: 2.3 s. So the
  // optimum is 4 + 1.4 = 5.4 s.
  const BackpropTimes times = test::backprop_times_of(kBackward, three_syncs(0.3));
  const std::vector<bool> pinned = {false, false, false, true};
  const ExactResult result = plan_exact(times, 2, pinned, plan_of({{0, 1, 2, 3}, {3}}));
  REQUIRE(result.run.proven_optimal);
  REQUIRE(time_assignment(times, result.candidate.assignment).period_s == Approx(5.4).epsilon(1e-12));
  for (const auto& iteration : result.candidate.assignment.iterations)
    REQUIRE(std::count(iteration.begin(), iteration.end(), 3) == 1);
  REQUIRE(enumerated_optimum_s(times, 2, pinned) == Approx(5.4).epsilon(1e-12));
}

TEST_CASE("exact: the optimum of random profiles with pinned layers, against enumeration", "[planner][exact]") {
  std::mt19937 rng(2026);
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  int improved = 0;
  for (int round = 0; round < 300; ++round) {
    const int layers = 2 + round % 6, period = 1 + round % 4;
    std::vector<double> backward, sync;
    std::vector<bool> pinned;
    for (int j = 0; j < layers; ++j) {
      backward.push_back(unit(rng) < 0.1 ? 0.0 : unit(rng));
      sync.push_back(unit(rng) < 0.15 ? 0.0 : 2.0 * unit(rng));  // some frozen layers
      pinned.push_back(unit(rng) < 0.2);
    }
    INFO("round " << round << ", L = " << layers << ", H = " << period);
    const BackpropTimes times = test::backprop_times_of(backward, sync);
    const PlanCandidate dp = plan_dp(times, period, pinned);
    const ExactResult result = plan_exact(times, period, pinned, dp);
    REQUIRE(result.run.proven_optimal);
    const double optimum = enumerated_optimum_s(times, period, pinned);
    REQUIRE(time_assignment(times, result.candidate.assignment).period_s == Approx(optimum).epsilon(1e-12));
    for (int j = 0; j < layers; ++j) {
      int synced = 0;
      for (const auto& iteration : result.candidate.assignment.iterations)
        synced += static_cast<int>(std::count(iteration.begin(), iteration.end(), j));
      REQUIRE(synced == (pinned[j] ? period : 1));
    }
    improved += result.run.improved ? 1 : 0;
  }
  // dp plans contiguous groups only: the exact method must beat it somewhere, or this test could not fail.
  REQUIRE(improved > 0);
}

// The hard regime: layer j syncs for about the backprop left behind it, so the
// period's syncs are several backprops and the blocks' first layers decide what is hidden (the
// node bound's distinct first layers and its overflows before a threshold, docs/time-model.md
// section 14). A bound that overstates would prune the optimum: the search would then "prove" a
// longer plan than enumeration finds.
TEST_CASE("exact: hard random profiles (syncs as long as the backprop left), against enumeration", "[planner][exact]") {
  std::mt19937 rng(25);
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  int improved = 0;
  for (int round = 0; round < 240; ++round) {
    const int layers = 3 + round % 5, period = 2 + round % 3;
    std::vector<double> backward, sync;
    std::vector<bool> pinned;
    for (int j = 0; j < layers; ++j) backward.push_back(unit(rng) < 0.1 ? 0.0 : 0.5 + unit(rng));
    double backprop = 0;
    for (const double b : backward) backprop += b;
    double ready = 0;
    for (int j = 0; j < layers; ++j) {
      ready += backward[j];
      sync.push_back(unit(rng) < 0.1 ? 0.0 : (backprop - ready) * (0.5 + unit(rng)) + 0.05);
      pinned.push_back(unit(rng) < 0.1);
    }
    INFO("round " << round << ", L = " << layers << ", H = " << period);
    const BackpropTimes times = test::backprop_times_of(backward, sync);
    // From the worst incumbent: every layer in iteration 0, the pinned ones in every iteration.
    std::vector<std::vector<int>> worst(period);
    for (int j = 0; j < layers; ++j)
      for (int h = 0; h < period; ++h)
        if (h == 0 || pinned[j]) worst[h].push_back(j);
    const ExactResult result = plan_exact(times, period, pinned, plan_of(worst));
    REQUIRE(result.run.proven_optimal);
    const double optimum = enumerated_optimum_s(times, period, pinned);
    REQUIRE(time_assignment(times, result.candidate.assignment).period_s == Approx(optimum).epsilon(1e-12));
    improved += result.run.improved ? 1 : 0;
  }
  REQUIRE(improved > 0);
}

// The relaxed bound (docs/time-model.md section 14, "Dropped syncs"): removing the smallest syncs
// never lengthens a plan, so the relaxed profile's proven optimum is at most the whole profile's
// enumerated optimum; it is above 0 and, where the fraction removes nothing, no bound is made.
TEST_CASE("exact: the relaxed bound never exceeds the enumerated optimum", "[planner][exact]") {
  std::mt19937 rng(2512);
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  int bounded = 0;
  for (int round = 0; round < 200; ++round) {
    const int layers = 3 + round % 5, period = 2 + round % 3;
    std::vector<double> backward, sync;
    for (int j = 0; j < layers; ++j) backward.push_back(0.5 + unit(rng));
    for (int j = 0; j < layers; ++j) sync.push_back(unit(rng) < 0.4 ? 0.01 * unit(rng) + 0.001 : 3 * unit(rng) + 0.1);
    INFO("round " << round << ", L = " << layers << ", H = " << period);
    const BackpropTimes times = test::backprop_times_of(backward, sync);
    const std::vector<bool> pinned(layers, false);
    const PlanCandidate dp = plan_dp(times, period, pinned);
    const RelaxedResult relaxed = relaxed_lower_bound(times, period, pinned, dp, {}, {0.02});
    const double optimum = enumerated_optimum_s(times, period, pinned);
    double largest = 0;
    for (const double c : sync) largest = std::max(largest, c);
    int small = 0;
    for (const double c : sync) small += c < 0.02 * largest ? 1 : 0;
    if (small == 0) {
      REQUIRE_FALSE(relaxed.bound);
      continue;
    }
    REQUIRE(relaxed.bound);  // a handful of layers: always proven
    REQUIRE(relaxed.bound->dropped_layers == small);
    REQUIRE(relaxed.bound->period_s <= optimum * (1 + 1e-9));
    REQUIRE(relaxed.bound->period_s > 0);
    ++bounded;
  }
  REQUIRE(bounded > 20);
}

TEST_CASE("exact: the node limit and the layer limit leave the incumbent, not proven", "[planner][exact]") {
  const BackpropTimes times = test::backprop_times_of(kBackward, three_syncs(0));
  const PlanCandidate worst = plan_of({{0, 1, 2, 3}, {}});
  const ExactResult cut = plan_exact(times, 2, {}, worst, ExactOptions{96, 1});
  REQUIRE(cut.run.ran);
  REQUIRE_FALSE(cut.run.proven_optimal);
  REQUIRE(cut.run.nodes == 1);
  REQUIRE(cut.candidate.algorithm == "given");
  const ExactResult skipped = plan_exact(times, 2, {}, worst, ExactOptions{2, 200000});  // 3 layers to place
  REQUIRE_FALSE(skipped.run.ran);
  REQUIRE_FALSE(skipped.run.proven_optimal);
  REQUIRE(skipped.candidate.algorithm == "given");
}

TEST_CASE("plan job: the report names the bound and says when the plan is proven optimal", "[planner][exact][plan_job]") {
  PlanRequest request;
  request.profile = test::backprop_profile(kBackward, three_syncs(0));
  request.origin = "hand.json";
  request.period = 2;
  request.search.time_limit_s = 600;
  SECTION("best: the exact method proves 4.8 s, which becomes the bound (gap 0)") {
    const PlanOutcome outcome = run_plan_job(request);
    REQUIRE(outcome.timing.period_s == Approx(4.8).epsilon(1e-12));
    REQUIRE(outcome.exact_run);
    REQUIRE(outcome.proven_optimal);
    REQUIRE(outcome.bound == LowerBoundKind::kExact);
    REQUIRE(outcome.lower_bound_s == Approx(4.8).epsilon(1e-12));
    REQUIRE(outcome.gap_to_lower_bound == 0);
    const Json report = report_to_json(plan_report(outcome, request));
    REQUIRE(report["lower_bounds"]["exact_s"].get<double>() == Approx(4.8).epsilon(1e-12));
    REQUIRE(report["lower_bounds"]["suffix_s"].get<double>() == Approx(4.7).epsilon(1e-12));
    REQUIRE(report["lower_bound_period_s"].get<double>() == Approx(4.8).epsilon(1e-12));
    REQUIRE(report["chosen"]["bound"] == "exact");
    REQUIRE(report["chosen"]["proven_optimal"] == true);
    REQUIRE(report["exact"]["proven_optimal"] == true);
    REQUIRE(report["exact"]["node_limit"] == kDefaultProofNodes);  // the plan job's default budget
    REQUIRE(report["exact"]["budget"] == "nodes");
    REQUIRE_FALSE(report["exact"].contains("prove_s"));
  }
  SECTION("dp: no exact method; the gap is to the suffix bound, 4.8 / 4.7 - 1") {
    request.algorithm = "dp";
    const PlanOutcome outcome = run_plan_job(request);
    REQUIRE_FALSE(outcome.exact_run);
    REQUIRE_FALSE(outcome.proven_optimal);
    REQUIRE(outcome.bound == LowerBoundKind::kSuffix);
    REQUIRE(outcome.gap_to_lower_bound == Approx(4.8 / 4.7 - 1).epsilon(1e-9));
    const Json report = report_to_json(plan_report(outcome, request));
    REQUIRE_FALSE(report["lower_bounds"].contains("exact_s"));
    REQUIRE_FALSE(report.contains("exact"));
    REQUIRE(report["chosen"]["proven_optimal"] == false);
  }
  SECTION("a plan at the suffix bound is optimal without the exact method; exact_s is not written") {
    // One layer: c = 0.5 s hides under nothing (B_L = 1, ready at 1): wait 0.5 s in one of the 2
    // iterations, the suffix bound's 0.5 s too: period 2 + 0.5.
    request.profile = test::backprop_profile({1}, {0.5});
    const PlanOutcome outcome = run_plan_job(request);
    REQUIRE(outcome.timing.period_s == Approx(2.5).epsilon(1e-12));
    REQUIRE_FALSE(outcome.exact_run);
    REQUIRE(outcome.proven_optimal);
    REQUIRE(outcome.bound == LowerBoundKind::kSuffix);
    const Json report = report_to_json(plan_report(outcome, request));
    REQUIRE_FALSE(report["lower_bounds"].contains("exact_s"));
    REQUIRE(report["chosen"]["proven_optimal"] == true);
  }
  SECTION("a deadline already passed stops it at its first node, not proven") {
    ExactOptions options;
    options.deadline = std::chrono::steady_clock::now();
    const BackpropTimes times = test::backprop_times_of(kBackward, three_syncs(0));
    const ExactResult result = plan_exact(times, 2, {}, plan_of({{0, 1, 2, 3}, {}}), options);
    REQUIRE(result.run.time_limited);
    REQUIRE_FALSE(result.run.proven_optimal);
    REQUIRE_FALSE(result.run.improved);
  }
  SECTION("bad limits are refused naming the field") {
    request.exact.node_limit = 0;
    REQUIRE_THROWS_WITH(run_plan_job(request), "exact.node_limit: must be in 1..1000000000000, got 0");
    request.exact.node_limit = limits::kMaxExactNodes + 1;  // 10^12 + 1: past the largest
    REQUIRE_THROWS_WITH(run_plan_job(request), "exact.node_limit: must be in 1..1000000000000, got 1000000000001");
  }
  SECTION("bad opt-in proof times are refused naming the field") {
    for (const double seconds : {0.0, -1.0, 86401.0, std::numeric_limits<double>::quiet_NaN()}) {
      request.prove_s = seconds;
      REQUIRE_THROWS_WITH(run_plan_job(request), Catch::Matchers::StartsWith("prove_s: must be in (0, 86400] seconds"));
    }
  }
  SECTION("the opt-in proof (prove_s) proves what one node could not, and the report says it ran") {
    // One node proves nothing (the tree has 2^3 leaves), and no sync is small enough for a
    // relaxation: the default budget leaves 4.8 s unproven against the suffix bound's 4.7 s.
    request.exact.node_limit = 1;
    const PlanOutcome budget = run_plan_job(request);
    REQUIRE_FALSE(budget.proven_optimal);
    REQUIRE_FALSE(budget.proof_extended);
    REQUIRE(budget.bound == LowerBoundKind::kSuffix);
    REQUIRE(budget.exact_run->nodes == 1);
    // As `plan --exact-nodes 1 --prove-s 600` asks: the same, then no node limit but the seconds.
    request.prove_s = 600;
    const PlanOutcome proof = run_plan_job(request);
    REQUIRE(proof.proof_extended);
    REQUIRE(proof.proven_optimal);
    REQUIRE(proof.bound == LowerBoundKind::kExact);
    REQUIRE(proof.timing.period_s == Approx(4.8).epsilon(1e-12));
    REQUIRE(proof.exact_run->nodes > 1);  // the default run's node and the opt-in run's together
    const Json report = report_to_json(plan_report(proof, request));
    REQUIRE(report["exact"]["budget"] == "prove_s");
    REQUIRE(report["exact"]["prove_s"] == 600);
    REQUIRE(report["chosen"]["bound"] == "exact");
    // A plan the default budget proves runs no opt-in proof.
    request.exact.node_limit = kDefaultProofNodes;
    REQUIRE_FALSE(run_plan_job(request).proof_extended);
  }
  SECTION("a pattern too costly to match against the names is refused before matching") {
    // 400 layers named by 1,000 characters each (400,000 bytes): '.{1000}' compiles to an
    // automaton of more than 1,250 steps (RE2 counts at least one per repetition), so matching is
    // past limits::kPatternMatchWork = 5e8 (the helper's check: 36 ms a name); 'x0' is not.
    std::vector<double> backward(400, 0.001), sync(400, 0.001);
    request.profile = test::backprop_profile(backward, sync);
    for (std::size_t j = 0; j < request.profile.layers.size(); ++j)
      request.profile.layers[j].name = std::string(996, 'x') + std::to_string(1000 + j);
    request.period = 2;
    request.every_iteration = ".{1000}";
    REQUIRE_THROWS_WITH(run_plan_job(request), Catch::Matchers::StartsWith("every_iteration: '.{1000}' is too costly"));
    request.every_iteration = "x1000$";
    REQUIRE(run_plan_job(request).pinned_layers.size() == 1);
  }
  SECTION("fused plans keep the fused bound") {
    request.bucket_alpha_s = 0.0;
    const PlanOutcome outcome = run_plan_job(request);
    REQUIRE_FALSE(outcome.exact_run);
    REQUIRE(outcome.bound == LowerBoundKind::kFused);
  }
}

// The plan job's default proof budget (docs/time-model.md section 14, "Proof budget") on hard
// random profiles with a few small syncs: with so few nodes that the whole-profile method rarely
// proves, the relaxations (their optimum polished by search's descent) bound and improve the plan.
// Against enumeration: the bound is never above the optimum, the plan never below it, a plan
// called proven is the optimum, and the plan is never longer than any of best's candidates' (the
// plan printed must not get worse for the budget).
TEST_CASE("plan job: the default proof budget is work, fewer nodes past 128 layers to place", "[planner][exact][plan_job]") {
  // kDefaultProofNodes x kProofBudgetLayers = 20,000 x 128 = 2,560,000 node-layers:
  //   up to 128 layers: 20,000; 129: floor(2,560,000 / 129) = 19,844; 147 (GPT-2 medium's layers
  //   to place): 17,414; 256: 10,000; 485: 5,278; 2,560,000 layers and more: 1.
  REQUIRE(default_proof_nodes(1) == 20000);
  REQUIRE(default_proof_nodes(128) == 20000);
  REQUIRE(default_proof_nodes(129) == 19844);
  REQUIRE(default_proof_nodes(147) == 17414);
  REQUIRE(default_proof_nodes(256) == 10000);
  REQUIRE(default_proof_nodes(485) == 5278);
  REQUIRE(default_proof_nodes(5000000) == 1);
}

TEST_CASE("plan job: the default proof budget on hard random profiles, against enumeration", "[planner][exact][plan_job]") {
  std::mt19937 rng(3025);
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  int relaxed = 0;
  for (int round = 0; round < 120; ++round) {
    const int layers = 7 + round % 4, period = 3;
    std::vector<double> backward, sync;
    for (int j = 0; j < layers; ++j) backward.push_back(0.5 + unit(rng));
    double backprop = 0;
    for (const double b : backward) backprop += b;
    double ready = 0;
    for (int j = 0; j < layers; ++j) {
      ready += backward[j];
      // About a third of the syncs are below 0.2% of the largest: kRelaxedFractions' first removes them.
      sync.push_back(unit(rng) < 0.35 ? 0.001 * unit(rng) + 1e-5 : (backprop - ready) * (0.5 + unit(rng)) + 0.5);
    }
    INFO("round " << round << ", L = " << layers << ", H = " << period);
    PlanRequest request;
    request.profile = test::backprop_profile(backward, sync);
    request.origin = "hard.json";
    request.period = period;
    request.search.time_limit_s = 600;
    request.exact.node_limit = 2 + round % 4;  // whole profile: 2-5 nodes; each relaxation half of it
    const PlanOutcome outcome = run_plan_job(request);
    const double optimum = enumerated_optimum_s(outcome.times, period, std::vector<bool>(layers, false));
    REQUIRE(outcome.lower_bound_s <= optimum * (1 + 1e-9));
    REQUIRE(outcome.timing.period_s >= optimum * (1 - 1e-9));
    if (outcome.proven_optimal) REQUIRE(outcome.timing.period_s == Approx(optimum).epsilon(1e-9));
    for (const StrategyTiming& row : outcome.strategies)
      if (std::find(kBestCandidates.begin(), kBestCandidates.end(), row.name) != kBestCandidates.end())
        REQUIRE(outcome.timing.period_s <= row.timing.period_s * (1 + 1e-9));
    relaxed += outcome.bound == LowerBoundKind::kRelaxed ? 1 : 0;
  }
  // The relaxations must have bounded some plans, or this test could not fail on them.
  REQUIRE(relaxed > 10);
}

}  // namespace syncplan
