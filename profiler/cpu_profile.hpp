// The CPU backend of `syncplan profile --device cpu`: every layer's ops run on host buffers with
// the reference kernels (model/cpu/kernels.hpp), timed with std::chrono::steady_clock
// (docs/profiler.md section 3).
#pragma once

#include "profiler/measurement.hpp"
#include "model/model_spec.hpp"
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

/// Times every layer of `model` on the CPU (fp32 only): all buffers allocated and filled first,
/// then `options.warmup_steps` untimed and `options.repeats` timed steps, each a forward through
/// the layers in order and a backward in reverse, each layer timed alone with steady_clock.
/// Throws InputError "--dtype bf16: ..." for bf16, and "--batch/--seq: ..." when the buffers would
/// not fit in the available memory. Source "measured:cpu".
Measurement measure_cpu(const Model& model, const Workload& workload, const TimingOptions& options);

/// The best FLOP/s of square fp32 Eigen GEMMs (n = 256, 512, 1024; best of 5 each, after one
/// untimed run): the ceiling of the CPU profile's check. `shape` is set to the best size.
double gemm_ceiling_cpu(std::string& shape);

}  // namespace syncplan
