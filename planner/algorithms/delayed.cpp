// delayed-search: delayed-averaging plans (docs/time-model.md section 13). Which layer syncs in
// which iteration is searched under the largest delays d = min(TAU, H - 1 - h) (a larger delay
// never lengthens the period), from the given plans and a link-filling greedy, with search's moves
// (relocate one layer, swap two) re-timed from the first iteration a move touches, and seeded
// perturbation rounds; then each sync gets the smallest delay that adds no wait (choose_delays).
#include "planner/algorithms/algorithms.hpp"
#include "planner/algorithms/delayed_search_state.hpp"

#include "core/errors.hpp"
#include "planner/lower_bound.hpp"
#include "simulator/bucket_fusion.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <optional>
#include <random>

namespace syncplan {

namespace {

// A day, as search's cap: longer limits would overflow the clock's nanosecond count.
constexpr double kDelayedLongestSearch_s = 86400;
// A move must shorten the period by more than this fraction of the period's work to count (as
// search's): guards against cycling on rounding noise.
constexpr double kDelayedRelativeGain = 1e-12;

using DelayedSearchClock = std::chrono::steady_clock;

// First-improvement descent over relocations and swaps of the movable layers until no move gains;
// false when stopped by the deadline.
bool descend_delayed(DelayedSearchState& state, double min_gain_s, DelayedSearchClock::time_point deadline) {
  const std::vector<int>& movable = state.movable();
  bool improved = true;
  while (improved) {
    improved = false;
    for (const int j : movable) {
      if (DelayedSearchClock::now() > deadline) return false;
      for (int to = 0; to < state.period(); ++to) {
        if (to == state.iteration_of(j)) continue;
        if (DelayedSearchClock::now() > deadline) return false;  // one move re-times up to H iterations
        if (state.relocation_period_s(j, to) < state.period_s() - min_gain_s) {
          state.relocate(j, to);
          improved = true;
        }
      }
    }
    if (improved) continue;
    for (std::size_t a = 0; a < movable.size(); ++a) {
      if (DelayedSearchClock::now() > deadline) return false;
      for (std::size_t b = a + 1; b < movable.size(); ++b) {
        const int j = movable[a], k = movable[b];
        if (state.iteration_of(j) == state.iteration_of(k)) continue;
        if (DelayedSearchClock::now() > deadline) return false;
        if (state.swap_period_s(j, k) < state.period_s() - min_gain_s) {
          state.swap(j, k);
          improved = true;
        }
      }
    }
  }
  return true;
}

// The link-filling greedy: pinned layers in every iteration and the layers without an all-reduce
// of their own in iteration 0, then the others by decreasing c_j, each into the iteration where
// the period (of the layers placed so far) is least, the earliest on a tie. Past the deadline the
// layers left go to iteration 0 (the best start then likely wins).
std::vector<std::vector<int>> link_filling_greedy(const BackpropTimes& times, int period, int max_delay,
                                                  const std::vector<bool>& pinned, DelayedSearchClock::time_point deadline) {
  std::vector<std::vector<int>> iterations(period);
  std::vector<int> placed_later;
  for (int j = 0; j < static_cast<int>(times.size()); ++j) {
    const bool is_pinned = j < static_cast<int>(pinned.size()) && pinned[j];
    if (is_pinned)
      for (auto& layers : iterations) layers.push_back(j);
    else if (!has_allreduce(times, j))
      iterations[0].push_back(j);
    else
      placed_later.push_back(j);
  }
  std::stable_sort(placed_later.begin(), placed_later.end(),
                   [&](int a, int b) { return times.sync_s[a] > times.sync_s[b]; });
  DelayedSearchState state(times, std::move(iterations), max_delay, pinned);
  for (const int j : placed_later) {
    int best_to = 0;
    double best_period = INFINITY;
    for (int to = 0; to < period && DelayedSearchClock::now() <= deadline; ++to)
      if (const double period_s = state.insertion_period_s(j, to); period_s < best_period) {
        best_period = period_s;
        best_to = to;
      }
    state.insert(j, best_to);
  }
  return state.iterations();
}

}  // namespace

PlanCandidate plan_delayed(const BackpropTimes& times, int period, int max_delay,
                           const std::vector<Assignment>& starts, const SearchOptions& options) {
  require_valid_period(period);
  SYNCPLAN_CHECK(max_delay >= 0);
  const auto started = DelayedSearchClock::now();
  auto deadline = started + std::chrono::duration_cast<DelayedSearchClock::duration>(std::chrono::duration<double>(
                                std::clamp(options.time_limit_s, 0.0, kDelayedLongestSearch_s)));
  if (options.deadline) deadline = std::min(deadline, *options.deadline);
  const std::vector<bool>& pinned = options.every_iteration;
  const double min_gain_s =
      kDelayedRelativeGain * std::max(1e-30, period * times.compute_s() + times.sync_total_s());
  const double bound_s = delayed_lower_bound_s(times, period, max_delay);
  const auto optimal = [&](const DelayedSearchState& state) { return state.period_s() <= bound_s + min_gain_s; };

  // The greedy descends first (it fills the link); then the best of the given plans, if time is left.
  DelayedSearchState best(times, link_filling_greedy(times, period, max_delay, pinned, deadline), max_delay, pinned);
  bool in_time = optimal(best) || descend_delayed(best, min_gain_s, deadline);
  std::optional<DelayedSearchState> from;
  for (const Assignment& start : starts) {
    SYNCPLAN_CHECK(start.period() == period);
    DelayedSearchState state(times, start.iterations, max_delay, pinned);
    if (!from || state.period_s() < from->period_s()) from = std::move(state);
  }
  if (from) {
    if (in_time && !optimal(best)) in_time = optimal(*from) || descend_delayed(*from, min_gain_s, deadline);
    if (from->period_s() < best.period_s() - min_gain_s) best = std::move(*from);
  }

  // Perturbation rounds, as search's: a few random relocations of the best plan, descend again.
  std::mt19937_64 random(options.seed);
  int round = 0;
  for (; in_time && round < options.rounds && !optimal(best) && !best.movable().empty(); ++round) {
    DelayedSearchState current = best;
    const int kicks = 1 + static_cast<int>(random() % 3);
    for (int kick = 0; kick < kicks; ++kick) {
      const int j = current.movable()[random() % current.movable().size()];
      const int to = static_cast<int>(random() % period);
      if (to != current.iteration_of(j)) current.relocate(j, to);
    }
    in_time = descend_delayed(current, min_gain_s, deadline);
    if (current.period_s() < best.period_s() - min_gain_s) best = std::move(current);
  }
  const SearchStop stop = optimal(best) ? SearchStop::kBound : in_time ? SearchStop::kRounds : SearchStop::kTimeLimit;
  Assignment assignment;
  assignment.iterations = best.iterations();
  const std::chrono::duration<double> elapsed = DelayedSearchClock::now() - started;
  return PlanCandidate{kDelayedAlgorithm, choose_delays(times, std::move(assignment), max_delay),
                       SearchRun{stop, in_time ? round : std::max(0, round - 1), elapsed.count()}};
}

}  // namespace syncplan
