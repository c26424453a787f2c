// Where a rank's model trains (docs/runtime.md section 10): one interface over the CPU (CpuGraph
// and AdamW on the host, timed with the run clock) and a CUDA device (the GPU backend library's
// CudaTrainer through GpuTrainingEntryPoints, timed with CUDA events), so that the trainer's loop,
// its executor, checkpoints, log and trace are the same code for both.
#pragma once

#include "model/adamw.hpp"
#include "model/model_spec.hpp"
#include "profiler/gpu_backend.hpp"
#include "runtime/checkpoint.hpp"
#include "runtime/trace.hpp"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

namespace syncplan {

/// When one pass ran, in seconds on the run clock.
struct PassTime {
  double start_s = 0;
  double duration_s = 0;
};

/// What one iteration's computation took: per layer (forward order) its forward and backward, the
/// optimizer step (frozen layers' restore included), and the mean loss of the forward.
struct IterationCompute {
  std::vector<PassTime> forward, backward;
  PassTime update;
  double loss = 0;
  /// The sum of every pass's duration (s): the iteration's compute time.
  double compute_s() const;
};

/// One rank's model and optimizer on a device. The order of calls per optimizer step:
///   set_batch, begin, forward(0 .. L-1), backward(L-1 .. 0), step, finish.
/// On the CPU each call computes before it returns; on a GPU the calls only enqueue, and finish
/// waits for the device. Not thread-safe.
class TrainingDevice {
 public:
  virtual ~TrainingDevice() = default;
  /// "cpu" or "cuda".
  virtual const char* name() const = 0;
  /// True when the calls only enqueue work (a GPU: the host runs ahead of the device and waits in
  /// finish), false when each computes before it returns (the CPU).
  virtual bool asynchronous() const = 0;
  virtual std::size_t layer_count() const = 0;
  /// Floats in the parameter arena (P).
  virtual std::int64_t parameter_count() const = 0;
  /// Every parameter from `seed` (model/layer_graph.hpp's initialize_parameters: the same numbers
  /// on every device).
  virtual void initialize(std::uint64_t seed) = 0;
  /// This step's token ids and targets [B S] (host memory) and its dropout seed.
  virtual void set_batch(std::span<const std::int64_t> ids, std::span<const std::int64_t> targets,
                         std::uint64_t dropout_seed) = 0;
  /// Starts an iteration (zeroes the gradients); its passes are timed from here.
  virtual void begin() = 0;
  virtual void forward(std::size_t layer) = 0;
  /// Layer `layer`'s backward; returns what a bucket holding the layer must wait for before its
  /// all-reduce reads the layer's tensors: null on the CPU (done on return), the cudaEvent_t
  /// recorded after the layer on a GPU (CommBackendTable::start's ready_event).
  virtual void* backward(std::size_t layer) = 0;
  /// AdamW over every parameter; frozen layers' parameters stay as they were.
  virtual void step() = 0;
  /// Waits until the iteration's computation is done and returns its times and loss.
  virtual IterationCompute finish() = 0;
  /// Layer `layer`'s parameter or gradient tensors (its owner's when tied), fp32, in the memory
  /// the device's communicator averages (host for the CPU, device for a GPU); they stay in place
  /// for the device's life.
  virtual std::vector<std::span<float>> layer_buffers(std::size_t layer, bool gradients) = 0;
  /// The parameters, AdamW's moments and step counter into `state` (a checkpoint's tensors).
  virtual void save(TrainingState& state) const = 0;
  /// Puts `state`'s parameters, moments and step counter back. InputError "AdamW state: ..." when
  /// a tensor's length is not parameter_count().
  virtual void restore(const TrainingState& state) = 0;
  /// Delayed averaging in the device's memory (docs/runtime.md section 11): true when the device
  /// offers snapshot_buffer, snapshot and correct (a GPU whose backend has them); false on the CPU,
  /// whose tensors are host memory (the executor copies them itself).
  virtual bool device_snapshots() const { return false; }
  /// `floats` floats of device memory for a snapshot, owned by the device. InternalError where
  /// device_snapshots() is false.
  virtual std::span<float> snapshot_buffer(std::size_t floats);
  /// Enqueues copies of `tensors` into `own` and `mean` after the work enqueued so far; returns
  /// the event mean's all-reduce waits for (ExecutorOptions::device_snapshots). InternalError where
  /// device_snapshots() is false.
  virtual void* snapshot(std::span<const std::span<float>> tensors, std::span<float> own, std::span<float> mean);
  /// Enqueues p <- p + (mean - own) over `tensors` before the work enqueued after it (the step).
  /// InternalError where device_snapshots() is false.
  virtual void correct(std::span<const std::span<float>> tensors, std::span<const float> own,
                       std::span<const float> mean);
};

/// The CPU device: model/cpu's CpuGraph in fp32 and model/adamw's AdamW, each pass timed on
/// `clock` (which must outlive the device). Throws InputError as CpuGraph and AdamW do, and
/// FieldError("batch") when the host cannot hold the buffers (cpu::require_host_memory).
std::unique_ptr<TrainingDevice> make_cpu_training_device(const Model& model, const Workload& workload,
                                                         const AdamWOptions& adamw, const RunClock& clock);

/// A CUDA device of the GPU backend library `gpu`: its CudaTrainer (fp32) on CUDA device `device`;
/// the passes are timed with CUDA events from begin(), placed on `clock` at the host time begin()
/// was called (the stream is idle then: the previous finish waited for it). Throws FieldError
/// "device cuda: ..." when the library has no trainer, and what the library reports (InputError
/// when the model does not fit in the device's memory, LibraryError when CUDA fails).
std::unique_ptr<TrainingDevice> make_cuda_training_device(const GpuBackend& gpu, const Model& model,
                                                          const Workload& workload, const AdamWOptions& adamw,
                                                          int device, const RunClock& clock);

}  // namespace syncplan
