// The strategies of SPEC section 5's table (ssgd, wfbp, flsgd, plsgd-even) timed through
// run_strategy, against period times derived by hand from the table's formulas.
#include "planner/strategy_table.hpp"
#include "simulator/strategies/strategies.hpp"

#include "core/errors.hpp"
#include "test_support.hpp"

#include <catch2/catch.hpp>

using namespace syncplan;
using syncplan::test::backprop_times_of;
using syncplan::test::exactly;

namespace {

// b = (1, 2, 1), c = (1, 2, 3), F = 0.5, U = 0.25, used by the ssgd, wfbp and flsgd cases:
//   B = (1, 3, 4), B_L = 4, F + B_L + U = 4.75, sum c = 6.
BackpropTimes three_layers() { return backprop_times_of({1, 2, 1}, {1, 2, 3}, 0.5, 0.25); }

}  // namespace

TEST_CASE("strategies: ssgd = H (F + B_L + U + sum c)", "[strategies]") {
  // H = 3: each iteration 4.75 + 6 = 10.75 with wait 6 (all syncs after backprop);
  // period = 3 x 10.75 = 32.25. The all-reduces run back to back from F + B_L = 4.5:
  // 4.5 -> 5.5, 5.5 -> 7.5, 7.5 -> 10.5; the update starts after them at 10.5.
  const StrategyResult result = run_strategy("ssgd", three_layers(), 3);
  REQUIRE(result.timing.period_s == exactly(32.25));
  REQUIRE(result.timing.iteration_s.size() == 3);
  for (int h = 0; h < 3; ++h) {
    INFO("iteration " << h);
    REQUIRE(result.timing.iteration_s[h] == exactly(10.75));
    REQUIRE(result.timing.wait_s[h] == exactly(6));
    REQUIRE(result.timing.update_start_s[h] == exactly(10.5));
    REQUIRE(result.timing.syncs[h].size() == 3);
    REQUIRE(result.timing.syncs[h][0].start_s == exactly(4.5));
    REQUIRE(result.timing.syncs[h][2].end_s == exactly(10.5));
  }
  REQUIRE_FALSE(result.assignment.has_value());  // cannot be written as an overlapped plan

  // H = 1 is one S-SGD iteration: 10.75.
  REQUIRE(run_strategy("ssgd", three_layers(), 1).timing.period_s == exactly(10.75));
}

TEST_CASE("strategies: wfbp = H x the iteration that syncs every layer", "[strategies]") {
  // S = {1, 2, 3} every iteration: 1 -> 2, max(3, 2) = 3 -> 5, max(4, 5) = 5 -> 8;
  // wait = 8 - 4 = 4; iteration = 4.75 + 4 = 8.75; H = 3: period = 26.25.
  const StrategyResult result = run_strategy("wfbp", three_layers(), 3);
  REQUIRE(result.timing.period_s == exactly(26.25));
  for (int h = 0; h < 3; ++h) {
    INFO("iteration " << h);
    REQUIRE(result.timing.wait_s[h] == exactly(4));
    REQUIRE(result.timing.iteration_s[h] == exactly(8.75));
  }
  REQUIRE(result.assignment.has_value());
  REQUIRE(result.assignment->iterations ==
          std::vector<std::vector<int>>(3, std::vector<int>{0, 1, 2}));
}

TEST_CASE("strategies: flsgd = H (F + B_L + U) + sum c", "[strategies]") {
  // H = 3: iterations 0 and 1 have no sync (4.75 each); the whole model is averaged once after
  // the last step: iteration 2 = 4.75 + 6 = 10.75. period = 3 x 4.75 + 6 = 20.25.
  // The average follows the update: the update starts at F + B_L = 4.5, the syncs at 4.75.
  const StrategyResult result = run_strategy("flsgd", three_layers(), 3);
  REQUIRE(result.timing.period_s == exactly(20.25));
  REQUIRE(result.timing.wait_s == std::vector<double>{0, 0, 6});
  REQUIRE(result.timing.iteration_s[0] == exactly(4.75));
  REQUIRE(result.timing.iteration_s[1] == exactly(4.75));
  REQUIRE(result.timing.iteration_s[2] == exactly(10.75));
  REQUIRE(result.timing.syncs[0].empty());
  REQUIRE(result.timing.syncs[2].size() == 3);
  REQUIRE(result.timing.syncs[2][0].start_s == exactly(4.75));
  REQUIRE(result.timing.update_start_s[2] == exactly(4.5));
  REQUIRE_FALSE(result.assignment.has_value());
}

TEST_CASE("strategies: plsgd-even cuts L = 5, H = 2 into groups of 3 and 2", "[strategies]") {
  // ceil(5 / 2) = 3: iteration 0 syncs backprop layers 1..3, iteration 1 layers 4..5.
  // b = (1, 1, 1, 1, 1), c = (1, 2, 1, 1, 3); B = (1, 2, 3, 4, 5), B_L = 5.
  //   iteration 0: 1 -> 2, max(2, 2) = 2 -> 4, max(3, 4) = 4 -> 5; wait 0; 5
  //   iteration 1: 4 -> 5, max(5, 5) = 5 -> 8; wait 3; 8
  //   period = 13.
  const BackpropTimes times = backprop_times_of({1, 1, 1, 1, 1}, {1, 2, 1, 1, 3});
  REQUIRE(plsgd_even_assignment(5, 2).iterations ==
          std::vector<std::vector<int>>{{0, 1, 2}, {3, 4}});
  const StrategyResult result = run_strategy("plsgd-even", times, 2);
  REQUIRE(result.assignment->iterations == std::vector<std::vector<int>>{{0, 1, 2}, {3, 4}});
  REQUIRE(result.timing.wait_s[0] == exactly(0));
  REQUIRE(result.timing.wait_s[1] == exactly(3));
  REQUIRE(result.timing.period_s == exactly(13));
}

TEST_CASE("strategies: plsgd-even with H > L leaves the last iterations empty", "[strategies]") {
  // L = 3, H = 5: ceil(3 / 5) = 1 layer per group, three groups, iterations 3 and 4 empty.
  // b = (1, 1, 1), c = (3, 1, 2); B = (1, 2, 3), B_L = 3.
  //   iteration 0, {1}: 1 -> 4, wait 1; iteration 1, {2}: 2 -> 3, wait 0;
  //   iteration 2, {3}: 3 -> 5, wait 2; iterations 3, 4: wait 0.
  //   period = 5 x 3 + 3 = 18.
  const BackpropTimes times = backprop_times_of({1, 1, 1}, {3, 1, 2});
  const StrategyResult result = run_strategy("plsgd-even", times, 5);
  REQUIRE(result.assignment->iterations ==
          std::vector<std::vector<int>>{{0}, {1}, {2}, {}, {}});
  REQUIRE(result.timing.wait_s == std::vector<double>{1, 0, 2, 0, 0});
  REQUIRE(result.timing.period_s == exactly(18));
}

TEST_CASE("strategies: plsgd-even L = 4, H = 3 uses groups of 2 and leaves one empty",
          "[strategies]") {
  // ceil(4 / 3) = 2: groups {1, 2}, {3, 4}; the third iteration has no layer left.
  REQUIRE(plsgd_even_assignment(4, 3).iterations ==
          std::vector<std::vector<int>>{{0, 1}, {2, 3}, {}});
  // H = 1 is one group: wfbp's iteration.
  REQUIRE(plsgd_even_assignment(4, 1).iterations == std::vector<std::vector<int>>{{0, 1, 2, 3}});
  // H = L: one layer per iteration.
  REQUIRE(plsgd_even_assignment(3, 3).iterations == std::vector<std::vector<int>>{{0}, {1}, {2}});
}

TEST_CASE("strategies: a period below 1 is an input error", "[strategies]") {
  const BackpropTimes times = three_layers();
  for (const std::string name : {"ssgd", "wfbp", "flsgd", "plsgd-even", "dreamddp", "dp", "best"}) {
    for (const int period : {0, -1}) {
      INFO(name << " with period " << period);
      REQUIRE_THROWS_AS(run_strategy(name, times, period), InputError);
      REQUIRE_THROWS_WITH(run_strategy(name, times, period),
                          Catch::StartsWith("period: ") &&
                              Catch::Contains(std::to_string(period)));
    }
  }
  REQUIRE_THROWS_AS(require_valid_period(0), InputError);
  REQUIRE_NOTHROW(require_valid_period(1));
}

TEST_CASE("strategies: an unknown strategy name is an input error naming it", "[strategies]") {
  const BackpropTimes times = three_layers();
  REQUIRE_THROWS_AS(run_strategy("sgd", times, 2), InputError);
  REQUIRE_THROWS_WITH(run_strategy("sgd", times, 2),
                      Catch::Contains("'sgd'") && Catch::Contains("ssgd") &&
                          Catch::Contains("dreamddp"));
  REQUIRE_THROWS_AS(run_strategy("", times, 2), InputError);
  REQUIRE_THROWS_AS(find_plan_algorithm("ssgd"), InputError);  // not a planning algorithm
  REQUIRE(find_strategy("dp")->plannable());
  REQUIRE_FALSE(find_strategy("flsgd")->plannable());
  REQUIRE(find_strategy("flsgd")->period_model());
  REQUIRE(find_strategy("sgd") == nullptr);
}

TEST_CASE("strategies: every compared strategy name runs", "[strategies]") {
  // The table order of SPEC section 5.
  REQUIRE(compared_strategy_names() ==
          std::vector<std::string>{"ssgd", "wfbp", "flsgd", "plsgd-even", "dreamddp", "dp", "search"});
  for (const std::string& name : compared_strategy_names()) {
    INFO(name);
    const StrategyResult result = run_strategy(name, three_layers(), 2);
    REQUIRE(result.timing.iteration_s.size() == 2);
    // No strategy is faster than compute alone: 2 x 4.75.
    REQUIRE(result.timing.period_s >= 9.5);
  }
}
