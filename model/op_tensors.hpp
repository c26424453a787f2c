// The tensors each op's kernels read and write, by name, element count and role: one list shared
// by the CPU and CUDA profilers (which allocate and fill them) and the CUDA-versus-CPU test (which
// compares the outputs), so that every backend runs the same op on the same shapes.
#pragma once

#include "core/counter_random.hpp"
#include "model/model_layers.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace syncplan {

/// How a tensor's elements are stored.
enum class TensorKind {
  kValue,     ///< activations, parameters and gradients: the workload's dtype (fp32 on the CPU)
  kFloat32,   ///< saved statistics (a norm's mean and rstd, log-sum-exp, per-token losses): fp32 always
  kTokenId,   ///< int64 indices in [0, id_bound): token ids, targets
  kMask,      ///< uint8 dropout masks, 1 = kept
};

/// What a tensor is to the op's two passes.
enum class TensorRole {
  kInput,           ///< read by the forward (activations and parameters): filled at random
  kOutput,          ///< written by the forward (and read by the backward)
  kGradInput,       ///< the gradient arriving from above, read by the backward: filled at random
  kGradOutput,      ///< written (=) by the backward
  kGradAccumulate,  ///< added into (+=) by the backward (parameter gradients): starts at zero
};

/// Which pass of an op to run.
enum class Pass { kForward, kBackward };

/// One tensor of an op.
struct OpTensor {
  std::string name;             ///< the kernel argument's name, e.g. "x", "weight", "d_weight"
  std::int64_t elements = 0;    ///< element count (shape in model/cpu/kernels.hpp), >= 1
  TensorKind kind = TensorKind::kValue;
  TensorRole role = TensorRole::kInput;
  std::int64_t id_bound = 0;    ///< kTokenId only: values are drawn from [0, id_bound)
};

/// The tensors of `op` at `workload`'s batch and sequence length, in a fixed order. Empty for ops
/// that run no kernel: dropout with p = 0 (PyTorch's identity; models.md 3.4).
std::vector<OpTensor> op_tensors(const LayerOp& op, const Workload& workload);

/// Whether `op` has a backward pass (the rotary table has none: it depends on no parameter).
bool op_has_backward(const LayerOp& op);

/// The random stream that fills tensor number `index` of an op filled from `seed`: element e is
/// counter_signed_uniform(stream, e) (ids: counter_index(stream, e, id_bound)) on host and device alike.
inline std::uint64_t tensor_fill_stream(std::uint64_t seed, std::size_t index) {
  return splitmix64(seed * 0x100000001B3ull + index);
}

/// Bytes of one element of `kind` in `dtype`.
std::int64_t tensor_element_bytes(TensorKind kind, Dtype dtype);

/// Bytes of all of `tensors` in `dtype`.
std::int64_t op_tensor_bytes(const std::vector<OpTensor>& tensors, Dtype dtype);

/// The kernels' shape check: throws InternalError "kernel tensor 'NAME' has N elements, expected
/// M" unless actual == expected (a wrong length is a bug in the caller, not bad user input).
void require_elements(std::size_t actual, std::int64_t expected, const char* name);

}  // namespace syncplan
