// One iteration of a plan under `search` (planner/algorithms/search.cpp), re-timed with one layer
// more, one less, or one exchanged, without re-timing the whole iteration (docs/time-model.md 7).
#pragma once

#include "simulator/bucket_fusion.hpp"
#include "simulator/period_model.hpp"

#include <algorithm>
#include <cstddef>
#include <limits>
#include <optional>
#include <vector>

namespace syncplan {

/// The layers of one iteration (ascending backprop indices) and its wait under SPEC section 5
/// (iteration_wait_s), or fused into buckets with alpha_s (fused_iteration_wait_s, section 12).
/// Unfused it keeps the FIFO link's free time after every prefix and the map of every suffix
/// (see LinkMap), so that the wait with one layer added or removed costs O(1) after an O(m) set-up
/// (m layers); fused, each such wait re-times the changed iteration whole (a fusion DP).
/// Holds a pointer to `times`, which must outlive it. Indices must be in range (not checked).
class SearchIteration {
 public:
  SearchIteration(const BackpropTimes& times, const std::optional<double>& alpha_s) : times_(&times), alpha_s_(alpha_s) {}

  /// Sets the layers (ascending, distinct).
  void assign(const std::vector<int>& layers);
  /// Sets the layers to `layers` with j added (j not among them).
  void assign_with(const std::vector<int>& layers, int j);
  /// Sets the layers to `layers` without j.
  void assign_without(const std::vector<int>& layers, int j);
  /// Adds j (not among the layers) / removes j (among them).
  void insert(int j);
  void erase(int j);

  const std::vector<int>& layers() const { return layers_; }
  /// The wait (s): exactly iteration_wait_s (or fused_iteration_wait_s) of layers().
  double wait_s() const { return wait_s_; }

  /// The wait (s) if j (not among the layers) were added; _at: p is how many layers precede j.
  double wait_with_s(int j) const;
  double wait_with_at_s(std::size_t p, int j) const {  // inline: the swap pass's inner loop calls it
    if (alpha_s_) return fused_wait_with_at_s(p, j);
    return wait_after_s(suffix_[p](std::max(times_->ready_s[j], prefix_end_s_[p]) + times_->sync_s[j]));
  }
  /// The wait (s) if j (among the layers) were removed; _at: the layer at position p.
  double wait_without_s(int j) const;
  double wait_without_at_s(std::size_t p) const {
    if (alpha_s_) return fused_wait_without_at_s(p);
    return wait_after_s(suffix_[p + 1](prefix_end_s_[p]));
  }

  /// Visits the layers k > j in order (j not among the layers), each with the wait (s) if j were
  /// added and k removed: visit(k, wait_s) returns true to stop, and then so does this. Unfused,
  /// the link's state after j and the layers between j and k is carried from one k to the next,
  /// so each k costs O(1).
  template <class Visit>
  bool exchange_each(int j, Visit&& visit) const {
    const std::size_t q = std::upper_bound(layers_.begin(), layers_.end(), j) - layers_.begin();
    if (alpha_s_) {
      for (std::size_t p = q; p < layers_.size(); ++p) {
        scratch_.assign(layers_.begin(), layers_.end());
        scratch_.erase(scratch_.begin() + static_cast<std::ptrdiff_t>(p));
        scratch_.insert(scratch_.begin() + static_cast<std::ptrdiff_t>(q), j);
        if (visit(layers_[p], fused_iteration_wait_s(*times_, scratch_, *alpha_s_))) return true;
      }
      return false;
    }
    double link_free_s = std::max(times_->ready_s[j], prefix_end_s_[q]) + times_->sync_s[j];
    for (std::size_t p = q; p < layers_.size(); ++p) {
      const int k = layers_[p];
      if (visit(k, wait_after_s(suffix_[p + 1](link_free_s)))) return true;
      link_free_s = std::max(times_->ready_s[k], link_free_s) + times_->sync_s[k];
    }
    return false;
  }

 private:
  /// The FIFO link over consecutive layers as one map of the time the link is free before them
  /// (s after backprop starts) to the time it is free after them: x -> max(floor_s, x + sync_sum_s).
  /// One layer j is x -> max(B_j, x) + c_j = max(B_j + c_j, x + c_j) (SPEC section 5's first rule),
  /// and such maps compose into one of the same form, so the link end of an iteration with one
  /// layer more or less is a prefix's end fed to a suffix's map.
  struct LinkMap {
    double floor_s = -std::numeric_limits<double>::infinity();  ///< the identity: no layer
    double sync_sum_s = 0;

    double operator()(double link_free_s) const { return std::max(floor_s, link_free_s + sync_sum_s); }
    /// The map of layer j followed by this one.
    LinkMap after_layer(const BackpropTimes& times, int j) const {
      return {std::max(floor_s, times.ready_s[j] + times.sync_s[j] + sync_sum_s), times.sync_s[j] + sync_sum_s};
    }
  };

  void rebuild();
  double fused_wait_with_at_s(std::size_t p, int j) const;
  double fused_wait_without_at_s(std::size_t p) const;
  double wait_after_s(double link_end_s) const { return std::max(0.0, link_end_s - times_->backprop_s()); }

  const BackpropTimes* times_;
  std::optional<double> alpha_s_;
  std::vector<int> layers_;
  double wait_s_ = 0;
  std::vector<double> prefix_end_s_;  ///< unfused, m + 1 entries: the link's free time after the first i layers (s)
  std::vector<LinkMap> suffix_;       ///< unfused, m + 1 entries: the map of layers i..m-1
  mutable std::vector<int> scratch_;  ///< fused: the iteration with one layer more or less
};

}  // namespace syncplan
