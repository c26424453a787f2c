// Delayed averaging (docs/time-model.md section 13): the period model's timing rule on hand-derived
// cases, the delay choice on random assignments, the link limit, and `plan --max-delay` as a job.
#include "core/errors.hpp"
#include "core/field_error.hpp"
#include "planner/algorithms/delayed_search_state.hpp"
#include "planner/lower_bound.hpp"
#include "planner/plan_job.hpp"
#include "test_support.hpp"

#include <cstdint>
#include <random>
#include <tuple>

namespace syncplan {

namespace {

using test::exactly;

// An assignment with explicit delays: iterations[h] and delays[h] side by side.
Assignment delayed_assignment(std::vector<std::vector<int>> iterations, std::vector<std::vector<int>> delays) {
  Assignment assignment;
  assignment.iterations = std::move(iterations);
  assignment.delays = std::move(delays);
  return assignment;
}

// A random profile and assignment (every layer once, some twice), seeded: backward 0.5..1.5 s,
// sync 0..3 s with every fourth layer free (as a frozen layer), F and U up to 0.5 s.
struct RandomCase {
  Profile profile;
  BackpropTimes times;
  Assignment assignment;
};

RandomCase random_case(std::uint64_t seed, int layers, int period) {
  std::mt19937_64 random(seed);
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  std::vector<double> backward, sync;
  for (int j = 0; j < layers; ++j) {
    backward.push_back(0.5 + unit(random));
    sync.push_back(j % 4 == 3 ? 0.0 : 3 * unit(random));
  }
  RandomCase result;
  result.profile = test::backprop_profile(backward, sync, 0.5 * unit(random), 0.5 * unit(random));
  result.times = backprop_times(result.profile, "random.json");
  result.assignment.iterations.assign(period, {});
  for (int j = 0; j < layers; ++j) {
    result.assignment.iterations[random() % period].push_back(j);
    if (random() % 5 == 0) result.assignment.iterations[random() % period].push_back(j);
  }
  for (auto& iteration : result.assignment.iterations) {
    std::sort(iteration.begin(), iteration.end());
    iteration.erase(std::unique(iteration.begin(), iteration.end()), iteration.end());
  }
  return result;
}

PlanRequest delayed_request(const Profile& profile, int period, int max_delay) {
  PlanRequest request;
  request.profile = profile;
  request.origin = "hand.json";
  request.period = period;
  request.max_delay = max_delay;
  request.search.time_limit_s = 600;  // never reached by these small cases: deterministic plans
  return request;
}

}  // namespace

TEST_CASE("delayed period model: a 2-layer sync runs on into the next iteration", "[period][delayed]") {
  // b = (1, 1), c = (3.5, 1), F = U = 0: B = 1, 2; B_L = 2. H = 2: j1 syncs in 0 with d = 1, j2 in 1.
  //   iteration 0: T0 = 0, A0 = 0. j1 starts max(0 + 1, 0) = 1, ends 4.5 (applied at step 1).
  //                update_0 = max(A0 + B_L = 2, nothing applied at 0) = 2: wait 0, T1 = 2.
  //   iteration 1: A1 = 2. j2 is ready at 2 + 2 = 4 but the link is busy until 4.5: 4.5 -> 5.5.
  //                update_1 = max(2 + 2 = 4, j1's 4.5, j2's 5.5) = 5.5: wait 1.5, T2 = 5.5.
  //   period 5.5 = 2 x 2 + 1.5. Without the delay (section 2): iteration 0 waits 4.5 - 2 = 2.5,
  //   iteration 1 runs j2 2 -> 3 and waits 1: 4.5 + 3 = 7.5.
  //   Events are seconds from the start of the iteration they started in: j1 (1, 4.5), j2 (4.5 - 2,
  //   5.5 - 2) = (2.5, 3.5); j1's end lies past iteration 0's 2 s.
  const BackpropTimes times = test::backprop_times_of({1, 1}, {3.5, 1});
  const PeriodTiming timing = time_assignment(times, delayed_assignment({{0}, {1}}, {{1}, {0}}));
  REQUIRE(timing.period_s == exactly(5.5));
  CHECK(timing.iteration_s == std::vector<double>{2, 3.5});
  CHECK(timing.wait_s == std::vector<double>{0, 1.5});
  CHECK(timing.update_start_s == std::vector<double>{2, 3.5});
  REQUIRE(timing.syncs.size() == 2);
  CHECK(timing.syncs[0][0].start_s == exactly(1));
  CHECK(timing.syncs[0][0].end_s == exactly(4.5));
  CHECK(timing.syncs[1][0].start_s == exactly(2.5));
  CHECK(timing.syncs[1][0].end_s == exactly(3.5));
  CHECK(time_assignment(times, test::assignment_of({{0}, {1}})).period_s == exactly(7.5));
  // The link limit: max(H x compute = 4, B_first + sum c = 1 + 4.5 = 5.5) = 5.5: met.
  CHECK(link_limit_s(times, 2) == exactly(5.5));
}

TEST_CASE("delayed period model: 3 layers, F and U, a d = 0 sync queued behind a delayed one", "[period][delayed]") {
  // b = (1, 1, 2), c = (4, 1, 1), F = 1, U = 1: B = 1, 2, 4; B_L = 4; compute F + B_L + U = 6.
  // H = 3: iteration 0 syncs j1 (d = 2) and j3 (d = 0), iteration 1 j2 (d = 1), iteration 2 j3 (d = 0).
  //   it 0: T0 = 0, A0 = F = 1. j1: max(1 + 1, 0) = 2 -> 6 (applied at 2). j3: max(1 + 4, 6) = 6 -> 7
  //         (applied at 0: FIFO, it waits behind the delayed j1). update_0 = max(1 + 4, 7) = 7:
  //         wait 2, T1 = 7 + U = 8.
  //   it 1: A1 = 9. j2: max(9 + 2, 7) = 11 -> 12 (applied at 2). update_1 = max(13, none) = 13:
  //         wait 0, T2 = 14.
  //   it 2: A2 = 15. j3: max(15 + 4, 12) = 19 -> 20. update_2 = max(19, j1's 6, j2's 12, 20) = 20:
  //         wait 1, T3 = 21.
  //   period 21 = 3 x 6 + 2 + 0 + 1; iteration_s 8, 6, 7; updates 7 - 0, 13 - 8, 20 - 14 after
  //   their iterations' starts.
  const BackpropTimes times = test::backprop_times_of({1, 1, 2}, {4, 1, 1}, 1, 1);
  const Assignment assignment = delayed_assignment({{0, 2}, {1}, {2}}, {{2, 0}, {1}, {0}});
  const PeriodTiming timing = time_assignment(times, assignment);
  REQUIRE(timing.period_s == exactly(21));
  CHECK(timing.iteration_s == std::vector<double>{8, 6, 7});
  CHECK(timing.wait_s == std::vector<double>{2, 0, 1});
  CHECK(timing.update_start_s == std::vector<double>{7, 5, 6});
  CHECK(timing.syncs[0][1].start_s == exactly(6));
  CHECK(timing.syncs[1][0].start_s == exactly(3));  // 11 - T1
  CHECK(timing.syncs[2][0].end_s == exactly(6));    // 20 - T2

  // The delay choice on the same iterations with TAU = 2: largest delays d = 2, 1, 0 by iteration.
  //   it 0: j1 2 -> 6, j3 6 -> 7 (both at step 2); update_0 = 5, T1 = 6. it 1: A1 = 7; j2 max(9, 7)
  //   = 9 -> 10; update_1 = 11, T2 = 12. it 2: A2 = 13; j3 max(17, 10) = 17 -> 18; update_2 = 18,
  //   T3 = 19: period 19 = 18 + 1. Smallest delays whose step starts at or after the end:
  //   j1 (6): update_0 = 5 < 6, update_1 = 11 -> d = 1; j3 of 0 (7): d = 1; j2 (10): update_1 = 11 -> 0;
  //   j3 of 2: 0 (its only choice).
  const Assignment chosen = choose_delays(times, assignment, 2);
  CHECK(chosen.delays == std::vector<std::vector<int>>{{1, 1}, {0}, {0}});
  CHECK(time_assignment(times, chosen).period_s == exactly(19));
  CHECK(time_assignment(times, with_max_delays(assignment, 2)).period_s == exactly(19));
}

TEST_CASE("delayed period model: every d = 0 is section 2, and bad delays are internal errors", "[period][delayed]") {
  for (std::uint64_t seed = 1; seed <= 20; ++seed) {
    const RandomCase random = random_case(seed, 9, 4);
    const PeriodTiming section2 = time_assignment(random.times, random.assignment);
    const PeriodTiming zero = time_delayed(random.times, with_max_delays(random.assignment, 0));
    REQUIRE(zero.period_s == Approx(section2.period_s).epsilon(1e-12));
    for (int h = 0; h < 4; ++h) REQUIRE(zero.wait_s[h] == Approx(section2.wait_s[h]).epsilon(1e-12).margin(1e-12));
  }
  const BackpropTimes times = test::backprop_times_of({1, 1}, {1, 1});
  // h + d > H - 1: the sync of the last iteration cannot cross the period's end.
  REQUIRE_THROWS_AS(time_assignment(times, delayed_assignment({{0}, {1}}, {{0}, {1}})), InternalError);
  REQUIRE_THROWS_AS(time_assignment(times, delayed_assignment({{0}, {1}}, {{-1}, {0}})), InternalError);
  REQUIRE_THROWS_AS(time_assignment(times, delayed_assignment({{0}, {1}}, {{1, 0}, {0}})), InternalError);
  REQUIRE_THROWS_AS(time_assignment(times, delayed_assignment({{0}, {1}}, {{1}})), InternalError);
}

TEST_CASE("delay choice: the largest delays' period, and no delay can be lowered without a wait", "[period][delayed]") {
  // On random assignments (the method: section 13's argument, checked numerically): the chosen
  // delays time exactly as the largest ones; lowering a chosen d >= 1 by one moves the sync's
  // constraint to a step that started before the sync's end, so that iteration waits longer; a
  // larger TAU never lengthens the period; the link limit holds.
  for (std::uint64_t seed = 1; seed <= 40; ++seed) {
    const int period = 2 + static_cast<int>(seed % 5);
    const RandomCase random = random_case(seed, 8, period);
    const BackpropTimes& times = random.times;
    double previous_period = time_assignment(times, random.assignment).period_s;
    for (int tau = 1; tau <= period; ++tau) {
      const PeriodTiming largest = time_assignment(times, with_max_delays(random.assignment, tau));
      const Assignment chosen = choose_delays(times, random.assignment, tau);
      // time_delayed even when every chosen d is 0 (time_assignment then takes section 2's code,
      // equal up to rounding): the same schedule, bit for bit.
      const PeriodTiming timing = time_delayed(times, chosen);
      INFO("seed " << seed << ", H = " << period << ", TAU = " << tau);
      REQUIRE(timing.period_s == largest.period_s);
      REQUIRE(timing.iteration_s == largest.iteration_s);
      REQUIRE(time_assignment(times, chosen).period_s == Approx(largest.period_s).epsilon(1e-12));
      REQUIRE(timing.period_s <= previous_period * (1 + 1e-12));
      REQUIRE(timing.period_s >= link_limit_s(times, period) * (1 - 1e-12));
      previous_period = timing.period_s;
      for (int h = 0; h < period; ++h)
        for (std::size_t i = 0; i < chosen.iterations[h].size(); ++i) {
          const int d = chosen.delays[h][i];
          REQUIRE(d <= std::min(tau, period - 1 - h));
          if (d == 0) continue;
          Assignment lowered = chosen;
          --lowered.delays[h][i];
          const PeriodTiming worse = time_delayed(times, lowered);
          REQUIRE(worse.wait_s[h + d - 1] > timing.wait_s[h + d - 1]);
        }
    }
  }
}

TEST_CASE("delayed-search's incremental timing equals the period model on random moves", "[planner][delayed]") {
  // The method: every period DelayedSearchState predicts for a relocation, a swap or an insertion
  // (and holds after committing one) is the period time_delayed gives the same plan, edited by hand
  // and timed whole, under the largest delays (with_max_delays). Random plans with layers synced
  // twice and pinned layers (in every iteration), which never move; TAU from 0 to H.
  for (std::uint64_t seed = 1; seed <= 60; ++seed) {
    const int period = 1 + static_cast<int>(seed % 6);
    RandomCase random = random_case(seed, 10, period);
    const BackpropTimes& times = random.times;
    std::mt19937_64 pick(seed * 7919);
    std::vector<bool> pinned(times.size(), false);
    pinned[pick() % times.size()] = true;
    Assignment plan = random.assignment;
    for (std::size_t j = 0; j < times.size(); ++j)
      if (pinned[j])
        for (auto& layers : plan.iterations)
          if (!std::binary_search(layers.begin(), layers.end(), static_cast<int>(j)))
            layers.insert(std::upper_bound(layers.begin(), layers.end(), static_cast<int>(j)), static_cast<int>(j));
    // One movable layer (synced once, not pinned, with an all-reduce) leaves the plan, to be inserted.
    int outside = -1;
    for (int j = static_cast<int>(times.size()) - 1; j >= 0 && outside < 0; --j) {
      int count = 0;
      for (const auto& layers : plan.iterations) count += std::binary_search(layers.begin(), layers.end(), j) ? 1 : 0;
      if (count == 1 && !pinned[j] && has_allreduce(times, j)) outside = j;
    }
    REQUIRE(outside >= 0);
    for (auto& layers : plan.iterations) std::erase(layers, outside);
    const int tau = static_cast<int>(seed % (period + 1));
    const auto timed = [&](const Assignment& edited) { return time_delayed(times, with_max_delays(edited, tau)).period_s; };
    INFO("seed " << seed << ", H = " << period << ", TAU = " << tau);
    DelayedSearchState state(times, plan.iterations, tau, pinned);
    REQUIRE(state.period_s() == Approx(timed(plan)).epsilon(1e-12));
    const auto place = [](Assignment& edited, int j, int from, int to) {
      if (from >= 0) std::erase(edited.iterations[from], j);
      auto& target = edited.iterations[to];
      target.insert(std::upper_bound(target.begin(), target.end(), j), j);
    };
    for (int to = 0; to < period; ++to) {
      Assignment edited = plan;
      place(edited, outside, -1, to);
      REQUIRE(state.insertion_period_s(outside, to) == Approx(timed(edited)).epsilon(1e-12));
    }
    const int to_insert = static_cast<int>(pick() % period);
    state.insert(outside, to_insert);
    place(plan, outside, -1, to_insert);
    REQUIRE(state.period_s() == Approx(timed(plan)).epsilon(1e-12));
    REQUIRE(state.iterations() == plan.iterations);
    const std::vector<int>& movable = state.movable();
    REQUIRE_FALSE(movable.empty());
    for (const int j : movable) REQUIRE_FALSE(pinned[j]);
    REQUIRE(std::find(movable.begin(), movable.end(), outside) == movable.end());  // inserted: it does not move
    for (int move = 0; move < 40; ++move) {
      const int j = movable[pick() % movable.size()];
      const int k = movable[pick() % movable.size()];
      Assignment edited = plan;
      const int a = state.iteration_of(j), b = state.iteration_of(k);
      if (move % 2 == 0 || a == b) {
        const int to = static_cast<int>(pick() % period);
        if (to == a) continue;
        place(edited, j, a, to);
        REQUIRE(state.relocation_period_s(j, to) == Approx(timed(edited)).epsilon(1e-12));
        if (pick() % 2 == 0) continue;  // asked only: nothing changes
        state.relocate(j, to);
      } else {
        place(edited, j, a, b);
        place(edited, k, b, a);
        REQUIRE(state.swap_period_s(j, k) == Approx(timed(edited)).epsilon(1e-12));
        if (pick() % 2 == 0) continue;
        state.swap(j, k);
      }
      plan = edited;
      REQUIRE(state.iterations() == plan.iterations);
      REQUIRE(state.period_s() == Approx(timed(plan)).epsilon(1e-12));
    }
  }
}

TEST_CASE("link limit: compute per period, or the link's work with the compute around it", "[planner][bound][delayed]") {
  // b = (1, 1, 2), c = (0, 3, 1), F = 1, U = 0.5: compute 1 + 4 + 0.5 = 5.5. B_first is j2's 2 (j1
  // syncs nothing). H = 1: max(5.5, 1 + 2 + 4 + 0.5 = 7.5) = 7.5; H = 2: max(11, 7.5) = 11.
  const BackpropTimes times = test::backprop_times_of({1, 1, 2}, {0, 3, 1}, 1, 0.5);
  CHECK(link_limit_s(times, 1) == exactly(7.5));
  CHECK(link_limit_s(times, 2) == exactly(11));
  // Nothing to sync: the compute alone.
  CHECK(link_limit_s(test::backprop_times_of({1, 1}, {0, 0}), 3) == exactly(6));
  REQUIRE_THROWS_AS(link_limit_s(times, 0), FieldError);
  // It holds for plans without delays too; here every layer in 1 iteration meets it: from the
  // iteration's start, j2 is ready at F + B_2 = 3 and syncs 3 -> 6, j3 (ready at 5) 6 -> 7; the step
  // starts at 7, the iteration ends at 7.5 = the limit.
  CHECK(time_assignment(times, test::assignment_of({{0, 1, 2}})).period_s == exactly(7.5));
}

TEST_CASE("delayed period model: a sync that costs nothing is not on the link", "[period][delayed]") {
  // b = (1, 1, 1), c = (4, 0, 0), H = 2: iteration 0 syncs j1 (d = 1) and j2 (c = 0, d = 0).
  //   it 0: A0 = 0; j1 1 -> 5 (applied at 1). j2 runs no all-reduce: start = end = its ready time 2,
  //         not 5 behind j1 on the link. update_0 = max(B_L = 3, 2) = 3: no wait (a FIFO place
  //         would have made it 5). T1 = 3.
  //   it 1: A1 = 3; update_1 = max(3 + 3, j1's 5) = 6. Period 6.
  const BackpropTimes times = test::backprop_times_of({1, 1, 1}, {4, 0, 0});
  const PeriodTiming timing = time_assignment(times, delayed_assignment({{0, 1}, {2}}, {{1, 0}, {0}}));
  CHECK(timing.period_s == exactly(6));
  CHECK(timing.wait_s == std::vector<double>{0, 0});
  CHECK(timing.syncs[0][1].start_s == exactly(2));
  CHECK(timing.syncs[0][1].end_s == exactly(2));
}

TEST_CASE("delayed bound: a sync longer than TAU iterations of compute, met by the plan",
          "[planner][bound][plan_job][delayed]") {
  // b = (1, 1), c = (0.5, 6), F = U = 0: B = 1, 2; B_L = C = 2; H = 3.
  //   link limit max(3 x 2, 1 + 6.5) = 7.5.
  //   TAU = 1: j2's term 2 + 6 - 2 - 1 x 2 = 4 (j1's is negative): 6 + 4 = 10.
  //   TAU = 2 (and any TAU >= H - 1 = 2): 2 + 6 - 2 - 4 = 2: 8.
  // The plans: both layers in iteration 0 (the greedy: j2 first, iteration 0 is least, then j1 ties
  // everywhere). TAU = 2: j1 1 -> 1.5, j2 2 -> 8; steps at 2, 4 and max(6, 8) = 8: period 8, j1's
  // delay 0 (1.5 <= 2), j2's 2. TAU = 1: j2 is applied at step 1 = max(4, 8) = 8 (wait 4), then
  // iteration 2 computes: period 10, delays 0 and 1. Both meet their bound: the search stops there.
  const Profile profile = test::backprop_profile({1, 1}, {0.5, 6});
  const BackpropTimes times = backprop_times(profile, "hand.json");
  CHECK(link_limit_s(times, 3) == exactly(7.5));
  CHECK(delayed_lower_bound_s(times, 3, 1) == exactly(10));
  CHECK(delayed_lower_bound_s(times, 3, 2) == exactly(8));
  CHECK(delayed_lower_bound_s(times, 3, 9) == exactly(8));
  for (const auto& [tau, period, j2_delay] : {std::tuple{1, 10.0, 1}, std::tuple{2, 8.0, 2}}) {
    INFO("TAU = " << tau);
    const PlanOutcome outcome = run_plan_job(delayed_request(profile, 3, tau));
    REQUIRE(outcome.timing.period_s == exactly(period));
    REQUIRE(outcome.lower_bound_s == exactly(period));
    REQUIRE(outcome.link_limit_s == exactly(7.5));
    REQUIRE(outcome.chosen_search->stop == SearchStop::kBound);
    CHECK(outcome.plan.layers[0].sync_delays == std::vector<int>{j2_delay});  // forward order: j2 first
    CHECK(outcome.plan.layers[1].sync_delays == std::vector<int>{0});           // j1 (not written to the file)
  }
}

TEST_CASE("plan --max-delay: the 2-layer case meets the link limit, delays chosen", "[planner][plan_job][delayed]") {
  // The first hand case: b = (1, 1), c = (3.5, 1), H = 2. Without delays every plan is 7.5
  // ({j1} {j2}: 4.5 + 3; {j1, j2} {}: j1 1 -> 4.5, j2 4.5 -> 5.5, wait 3.5, 5.5 + 2). With TAU = 1 the greedy puts j1 (the larger) into iteration 0 (period 4.5, against
  // 6.5 in iteration 1), then j2 into iteration 0 (5.5, a tie with iteration 1, the earlier wins):
  // the link limit 5.5, so the search stops at the bound. Delays: both end (4.5, 5.5) after
  // update_0 = 2, so d = 1 each.
  const Profile profile = test::backprop_profile({1, 1}, {3.5, 1});
  const PlanRequest request = delayed_request(profile, 2, 1);
  const PlanOutcome outcome = run_plan_job(request);
  REQUIRE(outcome.chosen.algorithm == kDelayedAlgorithm);
  REQUIRE(outcome.timing.period_s == exactly(5.5));
  REQUIRE(outcome.link_limit_s == exactly(5.5));
  REQUIRE(outcome.lower_bound_s == exactly(5.5));
  REQUIRE(outcome.gap_to_lower_bound == 0);
  REQUIRE(outcome.chosen_search->stop == SearchStop::kBound);
  REQUIRE(outcome.strategy("dp").period_s == exactly(7.5));  // the table stays the TAU = 0 strategies
  // Profile order is forward: j2 first.
  REQUIRE(outcome.plan.layers[0].name == "j2");
  CHECK(outcome.plan.layers[0].sync_iterations == std::vector<int>{0});
  CHECK(outcome.plan.layers[0].sync_delays == std::vector<int>{1});
  CHECK(outcome.plan.layers[1].sync_delays == std::vector<int>{1});
  CHECK(outcome.plan.algorithm == "delayed-search");
  REQUIRE(outcome.plan.predicted->lower_bound_period_s == exactly(5.5));
  const PlanReport report = plan_report(outcome, request);
  CHECK(report.link_limit_s == exactly(5.5));
  CHECK(report.lower_bound_period_s == exactly(5.5));
  CHECK(report.chosen.algorithm == "delayed-search");

  // TAU = 0 is today's job: no delays, the suffix bound; the link limit is still reported.
  const PlanOutcome plain = run_plan_job(delayed_request(profile, 2, 0));
  CHECK(plain.chosen.algorithm != kDelayedAlgorithm);
  CHECK(!plain.chosen.assignment.delayed());
  CHECK(plain.timing.period_s == exactly(7.5));
  CHECK(plain.link_limit_s == exactly(5.5));
  CHECK(plain.lower_bound_s == plain.unfused_lower_bound_s);
}

TEST_CASE("plan --max-delay: never worse than the plans without delays, reproducible, delays in range",
          "[planner][plan_job][delayed]") {
  for (std::uint64_t seed = 1; seed <= 6; ++seed) {
    const RandomCase random = random_case(seed, 10, 4);
    const Profile& profile = random.profile;
    const PlanOutcome plain = run_plan_job(delayed_request(profile, 4, 0));
    for (const int tau : {1, 3}) {
      INFO("seed " << seed << ", TAU = " << tau);
      const PlanOutcome outcome = run_plan_job(delayed_request(profile, 4, tau));
      REQUIRE(outcome.timing.period_s <= plain.timing.period_s * (1 + 1e-12));
      REQUIRE(outcome.gap_to_lower_bound >= 0);
      // The plan file's assignment times as predicted, and as the largest delays would.
      const BackpropTimes times = backprop_times(profile, "hand.json");
      const Assignment back = assignment_from_plan(outcome.plan, times);
      REQUIRE(time_assignment(times, back).period_s == outcome.plan.predicted->period_s);
      REQUIRE(time_assignment(times, with_max_delays(back, tau)).period_s == exactly(outcome.timing.period_s));
      for (int h = 0; h < 4; ++h)
        for (const int d : back.delays.empty() ? std::vector<int>{} : back.delays[h]) REQUIRE(d <= std::min(tau, 3 - h));
    }
    // A pinned layer (--every-iteration) syncs in every iteration of the delayed plan too.
    PlanRequest pinned = delayed_request(profile, 4, 2);
    pinned.every_iteration = "^j2$";
    const PlanOutcome outcome = run_plan_job(pinned);
    CHECK(outcome.plan.layers[random.times.size() - 2].sync_iterations == std::vector<int>{0, 1, 2, 3});
  }
}

TEST_CASE("plan --max-delay: refused values and combinations name max_delay", "[planner][plan_job][delayed]") {
  const Profile profile = test::backprop_profile({1, 1}, {3.5, 1});
  const auto refused = [&](PlanRequest request, const std::string& text) {
    try {
      validate_plan_request(request);
      FAIL("accepted: " << text);
    } catch (const FieldError& e) {
      CHECK(e.field() == "max_delay");
      CHECK_THAT(e.what(), Catch::Contains(text));
    }
  };
  refused(delayed_request(profile, 2, -1), "got -1");
  refused(delayed_request(profile, 2, kMaxDelay + 1), "got 10000");
  PlanRequest bubbles = delayed_request(profile, 2, 1);
  bubbles.fill_bubbles = true;
  refused(bubbles, "bubble filling");
  PlanRequest fused = delayed_request(profile, 2, 1);
  fused.bucket_alpha_s = 0.001;
  refused(fused, "bucket fusion");
  PlanRequest automatic = delayed_request(profile, 2, 1);
  automatic.period.reset();
  automatic.max_overhead = 0.1;
  refused(automatic, "given period");
  // The largest TAU is accepted; delays are capped at H - 1 - h (here the plan above's).
  CHECK(run_plan_job(delayed_request(profile, 2, kMaxDelay)).timing.period_s == exactly(5.5));
}

}  // namespace syncplan
