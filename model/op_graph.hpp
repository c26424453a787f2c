// One op alone as a layer graph: the kernel tests run each op through the real backends
// (cpu::CpuGraph, cuda::CudaGraph), the graph visitors the profilers time and the trainers train
// with, as ggml's test-backend-ops builds a one-op graph per backend (docs/profiler.md section 4).
#pragma once

#include "model/layer_graph.hpp"

#include <string>
#include <vector>

namespace syncplan {

/// A tensor of an op graph and its gradient.
struct OpGraphTensor {
  std::string name;  ///< the step's field: "x", "weight", "probs", "losses", ...
  TensorRef value;   ///< kParameters for a parameter, else kActivations
  TensorRef grad;    ///< kGradients or kActivationGrads; elements 0 when it has none
};

/// One op as a graph of one layer named "op" holding its one step (no step for dropout with
/// p = 0, the identity), every tensor a buffer of its own, the q, k and v of attention contiguous.
/// Token ids and targets are the graph's batch (set_batch): its vocab_size is the op's vocabulary
/// (token embedding, cross-entropy), else 1.
struct OpGraph {
  LayerGraph graph;
  /// What the forward reads: activations and parameters. `grad` is what the backward writes
  /// (activations: =) or adds into (parameters: +=); for a position embedding's input and a
  /// residual addition's branch it is the output's gradient itself, as in the model's graph.
  std::vector<OpGraphTensor> inputs;
  /// What the forward writes, saved statistics included (mean, rstd, losses, lse: no gradient).
  /// `grad` is the gradient arriving from above, which the backward reads.
  std::vector<OpGraphTensor> outputs;
  /// Dropout masks the forward draws (kMasks).
  std::vector<TensorRef> masks;
};

/// The one-op graph of `op` at `workload` (batch, seq; the dtype is the backend's to check).
/// Throws InternalError for a workload with batch or seq below 1.
OpGraph build_op_graph(const LayerOp& op, const Workload& workload);

}  // namespace syncplan
