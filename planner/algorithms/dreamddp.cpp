// dreamddp: DreamDDP's depth-first search over contiguous groups in backprop order (arXiv
// 2502.11058; SPEC section 5's pseudocode), written from the algorithm with its three pruning
// rules: optimal hiding (a layer whose sync still fits before backprop ends joins the iteration),
// at-least-one assignment (an iteration's first layer always stays), delayed assignment (the first
// layer that does not fit either stays and pays its overflow or opens the next iteration).
// Unlike the released implementation, the link state restarts at the gradient's ready time when
// the link went idle (sync start = max(B_j, link free), SPEC section 5).
//
// The search's result depends only on (first unassigned layer, iteration), so it is memoized:
// O(L min(H, L)) states, each scanning at most L layers.
#include "planner/algorithms/algorithms.hpp"

#include "core/errors.hpp"
#include "simulator/strategies/strategies.hpp"

#include <algorithm>
#include <vector>

namespace syncplan {

namespace {

class DreamddpSearch {
 public:
  DreamddpSearch(const BackpropTimes& times, int period)
      : times_(times),
        period_(period),
        layer_count_(static_cast<int>(times.size())),
        depth_(std::min(period, layer_count_) + 1),
        memo_(static_cast<std::size_t>(layer_count_ + 1) * depth_) {}

  // Least total wait of layers s.. over iterations h..H-1; records where iteration h's group ends.
  double search(int s, int h) {
    if (s >= layer_count_) return 0;
    SYNCPLAN_CHECK(h < depth_);  // each iteration takes at least one layer, so h <= s
    Node& node = memo_[static_cast<std::size_t>(s) * depth_ + h];
    if (node.solved) return node.wait_s;
    const double backprop = times_.backprop_s();
    double wait = 0;
    int group_end = layer_count_;  // all layers s.. hidden in iteration h
    if (period_ - h == 1) {
      std::vector<int> rest;
      for (int j = s; j < layer_count_; ++j) rest.push_back(j);
      wait = iteration_wait_s(times_, rest);
    } else {
      double link_free = 0;
      for (int j = s; j < layer_count_; ++j) {
        const double start = std::max(times_.ready_s[j], link_free);
        const double remaining = backprop - start;
        if (times_.sync_s[j] <= remaining) {  // optimal hiding
          link_free = start + times_.sync_s[j];
          continue;
        }
        const double overflow = times_.sync_s[j] - remaining;
        const double keep = overflow + search(j + 1, h + 1);
        if (j == s) {  // at least one layer per iteration
          wait = keep;
          group_end = j + 1;
        } else {  // delayed assignment: j stays and pays, or opens the next iteration
          const double delay = search(j, h + 1);
          wait = keep <= delay ? keep : delay;
          group_end = keep <= delay ? j + 1 : j;
        }
        break;
      }
    }
    node = Node{true, wait, group_end};
    return wait;
  }

  Assignment assignment() {
    Assignment result;
    result.iterations.resize(period_);
    for (int s = 0, h = 0; s < layer_count_; ++h) {
      search(s, h);
      const int end = memo_[static_cast<std::size_t>(s) * depth_ + h].group_end;
      for (int j = s; j < end; ++j) result.iterations[h].push_back(j);
      s = end;
    }
    return result;
  }

 private:
  struct Node {
    bool solved = false;
    double wait_s = 0;   // least total wait from this state (s)
    int group_end = 0;   // iteration h takes layers s..group_end-1
  };
  const BackpropTimes& times_;
  int period_;
  int layer_count_;
  int depth_;
  std::vector<Node> memo_;
};

}  // namespace

PlanCandidate plan_dreamddp(const BackpropTimes& times, int period) {
  require_valid_period(period);
  DreamddpSearch search(times, period);
  search.search(0, 0);
  return {"dreamddp", search.assignment()};
}

}  // namespace syncplan
