// delayed-search: delayed-averaging plans (docs/time-model.md section 13). Which layer syncs in
// which iteration is searched under the largest delays d = min(TAU, H - 1 - h) (a larger delay
// never lengthens the period), from the given plans and a link-filling greedy, with search's moves
// (relocate one layer, swap two) re-timed from the first iteration a move touches, and seeded
// perturbation rounds; then each sync gets the smallest delay that adds no wait (choose_delays).
#include "planner/algorithms/algorithms.hpp"

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

// Section 13's timing under the largest delays, kept per iteration (T_h and the end of h's last
// sync), so that a move re-times only the iterations from the first it touches: the syncs of
// earlier iterations, and so their ends, do not change. Only layers with an all-reduce of their
// own that sync exactly once and are not pinned move: a sync that costs nothing is not on the link
// and binds no step (section 13), so where such a layer sits changes no period.
class DelayedSearchState {
 public:
  DelayedSearchState(const BackpropTimes& times, std::vector<std::vector<int>> iterations, int max_delay,
                     const std::vector<bool>& pinned)
      : times_(&times), iterations_(std::move(iterations)) {
    const int period = static_cast<int>(iterations_.size());
    // Steps and the iterations whose syncs they apply: h's at min(h + TAU, H - 1), a range per step.
    applied_first_.assign(period, period);
    applied_last_.assign(period, -1);
    for (int h = 0; h < period; ++h) {
      const int k = std::min(h + max_delay, period - 1);
      applied_first_[k] = std::min(applied_first_[k], h);
      applied_last_[k] = std::max(applied_last_[k], h);
    }
    std::vector<int> count(times.size(), 0);
    for (const auto& layers : iterations_)
      for (const int j : layers) ++count[j];
    where_.assign(times.size(), -1);
    for (int h = 0; h < period; ++h)
      for (const int j : iterations_[h]) {
        const bool is_pinned = j < static_cast<int>(pinned.size()) && pinned[j];
        if (count[j] == 1 && !is_pinned && has_allreduce(times, j)) where_[j] = h;
      }
    for (std::size_t j = 0; j < times.size(); ++j)
      if (where_[j] >= 0) movable_.push_back(static_cast<int>(j));
    start_.assign(period + 1, 0.0);
    link_.assign(period, 0.0);
    due_.assign(period, -INFINITY);
    scratch_start_ = start_;
    scratch_link_ = link_;
    scratch_due_ = due_;
    retime(0);
    commit(0);
  }

  double period_s() const { return start_.back(); }
  const std::vector<std::vector<int>>& iterations() const { return iterations_; }
  const std::vector<int>& movable() const { return movable_; }
  int period() const { return static_cast<int>(iterations_.size()); }
  int iteration_of(int j) const { return where_[j]; }

  // The period if movable layer j moved to iteration `to` (nothing changes).
  double relocation_period_s(int j, int to) {
    const int from = where_[j];
    move(j, from, to);
    const double period = retime(std::min(from, to));
    move(j, to, from);
    return period;
  }
  // The period if movable layers j and k (in different iterations) swapped iterations.
  double swap_period_s(int j, int k) {
    const int a = where_[j], b = where_[k];
    move(j, a, b);
    move(k, b, a);
    const double period = retime(std::min(a, b));
    move(k, a, b);
    move(j, b, a);
    return period;
  }
  // The period if layer j, in no iteration yet, were added to iteration `to` (nothing changes).
  double insertion_period_s(int j, int to) {
    add(j, to);
    const double period = retime(to);
    remove(j, to);
    return period;
  }
  // Adds layer j, in no iteration yet, to iteration `to` (it does not become movable).
  void insert(int j, int to) {
    add(j, to);
    retime(to);
    commit(to);
  }
  void relocate(int j, int to) {
    const int from = where_[j];
    move(j, from, to);
    where_[j] = to;
    retime(std::min(from, to));
    commit(std::min(from, to));
  }
  void swap(int j, int k) {
    const int a = where_[j], b = where_[k];
    move(j, a, b);
    move(k, b, a);
    where_[j] = b;
    where_[k] = a;
    retime(std::min(a, b));
    commit(std::min(a, b));
  }

 private:
  void add(int j, int to) {
    std::vector<int>& target = iterations_[to];
    target.insert(std::upper_bound(target.begin(), target.end(), j), j);
  }
  void remove(int j, int from) {
    std::vector<int>& source = iterations_[from];
    source.erase(std::find(source.begin(), source.end(), j));
  }
  void move(int j, int from, int to) {
    remove(j, from);
    add(j, to);
  }

  // Times iterations first..H-1 into the scratch arrays (section 13's rule, the largest delays);
  // returns the period T_H.
  double retime(int first) {
    const BackpropTimes& times = *times_;
    double start = start_[first];
    double link_free = first > 0 ? link_[first - 1] : 0.0;
    for (int k = first; k < period(); ++k) {
      const double backprop_start = start + times.backward_start_s();  // A_k
      bool any = false;  // a sync that costs nothing takes no place on the link and binds no step
      for (const int j : iterations_[k])
        if (times.sync_s[j] > 0) {
          link_free = std::max(backprop_start + times.ready_s[j], link_free) + times.sync_s[j];
          any = true;
        }
      scratch_link_[k] = link_free;
      scratch_due_[k] = any ? link_free : -INFINITY;  // the end of k's last sync
      double update = backprop_start + times.backprop_s();
      for (int h = applied_first_[k]; h <= applied_last_[k]; ++h)
        update = std::max(update, h >= first ? scratch_due_[h] : due_[h]);
      start = update + times.update_total_s;
      scratch_start_[k + 1] = start;
    }
    return start;
  }
  // Keeps the scratch timing of iterations first..H-1 (after retime(first)).
  void commit(int first) {
    std::copy(scratch_start_.begin() + first + 1, scratch_start_.end(), start_.begin() + first + 1);
    std::copy(scratch_link_.begin() + first, scratch_link_.end(), link_.begin() + first);
    std::copy(scratch_due_.begin() + first, scratch_due_.end(), due_.begin() + first);
  }

  const BackpropTimes* times_;
  std::vector<std::vector<int>> iterations_;
  std::vector<int> applied_first_, applied_last_;  // per step k: the iterations whose syncs it applies
  std::vector<int> where_;                         // movable layer -> its iteration; -1: does not move
  std::vector<int> movable_;
  std::vector<double> start_;  // H + 1 entries: T_h, and T_H = the period
  std::vector<double> link_;   // when the link goes free after iteration h's syncs
  std::vector<double> due_;    // the end of iteration h's last sync; -inf when none of h's is on the link
  std::vector<double> scratch_start_, scratch_link_, scratch_due_;
};

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
