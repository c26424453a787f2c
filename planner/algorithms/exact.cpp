// exact: branch and bound over set partitions of the layers into the H iterations of a period,
// which proves a plan optimal under SPEC section 5 or finds a better one (docs/time-model.md 14).
//
// The layers are placed in backprop order, so each block (iteration) is summarized by its link-free
// time f_h: the next layer j placed in it ends at max(B_j, f_h) + c_j. Blocks with the same
// max(B_j, f_h) give the same child, so only one of them is tried (every idle block is one choice:
// the symmetry of interchangeable iterations). A node's total wait is at least
//   sum_h (f_h - B_L)^+ + max( max_t W_t, O )
// over the unplaced layers: W_t (water-filling at threshold t = B_k): their syncs ready at or after
// t need M_t of link time (pinned ones H times) and block h hides at most (B_L - max(t, f_h))^+ of
// it; O: the sum of their overflows (B_k + c_k - B_L)^+ (a block's wait grows by at least each
// new layer's overflow, docs/time-model.md 6).
#include "planner/algorithms/algorithms.hpp"

#include "core/errors.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <optional>
#include <vector>

namespace syncplan {

namespace {

// One branch-and-bound search; the state is the link-free time of each block.
class PartitionSearch {
 public:
  PartitionSearch(const BackpropTimes& times, int period, const std::vector<bool>& pinned,
                  double incumbent_wait_s, double tolerance_s, const ExactOptions& options)
      : times_(times), period_(period), pinned_(pinned), backprop_(times.backprop_s()),
        best_wait_(incumbent_wait_s), tolerance_(tolerance_s), node_limit_(options.node_limit), deadline_(options.deadline),
        link_free_(period, 0.0), block_of_(times.size(), -1) {
    const std::size_t n = times.size();
    // Unplaced link time from layer k on (pinned layers count once per block), and overflows.
    weighted_suffix_.assign(n + 1, 0.0);
    overflow_suffix_.assign(n + 1, 0.0);
    for (std::size_t k = n; k-- > 0;) {
      const double copies = is_pinned(k) ? period : 1.0;
      weighted_suffix_[k] = weighted_suffix_[k + 1] + copies * times.sync_s[k];
      overflow_suffix_[k] =
          overflow_suffix_[k + 1] + copies * std::max(0.0, times.ready_s[k] + times.sync_s[k] - backprop_);
    }
  }

  // Searches from the first layer; true when the whole tree was searched within the node limit.
  bool run() {
    descend(0);
    return !cut_;
  }
  bool improved() const { return improved_; }
  bool time_limited() const { return time_limited_; }
  long long nodes() const { return nodes_; }
  const std::vector<int>& best_block_of() const { return best_block_of_; }

 private:
  bool is_pinned(std::size_t j) const { return j < pinned_.size() && pinned_[j]; }

  // Lower bound on the total wait of every completion of the current node, layers k.. unplaced.
  double node_bound(std::size_t k) const {
    double placed = 0;
    for (const double f : link_free_) placed += std::max(0.0, f - backprop_);
    double rest = overflow_suffix_[k];
    for (std::size_t t = k; t < times_.size(); ++t) {
      if (times_.sync_s[t] == 0 || (t > k && times_.ready_s[t - 1] == times_.ready_s[t])) continue;
      double hidden = 0;
      for (const double f : link_free_) hidden += std::max(0.0, backprop_ - std::max(times_.ready_s[t], f));
      rest = std::max(rest, weighted_suffix_[t] - hidden);
    }
    return placed + rest;
  }

  void descend(std::size_t k) {
    if (cut_) return;
    if (++nodes_ > node_limit_ || (deadline_ && nodes_ % 1024 == 1 && std::chrono::steady_clock::now() >= *deadline_)) {
      time_limited_ = nodes_ <= node_limit_;
      cut_ = true;
      return;
    }
    // Layers that need no choice: pinned ones join every block, ones without a sync change nothing.
    std::vector<double> saved = link_free_;
    while (k < times_.size() && (is_pinned(k) || times_.sync_s[k] == 0)) {
      if (is_pinned(k))
        for (double& f : link_free_) f = std::max(times_.ready_s[k], f) + times_.sync_s[k];
      ++k;
    }
    if (k == times_.size()) {
      double wait = 0;
      for (const double f : link_free_) wait += std::max(0.0, f - backprop_);
      if (wait < best_wait_ - tolerance_) {
        best_wait_ = wait;
        best_block_of_ = block_of_;
        improved_ = true;
      }
      link_free_ = saved;
      return;
    }
    if (node_bound(k) >= best_wait_ - tolerance_) {
      link_free_ = saved;
      return;
    }
    // One child per distinct start max(B_k, f_h), least added wait first, then the latest start
    // (the tightest fit, which keeps idle blocks for later layers).
    const double ready = times_.ready_s[k], sync = times_.sync_s[k];
    std::vector<int> children;
    for (int h = 0; h < period_; ++h) {
      const double start = std::max(ready, link_free_[h]);
      bool seen = false;
      for (const int other : children) seen |= std::max(ready, link_free_[other]) == start;
      if (!seen) children.push_back(h);
    }
    const auto added_wait = [&](int h) {
      const double f = link_free_[h];
      return std::max(0.0, std::max(ready, f) + sync - backprop_) - std::max(0.0, f - backprop_);
    };
    std::sort(children.begin(), children.end(), [&](int a, int b) {
      const double wa = added_wait(a), wb = added_wait(b);
      if (wa != wb) return wa < wb;
      return link_free_[a] > link_free_[b];
    });
    for (const int h : children) {
      const double before = link_free_[h];
      link_free_[h] = std::max(ready, before) + sync;
      block_of_[k] = h;
      descend(k + 1);
      link_free_[h] = before;
      block_of_[k] = -1;
      if (cut_) break;
    }
    link_free_ = saved;
  }

  const BackpropTimes& times_;
  const int period_;
  const std::vector<bool>& pinned_;
  const double backprop_;
  double best_wait_;
  const double tolerance_;
  const long long node_limit_;
  const std::optional<std::chrono::steady_clock::time_point> deadline_;
  std::vector<double> link_free_;  // per block: when its last sync so far ends (s after backprop starts)
  std::vector<int> block_of_;      // per layer: its block while placed, -1 otherwise
  std::vector<int> best_block_of_;
  std::vector<double> weighted_suffix_, overflow_suffix_;  // from layer k on (s)
  long long nodes_ = 0;
  bool cut_ = false;
  bool improved_ = false;
  bool time_limited_ = false;
};

}  // namespace

ExactResult plan_exact(const BackpropTimes& times, int period, const std::vector<bool>& every_iteration,
                       const PlanCandidate& incumbent, const ExactOptions& options) {
  require_valid_period(period);
  SYNCPLAN_CHECK(incumbent.assignment.period() == period);
  ExactResult result{incumbent, {}};
  const auto pinned = [&](std::size_t j) { return j < every_iteration.size() && every_iteration[j]; };
  int placeable = 0;
  for (std::size_t j = 0; j < times.size(); ++j) placeable += !pinned(j) && times.sync_s[j] > 0 ? 1 : 0;
  if (placeable > options.max_layers) return result;
  result.run.ran = true;

  double incumbent_wait = 0;
  for (const std::vector<int>& layers : incumbent.assignment.iterations) incumbent_wait += iteration_wait_s(times, layers);
  // Plans within kBestTieRelative of the incumbent's period are ties (they differ by rounding).
  const double tolerance = kBestTieRelative * (period * times.compute_s() + incumbent_wait);
  PartitionSearch search(times, period, every_iteration, incumbent_wait, tolerance, options);
  result.run.proven_optimal = search.run();
  result.run.nodes = std::min(search.nodes(), options.node_limit);
  result.run.improved = search.improved();
  result.run.time_limited = search.time_limited();
  if (!result.run.improved) return result;

  Assignment assignment;
  assignment.iterations.assign(period, {});
  const std::vector<int>& block_of = search.best_block_of();
  for (std::size_t j = 0; j < times.size(); ++j) {
    if (pinned(j)) {
      for (std::vector<int>& layers : assignment.iterations) layers.push_back(static_cast<int>(j));
    } else {
      assignment.iterations[block_of[j] >= 0 ? block_of[j] : 0].push_back(static_cast<int>(j));
    }
  }
  // The blocks in order of their first layer, empty ones last, as dp orders its groups.
  std::stable_sort(assignment.iterations.begin(), assignment.iterations.end(),
                   [](const std::vector<int>& a, const std::vector<int>& b) {
                     if (a.empty() || b.empty()) return !a.empty() && b.empty();
                     return a.front() < b.front();
                   });
  result.candidate = PlanCandidate{"exact", std::move(assignment), incumbent.search_run};
  return result;
}

}  // namespace syncplan
