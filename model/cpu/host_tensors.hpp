// One op's tensors on the host, filled from a seed, and one pass of the op on them with the CPU
// kernels: the reference the CUDA kernels are compared with (tests/kernels/test_cuda_kernels.cu)
// and the per-op kernel tests' harness.
#pragma once

#include "model/op_tensors.hpp"

#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace syncplan {

/// Host buffers for the tensors of one op (op_tensors): value and fp32 tensors as fp32, token ids
/// as int64, masks as bytes. Inputs and arriving gradients are filled with uniform numbers in
/// [-1, 1) (ids uniform in [0, id_bound)) from `seed` (tensor_fill_stream, the same numbers the
/// CUDA profiler draws); everything else starts at zero.
class HostTensors {
 public:
  HostTensors(std::vector<OpTensor> tensors, std::uint64_t seed);

  const std::vector<OpTensor>& tensors() const { return tensors_; }
  bool has(const std::string& name) const;
  /// A value or fp32 tensor; empty when the op has none of that name (a linear without bias).
  std::span<float> values(const std::string& name);
  /// A token-id tensor. Throws InternalError when absent.
  std::span<const std::int64_t> ids(const std::string& name) const;
  /// A mask tensor; empty when absent (dropout p = 0).
  std::span<std::uint8_t> mask(const std::string& name);

 private:
  std::size_t index(const std::string& name) const;  // tensors_.size() when absent
  std::vector<OpTensor> tensors_;
  std::vector<std::vector<float>> values_;         // per tensor; empty unless kValue or kFloat32
  std::vector<std::vector<std::int64_t>> ids_;     // per tensor; empty unless kTokenId
  std::vector<std::vector<std::uint8_t>> masks_;   // per tensor; empty unless kMask
};

/// Runs one pass of `op` on `tensors` (made from op_tensors(op, workload)) with the CPU kernels.
/// `seed` draws dropout masks. The cross-entropy's backward starts from d_loss = 1.
void run_op_cpu(const LayerOp& op, const Workload& workload, Pass pass, HostTensors& tensors, std::uint64_t seed);

}  // namespace syncplan
