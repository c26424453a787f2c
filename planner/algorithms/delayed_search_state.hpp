// The timing state of delayed-search (planner/algorithms/delayed.cpp): a plan under
// docs/time-model.md section 13 with the largest delays, re-timed per move from the first
// iteration the move touches. In a header so that tests can check it against time_delayed.
#pragma once

#include "simulator/bucket_fusion.hpp"
#include "simulator/period_model.hpp"

#include <algorithm>
#include <cmath>
#include <utility>
#include <vector>

namespace syncplan {

/// A plan's iterations (ascending backprop indices per iteration, H = iterations.size() >= 1)
/// timed as time_delayed does under the largest delays d_h = min(max_delay, H - 1 - h)
/// (with_max_delays), in seconds, kept per iteration (T_h and the end of h's last sync) so that a
/// move re-times only the iterations from the first it touches: earlier iterations' syncs, and so
/// their ends, do not change. Only layers with an all-reduce of their own that sync exactly once and
/// are not pinned move (a sync that costs nothing is not on the link and binds no step, section
/// 13). Holds a pointer to `times`, which must outlive it; layer indices must be in range and
/// max_delay >= 0 (not checked). Moves keep the iterations sorted.
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

  /// The period T_H (s), as time_delayed(times, with_max_delays(plan, max_delay)).period_s.
  double period_s() const { return start_.back(); }
  const std::vector<std::vector<int>>& iterations() const { return iterations_; }
  const std::vector<int>& movable() const { return movable_; }
  int period() const { return static_cast<int>(iterations_.size()); }
  int iteration_of(int j) const { return where_[j]; }

  /// The period if movable layer j moved to iteration `to` (nothing changes).
  double relocation_period_s(int j, int to) {
    const int from = where_[j];
    move(j, from, to);
    const double period = retime(std::min(from, to));
    move(j, to, from);
    return period;
  }
  /// The period if movable layers j and k (in different iterations) swapped iterations.
  double swap_period_s(int j, int k) {
    const int a = where_[j], b = where_[k];
    move(j, a, b);
    move(k, b, a);
    const double period = retime(std::min(a, b));
    move(k, a, b);
    move(j, b, a);
    return period;
  }
  /// The period if layer j, in no iteration yet, were added to iteration `to` (nothing changes).
  double insertion_period_s(int j, int to) {
    add(j, to);
    const double period = retime(to);
    remove(j, to);
    return period;
  }
  /// Adds layer j, in no iteration yet, to iteration `to` (it does not become movable).
  void insert(int j, int to) {
    add(j, to);
    retime(to);
    commit(to);
  }
  /// Moves movable layer j to iteration `to`, and swap(j, k) exchanges two movable layers' iterations.
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

}  // namespace syncplan
