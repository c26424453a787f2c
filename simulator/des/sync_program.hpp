// What a strategy asks the communication streams to do in each iteration of a period: a list of
// all-reduces (one per layer, or per bucket of layers) and when each is issued (docs/des.md).
#pragma once

#include "core/profile.hpp"
#include "simulator/bucket_fusion.hpp"
#include "simulator/period_model.hpp"

#include <functional>
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

/// S-SGD without overlap: every layer after backprop, every iteration.
SyncProgram ssgd_program(std::size_t layer_count, int period);

/// Full local SGD: every layer after the update of the period's last iteration.
SyncProgram flsgd_program(std::size_t layer_count, int period);

/// PyTorch DDP's gradient buckets, every iteration (docs/des.md "ddp"): layers in backprop order
/// join the open bucket, which closes once it holds at least `bucket_cap_bytes` (the first bucket:
/// `first_bucket_bytes`), as torch.distributed's compute_bucket_assignment_by_size does; a layer
/// is never split.
/// `param_bytes` in backprop order.
SyncProgram ddp_program(const std::vector<double>& param_bytes, int period, double bucket_cap_bytes,
                        double first_bucket_bytes);

/// MG-WFBP's merged gradients, every iteration (Shi et al., "MG-WFBP", INFOCOM 2019; docs/des.md
/// "mgwfbp"): walking backprop order, a layer joins the bucket before it when the bucket then
/// ends no later than syncing them separately would, with bucket time `allreduce_s(bytes)`.
/// `param_bytes` and `times` in backprop order.
SyncProgram mgwfbp_program(const BackpropTimes& times, const std::vector<double>& param_bytes, int period,
                           const std::function<double(double bytes)>& allreduce_s);

}  // namespace syncplan
