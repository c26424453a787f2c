// Planning algorithms on hand-derived cases: DreamDDP's search (SPEC section 5's pseudocode) rule
// by rule, dp, best, and SPEC section 5's lower bound.
#include "planner/algorithms/search_iteration.hpp"
#include "planner/strategy_table.hpp"
#include "planner/fill.hpp"
#include "planner/lower_bound.hpp"

#include "core/errors.hpp"
#include "test_support.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <random>

using namespace syncplan;
using syncplan::test::backprop_times_of;
using syncplan::test::exactly;

namespace {

using Groups = std::vector<std::vector<int>>;

double period_of(const BackpropTimes& times, const PlanCandidate& candidate) {
  return time_assignment(times, candidate.assignment).period_s;
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// dreamddp

TEST_CASE("dreamddp: optimal hiding keeps every layer that fits in iteration 0", "[planner]") {
  // b = (1, 3, 1, 1), c = (1, 1, 1, 0); B = (1, 4, 5, 6), B_L = 6; H = 2.
  // search(1, iteration 0, 2 left):
  //   j = 1: start max(1, 0) = 1, remaining 6 - 1 = 5, c 1 <= 5: hide, link free at 2
  //   j = 2: start max(4, 2) = 4 (idle link restarts at B_2), remaining 2, c 1 <= 2: hide, free 5
  //   j = 3: start max(5, 5) = 5, remaining 1, c 1 <= 1: hide, free 6
  //   j = 4: start max(6, 6) = 6, remaining 0, c 0 <= 0: hide
  // Every layer in iteration 0, iteration 1 empty; wait 0; period = 2 x 6 = 12.
  const BackpropTimes times = backprop_times_of({1, 3, 1, 1}, {1, 1, 1, 0});
  const PlanCandidate plan = plan_dreamddp(times, 2);
  REQUIRE(plan.algorithm == "dreamddp");
  REQUIRE(plan.assignment.iterations == Groups{{0, 1, 2, 3}, {}});
  REQUIRE(period_of(times, plan) == exactly(12));
}

TEST_CASE("dreamddp: at least one layer per iteration, even when it overflows", "[planner]") {
  // b = (1, 1), c = (2, 1); B = (1, 2), B_L = 2; H = 4 (more iterations than layers).
  //   iteration 0: j = 1 = s: start 1, remaining 1, c 2 > 1: overflow 1; j == s, so layer 1
  //     stays alone: 1 + search(2, iteration 1, 3 left)
  //   iteration 1: j = 2 = s: start 2, remaining 0, c 1: overflow 1, stays: 1 + search(3, ...) = 1 + 0
  //   iterations 2, 3: nothing left (empty).
  // Total wait 2; period = 4 x 2 + 2 = 10.
  const BackpropTimes times = backprop_times_of({1, 1}, {2, 1});
  const PlanCandidate plan = plan_dreamddp(times, 4);
  REQUIRE(plan.assignment.iterations == Groups{{0}, {1}, {}, {}});
  REQUIRE(period_of(times, plan) == exactly(10));
}

TEST_CASE("dreamddp: delayed assignment is chosen when it is cheaper", "[planner]") {
  // b = (1, 1, 1), c = (1.5, 1, 0.25); B = (1, 2, 3), B_L = 3; H = 2.
  // search(1, iteration 0, 2 left):
  //   j = 1: start 1, remaining 2, c 1.5 <= 2: hide, link free at 2.5
  //   j = 2: start max(2, 2.5) = 2.5, remaining 0.5, c 1 > 0.5: overflow 0.5, j != s:
  //     keep:  0.5 + search(3, iteration 1, 1 left) = 0.5 + wait({3}) = 0.5 + (3 -> 3.25: 0.25) = 0.75
  //     delay: search(2, iteration 1, 1 left) = wait({2, 3}): 2 -> 3, max(3, 3) = 3 -> 3.25: 0.25
  //   min = 0.25 by delaying: iteration 0 = {1}, iteration 1 = {2, 3}.
  // period = 2 x 3 + 0.25 = 6.25 (keeping would give 6.75).
  const BackpropTimes times = backprop_times_of({1, 1, 1}, {1.5, 1, 0.25});
  const PlanCandidate plan = plan_dreamddp(times, 2);
  REQUIRE(plan.assignment.iterations == Groups{{0}, {1, 2}});
  REQUIRE(period_of(times, plan) == exactly(6.25));
}

TEST_CASE("dreamddp: keeping the overflowing layer is chosen when it is cheaper", "[planner]") {
  // b = (1, 4, 1, 1), c = (1, 2.5, 0.5, 0.25); B = (1, 5, 6, 7), B_L = 7; H = 2.
  // search(1, iteration 0, 2 left):
  //   j = 1: start 1, remaining 6, c 1: hide, free at 2
  //   j = 2: start max(5, 2) = 5 (idle link restarts at B_2; a link that did not restart would
  //     start at 2 and hide it), remaining 2, c 2.5: overflow 0.5, j != s:
  //     keep:  0.5 + wait({3, 4}) = 0.5 + (6 -> 6.5, max(7, 6.5) = 7 -> 7.25: 0.25) = 0.75
  //     delay: wait({2, 3, 4}) = (5 -> 7.5, 7.5 -> 8, 8 -> 8.25): 1.25
  //   min = 0.75 by keeping: iteration 0 = {1, 2}, iteration 1 = {3, 4}.
  // period = 2 x 7 + 0.75 = 14.75.
  const BackpropTimes times = backprop_times_of({1, 4, 1, 1}, {1, 2.5, 0.5, 0.25});
  const PlanCandidate plan = plan_dreamddp(times, 2);
  REQUIRE(plan.assignment.iterations == Groups{{0, 1}, {2, 3}});
  REQUIRE(period_of(times, plan) == exactly(14.75));
}

TEST_CASE("dreamddp: 4 layers, at-least-one then delayed assignment", "[planner]") {
  // b = (1, 1, 1, 1), c = (4, 1.5, 1, 0.25); B = (1, 2, 3, 4), B_L = 4; H = 3.
  // search(1, iteration 0, 3 left):
  //   j = 1 = s: start 1, remaining 3, c 4: overflow 1; at least one: 1 + search(2, iteration 1, 2 left)
  // search(2, iteration 1, 2 left):
  //   j = 2: start 2, remaining 2, c 1.5: hide, free at 3.5
  //   j = 3: start max(3, 3.5) = 3.5, remaining 0.5, c 1: overflow 0.5, j != s:
  //     keep:  0.5 + wait({4}) = 0.5 + (4 -> 4.25: 0.25) = 0.75
  //     delay: wait({3, 4}) = (3 -> 4, 4 -> 4.25): 0.25   -> delay
  // Iterations {1}, {2}, {3, 4}; total wait 1 + 0.25 = 1.25; period = 3 x 4 + 1.25 = 13.25.
  const BackpropTimes times = backprop_times_of({1, 1, 1, 1}, {4, 1.5, 1, 0.25});
  const PlanCandidate plan = plan_dreamddp(times, 3);
  REQUIRE(plan.assignment.iterations == Groups{{0}, {1}, {2, 3}});
  REQUIRE(period_of(times, plan) == exactly(13.25));
}

TEST_CASE("dreamddp: one iteration takes every layer", "[planner]") {
  // H = 1: "if iterations_left == 1: put s..L in h" -> the wfbp iteration.
  // b = (1, 1, 1), c = (1.5, 1, 0.25): 1 -> 2.5, 2.5 -> 3.5, 3.5 -> 3.75; wait 0.75; period 3.75.
  const BackpropTimes times = backprop_times_of({1, 1, 1}, {1.5, 1, 0.25});
  const PlanCandidate plan = plan_dreamddp(times, 1);
  REQUIRE(plan.assignment.iterations == Groups{{0, 1, 2}});
  REQUIRE(period_of(times, plan) == exactly(3.75));
}

// ---------------------------------------------------------------------------------------------
// dp and best

TEST_CASE("dp: the least period over contiguous groups, by hand", "[planner]") {
  // The keep case above: b = (1, 4, 1, 1), c = (1, 2.5, 0.5, 0.25), B = (1, 5, 6, 7), B_L = 7, H = 2.
  // Every cut of the backprop order into at most 2 groups:
  //   {1, 2, 3, 4}:     1 -> 2, 5 -> 7.5, 7.5 -> 8, 8 -> 8.25                       wait 1.25
  //   {1} {2, 3, 4}:    0 + (5 -> 7.5, 7.5 -> 8, 8 -> 8.25: 1.25)                  wait 1.25
  //   {1, 2} {3, 4}:    (1 -> 2, 5 -> 7.5: 0.5) + (6 -> 6.5, 7 -> 7.25: 0.25)        wait 0.75
  //   {1, 2, 3} {4}:    (1 -> 2, 5 -> 7.5, 7.5 -> 8: 1) + (7 -> 7.25: 0.25)        wait 1.25
  // Least: {1, 2} {3, 4}, period 14 + 0.75 = 14.75.
  const BackpropTimes times = backprop_times_of({1, 4, 1, 1}, {1, 2.5, 0.5, 0.25});
  const PlanCandidate plan = plan_dp(times, 2);
  REQUIRE(plan.algorithm == "dp");
  REQUIRE(plan.assignment.iterations == Groups{{0, 1}, {2, 3}});
  REQUIRE(period_of(times, plan) == exactly(14.75));
}

TEST_CASE("dp: more iterations than layers", "[planner]") {
  // b = (1, 1, 1), c = (2, 0.5, 0.5); B = (1, 2, 3), B_L = 3; H = 4, so at most 3 groups.
  //   {1, 2, 3}:     1 -> 3, 3 -> 3.5, 3.5 -> 4                         wait 1
  //   {1} {2, 3}:    (1 -> 3: 0) + (2 -> 2.5, 3 -> 3.5: 0.5)              wait 0.5
  //   {1, 2} {3}:    (1 -> 3, 3 -> 3.5: 0.5) + (3 -> 3.5: 0.5)            wait 1
  //   {1} {2} {3}:   0 + (2 -> 2.5: 0) + (3 -> 3.5: 0.5)                  wait 0.5
  // Least wait 0.5; period = 4 x 3 + 0.5 = 12.5; the fourth iteration is empty.
  const BackpropTimes times = backprop_times_of({1, 1, 1}, {2, 0.5, 0.5});
  const PlanCandidate plan = plan_dp(times, 4);
  REQUIRE(plan.assignment.period() == 4);
  REQUIRE(plan.assignment.iterations[3].empty());
  REQUIRE(plan.assignment.iterations[0] == std::vector<int>{0});
  REQUIRE(period_of(times, plan) == exactly(12.5));
  // dreamddp: iteration 0: j = 1 = s: start 1, remaining 2, c 2 <= 2: hide, free at 3;
  //   j = 2: start 3, remaining 0, c 0.5: overflow 0.5, j != s:
  //     keep:  0.5 + search(3, iteration 1, 3 left): j = 3 = s: start 3, overflow 0.5, stays:
  //            0.5 + search(4, ...) = 0.5 -> keep = 1
  //     delay: search(2, iteration 1, 3 left): j = 2: start 2, remaining 1, hide (free 2.5);
  //            j = 3: start 3, remaining 0, overflow 0.5: keep 0.5 + 0 = 0.5,
  //            delay search(3, iteration 2, 2 left) = 0.5 -> a tie (either plan is 0.5)
  //   -> delay, 0.5: iteration 0 = {1}, then {2, 3} or {2} {3}; period 12.5.
  const PlanCandidate dream = plan_dreamddp(times, 4);
  REQUIRE(dream.assignment.iterations[0] == std::vector<int>{0});
  REQUIRE(period_of(times, dream) == exactly(12.5));
}

TEST_CASE("best: the least period of dp, dreamddp and plsgd-even", "[planner]") {
  // The delay case: b = (1, 1, 1), c = (1.5, 1, 0.25); B = (1, 2, 3), B_L = 3; H = 2.
  //   plsgd-even: ceil(3/2) = 2: {1, 2} {3}: (1 -> 2.5, 2.5 -> 3.5: 0.5) + (3 -> 3.25: 0.25)
  //     period 6 + 0.75 = 6.75
  //   dreamddp: {1} {2, 3}, period 6.25 (derived above)
  //   dp: cuts {1,2,3}: 1 -> 2.5 -> 3.5 -> 3.75: 0.75; {1}{2,3}: 0 + 0.25; {1,2}{3}: 0.75
  //     -> {1} {2, 3}, period 6.25
  // best = 6.25; dp and dreamddp tie and ties go to dp (the first tried).
  const BackpropTimes times = backprop_times_of({1, 1, 1}, {1.5, 1, 0.25});
  REQUIRE(run_strategy("plsgd-even", times, 2).timing.period_s == exactly(6.75));
  REQUIRE(run_strategy("dreamddp", times, 2).timing.period_s == exactly(6.25));
  REQUIRE(run_strategy("dp", times, 2).timing.period_s == exactly(6.25));
  const PlanCandidate best = plan_best(times, 2);
  REQUIRE(best.algorithm == "dp");
  REQUIRE(best.assignment.iterations == Groups{{0}, {1, 2}});
  REQUIRE(run_strategy("best", times, 2).timing.period_s == exactly(6.25));

  // find_plan_algorithm reaches the same functions by name.
  REQUIRE(find_plan_algorithm("best").plan(times, 2, {}).assignment.iterations == Groups{{0}, {1, 2}});
  REQUIRE_THROWS_WITH(find_plan_algorithm("greedy"),
                      Catch::StartsWith("algorithm: ") && Catch::Contains("'greedy'"));
}

// ---------------------------------------------------------------------------------------------
// lower bound

TEST_CASE("lower bound: SPEC section 5's bound on a 3-layer case, term by term", "[planner]") {
  // b = (1, 1, 1), c = (1, 2, 3), F = 0.5, U = 0.25; B = (1, 2, 3), B_L = 3, b_1 = 1.
  // H (F + B_L + U) = 2 x 3.75 = 7.5 for H = 2.
  SECTION("the latest layer term dominates (H = 2)") {
    //   link term: sum c - H (B_L - b_1) = 6 - 2 x 2 = 2
    //   latest layer: max(1 + 1 - 3, 2 + 2 - 3, 3 + 3 - 3) = max(-1, 1, 3) = 3
    //   bound = 7.5 + max(2, 3, 0) = 10.5
    const BackpropTimes times = backprop_times_of({1, 1, 1}, {1, 2, 3}, 0.5, 0.25);
    REQUIRE(spec_lower_bound_s(times, 2) == exactly(10.5));
  }
  SECTION("the link term dominates (H = 1)") {
    // c = (2, 2, 2): link term 6 - 1 x 2 = 4; latest layer max(0, 1, 2) = 2;
    // bound = 3.75 + 4 = 7.75. wfbp reaches it: 1 -> 3 -> 5 -> 7, wait 4, period 7.75.
    const BackpropTimes times = backprop_times_of({1, 1, 1}, {2, 2, 2}, 0.5, 0.25);
    REQUIRE(spec_lower_bound_s(times, 1) == exactly(7.75));
    REQUIRE(run_strategy("wfbp", times, 1).timing.period_s == exactly(7.75));
  }
  SECTION("both terms negative: the bound is compute alone") {
    // c = (0.5, 0.5, 0), H = 3: link term 1 - 3 x 2 = -5; latest max(-1.5, -0.5, 0) = 0;
    // bound = 3 x 3.75 + 0 = 11.25.
    const BackpropTimes times = backprop_times_of({1, 1, 1}, {0.5, 0.5, 0}, 0.5, 0.25);
    REQUIRE(spec_lower_bound_s(times, 3) == exactly(11.25));
  }
  SECTION("period below 1") {
    const BackpropTimes times = backprop_times_of({1, 1, 1}, {1, 2, 3});
    REQUIRE_THROWS_AS(spec_lower_bound_s(times, 0), InputError);
  }
}

TEST_CASE("lower bound: the suffix bound on a 3-layer case, term by term", "[planner]") {
  // b = (1, 1, 1), c = (1, 2, 3), F = 0.5, U = 0.25, H = 2: B = (1, 2, 3), B_L = 3;
  // H (F + B_L + U) = 7.5.
  //   thresholds t = B_j: t = 3: c_3 - 2 (3 - 3) = 3; t = 2: (2 + 3) - 2 x 1 = 3;
  //                       t = 1: 6 - 2 x 2 = 2                      -> 3
  //   overflows: max(0, 1+1-3) + max(0, 2+2-3) + max(0, 3+3-3) = 0 + 1 + 3 = 4
  //   bound = 7.5 + max(3, 4) = 11.5, above SPEC's 10.5 (previous test case).
  // The optimum is 11.5 too: {0, 1} then {2}: iteration 0 link 1 -> 2, 2 -> 4: wait 1;
  // iteration 1: 3 -> 6: wait 3; period 7.5 + 4 = 11.5.
  const BackpropTimes times = backprop_times_of({1, 1, 1}, {1, 2, 3}, 0.5, 0.25);
  REQUIRE(suffix_lower_bound_s(times, 2) == exactly(11.5));
  REQUIRE(best_lower_bound_s(times, 2) == exactly(11.5));
  REQUIRE(time_assignment(times, test::assignment_of({{0, 1}, {2}})).period_s == exactly(11.5));

  // A tie in ready times (b_2 = 0) is one threshold: b = (1, 0, 1), c = (0, 2, 2), H = 1:
  // B = (1, 1, 2), B_L = 2; t = 2: 2 - 0 = 2; t = 1 (layers 1 and 2 both ready at 1): 4 - 1 = 3;
  // overflows: 0 + max(0, 1 + 2 - 2) + max(0, 2 + 2 - 2) = 1 + 2 = 3; bound = 2 + 3 = 5.
  // wfbp: link 1 -> 1, 1 -> 3, 3 -> 5: wait 3, period 5.
  const BackpropTimes tied = backprop_times_of({1, 0, 1}, {0, 2, 2});
  REQUIRE(suffix_lower_bound_s(tied, 1) == exactly(5));
  REQUIRE(run_strategy("wfbp", tied, 1).timing.period_s == exactly(5));
  REQUIRE_THROWS_AS(suffix_lower_bound_s(tied, 0), InputError);
}

// ---------------------------------------------------------------------------------------------
// bubble filling and search

TEST_CASE("fill_bubbles: extra syncs only where they delay nothing", "[planner][fill]") {
  // b = (1, 1, 1), c = (0.5, 0.5, 1), H = 2: B = (1, 2, 3), B_L = 3. Plan {0} | {1, 2}.
  //   iteration 0 {0}: 1 -> 1.5. Candidates (one sync each so far, backprop order): 1 ready 2:
  //     2 -> 2.5 <= 3, the sync of 0 still starts at 1: added. 2 ready 3: 3 -> 4 > 3, the wait
  //     would grow from 0 to 1: refused.
  //   iteration 1 {1, 2}: 2 -> 2.5, 3 -> 4, wait 1. Candidate 0 ready 1: 1 -> 1.5, then 1 still
  //     starts at 2 and 2 at 3, wait stays 1: added.
  //   Result {0, 1} | {0, 1, 2}, 2 extra syncs, period unchanged: 2 x 3 + 1 = 7.
  const BackpropTimes times = backprop_times_of({1, 1, 1}, {0.5, 0.5, 1});
  Assignment assignment = test::assignment_of({{0}, {1, 2}});
  const double before = time_assignment(times, assignment).period_s;
  REQUIRE(before == exactly(7));
  REQUIRE(fill_bubbles(times, assignment) == 2);
  REQUIRE(assignment.iterations == Groups{{0, 1}, {0, 1, 2}});
  REQUIRE(time_assignment(times, assignment).period_s == exactly(7));

  // A sync that would push a planned one later is refused: c = (0.5, 1.5, 1), plan {0} | {2, 1}...
  // iteration 1 = {2}: 3 -> 4. Candidate 1 ready 2: 2 -> 3.5, then 2 would start at 3.5, not 3.
  // Candidate 0 ready 1: 1 -> 1.5, 2 still at 3: added. Iteration 0 = {0, 1}: 1 -> 1.5,
  // 2 -> 3.5 (wait 0.5); candidate 2 ready 3: 3.5 -> 4.5 grows the wait: refused.
  const BackpropTimes blocking = backprop_times_of({1, 1, 1}, {0.5, 1.5, 1});
  Assignment plan = test::assignment_of({{0, 1}, {2}});
  REQUIRE(fill_bubbles(blocking, plan) == 1);
  REQUIRE(plan.iterations == Groups{{0, 1}, {0, 2}});
}

TEST_CASE("search: a non-contiguous plan beats dp by hand", "[planner][search]") {
  // b = (1, 1, 1, 1), c = (2, 2, 1, 0), H = 2: B = (1, 2, 3, 4), B_L = 4; compute 2 x 4 = 8.
  //   Contiguous splits (dp's space), total wait:
  //     {0} | {1,2,3}: 1->3: 0; 2->4, 4->5, 5->5: 1                        -> 1
  //     {0,1} | {2,3}: 1->3, 3->5: 1; 3->4, 4->4: 0                         -> 1
  //     {0,1,2} | {3}: 1->3, 3->5, 5->6: 2; 4->4: 0                         -> 2
  //     {} | all: 1->3, 3->5, 5->6, 6->6: 2                                 -> 2
  //   dp: 1, period 9. Free: {0, 2} | {1, 3}: 1->3, 3->4: 0; 2->4, 4->4: 0 -> 0, period 8, which
  //   meets the compute-only bound: search finds it and is optimal.
  const BackpropTimes times = backprop_times_of({1, 1, 1, 1}, {2, 2, 1, 0});
  REQUIRE(time_assignment(times, plan_dp(times, 2).assignment).period_s == exactly(9));
  const PlanCandidate search = plan_search(times, 2, {});
  REQUIRE(search.algorithm == "search");
  REQUIRE(time_assignment(times, search.assignment).period_s == exactly(8));
  // best takes it, and says so (dp, dreamddp and plsgd-even all stay at 9 or above).
  const PlanCandidate best = plan_best(times, 2);
  REQUIRE(best.algorithm == "search");
  REQUIRE(time_assignment(times, best.assignment).period_s == exactly(8));
  // Deterministic for a seed.
  SearchOptions other;
  other.seed = 7;
  REQUIRE(plan_search(times, 2, {}).assignment.iterations == search.assignment.iterations);
  REQUIRE(time_assignment(times, plan_search(times, 2, other).assignment).period_s == exactly(8));
}

TEST_CASE("search: incremental re-timing equals the period model's on random moves", "[planner][search]") {
  // SearchIteration predicts an iteration's wait with a layer added, removed or exchanged from
  // prefix link states and composed suffix maps; time_planned re-times the changed iteration
  // with the period model's own loop (fused: the fusion DP), an independent computation. Seeded
  // random profiles (some layers without an all-reduce, some syncs longer than the backprop) and
  // random sequences of inserts and erases: every prediction must match to 1e-12 s.
  std::mt19937 random(14);
  const auto uniform = [&](double low, double high) { return std::uniform_real_distribution<double>(low, high)(random); };
  int exchanges = 0;
  for (int trial = 0; trial < 120; ++trial) {
    const int layer_count = 2 + static_cast<int>(random() % 24);
    std::vector<double> backward, sync;
    for (int j = 0; j < layer_count; ++j) {
      backward.push_back(uniform(0, 1));
      sync.push_back(random() % 4 == 0 ? 0.0 : uniform(0, 3));
    }
    const BackpropTimes times = test::backprop_times_of(backward, sync, uniform(0, 1), uniform(0, 1));
    const std::optional<double> alpha_s = trial % 3 == 0 ? std::optional<double>(uniform(0, 0.5)) : std::nullopt;
    const auto wait_of = [&](const std::vector<int>& layers) {
      return time_planned(times, test::assignment_of({layers}), alpha_s).wait_s.at(0);
    };
    std::vector<int> layers;
    for (int j = 0; j < layer_count; ++j)
      if (random() % 2 == 0) layers.push_back(j);
    SearchIteration iteration(times, alpha_s);
    iteration.assign(layers);
    for (int move = 0; move < 12; ++move) {
      INFO("trial " << trial << ", move " << move);
      REQUIRE(iteration.layers() == layers);
      REQUIRE(iteration.wait_s() == Approx(wait_of(layers)).margin(1e-12));
      for (int j = 0; j < layer_count; ++j) {
        std::vector<int> changed = layers;
        const auto at = std::lower_bound(changed.begin(), changed.end(), j);
        if (at != changed.end() && *at == j) {
          changed.erase(at);
          REQUIRE(iteration.wait_without_s(j) == Approx(wait_of(changed)).margin(1e-12));
          continue;
        }
        changed.insert(at, j);
        REQUIRE(iteration.wait_with_s(j) == Approx(wait_of(changed)).margin(1e-12));
        // j in, each k > j out, visited in order.
        std::vector<int> visited;
        iteration.exchange_each(j, [&](int k, double wait_s) {
          std::vector<int> exchanged = changed;
          exchanged.erase(std::find(exchanged.begin(), exchanged.end(), k));
          REQUIRE(wait_s == Approx(wait_of(exchanged)).margin(1e-12));
          visited.push_back(k);
          ++exchanges;
          return false;
        });
        std::vector<int> after_j;
        std::copy_if(layers.begin(), layers.end(), std::back_inserter(after_j), [&](int k) { return k > j; });
        REQUIRE(visited == after_j);
      }
      const int j = static_cast<int>(random() % layer_count);
      const auto at = std::lower_bound(layers.begin(), layers.end(), j);
      if (at != layers.end() && *at == j) {
        layers.erase(at);
        iteration.erase(j);
      } else {
        layers.insert(at, j);
        iteration.insert(j);
      }
    }
  }
  REQUIRE(exchanges > 1000);  // the exchanges were exercised, not skipped
}

TEST_CASE("every-iteration pins: dp and search plan around pinned layers", "[planner][pins]") {
  // b = (1, 1, 1), c = (1, 0.5, 1), layer 1 pinned, H = 2: B = (1, 2, 3), B_L = 3; free {0, 2}.
  //   {0} | {2}: iteration {0, 1}: 1->2, 2->2.5: 0; iteration {1, 2}: 2->2.5, 3->4: 1  -> 1
  //   {0, 2} | none: {0, 1, 2}: 1->2, 2->2.5, 3->4: 1; {1} alone: 2->2.5: 0              -> 1
  //   So the least total wait is 1, period 2 x 3 + 1 = 7, and layer 1 syncs in both iterations.
  const BackpropTimes times = backprop_times_of({1, 1, 1}, {1, 0.5, 1});
  const std::vector<bool> pins = {false, true, false};
  const PlanCandidate dp = plan_dp(times, 2, pins);
  REQUIRE(time_assignment(times, dp.assignment).period_s == exactly(7));
  for (const auto& layers : dp.assignment.iterations) REQUIRE(std::count(layers.begin(), layers.end(), 1) == 1);
  SearchOptions options;
  options.every_iteration = pins;
  const PlanCandidate search = plan_search(times, 2, options);
  REQUIRE(time_assignment(times, search.assignment).period_s == exactly(7));
  for (const auto& layers : search.assignment.iterations) REQUIRE(std::count(layers.begin(), layers.end(), 1) == 1);
  // Every algorithm honors the pins, including those that do not plan around them.
  for (const char* name : {"plsgd-even", "dreamddp", "best"}) {
    INFO(name);
    const StrategyResult result = run_strategy(name, times, 2, options);
    for (const auto& layers : result.assignment->iterations)
      REQUIRE(std::count(layers.begin(), layers.end(), 1) == 1);
  }
  // Without pins dp may sync layer 1 once: b and c as above give {0} | {1, 2}: 1->2: 0;
  // 2->2.5, 3->4: 1 -> also 7, but layer 1 appears in one iteration only.
  const PlanCandidate unpinned = plan_dp(times, 2);
  int syncs_of_1 = 0;
  for (const auto& layers : unpinned.assignment.iterations) syncs_of_1 += std::count(layers.begin(), layers.end(), 1);
  REQUIRE(syncs_of_1 == 1);
}
