// What a strategy asks the communication streams to do in each iteration of a period: a list of
// all-reduces (one per layer, or per bucket of layers) and when each is issued (docs/des.md).
#pragma once

#include "core/profile.hpp"
#include "simulator/bucket_fusion.hpp"
#include "simulator/period_model.hpp"

#include <string>
#include <vector>

namespace syncplan {

/// When an all-reduce is issued on a worker.
enum class IssuePoint {
  kGradientReady,  ///< when the gradient of its last layer (highest backprop index) is ready (WFBP)
  kAfterBackward,  ///< when backprop ends (S-SGD without overlap)
  kAfterUpdate,    ///< after the optimizer update (local SGD's model average)
};

/// One all-reduce: a bucket of layers in backprop order.
struct SyncOp {
  std::vector<int> layers;          ///< backprop indices, ascending (one layer, or a bucket)
  IssuePoint issue = IssuePoint::kGradientReady;
  /// Delayed averaging (docs/time-model.md section 13): the op of iteration h must end before the
  /// update of iteration h + delay, not h's (only kGradientReady ops; h + delay <= H - 1).
  int delay = 0;
};

/// The all-reduces of each iteration of one period, in issue order. kGradientReady ops come first
/// in ascending order of their last layer, then kAfterBackward, then kAfterUpdate ops.
struct SyncProgram {
  std::vector<std::vector<SyncOp>> iterations;  ///< H entries
  int period() const { return static_cast<int>(iterations.size()); }
};

/// Every layer of S_h as its own all-reduce, issued when its gradient is ready (the period model's
/// semantics, SPEC section 5): wfbp, plsgd-even, dreamddp, dp and plans.
SyncProgram program_from_assignment(const Assignment& assignment);

/// A plan's buckets (bucket fusion, docs/time-model.md section 12): one all-reduce per bucket,
/// issued when the gradient of its last layer is ready.
SyncProgram program_from_buckets(const Buckets& buckets);

/// Every layer as its own all-reduce issued at `issue`, in every iteration (`every_iteration`) or
/// only in the period's last. Throws FieldError "period: ..." when period < 1.
SyncProgram all_layers_program(std::size_t layer_count, int period, IssuePoint issue, bool every_iteration);

/// The same `buckets` (backprop indices) in every iteration, each issued when its last gradient is
/// ready. Throws FieldError "period: ..." when period < 1.
SyncProgram every_iteration_program(const std::vector<std::vector<int>>& buckets, int period);

/// The bytes of the largest all-reduce in `program`: the most, over its ops, of the ops' layers'
/// `param_bytes` (backprop order, DesLayers::param_bytes) summed; unknown (NaN) sizes count as 0.
double largest_allreduce_bytes(const SyncProgram& program, const std::vector<double>& param_bytes);

}  // namespace syncplan
