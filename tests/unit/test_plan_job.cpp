// The planning job's honesty (planner/plan_job.hpp, planner/algorithms/): one search run shared by
// the comparison table and `best`, the time limit bounding the job and said when it stopped the
// search, gaps to the bound never negative, and `best`'s ties within a relative 1e-9.
#include "core/errors.hpp"
#include "planner/lower_bound.hpp"
#include "planner/plan_job.hpp"
#include "test_support.hpp"

#include <cstdint>

namespace syncplan {

namespace {

using Groups = std::vector<std::vector<int>>;
using test::exactly;

// `count` layers (backprop order) with times from a fixed linear congruential sequence, so the
// profile is the same everywhere: backward 0.5..1.5 s, sync 0..sync_max_s (default 3 s:
// communication-bound, so that search has work to do).
Profile mixed_profile(int count, double sync_max_s = 3, std::uint64_t seed = 12345) {
  std::uint64_t state = seed;
  const auto next = [&] {
    state = state * 6364136223846793005ULL + 1442695040888963407ULL;
    return static_cast<double>(state >> 11) / 9007199254740992.0;  // [0, 1)
  };
  std::vector<double> backward, sync;
  for (int j = 0; j < count; ++j) {
    backward.push_back(0.5 + next());
    sync.push_back(sync_max_s * next());
  }
  return test::backprop_profile(backward, sync);
}

PlanRequest request_for(const Profile& profile, int period) {
  PlanRequest request;
  request.profile = profile;
  request.origin = "hand.json";
  request.period = period;
  request.search.time_limit_s = 600;  // never reached by these small cases: deterministic plans
  return request;
}

}  // namespace

TEST_CASE("plan job: best and the table's search row share one search run", "[planner][plan_job]") {
  // The hand case of test_planner.cpp ("search: a non-contiguous plan beats dp"): b = (1, 1, 1, 1),
  // c = (2, 2, 1, 0), H = 2; dp's period is 9, search's {0, 2} | {1, 3} is 8 = the compute-only
  // bound, so search stops at the bound.
  const PlanRequest request = request_for(test::backprop_profile({1, 1, 1, 1}, {2, 2, 1, 0}), 2);
  const PlanOutcome outcome = run_plan_job(request);
  REQUIRE(outcome.search_runs.size() == 1);  // the table and best used to run it once each
  REQUIRE(outcome.chosen.algorithm == "search");
  REQUIRE(outcome.timing.period_s == exactly(8));
  REQUIRE(outcome.strategy("search").period_s == exactly(8));
  REQUIRE(outcome.chosen_search);
  REQUIRE(outcome.chosen_search->stop == SearchStop::kBound);
  const PlanReport report = plan_report(outcome, request);
  REQUIRE(report.search.runs == 1);
  REQUIRE(report.search.stopped_by == "bound");
  REQUIRE(report.search.time_limited_runs == 0);
}

TEST_CASE("plan job: the shared run gives the plans best and search gave on their own", "[planner][plan_job]") {
  // 40 layers, H = 5, seed 1 and 30 rounds (the defaults): the job's plans against the algorithms
  // called directly, each running its own search, as the job did before sharing.
  const Profile profile = mixed_profile(40);
  const BackpropTimes times = backprop_times(profile, "hand.json");
  for (const char* algorithm : {"best", "search"}) {
    PlanRequest request = request_for(profile, 5);
    request.algorithm = algorithm;
    const PlanOutcome outcome = run_plan_job(request);
    const PlanCandidate alone = find_plan_algorithm(algorithm).plan(times, 5, request.search);
    INFO(algorithm);
    REQUIRE(outcome.search_runs.size() == 1);
    REQUIRE(outcome.chosen.algorithm == alone.algorithm);
    REQUIRE(outcome.chosen.assignment.iterations == alone.assignment.iterations);
    const PlanCandidate search_alone = plan_search(times, 5, request.search);
    REQUIRE(outcome.strategy("search").period_s == time_assignment(times, search_alone.assignment).period_s);
  }
}

TEST_CASE("plan job: an algorithm that does not search runs no search", "[planner][plan_job][search]") {
  // dp (and dreamddp, plsgd-even, wfbp) plan without search: the job runs none, the table has no
  // search row, and the report says so (runs 0, stopped_by "none"). The other rows are unchanged:
  // dp's row is the same as under best.
  const Profile profile = mixed_profile(40);
  const PlanOutcome with_best = run_plan_job(request_for(profile, 5));
  for (const char* algorithm : {"dp", "dreamddp", "plsgd-even", "wfbp"}) {
    INFO(algorithm);
    PlanRequest request = request_for(profile, 5);
    request.algorithm = algorithm;
    const PlanOutcome outcome = run_plan_job(request);
    REQUIRE(outcome.search_runs.empty());
    REQUIRE_FALSE(outcome.chosen_search);
    REQUIRE(outcome.chosen.algorithm == algorithm);
    REQUIRE_THROWS_AS(outcome.strategy("search"), InternalError);
    REQUIRE(outcome.strategy("dp").period_s == with_best.strategy("dp").period_s);
    REQUIRE(outcome.strategies.size() == with_best.strategies.size() - 1);
    const PlanReport report = plan_report(outcome, request);
    REQUIRE(report.search.runs == 0);
    REQUIRE(report.search.stopped_by == "none");
    REQUIRE(report.search.rounds == 0);
  }
}

TEST_CASE("plan job: fusion and the automatic period add one run per distinct search", "[planner][plan_job]") {
  const Profile profile = mixed_profile(12);
  // Fused: the chosen plan's fused search and the table's unfused one are different searches.
  PlanRequest fused = request_for(profile, 3);
  fused.bucket_alpha_s = 0.01;
  REQUIRE(run_plan_job(fused).search_runs.size() == 2);
  // Automatic period: one run per H tried; at the chosen H the table reuses best's.
  PlanRequest automatic = request_for(profile, 3);
  automatic.period.reset();
  automatic.max_overhead = 100;  // H = 1 already qualifies: one H tried
  const PlanOutcome outcome = run_plan_job(automatic);
  REQUIRE(outcome.period == 1);
  REQUIRE(outcome.search_runs.size() == 1);
}

TEST_CASE("plan job: a search cut by the time limit is said so", "[planner][plan_job][search]") {
  // The hand case again with a 1 ns limit: the first descent's check already finds it passed (dp's
  // plan and the search state take longer than 1 ns), so search returns dp's plan (period 9,
  // above the bound 8) and says it was cut.
  const PlanCandidate cut = plan_search(test::backprop_times_of({1, 1, 1, 1}, {2, 2, 1, 0}), 2, [] {
    SearchOptions options;
    options.time_limit_s = 1e-9;
    return options;
  }());
  REQUIRE(cut.search_run);
  REQUIRE(cut.search_run->stop == SearchStop::kTimeLimit);
  REQUIRE(cut.search_run->rounds == 0);

  PlanRequest request = request_for(test::backprop_profile({1, 1, 1, 1}, {2, 2, 1, 0}), 2);
  request.search.time_limit_s = 1e-9;
  const PlanOutcome outcome = run_plan_job(request);
  REQUIRE(outcome.time_limited_searches() == 1);
  REQUIRE(outcome.timing.period_s == exactly(9));
  REQUIRE(outcome.chosen.algorithm == "dp");  // search only ties dp: dp, first in best's order
  REQUIRE(plan_report(outcome, request).search.stopped_by == "time_limit");
}

TEST_CASE("search: stops at the bound or after its rounds when the time limit is not reached", "[planner][search]") {
  SearchOptions options;
  options.rounds = 3;
  options.time_limit_s = 600;
  const PlanCandidate candidate = plan_search(backprop_times(mixed_profile(12), "hand.json"), 3, options);
  REQUIRE(candidate.search_run);
  const SearchRun& run = *candidate.search_run;
  REQUIRE(run.stop != SearchStop::kTimeLimit);
  if (run.stop == SearchStop::kRounds) REQUIRE(run.rounds == 3);
  REQUIRE(run.elapsed_s >= 0);
  REQUIRE(std::string(search_stop_name(SearchStop::kTimeLimit)) == "time_limit");
}

TEST_CASE("search: converges, and rounds, not seconds, decide the plan", "[planner][search]") {
  // 24 layers whose syncs (0..4 s) outweigh backprop (0.5..1.5 s), H = 2, default options but a
  // 10-minute limit: no plan meets the bound, so search stops when `patience` rounds in a row
  // found nothing better (here after a perturbation round improved on the first descent).
  const BackpropTimes times = backprop_times(mixed_profile(24, 4, 99), "hand.json");
  SearchOptions options;
  options.time_limit_s = 600;
  const PlanCandidate first = plan_search(times, 2, options);
  REQUIRE(first.search_run);
  const SearchRun run = *first.search_run;
  REQUIRE(run.stop == SearchStop::kConverged);
  REQUIRE(std::string(search_stop_name(run.stop)) == "converged");
  REQUIRE(run.rounds > options.patience);  // a round improved
  REQUIRE(run.rounds < options.rounds);
  REQUIRE(run.elapsed_s < 60);  // so the 60 s limit below is far above the time needed
  // The same seed gives the same plan, and so does another time limit above the time needed.
  REQUIRE(plan_search(times, 2, options).assignment.iterations == first.assignment.iterations);
  options.time_limit_s = 60;
  REQUIRE(plan_search(times, 2, options).assignment.iterations == first.assignment.iterations);
  // The last improvement came patience rounds before the end: a round cap right after it gives
  // the same plan, stopped by the cap.
  options.rounds = run.rounds - options.patience;
  const PlanCandidate capped = plan_search(times, 2, options);
  REQUIRE(capped.assignment.iterations == first.assignment.iterations);
  REQUIRE(capped.search_run->stop == SearchStop::kRounds);
  REQUIRE(capped.search_run->rounds == options.rounds);
  // More patience runs the same rounds first, then more: never a worse plan.
  options.rounds = SearchOptions{}.rounds;
  options.patience = 4 * SearchOptions{}.patience;
  const PlanCandidate patient = plan_search(times, 2, options);
  REQUIRE(patient.search_run->rounds >= run.rounds);
  REQUIRE(time_assignment(times, patient.assignment).period_s <= time_assignment(times, first.assignment).period_s);
  // Patience 0: the first descent alone, said to be converged.
  options.patience = 0;
  const PlanCandidate descent = plan_search(times, 2, options);
  REQUIRE(descent.search_run->stop == SearchStop::kConverged);
  REQUIRE(descent.search_run->rounds == 0);
  REQUIRE(time_assignment(times, descent.assignment).period_s >= time_assignment(times, first.assignment).period_s);
}

TEST_CASE("plan job: search options out of range are refused, naming the field", "[planner][plan_job][search]") {
  PlanRequest request = request_for(test::backprop_profile({1, 1}, {1, 1}), 2);
  request.search.patience = -1;
  REQUIRE_THROWS_WITH(validate_plan_request(request), "search.patience: must be >= 0");
  request.search.patience = 0;
  request.search.rounds = -1;
  REQUIRE_THROWS_WITH(validate_plan_request(request), "search.rounds: must be >= 0");
  request.search.rounds = 0;
  validate_plan_request(request);  // both 0: the first descent alone
}

TEST_CASE("gap to the lower bound: rounding reads 0, a real negative gap is a bug", "[planner][bound]") {
  REQUIRE(gap_to_lower_bound(1.01, 1.0) == Approx(0.01));
  REQUIRE(gap_to_lower_bound(5.0, 0.0) == 0);  // no bound: no gap
  // GPT-2's -1.1e-16: one rounding step below the bound.
  const double bound = 0.496741;
  REQUIRE(gap_to_lower_bound(bound * (1 - 1.1e-16), bound) == 0);
  REQUIRE(gap_to_lower_bound(bound * (1 - 1e-10), bound) == 0);  // within 1e-9: still rounding
  // Above the bound by rounding (the what-if page showed 9.54792e-15): 0 too; 1e-6 above is a gap.
  REQUIRE(gap_to_lower_bound(bound * (1 + 1e-14), bound) == 0);
  REQUIRE(gap_to_lower_bound(bound * (1 + 1e-6), bound) == Approx(1e-6).epsilon(1e-6));
  REQUIRE_THROWS_AS(gap_to_lower_bound(bound * (1 - 1e-6), bound), InternalError);
  REQUIRE_THROWS_WITH(gap_to_lower_bound(0.9, 1.0), Catch::Contains("does not hold"));
}

TEST_CASE("best: periods equal up to rounding tie, and ties go to dp, dreamddp, plsgd-even, search",
          "[planner]") {
  // b = (0.1, 0.1), c = (0.7, 1.1), H = 3; F = U = 0, so every iteration is C = B_L = 0.2 s plus
  // its wait. Syncing both layers in one iteration: 0.1 -> 0.8, 0.8 -> 1.9: wait w = 1.7 s.
  // Plan A syncs them in iteration 0, plan B in iteration 2; in exact arithmetic both periods are
  // 3 C + w = 2.3 s, but the model sums the iterations in order, ((C + w) + C) + C against
  // (C + C) + (C + w), which round differently (worked out beforehand in exact rationals).
  const BackpropTimes times = test::backprop_times_of({0.1, 0.1}, {0.7, 1.1});
  const Assignment a = test::assignment_of({{0, 1}, {}, {}});
  const Assignment b = test::assignment_of({{}, {}, {0, 1}});
  const double period_a = time_assignment(times, a).period_s, period_b = time_assignment(times, b).period_s;
  REQUIRE(period_a == exactly(2.3));
  REQUIRE(period_b == exactly(2.3));
  REQUIRE(period_b < period_a);  // the rounding a strict "<" would have chosen plsgd-even by
  REQUIRE(period_a - period_b < kBestTieRelative * period_a);

  const auto candidates = [&](const Assignment& plsgd_even) {
    return std::vector<PlanCandidate>{{"dp", a, {}}, {"dreamddp", a, {}}, {"plsgd-even", plsgd_even, {}},
                                      {"search", a, SearchRun{SearchStop::kBound, 0, 0}}};
  };
  const PlanCandidate tie = choose_best(times, candidates(b), std::nullopt);
  REQUIRE(tie.algorithm == "dp");  // the documented tie order
  REQUIRE(tie.search_run);         // the winner carries the search's run
  // A real improvement still wins, from any place in the order: the hand case of search (dp's
  // {0} | {1, 2, 3} has period 9, {0, 2} | {1, 3} has 8).
  const BackpropTimes hand = test::backprop_times_of({1, 1, 1, 1}, {2, 2, 1, 0});
  const Assignment dp = test::assignment_of({{0}, {1, 2, 3}}), free = test::assignment_of({{0, 2}, {1, 3}});
  const PlanCandidate better =
      choose_best(hand, {{"dp", dp, {}}, {"dreamddp", dp, {}}, {"plsgd-even", free, {}}, {"search", dp, {}}}, std::nullopt);
  REQUIRE(better.algorithm == "plsgd-even");
  REQUIRE(time_assignment(hand, better.assignment).period_s == exactly(8));
  REQUIRE_THROWS_AS(choose_best(times, {}, std::nullopt), InternalError);
}

}  // namespace syncplan
