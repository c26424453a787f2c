// One rank's training on a CUDA device (docs/runtime.md section 10): the CUDA layer graph in fp32,
// AdamW on the device, one compute stream, and CUDA events around every layer's forward and
// backward (the measured trace's times) whose backward events order a communicator's buckets
// after the layers they hold. The GPU backend library exposes it through GpuTrainingEntryPoints
// (profiler/gpu_backend.hpp, which copies LayerTimes into its GpuIterationTimes); the runtime
// trains with it through that table.
#pragma once

#include "model/adamw.hpp"
#include "model/cuda/cuda_graph.cuh"

#include <cuda_runtime.h>

#include <cstdint>
#include <span>
#include <vector>

namespace syncplan::cuda {

/// Where one layer's forward and backward (or the optimizer step: forward_* only) ran in the last
/// iteration: seconds after CudaTrainer::begin, from CUDA events.
struct LayerTimes {
  double forward_start_s = 0, forward_s = 0;
  double backward_start_s = 0, backward_s = 0;
};

/// Enqueues one AdamW step (model/adamw.hpp's formula, Loshchilov and Hutter, ICLR 2019, Algorithm
/// 2) over `parameters` [n] with `gradients` [n] and the moments `first_moment`, `second_moment`
/// [n], all fp32 device memory, at step number `step` (t >= 1: the count after this step). The
/// arithmetic is AdamW::step's, operation for operation and without fused multiply-adds
/// (__fmul_rn, __fadd_rn; IEEE division and square root), so that it gives the CPU's bits.
/// InternalError when the lengths differ or step < 1.
void adamw_step(std::span<float> parameters, std::span<const float> gradients, std::span<float> first_moment,
                std::span<float> second_moment, const AdamWOptions& options, std::int64_t step, cudaStream_t stream);

/// The training state of one rank on CUDA device `device`: a CudaGraph (fp32), AdamW's moments,
/// a compute stream and the timing events. The order of calls per step is the CPU trainer's:
/// set_batch, begin, forward(0..L-1), backward(L-1..0), step, finish. Not thread-safe.
class CudaTrainer {
 public:
  /// Selects `device`, builds the graph and allocates the moments. Throws InputError when the
  /// workload is not fp32 or the buffers do not fit (CudaGraph), LibraryError when CUDA fails.
  CudaTrainer(const Model& model, const Workload& workload, const AdamWOptions& adamw, int device);
  ~CudaTrainer();
  CudaTrainer(const CudaTrainer&) = delete;
  CudaTrainer& operator=(const CudaTrainer&) = delete;

  std::size_t layer_count() const { return graph_.layer_count(); }
  std::int64_t parameter_count() const { return graph_.parameters().elements; }

  /// Parameters from `seed` (the CPU's numbers). Synchronizes.
  void initialize(std::uint64_t seed);
  /// This step's batch (host memory; CudaGraph::set_batch's checks) and dropout seed. Synchronizes.
  void set_batch(std::span<const std::int64_t> ids, std::span<const std::int64_t> targets, std::uint64_t dropout_seed);
  /// Records the origin event of the iteration's times and enqueues the gradients' zeroing.
  void begin();
  /// Enqueues layer `layer`'s forward between its two timing events.
  void forward(std::size_t layer);
  /// Enqueues layer `layer`'s backward between its two timing events; returns the second, which
  /// a bucket holding the layer waits for.
  cudaEvent_t backward(std::size_t layer);
  /// Enqueues AdamW over every parameter (step counter + 1); frozen layers' parameters are copied
  /// aside before it and back after it, as the CPU trainer does.
  void step();
  /// Synchronizes the stream; returns the mean loss of the iteration's forward and fills
  /// times[l] (layer_count() of them) and `update` (forward_* only), in seconds after begin().
  double finish(std::span<LayerTimes> times, LayerTimes& update);
  /// Layer `layer`'s parameter or gradient tensors (its owner's when tied), in device memory.
  std::vector<DeviceSpan> layer_buffers(std::size_t layer, bool gradients) const;
  /// Copies the parameters and moments (parameter_count() floats each, host memory) and the step
  /// counter out of, or into, the trainer. Both synchronize.
  void get_state(float* parameters, float* first_moment, float* second_moment, std::int64_t& adam_step) const;
  void set_state(const float* parameters, const float* first_moment, const float* second_moment, std::int64_t adam_step);

  /// Delayed averaging (docs/runtime.md section 11): `floats` fp32 of device memory, owned by the
  /// trainer until it is destroyed. LibraryError when CUDA cannot allocate it.
  float* snapshot_buffer(std::size_t floats);
  /// Enqueues, after the work enqueued so far, copies of `tensors` (fp32, device memory) one after
  /// another into `own` and into `mean` (each at least their total floats); returns the event
  /// recorded after them (the same event object every call, recorded anew), which the all-reduce
  /// of `mean` waits for. InternalError for a tensor not fp32.
  cudaEvent_t snapshot(std::span<const DeviceSpan> tensors, float* own, float* mean);
  /// Enqueues p <- p + (mean - own) over `tensors` (laid out as snapshot copied them), fp32 with
  /// IEEE rounding and no fused multiply-add (the CPU executor's bits); later work (the step) runs
  /// after it on the stream. `mean` must be complete (the communicator's test said so).
  void correct(std::span<const DeviceSpan> tensors, const float* own, const float* mean);

 private:
  static int select(int device);
  float* parameters() const { return static_cast<float*>(graph_.parameters().data); }

  int device_;
  CudaGraph graph_;
  AdamWOptions options_;
  cudaStream_t stream_ = nullptr;
  DeviceBuffer first_moment_, second_moment_;
  std::vector<DeviceSpan> frozen_;  // frozen layers' own parameter tensors
  DeviceBuffer frozen_copy_;
  std::int64_t adam_step_ = 0;
  cudaEvent_t origin_ = nullptr, update_start_ = nullptr, update_end_ = nullptr;
  cudaEvent_t snapshot_done_ = nullptr;  // recorded after each snapshot's copies
  std::vector<DeviceBuffer> snapshots_;  // snapshot_buffer's allocations
  std::vector<cudaEvent_t> forward_start_, forward_end_, backward_start_, backward_end_;
};

}  // namespace syncplan::cuda
