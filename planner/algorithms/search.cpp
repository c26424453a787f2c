// search: free assignment (any layer to any iteration), seeded with the dp plan, improved by local
// search (relocate one layer, swap two layers between iterations) and iterated with seeded random
// perturbations, within a round count and a time limit (docs/time-model.md section 7). Never worse
// than dp: it only ever keeps a plan that is strictly better. With a bucket alpha it minimizes the
// fused period, each iteration's layers fused as fuse_buckets would (section 12).
#include "planner/algorithms/algorithms.hpp"

#include "core/errors.hpp"
#include "planner/lower_bound.hpp"
#include "simulator/bucket_fusion.hpp"
#include "simulator/strategies/strategies.hpp"

#include <algorithm>
#include <chrono>
#include <optional>
#include <random>
#include <span>

namespace syncplan {

namespace {

// Iteration waits under the period model (fused into buckets when alpha_s is set), kept per
// iteration so a move re-times two iterations.
class SearchState {
 public:
  SearchState(const BackpropTimes& times, Assignment assignment, std::optional<double> alpha_s)
      : times_(&times), alpha_s_(alpha_s), assignment_(std::move(assignment)) {
    for (const auto& layers : assignment_.iterations) wait_.push_back(wait_s(layers));
    where_.assign(times_->size(), -1);
    for (int h = 0; h < assignment_.period(); ++h)
      for (const int j : assignment_.iterations[h]) where_[j] = h;
  }

  double total_wait_s() const {
    double total = 0;
    for (const double wait : wait_) total += wait;
    return total;
  }
  const Assignment& assignment() const { return assignment_; }
  int iteration_of(int j) const { return where_[j]; }

  // Change in total wait if layer j moved from its iteration to `to` (negative: better).
  double relocation_gain_s(int j, int to, std::vector<int>& scratch_from, std::vector<int>& scratch_to) const {
    const int from = where_[j];
    without(assignment_.iterations[from], j, scratch_from);
    with(assignment_.iterations[to], j, scratch_to);
    return wait_s(scratch_from) + wait_s(scratch_to) - wait_[from] - wait_[to];
  }

  // Change in total wait if layers j and k (in different iterations) swapped iterations.
  double swap_gain_s(int j, int k, std::vector<int>& scratch_a, std::vector<int>& scratch_b) const {
    const int a = where_[j], b = where_[k];
    without(assignment_.iterations[a], j, scratch_a);
    insert_sorted(scratch_a, k);
    without(assignment_.iterations[b], k, scratch_b);
    insert_sorted(scratch_b, j);
    return wait_s(scratch_a) + wait_s(scratch_b) - wait_[a] - wait_[b];
  }

  void relocate(int j, int to) {
    const int from = where_[j];
    auto& source = assignment_.iterations[from];
    source.erase(std::find(source.begin(), source.end(), j));
    insert_sorted(assignment_.iterations[to], j);
    where_[j] = to;
    wait_[from] = wait_s(source);
    wait_[to] = wait_s(assignment_.iterations[to]);
  }

  void swap(int j, int k) {
    const int a = where_[j], b = where_[k];
    relocate(j, b);
    relocate(k, a);
  }

 private:
  double wait_s(std::span<const int> layers) const {
    return alpha_s_ ? fused_iteration_wait_s(*times_, layers, *alpha_s_) : iteration_wait_s(*times_, layers);
  }
  static void insert_sorted(std::vector<int>& layers, int j) {
    layers.insert(std::upper_bound(layers.begin(), layers.end(), j), j);
  }
  static void without(const std::vector<int>& layers, int j, std::vector<int>& out) {
    out.clear();
    for (const int k : layers)
      if (k != j) out.push_back(k);
  }
  static void with(const std::vector<int>& layers, int j, std::vector<int>& out) {
    out = layers;
    insert_sorted(out, j);
  }

  const BackpropTimes* times_;
  std::optional<double> alpha_s_;
  Assignment assignment_;
  std::vector<double> wait_;
  std::vector<int> where_;
};

// A day: longer limits would overflow the clock's nanosecond count (and nan means none given).
constexpr double kLongestSearch_s = 86400;

// A move must gain more than this (relative to the period's compute) to count: guards against
// cycling on rounding noise.
constexpr double kRelativeGain = 1e-12;

// First-improvement descent over relocations and swaps until no move gains; false when stopped by
// the deadline.
bool descend(SearchState& state, const BackpropTimes& times, int period, double min_gain_s,
             std::chrono::steady_clock::time_point deadline, const std::vector<bool>& pinned) {
  const auto is_pinned = [&](int j) { return j < static_cast<int>(pinned.size()) && pinned[j]; };
  const int layer_count = static_cast<int>(times.size());
  std::vector<int> scratch_a, scratch_b;
  bool improved = true;
  while (improved) {
    improved = false;
    if (std::chrono::steady_clock::now() > deadline) return false;
    for (int j = 0; j < layer_count; ++j) {
      if (std::chrono::steady_clock::now() > deadline) return false;  // a pass can be long (fused costs)
      for (int to = 0; to < period && !is_pinned(j); ++to) {
        if (to == state.iteration_of(j)) continue;
        if (state.relocation_gain_s(j, to, scratch_a, scratch_b) < -min_gain_s) {
          state.relocate(j, to);
          improved = true;
        }
      }
    }
    if (improved) continue;
    for (int j = 0; j < layer_count; ++j) {
      if (std::chrono::steady_clock::now() > deadline) return false;
      for (int k = j + 1; k < layer_count && !is_pinned(j); ++k) {
        if (is_pinned(k) || state.iteration_of(j) == state.iteration_of(k)) continue;
        if (state.swap_gain_s(j, k, scratch_a, scratch_b) < -min_gain_s) {
          state.swap(j, k);
          improved = true;
        }
      }
    }
  }
  return true;
}

}  // namespace

const char* search_stop_name(SearchStop stop) {
  switch (stop) {
    case SearchStop::kBound: return "bound";
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
  SearchState best(times, plan_dp(times, period, options.every_iteration).assignment, options.bucket_alpha_s);
  if (period == 1 || times.size() < 2) return finished(best, SearchStop::kRounds, 0);
  SearchState current = best;
  bool in_time = descend(current, times, period, min_gain_s, deadline, options.every_iteration);
  if (current.total_wait_s() < best.total_wait_s() - min_gain_s) best = current;

  // Iterated local search: perturb the best plan by a few random relocations, descend again; stop
  // early once the plan meets the lower bound (it is then optimal).
  const double bound_s = options.bucket_alpha_s ? fused_lower_bound_s(times, period, *options.bucket_alpha_s)
                                                : best_lower_bound_s(times, period);
  const double bound_wait_s = bound_s - period * times.compute_s();
  const auto optimal = [&] { return best.total_wait_s() <= bound_wait_s + min_gain_s; };
  std::mt19937_64 random(options.seed);
  const int layer_count = static_cast<int>(times.size());
  int round = 0;
  for (; in_time && round < options.rounds && !optimal(); ++round) {
    current = best;
    const int kicks = 1 + static_cast<int>(random() % 3);
    for (int kick = 0; kick < kicks; ++kick) {
      const int j = static_cast<int>(random() % layer_count);
      const int to = static_cast<int>(random() % period);
      const bool pinned = j < static_cast<int>(options.every_iteration.size()) && options.every_iteration[j];
      if (!pinned && to != current.iteration_of(j)) current.relocate(j, to);
    }
    in_time = descend(current, times, period, min_gain_s, deadline, options.every_iteration);
    if (current.total_wait_s() < best.total_wait_s() - min_gain_s) best = current;
  }
  // A round cut by the deadline does not count as completed.
  const SearchStop stop = optimal() ? SearchStop::kBound : in_time ? SearchStop::kRounds : SearchStop::kTimeLimit;
  return finished(best, stop, in_time ? round : std::max(0, round - 1));
}

}  // namespace syncplan
