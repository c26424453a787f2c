// search: free assignment (any layer to any iteration), seeded with the dp plan, improved by local
// search (relocate one layer, swap two layers between iterations) and iterated with seeded random
// perturbations until it converges (no strict improvement in `patience` consecutive rounds), within
// a round cap and a time limit (docs/time-model.md section 7). Never worse than dp: it only ever
// keeps a plan that is strictly better. Unfused, a move is re-timed from per-iteration prefix and
// suffix link states in O(log m); with a bucket alpha it minimizes the fused period, each
// iteration's layers fused as fuse_buckets would (section 12), and re-times fused iterations whole.
#include "planner/algorithms/algorithms.hpp"
#include "planner/algorithms/search_iteration.hpp"

#include "core/errors.hpp"
#include "planner/lower_bound.hpp"
#include "simulator/bucket_fusion.hpp"
#include "simulator/strategies/strategies.hpp"

#include <algorithm>
#include <chrono>
#include <limits>
#include <optional>
#include <random>

namespace syncplan {

// SearchIteration (search_iteration.hpp): the wait is always the period model's own, computed
// whole on every change, so the search's total wait is exact; the prefix and suffix states only
// rank the moves.
void SearchIteration::assign(const std::vector<int>& layers) {
  layers_ = layers;
  rebuild();
}

void SearchIteration::assign_with(const std::vector<int>& layers, int j) {
  layers_.assign(layers.begin(), layers.end());
  layers_.insert(std::upper_bound(layers_.begin(), layers_.end(), j), j);
  rebuild();
}

void SearchIteration::assign_without(const std::vector<int>& layers, int j) {
  layers_.clear();
  for (const int k : layers)
    if (k != j) layers_.push_back(k);
  rebuild();
}

void SearchIteration::insert(int j) {
  layers_.insert(std::upper_bound(layers_.begin(), layers_.end(), j), j);
  rebuild();
}

void SearchIteration::erase(int j) {
  layers_.erase(std::find(layers_.begin(), layers_.end(), j));
  rebuild();
}

double SearchIteration::wait_with_s(int j) const {
  return wait_with_at_s(std::upper_bound(layers_.begin(), layers_.end(), j) - layers_.begin(), j);
}

double SearchIteration::fused_wait_with_at_s(std::size_t p, int j) const {
  scratch_.assign(layers_.begin(), layers_.end());
  scratch_.insert(scratch_.begin() + static_cast<std::ptrdiff_t>(p), j);
  return fused_iteration_wait_s(*times_, scratch_, *alpha_s_);
}

double SearchIteration::wait_without_s(int j) const {
  const std::size_t p = std::lower_bound(layers_.begin(), layers_.end(), j) - layers_.begin();
  SYNCPLAN_CHECK(p < layers_.size() && layers_[p] == j);
  return wait_without_at_s(p);
}

double SearchIteration::fused_wait_without_at_s(std::size_t p) const {
  scratch_.assign(layers_.begin(), layers_.end());
  scratch_.erase(scratch_.begin() + static_cast<std::ptrdiff_t>(p));
  return fused_iteration_wait_s(*times_, scratch_, *alpha_s_);
}

void SearchIteration::rebuild() {
  if (alpha_s_) {
    wait_s_ = fused_iteration_wait_s(*times_, layers_, *alpha_s_);
    return;
  }
  const std::size_t m = layers_.size();
  prefix_end_s_.resize(m + 1);
  suffix_.resize(m + 1);
  prefix_end_s_[0] = 0;
  for (std::size_t i = 0; i < m; ++i) {
    const int j = layers_[i];
    prefix_end_s_[i + 1] = std::max(times_->ready_s[j], prefix_end_s_[i]) + times_->sync_s[j];
  }
  suffix_[m] = LinkMap{};
  for (std::size_t i = m; i-- > 0;) suffix_[i] = suffix_[i + 1].after_layer(*times_, layers_[i]);
  wait_s_ = wait_after_s(prefix_end_s_[m]);  // link_end_s's loop: iteration_wait_s exactly
}

namespace {

// The plan being searched: every iteration's state and where each movable layer is. Movable: a
// layer with an all-reduce that is not pinned; pinned layers sit in every iteration, layers
// without an all-reduce where the starting plan put them.
class SearchState {
 public:
  SearchState(const BackpropTimes& times, const Assignment& start, const std::optional<double>& alpha_s,
              const std::vector<bool>& pinned)
      : where_(times.size(), -1) {
    const auto is_pinned = [&](int j) { return j < static_cast<int>(pinned.size()) && pinned[j]; };
    for (int h = 0; h < start.period(); ++h) {
      std::vector<int> synced, others;
      for (const int j : start.iterations[h]) {
        (has_allreduce(times, j) ? synced : others).push_back(j);
        if (has_allreduce(times, j) && !is_pinned(j)) where_[j] = h;
      }
      iterations_.emplace_back(times, alpha_s);
      changed_.push_back(0);
      iterations_.back().assign(synced);
      without_allreduce_.push_back(std::move(others));
    }
    for (int j = 0; j < static_cast<int>(times.size()); ++j)
      if (where_[j] >= 0) movable_.push_back(j);
  }

  double total_wait_s() const {
    double total = 0;
    for (const SearchIteration& iteration : iterations_) total += iteration.wait_s();
    return total;
  }
  int period() const { return static_cast<int>(iterations_.size()); }
  const std::vector<int>& movable() const { return movable_; }
  int iteration_of(int j) const { return where_[j]; }
  const SearchIteration& iteration(int h) const { return iterations_[h]; }

  // The plan: each iteration's synced layers and those without an all-reduce, merged in order.
  Assignment assignment() const {
    Assignment plan;
    for (int h = 0; h < period(); ++h) {
      std::vector<int> layers;
      std::merge(iterations_[h].layers().begin(), iterations_[h].layers().end(), without_allreduce_[h].begin(),
                 without_allreduce_[h].end(), std::back_inserter(layers));
      plan.iterations.push_back(std::move(layers));
    }
    return plan;
  }

  // Change in total wait if movable layer j moved from its iteration to `to` (negative: better).
  double relocation_gain_s(int j, int to) const {
    const SearchIteration& from = iterations_[where_[j]];
    return from.wait_without_s(j) + iterations_[to].wait_with_s(j) - from.wait_s() - iterations_[to].wait_s();
  }

  // What removing movable layer j from its iteration saves (s).
  double saving_s(int j) const {
    const SearchIteration& from = iterations_[where_[j]];
    return from.wait_s() - from.wait_without_s(j);
  }

  void relocate(int j, int to) {
    iterations_[where_[j]].erase(j);
    iterations_[to].insert(j);
    changed_[where_[j]] = changed_[to] = ++clock_;
    where_[j] = to;
  }

  // Whether iterations a and b are both unchanged since settle(): no move between them gains.
  bool settled(int a, int b) const { return changed_[a] <= settled_ && changed_[b] <= settled_; }
  // Says that no relocation or swap gains in the plan as it is (a descent ended here).
  void settle() { settled_ = clock_; }
  // How many changes the plan has had (relocations, two per swap).
  long long changes() const { return clock_; }

  void swap(int j, int k) {
    const int a = where_[j], b = where_[k];
    relocate(j, b);
    relocate(k, a);
  }

 private:
  std::vector<SearchIteration> iterations_;
  std::vector<std::vector<int>> without_allreduce_;  // per iteration: the start's layers without an all-reduce
  std::vector<int> where_;                           // movable layer -> its iteration; -1 otherwise
  std::vector<int> movable_;                         // ascending
  std::vector<long long> changed_;                   // per iteration: clock_ at its last change
  long long clock_ = 0;                              // counts changes
  long long settled_ = -1;                           // clock_ at the last settle(); none yet
};

// A day: longer limits would overflow the clock's nanosecond count (and nan means none given).
constexpr double kLongestSearch_s = 86400;

// A move must gain more than this (relative to the period's compute) to count: guards against
// cycling on rounding noise.
constexpr double kRelativeGain = 1e-12;

// One swap pass: for each movable j (ascending), the first movable k > j in another iteration whose
// swap with j gains more than min_gain_s, if any, is swapped. The iteration of j without j is set
// up once per j (O(m)) and each other iteration's k are visited in order (exchange_each), so that
// every k costs O(1) unfused: O(L^2) per pass for L movable layers, with a small constant. Pairs
// of settled iterations are skipped (no swap between them gains).
// False when stopped by the deadline; `improved` says whether a swap was made.
bool swap_pass(SearchState& state, const BackpropTimes& times, const std::optional<double>& alpha_s,
               double min_gain_s, std::chrono::steady_clock::time_point deadline, bool& improved) {
  SearchIteration without_j(times, alpha_s);
  for (const int j : state.movable()) {
    if (std::chrono::steady_clock::now() > deadline) return false;  // a pass can be long (fused costs)
    const int a = state.iteration_of(j);
    bool set_up = false;
    for (int b = 0; b < state.period(); ++b) {
      const std::vector<int>& layers_b = state.iteration(b).layers();
      if (b == a || layers_b.empty() || layers_b.back() <= j || state.settled(a, b)) continue;
      if (!set_up) without_j.assign_without(state.iteration(a).layers(), j);
      set_up = true;
      const std::vector<int>& layers_a = without_j.layers();
      const double base_s = state.iteration(a).wait_s() + state.iteration(b).wait_s();
      // Into a, k goes after the `into_a` layers below it.
      std::size_t into_a = std::upper_bound(layers_a.begin(), layers_a.end(), j) - layers_a.begin();
      int chosen = -1;
      state.iteration(b).exchange_each(j, [&](int k, double wait_b_s) {
        while (into_a < layers_a.size() && layers_a[into_a] < k) ++into_a;
        if (state.iteration_of(k) != b) return false;  // pinned
        if (without_j.wait_with_at_s(into_a, k) + wait_b_s - base_s >= -min_gain_s) return false;
        chosen = k;
        return true;
      });
      if (chosen >= 0) {
        state.swap(j, chosen);
        improved = true;
        break;  // j moved: on to the next j
      }
    }
  }
  return true;
}

// First-improvement descent: relocation passes until none gains, then a swap pass, again until no
// move gains (then every iteration is settled); false when stopped by the deadline.
bool descend(SearchState& state, const BackpropTimes& times, const std::optional<double>& alpha_s,
             double min_gain_s, std::chrono::steady_clock::time_point deadline) {
  bool improved = true;
  while (improved) {
    improved = false;
    if (std::chrono::steady_clock::now() > deadline) return false;
    for (const int j : state.movable()) {
      if (std::chrono::steady_clock::now() > deadline) return false;  // a pass can be long (fused costs)
      // Adding j elsewhere costs >= 0: a relocation gains at most what removing j saves.
      if (state.saving_s(j) <= min_gain_s) continue;
      for (int to = 0; to < state.period(); ++to) {
        if (to == state.iteration_of(j) || state.settled(state.iteration_of(j), to)) continue;
        if (state.relocation_gain_s(j, to) < -min_gain_s) {
          state.relocate(j, to);
          improved = true;
        }
      }
    }
    if (improved) continue;
    if (!swap_pass(state, times, alpha_s, min_gain_s, deadline, improved)) return false;
  }
  state.settle();
  return true;
}

}  // namespace

const char* search_stop_name(SearchStop stop) {
  switch (stop) {
    case SearchStop::kBound: return "bound";
    case SearchStop::kConverged: return "converged";
    case SearchStop::kRounds: return "rounds";
    case SearchStop::kTimeLimit: return "time_limit";
  }
  return "rounds";
}

PlanCandidate plan_search(const BackpropTimes& times, int period, const SearchOptions& options) {
  require_valid_period(period);
  const auto started = std::chrono::steady_clock::now();
  auto deadline = started + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                                std::chrono::duration<double>(std::clamp(options.time_limit_s, 0.0, kLongestSearch_s)));
  if (options.deadline) deadline = std::min(deadline, *options.deadline);
  const auto finished = [&](const SearchState& plan, SearchStop stop, int rounds) {
    const std::chrono::duration<double> elapsed = std::chrono::steady_clock::now() - started;
    return PlanCandidate{"search", plan.assignment(), SearchRun{stop, rounds, elapsed.count()}};
  };
  const double min_gain_s = kRelativeGain * std::max(1e-30, period * times.compute_s() + times.sync_total_s());
  const std::optional<double>& alpha_s = options.bucket_alpha_s;
  SYNCPLAN_CHECK(!options.dp_plan || options.dp_plan->period() == period);
  SearchState best(times, options.dp_plan ? *options.dp_plan : plan_dp(times, period, options.every_iteration).assignment,
                   alpha_s, options.every_iteration);
  if (period == 1 || best.movable().empty()) return finished(best, SearchStop::kRounds, 0);

  // Stop as soon as the plan meets the lower bound (it is then optimal), dp's plan included.
  const double bound_s = alpha_s ? fused_lower_bound_s(times, period, *alpha_s) : best_lower_bound_s(times, period);
  const double bound_wait_s = bound_s - period * times.compute_s();
  const auto optimal = [&] { return best.total_wait_s() <= bound_wait_s + min_gain_s; };
  if (optimal()) return finished(best, SearchStop::kBound, 0);
  SearchState current = best;
  bool in_time = descend(current, times, alpha_s, min_gain_s, deadline);
  // A descent that moved nothing leaves dp's plan settled: no move gains there either.
  if (current.total_wait_s() < best.total_wait_s() - min_gain_s) best = current;
  else if (in_time && current.changes() == best.changes()) best.settle();

  // Iterated local search: perturb the best plan by one to three random relocations, descend
  // again; converged after `patience` rounds in a row without a strict improvement.
  std::mt19937_64 random(options.seed);
  const std::vector<int>& movable = best.movable();
  int round = 0, since_improvement = 0;
  for (; in_time && round < options.rounds && since_improvement < options.patience && !optimal(); ++round) {
    current = best;
    const int kicks = 1 + static_cast<int>(random() % 3);
    for (int kick = 0; kick < kicks; ++kick) {
      const int j = movable[random() % movable.size()];
      const int to = static_cast<int>(random() % period);
      if (to != current.iteration_of(j)) current.relocate(j, to);
    }
    in_time = descend(current, times, alpha_s, min_gain_s, deadline);
    if (current.total_wait_s() < best.total_wait_s() - min_gain_s) {
      best = current;
      since_improvement = 0;
    } else {
      ++since_improvement;
    }
  }
  // A round cut by the deadline does not count as completed.
  const SearchStop stop = optimal()                             ? SearchStop::kBound
                          : !in_time                            ? SearchStop::kTimeLimit
                          : since_improvement >= options.patience ? SearchStop::kConverged
                                                                : SearchStop::kRounds;
  return finished(best, stop, in_time ? round : std::max(0, round - 1));
}

}  // namespace syncplan
