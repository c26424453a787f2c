// exact: branch and bound over set partitions of the layers into the H iterations of a period,
// which proves a plan optimal under SPEC section 5 or finds a better one (docs/time-model.md 14).
//
// The layers are placed in backprop order, so each block (iteration) is summarized by its link-free
// time f_h: the next layer j placed in it ends at max(B_j, f_h) + c_j. Blocks with the same
// max(B_j, f_h) give the same child, and so do all blocks with f_h >= B_L (every later sync there
// adds its c_j to the wait, whichever of them it joins): the symmetry of interchangeable
// iterations. A node's total wait is at least
//   sum_h (f_h - B_L)^+ + max( max_t W_t, O )
// over the unplaced layers: W_t (water-filling at threshold t = B_k): their syncs ready at or after
// t need M_t of link time (pinned ones H times) and block h hides at most (B_L - max(t, f_h))^+ of
// it, only in the blocks that receive one of them (with n such layers and none pinned, the n
// largest capacities); O: the sum of their overflows (B_k + c_k - B_L)^+ (a block's wait grows by
// at least each new layer's overflow, docs/time-model.md 6). A transposition table prunes a node
// whose blocks, told apart only as far as later layers can tell (f_h raised to B_k, lowered to
// B_L), were searched before with no more wait so far.
#include "planner/algorithms/algorithms.hpp"

#include "core/errors.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <optional>
#include <vector>

namespace syncplan {

namespace {

// 64-bit mixing (splitmix64's finalizer).
std::uint64_t mix(std::uint64_t x) {
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ULL;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebULL;
  x ^= x >> 31;
  return x;
}

// Searched nodes by a 128-bit fingerprint of their key, with the least wait so far each was
// searched with: open addressing, growing by doubling up to max_entries, then no new entries (the
// search stays exact, only prunes less). Two keys share a fingerprint with probability about
// n^2 / 2^129 for n entries (below 1e-25 for the 2^21 entries of the largest table).
class NodeTable {
 public:
  explicit NodeTable(std::size_t max_entries) : max_entries_(max_entries) {}

  // True when the node was searched before with at most wait_s so far; otherwise records it with
  // wait_s (or lowers its recorded wait), while there is room.
  bool searched(std::uint64_t a, std::uint64_t b, double wait_s) {
    b |= 1;  // 0 marks an empty slot
    if (slots_.empty()) slots_.resize(kFirstSlots);
    std::size_t mask = slots_.size() - 1, at = a & mask;
    for (; slots_[at].b != 0; at = (at + 1) & mask)
      if (slots_[at].a == a && slots_[at].b == b) {
        if (slots_[at].wait_s <= wait_s) return true;
        slots_[at].wait_s = wait_s;
        return false;
      }
    if (2 * (size_ + 1) > slots_.size()) {
      if (2 * slots_.size() > 2 * max_entries_) return false;  // full: not recorded
      grow();
      mask = slots_.size() - 1;
      for (at = a & mask; slots_[at].b != 0; at = (at + 1) & mask) {
      }
    }
    slots_[at] = {a, b, wait_s};
    ++size_;
    return false;
  }

 private:
  struct Slot {
    std::uint64_t a = 0, b = 0;
    double wait_s = 0;
  };
  static constexpr std::size_t kFirstSlots = 1 << 12;

  void grow() {
    std::vector<Slot> old(2 * slots_.size());
    old.swap(slots_);
    const std::size_t mask = slots_.size() - 1;
    for (const Slot& slot : old) {
      if (slot.b == 0) continue;
      std::size_t at = slot.a & mask;
      while (slots_[at].b != 0) at = (at + 1) & mask;
      slots_[at] = slot;
    }
  }

  std::size_t max_entries_;
  std::size_t size_ = 0;
  std::vector<Slot> slots_;
};

// The largest transposition table: 2^21 entries (48 MiB of slots at most, 2^22 of 24 bytes).
constexpr std::size_t kMaxTableEntries = std::size_t{1} << 21;

// One branch-and-bound search; the state is the link-free time of each block.
class PartitionSearch {
 public:
  PartitionSearch(const BackpropTimes& times, int period, const std::vector<bool>& pinned,
                  double incumbent_wait_s, double tolerance_s, const ExactOptions& options)
      : times_(times), period_(period), pinned_(pinned), backprop_(times.backprop_s()),
        best_wait_(incumbent_wait_s), tolerance_(tolerance_s), node_limit_(options.node_limit), deadline_(options.deadline),
        link_free_(period, 0.0), block_of_(times.size(), -1), sorted_(period, 0.0), prefix_(period + 1, 0.0),
        table_(kMaxTableEntries) {
    const std::size_t n = times.size();
    // The ready times of the placeable layers (a sync, not pinned) in backprop order, the index of
    // the first at or after each layer, and the ready time of the first pinned one at or after it.
    first_placeable_.assign(n + 1, 0);
    pinned_ready_.assign(n + 1, INFINITY);
    for (std::size_t k = 0; k < n; ++k) {
      first_placeable_[k] = placeable_ready_.size();
      if (times.sync_s[k] > 0 && !is_pinned(k)) placeable_ready_.push_back(times.ready_s[k]);
    }
    first_placeable_[n] = placeable_ready_.size();
    for (std::size_t k = n; k-- > 0;)
      pinned_ready_[k] = times.sync_s[k] > 0 && is_pinned(k) ? times.ready_s[k] : pinned_ready_[k + 1];
    // Unplaced link time from layer k on (pinned layers count once per block), overflows, and how
    // many layers with a sync are pinned or not.
    weighted_suffix_.assign(n + 1, 0.0);
    overflow_suffix_.assign(n + 1, 0.0);
    pinned_suffix_.assign(n + 1, 0);
    placeable_suffix_.assign(n + 1, 0);
    for (std::size_t k = n; k-- > 0;) {
      const bool on_link = times.sync_s[k] > 0;
      pinned_suffix_[k] = pinned_suffix_[k + 1] + (on_link && is_pinned(k) ? 1 : 0);
      placeable_suffix_[k] = placeable_suffix_[k + 1] + (on_link && !is_pinned(k) ? 1 : 0);
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

  // Lower bound on the total wait of every completion of the current node, layers k.. unplaced;
  // the wait so far (sum_h (f_h - B_L)^+) in `placed`. With the blocks in ascending f order, the
  // capacities (B_L - max(t, f_h))^+ descend, so the r largest are the first r: those with f <= t
  // hide B_L - t each, the others up to f < B_L hide B_L - f (prefix sums of f): O(L + H log H).
  double node_bound(std::size_t k, double& placed) {
    std::copy(link_free_.begin(), link_free_.end(), sorted_.begin());
    std::sort(sorted_.begin(), sorted_.end());
    placed = 0;
    for (int h = 0; h < period_; ++h) placed += std::max(0.0, sorted_[h] - backprop_);
    // Distinct first layers: the blocks that receive unplaced layers receive distinct first ones
    // (a pinned layer goes to all), so the i-th smallest of max(f_h, B of the block's first
    // unplaced layer) is at least max(f_(i), g_i), g_i the ready time of the i-th unplaced
    // placeable layer (or of the first unplaced pinned one, if earlier); a block that receives none
    // hides nothing (g = infinity). docs/time-model.md section 14.
    const std::size_t first = first_placeable_[k];
    const double pinned_ready = pinned_ready_[k];
    for (int h = 0; h < period_; ++h) {
      const std::size_t i = first + static_cast<std::size_t>(h);
      const double g = std::min(i < placeable_ready_.size() ? placeable_ready_[i] : INFINITY, pinned_ready);
      sorted_[h] = std::max(sorted_[h], g);
      prefix_[h + 1] = prefix_[h] + (std::isfinite(sorted_[h]) ? sorted_[h] : backprop_);
    }
    const int hiding = static_cast<int>(std::lower_bound(sorted_.begin(), sorted_.end(), backprop_) - sorted_.begin());
    double rest = overflow_suffix_[k];
    int idle = 0;  // blocks with f_h <= t
    for (std::size_t t = k; t < times_.size(); ++t) {
      if (times_.sync_s[t] == 0 || (t > k && times_.ready_s[t - 1] == times_.ready_s[t])) continue;
      const double threshold = times_.ready_s[t];
      while (idle < period_ && sorted_[idle] <= threshold) ++idle;
      const int receiving = pinned_suffix_[t] > 0 ? period_ : std::min(period_, placeable_suffix_[t]);
      double hidden = std::min(idle, receiving) * std::max(0.0, backprop_ - threshold);
      if (const int last = std::min(receiving, hiding); last > idle)
        hidden += (last - idle) * backprop_ - (prefix_[last] - prefix_[idle]);
      // The layers ready before t add their overflows on top (a block's wait is at least its
      // earlier layers' overflows plus what its later ones cannot hide; docs/time-model.md 14).
      rest = std::max(rest, (overflow_suffix_[k] - overflow_suffix_[t]) + weighted_suffix_[t] - hidden);
    }
    return placed + rest;
  }

  // True when a node at layer k that later layers cannot tell from this one was searched before
  // with at most this wait so far (`placed`): its key is the multiset of the blocks' f_h, each
  // raised to B_k (no later layer starts earlier) and lowered to B_L (there every later sync adds
  // its c_j to the wait), and k. The earlier search pruned only against a best wait at least the
  // current one, so nothing shorter by more than the tolerance lies below this node.
  bool searched_before(std::size_t k, double placed) {
    for (int h = 0; h < period_; ++h) sorted_[h] = std::clamp(link_free_[h], times_.ready_s[k], backprop_);
    std::sort(sorted_.begin(), sorted_.end());
    std::uint64_t a = mix(k + 0x9e3779b97f4a7c15ULL), b = mix(~static_cast<std::uint64_t>(k));
    for (const double f : sorted_) {
      std::uint64_t bits = 0;
      std::memcpy(&bits, &f, sizeof bits);
      a = mix(a ^ bits);
      b = mix((b + bits) * 0xff51afd7ed558ccdULL);
    }
    return table_.searched(a, b, placed);
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
    double placed = 0;
    if (node_bound(k, placed) >= best_wait_ - tolerance_ || searched_before(k, placed)) {
      link_free_ = saved;
      return;
    }
    // One child per distinct start max(B_k, f_h), one for all blocks with f_h >= B_L; least added
    // wait first, then the latest start (the tightest fit, which keeps idle blocks for later layers).
    const double ready = times_.ready_s[k], sync = times_.sync_s[k];
    const auto start_class = [&](int h) {
      return link_free_[h] >= backprop_ ? INFINITY : std::max(ready, link_free_[h]);
    };
    std::vector<int> children;
    for (int h = 0; h < period_; ++h) {
      const double start = start_class(h);
      bool seen = false;
      for (const int other : children) seen |= start_class(other) == start;
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
  std::vector<int> pinned_suffix_, placeable_suffix_;      // from layer k on: layers with a sync, pinned or not
  std::vector<double> placeable_ready_;                    // ready times of the placeable layers, backprop order
  std::vector<std::size_t> first_placeable_;               // per layer k: index in placeable_ready_ of the first at or after k
  std::vector<double> pinned_ready_;                       // per layer k: ready time of the first pinned layer at or after k
  std::vector<double> sorted_, prefix_;                    // scratch: the blocks' f_h ascending, prefix sums
  NodeTable table_;
  long long nodes_ = 0;
  bool cut_ = false;
  bool improved_ = false;
  bool time_limited_ = false;
};

}  // namespace

int exact_placeable_layers(const BackpropTimes& times, const std::vector<bool>& every_iteration) {
  int placeable = 0;
  for (std::size_t j = 0; j < times.size(); ++j)
    placeable += !(j < every_iteration.size() && every_iteration[j]) && times.sync_s[j] > 0 ? 1 : 0;
  return placeable;
}

ExactResult plan_exact(const BackpropTimes& times, int period, const std::vector<bool>& every_iteration,
                       const PlanCandidate& incumbent, const ExactOptions& options) {
  require_valid_period(period);
  SYNCPLAN_CHECK(incumbent.assignment.period() == period);
  ExactResult result{incumbent, {}};
  const auto pinned = [&](std::size_t j) { return j < every_iteration.size() && every_iteration[j]; };
  if (exact_placeable_layers(times, every_iteration) > options.max_layers) return result;
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

RelaxedResult relaxed_lower_bound(const BackpropTimes& times, int period, const std::vector<bool>& every_iteration,
                                  const PlanCandidate& incumbent, const ExactOptions& options,
                                  const std::vector<double>& fractions, long long relaxed_nodes) {
  RelaxedResult result;
  const double largest = times.sync_s.empty() ? 0 : *std::max_element(times.sync_s.begin(), times.sync_s.end());
  if (!(largest > 0)) return result;
  for (const double fraction : fractions) {
    BackpropTimes reduced = times;
    int dropped = 0;
    for (double& sync : reduced.sync_s)
      if (sync > 0 && sync < fraction * largest) sync = 0, ++dropped;
    if (dropped == 0) continue;
    ExactOptions relaxed = options;
    relaxed.node_limit = std::min(options.node_limit, relaxed_nodes);
    const ExactResult run = plan_exact(reduced, period, every_iteration, incumbent, relaxed);
    result.nodes += run.run.nodes;
    if (run.run.improved) result.candidate = run.candidate;
    if (run.run.time_limited) {
      result.time_limited = true;
      return result;
    }
    if (!run.run.ran || !run.run.proven_optimal) continue;
    const double bound = time_assignment(reduced, run.candidate.assignment).period_s;
    result.bound = RelaxedBound{fraction, dropped, run.run.nodes, bound};
    return result;
  }
  return result;
}

}  // namespace syncplan
