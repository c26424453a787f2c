// The period model of SPEC section 5, one timing rule at a time, on 2-, 3- and 4-layer profiles
// whose expected numbers are derived by hand in the comment before each check.
#include "simulator/period_model.hpp"

#include "core/errors.hpp"
#include "planner/strategy_table.hpp"
#include "test_support.hpp"

#include <catch2/catch.hpp>

using namespace syncplan;
using syncplan::test::assignment_of;
using syncplan::test::backprop_profile;
using syncplan::test::backprop_times_of;
using syncplan::test::exactly;

// ---------------------------------------------------------------------------------------------
// Building the backprop view of a profile

TEST_CASE("period model: backprop order is the reverse of the profile's forward order",
          "[period_model]") {
  // Forward order: embed, mid, head. Backprop visits head, mid, embed:
  //   b = (1, 2, 3), c = (2, 1, 0.5), B = (1, 1+2, 1+2+3) = (1, 3, 6), B_L = 6.
  //   F = 0.25 (embed) + 0.5 (mid) + unknown (head, counts 0) = 0.75
  //   U = 0.125 (embed) + unknown (mid) + 0.375 (head) = 0.5
  //   F + B_L + U = 7.25; sum c = 3.5.
  Profile profile;
  profile.source = "estimated:hand";
  LayerProfile embed{"embed", {}, {}, 0.25, 3.0, 0.125, 0.5, {}};
  LayerProfile mid{"mid", {}, {}, 0.5, 2.0, std::nullopt, 1.0, {}};
  LayerProfile head{"head", {}, {}, std::nullopt, 1.0, 0.375, 2.0, {}};
  profile.layers = {embed, mid, head};

  const BackpropTimes times = backprop_times(profile, "model.json");
  REQUIRE(times.size() == 3);
  REQUIRE(times.names == std::vector<std::string>{"head", "mid", "embed"});
  REQUIRE(times.backward_s == std::vector<double>{1, 2, 3});
  REQUIRE(times.sync_s == std::vector<double>{2, 1, 0.5});
  REQUIRE(times.ready_s == std::vector<double>{1, 3, 6});
  REQUIRE(times.backprop_s() == exactly(6));
  REQUIRE(times.forward_total_s == exactly(0.75));
  REQUIRE(times.update_total_s == exactly(0.5));
  REQUIRE(times.compute_s() == exactly(7.25));
  REQUIRE(times.sync_total_s() == exactly(3.5));
  // Forward index 0 (embed) is backprop index 2; forward index 2 (head) is backprop index 0.
  REQUIRE(times.backprop_index(0) == 2);
  REQUIRE(times.backprop_index(2) == 0);
}

TEST_CASE("period model: a null backward_s or sync_s is an error naming the layer",
          "[period_model]") {
  Profile profile = backprop_profile({1, 1, 1}, {1, 1, 1});  // forward order j3, j2, j1
  SECTION("backward_s") {
    profile.layers[1].backward_s.reset();  // j2
    REQUIRE_THROWS_AS(backprop_times(profile, "model.json"), InputError);
    REQUIRE_THROWS_WITH(backprop_times(profile, "model.json"),
                        Catch::Contains("model.json") && Catch::Contains("layer 'j2'") &&
                            Catch::Contains("'backward_s'"));
  }
  SECTION("sync_s") {
    profile.layers[0].sync_s.reset();  // j3
    REQUIRE_THROWS_AS(backprop_times(profile, "model.json"), InputError);
    REQUIRE_THROWS_WITH(backprop_times(profile, "model.json"),
                        Catch::Contains("model.json") && Catch::Contains("layer 'j3'") &&
                            Catch::Contains("'sync_s'"));
  }
  SECTION("null forward_s and update_s count as zero") {
    // Only times the model needs are required: F = U = 0 here, so an iteration is B_L = 3.
    const BackpropTimes times = backprop_times(profile, "model.json");
    REQUIRE(times.forward_total_s == 0);
    REQUIRE(times.update_total_s == 0);
    REQUIRE(times.compute_s() == exactly(3));
  }
}

// ---------------------------------------------------------------------------------------------
// Sync start = max(gradient ready B_j, link free)

TEST_CASE("period model: 2 layers, the second sync waits for a busy link", "[period_model]") {
  // b = (1, 1), c = (3, 1), F = 0.5, U = 0.25; B = (1, 2), B_L = 2; S = {1, 2}.
  //   sync 1: start max(B_1 = 1, free 0) = 1, end 4
  //   sync 2: start max(B_2 = 2, free 4) = 4 (link busy), end 5
  //   wait = max(0, 5 - 2) = 3; iteration = F + B_L + U + wait = 0.5 + 2 + 0.25 + 3 = 5.75
  //   events are reported from the iteration start, i.e. shifted by F = 0.5;
  //   the update starts after F + B_L + wait = 5.5.
  const BackpropTimes times = backprop_times_of({1, 1}, {3, 1}, 0.5, 0.25);
  const std::vector<int> both = {0, 1};
  REQUIRE(link_end_s(times, both) == exactly(5));
  REQUIRE(iteration_wait_s(times, both) == exactly(3));

  const PeriodTiming timing = time_assignment(times, assignment_of({{0, 1}}));
  REQUIRE(timing.syncs.size() == 1);
  REQUIRE(timing.syncs[0].size() == 2);
  REQUIRE(timing.syncs[0][0].layer == 0);
  REQUIRE(timing.syncs[0][0].start_s == exactly(1.5));
  REQUIRE(timing.syncs[0][0].end_s == exactly(4.5));
  REQUIRE(timing.syncs[0][1].layer == 1);
  REQUIRE(timing.syncs[0][1].start_s == exactly(4.5));
  REQUIRE(timing.syncs[0][1].end_s == exactly(5.5));
  REQUIRE(timing.wait_s[0] == exactly(3));
  REQUIRE(timing.iteration_s[0] == exactly(5.75));
  REQUIRE(timing.update_start_s[0] == exactly(5.5));
  REQUIRE(timing.period_s == exactly(5.75));
}

TEST_CASE("period model: 2 layers, the link goes idle and restarts at B_j", "[period_model]") {
  // b = (1, 2), c = (0.5, 1); B = (1, 3), B_L = 3; S = {1, 2}.
  //   sync 1: start max(1, 0) = 1, end 1.5
  //   sync 2: start max(B_2 = 3, free 1.5) = 3 (idle link restarts at B_2), end 4
  //   wait = 4 - 3 = 1. (A link that never went idle would end at 2.5 and hide everything.)
  const BackpropTimes times = backprop_times_of({1, 2}, {0.5, 1});
  const PeriodTiming timing = time_assignment(times, assignment_of({{0, 1}}));
  REQUIRE(timing.syncs[0][1].start_s == exactly(3));
  REQUIRE(timing.syncs[0][1].end_s == exactly(4));
  REQUIRE(timing.wait_s[0] == exactly(1));
  REQUIRE(timing.iteration_s[0] == exactly(4));
}

TEST_CASE("period model: 3 layers, the link goes idle in the middle", "[period_model]") {
  // b = (1, 4, 1), c = (1, 1, 1); B = (1, 5, 6), B_L = 6; S = {1, 2, 3}.
  //   sync 1: start 1, end 2
  //   sync 2: start max(5, 2) = 5 (idle since 2), end 6
  //   sync 3: start max(6, 6) = 6, end 7
  //   wait = 7 - 6 = 1; iteration = 6 + 1 = 7.
  const BackpropTimes times = backprop_times_of({1, 4, 1}, {1, 1, 1});
  const PeriodTiming timing = time_assignment(times, assignment_of({{0, 1, 2}}));
  const std::vector<std::pair<double, double>> expected = {{1, 2}, {5, 6}, {6, 7}};
  REQUIRE(timing.syncs[0].size() == 3);
  for (std::size_t k = 0; k < expected.size(); ++k) {
    INFO("sync " << k + 1);
    REQUIRE(timing.syncs[0][k].start_s == exactly(expected[k].first));
    REQUIRE(timing.syncs[0][k].end_s == exactly(expected[k].second));
  }
  REQUIRE(timing.wait_s[0] == exactly(1));
  REQUIRE(timing.iteration_s[0] == exactly(7));
}

TEST_CASE("period model: 3 layers, a skipped layer leaves the link to the next one",
          "[period_model]") {
  // b = (1, 1, 1), c = (2.5, 1, 1); B = (1, 2, 3), B_L = 3; S = {1, 3} (layer 2 not synced).
  //   sync 1: start 1, end 3.5
  //   sync 3: start max(B_3 = 3, free 3.5) = 3.5 (busy), end 4.5
  //   wait = 4.5 - 3 = 1.5. Had layer 2 been in S, sync 3 would end 1 later.
  const BackpropTimes times = backprop_times_of({1, 1, 1}, {2.5, 1, 1});
  const std::vector<int> skip_middle = {0, 2};
  REQUIRE(link_end_s(times, skip_middle) == exactly(4.5));
  REQUIRE(iteration_wait_s(times, skip_middle) == exactly(1.5));
  const std::vector<int> all = {0, 1, 2};
  REQUIRE(iteration_wait_s(times, all) == exactly(2.5));
}

// ---------------------------------------------------------------------------------------------
// wait_h = max(0, last end - B_L) and iteration = F + B_L + U + wait

TEST_CASE("period model: 3 layers, syncs that end before backprop cost nothing",
          "[period_model]") {
  // b = (1, 1, 1), c = (0.5, 0.5, 0), F = 0.75, U = 0.5; B = (1, 2, 3), B_L = 3.
  //   S = {1, 2}: sync 1: 1 -> 1.5, sync 2: 2 -> 2.5; last end - B_L = -0.5, so wait = 0
  //   (not -0.5): iteration = 0.75 + 3 + 0.5 = 4.25.
  //   S = {3}: sync 3 starts at B_3 = B_L = 3 and takes 0: wait 0.
  const BackpropTimes times = backprop_times_of({1, 1, 1}, {0.5, 0.5, 0}, 0.75, 0.5);
  const PeriodTiming timing = time_assignment(times, assignment_of({{0, 1}, {2}}));
  REQUIRE(timing.wait_s == std::vector<double>{0, 0});
  REQUIRE(timing.iteration_s[0] == exactly(4.25));
  REQUIRE(timing.iteration_s[1] == exactly(4.25));
  REQUIRE(timing.period_s == exactly(8.5));
  REQUIRE(link_end_s(times, std::vector<int>{}) == 0);
}

TEST_CASE("period model: 4 layers with F and U, busy and idle link in one iteration",
          "[period_model]") {
  // b = (2, 1, 1, 2), c = (1, 3, 0.5, 1), F = 1, U = 0.5; B = (2, 3, 4, 6), B_L = 6.
  //   sync 1: start max(2, 0) = 2, end 3
  //   sync 2: start max(3, 3) = 3, end 6
  //   sync 3: start max(4, 6) = 6 (busy), end 6.5
  //   sync 4: start max(6, 6.5) = 6.5 (busy), end 7.5
  //   wait = 7.5 - 6 = 1.5; iteration = 1 + 6 + 0.5 + 1.5 = 9; update starts at 1 + 6 + 1.5 = 8.5.
  //   Events from the iteration start (+F = 1): (3, 4), (4, 7), (7, 7.5), (7.5, 8.5).
  const BackpropTimes times = backprop_times_of({2, 1, 1, 2}, {1, 3, 0.5, 1}, 1, 0.5);
  const PeriodTiming timing = time_assignment(times, assignment_of({{0, 1, 2, 3}}));
  const std::vector<std::pair<double, double>> expected = {{3, 4}, {4, 7}, {7, 7.5}, {7.5, 8.5}};
  REQUIRE(timing.syncs[0].size() == 4);
  for (std::size_t k = 0; k < expected.size(); ++k) {
    INFO("sync " << k + 1);
    REQUIRE(timing.syncs[0][k].layer == static_cast<int>(k));
    REQUIRE(timing.syncs[0][k].start_s == exactly(expected[k].first));
    REQUIRE(timing.syncs[0][k].end_s == exactly(expected[k].second));
  }
  REQUIRE(timing.wait_s[0] == exactly(1.5));
  REQUIRE(timing.iteration_s[0] == exactly(9));
  REQUIRE(timing.update_start_s[0] == exactly(8.5));
  REQUIRE(timing.total_wait_s() == exactly(1.5));
}

TEST_CASE("period model: 4 layers over 2 iterations, period is the sum of iterations",
          "[period_model]") {
  // b = (1, 1, 1, 1), c = (0.5, 2.5, 0.5, 0.25), F = 0.5, U = 0.25; B = (1, 2, 3, 4), B_L = 4.
  //   iteration 0, S = {1, 2}: 1 -> 1.5, max(2, 1.5) = 2 -> 4.5; wait 0.5; 0.5 + 4 + 0.25 + 0.5 = 5.25
  //   iteration 1, S = {3, 4}: 3 -> 3.5, max(4, 3.5) = 4 -> 4.25; wait 0.25; 4.75 + 0.25 = 5
  //   period = 5.25 + 5 = 10.25; total wait 0.75.
  const BackpropTimes times = backprop_times_of({1, 1, 1, 1}, {0.5, 2.5, 0.5, 0.25}, 0.5, 0.25);
  const PeriodTiming timing = time_assignment(times, assignment_of({{0, 1}, {2, 3}}));
  REQUIRE(timing.wait_s[0] == exactly(0.5));
  REQUIRE(timing.wait_s[1] == exactly(0.25));
  REQUIRE(timing.iteration_s[0] == exactly(5.25));
  REQUIRE(timing.iteration_s[1] == exactly(5));
  REQUIRE(timing.period_s == exactly(10.25));
  REQUIRE(timing.total_wait_s() == exactly(0.75));
}

// ---------------------------------------------------------------------------------------------
// Periods: a layer synced twice, empty iterations

TEST_CASE("period model: a layer synced in two iterations of a period", "[period_model]") {
  // b = (1, 1, 1), c = (2, 1, 2), F = 0.5, U = 0.5; B = (1, 2, 3), B_L = 3; H = 2.
  // Layer 2 syncs in both iterations: S_0 = {1, 2}, S_1 = {2, 3}.
  //   iteration 0: 1 -> 3, max(2, 3) = 3 -> 4; wait 1; 0.5 + 3 + 0.5 + 1 = 5
  //   iteration 1: 2 -> 3, max(3, 3) = 3 -> 5; wait 2; 4 + 2 = 6
  //   period = 11.
  const Profile profile = backprop_profile({1, 1, 1}, {2, 1, 2}, 0.5, 0.5);
  const BackpropTimes times = backprop_times(profile, "hand.json");
  Plan plan;
  plan.model = "hand";
  plan.period = 2;
  plan.algorithm = "hand";
  plan.layers = {{"j3", {1}}, {"j2", {0, 1}}, {"j1", {0}}};  // forward order

  const Assignment assignment = assignment_from_plan(plan, times);
  REQUIRE(assignment.iterations == std::vector<std::vector<int>>{{0, 1}, {1, 2}});
  const PeriodTiming timing = time_assignment(times, assignment);
  REQUIRE(timing.wait_s[0] == exactly(1));
  REQUIRE(timing.wait_s[1] == exactly(2));
  REQUIRE(timing.iteration_s[0] == exactly(5));
  REQUIRE(timing.iteration_s[1] == exactly(6));
  REQUIRE(timing.period_s == exactly(11));

  // Back to a plan: profile order, layer j2 in iterations 0 and 1.
  const Plan back = plan_from_assignment(assignment, profile, times, "hand");
  REQUIRE(back.period == 2);
  REQUIRE(back.layers.size() == 3);
  REQUIRE(back.layers[0].name == "j3");
  REQUIRE(back.layers[0].sync_iterations == std::vector<int>{1});
  REQUIRE(back.layers[1].name == "j2");
  REQUIRE(back.layers[1].sync_iterations == std::vector<int>{0, 1});
  REQUIRE(back.layers[2].name == "j1");
  REQUIRE(back.layers[2].sync_iterations == std::vector<int>{0});

  const PlanPrediction prediction = prediction_from_timing(timing, 10);
  REQUIRE(prediction.period_s == exactly(11));
  REQUIRE(prediction.iteration_s == timing.iteration_s);
  REQUIRE(prediction.wait_s == timing.wait_s);
  REQUIRE(prediction.lower_bound_period_s == 10);
}

TEST_CASE("period model: empty iterations when H > L", "[period_model]") {
  // b = (1, 1), c = (0.5, 0.5), F = 1, U = 1; B = (1, 2), B_L = 2; H = 4.
  // An iteration without syncs costs F + B_L + U = 4 and has wait 0.
  SECTION("all syncs in iteration 0") {
    //   iteration 0: 1 -> 1.5, max(2, 1.5) = 2 -> 2.5; wait 0.5; 4.5
    //   iterations 1..3: 4 each; period = 4.5 + 12 = 16.5.
    const BackpropTimes times = backprop_times_of({1, 1}, {0.5, 0.5}, 1, 1);
    const PeriodTiming timing = time_assignment(times, assignment_of({{0, 1}, {}, {}, {}}));
    REQUIRE(timing.iteration_s.size() == 4);
    REQUIRE(timing.iteration_s[0] == exactly(4.5));
    for (int h = 1; h < 4; ++h) {
      INFO("iteration " << h);
      REQUIRE(timing.syncs[h].empty());
      REQUIRE(timing.wait_s[h] == 0);
      REQUIRE(timing.iteration_s[h] == exactly(4));
      REQUIRE(timing.update_start_s[h] == exactly(3));  // F + B_L
    }
    REQUIRE(timing.period_s == exactly(16.5));
  }
  SECTION("syncs only in the last two iterations") {
    //   iterations 0, 1: 4 each; iteration 2, S = {1}: 1 -> 1.5, wait 0, 4;
    //   iteration 3, S = {2}: 2 -> 2.5, wait 0.5, 4.5; period = 16.5.
    const BackpropTimes times = backprop_times_of({1, 1}, {0.5, 0.5}, 1, 1);
    const PeriodTiming timing = time_assignment(times, assignment_of({{}, {}, {0}, {1}}));
    REQUIRE(timing.iteration_s[0] == exactly(4));
    REQUIRE(timing.iteration_s[1] == exactly(4));
    REQUIRE(timing.iteration_s[2] == exactly(4));
    REQUIRE(timing.iteration_s[3] == exactly(4.5));
    REQUIRE(timing.period_s == exactly(16.5));
  }
}

TEST_CASE("period model: an index out of range or out of order is an internal error",
          "[period_model]") {
  const BackpropTimes times = backprop_times_of({1, 1}, {1, 1});
  REQUIRE_THROWS_AS(time_assignment(times, assignment_of({{0, 2}})), InternalError);
  REQUIRE_THROWS_AS(time_assignment(times, assignment_of({{-1}})), InternalError);
  REQUIRE_THROWS_AS(time_assignment(times, assignment_of({{1, 0}})), InternalError);
  REQUIRE_THROWS_AS(time_assignment(times, assignment_of({{0, 0}})), InternalError);
}

TEST_CASE("tied parameters: synced once, by the group's latest-ready layer", "[period][tied]") {
  // Backprop order j1 (output-most, e.g. lm_head) .. j3 (input-most, e.g. the embedding);
  // b = (1, 1, 1), c = (2, 0.5, 2); j1 tied to j3 (they share one weight). B = (1, 2, 3), B_L = 3.
  // The shared weight's gradient is complete only after j3's backward, so its one all-reduce
  // (c of the owner j3 = 2) is carried by j3; j1 syncs nothing of its own (c = 0).
  Profile profile = backprop_profile({1, 1, 1}, {2, 0.5, 2});
  profile.layers[2].tied_to = "j3";  // forward order: j3, j2, j1
  validate_profile(profile, "hand.json");
  const BackpropTimes times = backprop_times(profile, "hand.json");
  REQUIRE(times.carrier == std::vector<int>{2, 1, 2});
  REQUIRE(times.sync_s == std::vector<double>{0, 0.5, 2});
  // wfbp, H = 1: j1 at 1 -> 1 (nothing), j2 2 -> 2.5, j3 3 -> 5: wait 2, period 3 + 2 = 5
  // (untied it would be 1 -> 3, 3 -> 3.5, 3.5 -> 5.5: wait 2.5, period 5.5).
  REQUIRE(run_strategy("wfbp", times, 1).timing.period_s == exactly(5));
  REQUIRE(run_strategy("wfbp", backprop_times_of({1, 1, 1}, {2, 0.5, 2}), 1).timing.period_s == exactly(5.5));
  // ssgd syncs 0 + 0.5 + 2 = 2.5 per iteration: 3 + 2.5 = 5.5.
  REQUIRE(run_ssgd(times, 1).timing.period_s == exactly(5.5));

  // A planner may leave j1 (c = 0) anywhere; align_tied_layers lists it where j3 syncs.
  Assignment loose = test::assignment_of({{0, 1}, {2}});
  align_tied_layers(times, loose);
  REQUIRE(loose.iterations == std::vector<std::vector<int>>{{1}, {0, 2}});
  REQUIRE(time_assignment(times, loose).period_s == time_assignment(times, test::assignment_of({{0, 1}, {2}})).period_s);

  // A plan writes j1 with j3's iterations, and a plan that splits them is refused.
  const Assignment assignment = test::assignment_of({{0, 1}, {2}});
  const Plan plan = plan_from_assignment(assignment, profile, times, "hand");
  REQUIRE(plan.layers[0].name == "j3");
  REQUIRE(plan.layers[2].name == "j1");
  REQUIRE(plan.layers[2].sync_iterations == plan.layers[0].sync_iterations);
  Plan split = plan;
  split.layers[2].sync_iterations = {0};
  REQUIRE_THROWS_WITH(assignment_from_plan(split, times, "split.json"),
                      Catch::Contains("split.json") && Catch::Contains("'j1'") && Catch::Contains("'j3'") && Catch::Contains("same iterations"));
}

TEST_CASE("delayed averaging: a plan's delays reach the assignment and come back, tied layers with their carrier", "[period][delayed]") {
  // The tied profile above: forward j3, j2, j1; j1 tied to j3, so j3 (backprop index 2) carries
  // the group's sync and j1 (index 0) follows it. H = 3: j3 syncs in 0 with delay 2, j2 in 1
  // with delay 1 and in 2 with delay 0.
  Profile profile = backprop_profile({1, 1, 1}, {2, 0.5, 2});
  profile.layers[2].tied_to = "j3";
  validate_profile(profile, "hand.json");
  const BackpropTimes times = backprop_times(profile, "hand.json");
  Plan plan;
  plan.period = 3;
  plan.layers = {{"j3", {0}, {2}}, {"j2", {1, 2}, {1, 0}}, {"j1", {0}, {2}}};
  const Assignment assignment = assignment_from_plan(plan, times, "delayed.json");
  REQUIRE(assignment.iterations == std::vector<std::vector<int>>{{0, 2}, {1}, {1}});
  REQUIRE(assignment.delays == std::vector<std::vector<int>>{{2, 2}, {1}, {0}});
  CHECK(assignment.delayed());
  const Plan back = plan_from_assignment(assignment, profile, times, "hand");
  CHECK(back.layers[0].sync_delays == std::vector<int>{2});
  CHECK(back.layers[1].sync_delays == std::vector<int>{1, 0});
  CHECK(back.layers[2].sync_delays == std::vector<int>{2});  // j1 takes j3's

  // align_tied_layers moves j1 to j3's iteration with j3's delay.
  Assignment loose;
  loose.iterations = {{2}, {0, 1}, {}};
  loose.delays = {{1}, {0, 0}, {}};
  align_tied_layers(times, loose);
  CHECK(loose.iterations == std::vector<std::vector<int>>{{0, 2}, {1}, {}});
  CHECK(loose.delays == std::vector<std::vector<int>>{{1, 1}, {0}, {}});

  // A tied layer with a delay of its own is refused, naming both layers.
  Plan split = plan;
  split.layers[2].sync_delays = {1};
  REQUIRE_THROWS_WITH(assignment_from_plan(split, times, "split.json"),
                      Catch::Contains("split.json") && Catch::Contains("'j1'") && Catch::Contains("'j3'") &&
                          Catch::Contains("sync_delays"));
  // A plan without delays gives an assignment without them (every plan before delayed averaging).
  plan.layers = {{"j3", {0}}, {"j2", {1, 2}}, {"j1", {0}}};
  CHECK(assignment_from_plan(plan, times).delays.empty());
}

TEST_CASE("tied parameters: bad ties name the layer", "[period][tied]") {
  Profile profile = backprop_profile({1, 1, 1}, {1, 1, 1});
  profile.layers[2].tied_to = "nothing";
  REQUIRE_THROWS_WITH(validate_profile(profile, "p.json"),
                      Catch::Contains("p.json") && Catch::Contains("'j1'") && Catch::Contains("'nothing'"));
  profile.layers[2].tied_to = "j1";
  REQUIRE_THROWS_WITH(validate_profile(profile, "p.json"), Catch::Contains("itself"));
  profile.layers[2].tied_to = "j2";
  profile.layers[1].tied_to = "j3";  // j1 -> j2 -> j3: a chain
  REQUIRE_THROWS_WITH(validate_profile(profile, "p.json"), Catch::Contains("'j1'") && Catch::Contains("itself tied"));
}
