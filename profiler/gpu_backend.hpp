// The GPU backend (docs/comm.md section 4): CUDA kernels, cuBLAS, the CUDA profiler and NCCL live
// in one shared library, libsyncplan_gpu.so, that syncplan loads with dlopen only when a command
// needs a GPU (as ggml loads its backends). The library exports one C function returning a table
// of functions with a version; no exception crosses it (AbiStatus). This header needs no CUDA.
#pragma once

#include "comm/abi_status.hpp"
#include "comm/communicator.hpp"
#include "comm/mpi_session.hpp"
#include "comm/nccl_backend.hpp"
#include "model/adamw.hpp"
#include "model/model_spec.hpp"
#include "profiler/measurement.hpp"

#include <cstddef>
#include <optional>
#include <string>

namespace syncplan {

extern "C" {

/// The version of GpuBackendTable; a library of another version is refused. The table passes C++
/// objects (Model, Measurement) by pointer: the library must come from the same build. 2:
/// LayerSamples gained update_s (the CPU profile's optimizer step), so a version-1 library's
/// Measurement has another layout. 3: the table gained `training` (GpuTrainingEntryPoints). 4:
/// the trainer gained delayed averaging's snapshot_buffer, snapshot and correct.
inline constexpr int kGpuBackendVersion = 4;
/// The one symbol the library exports: `const GpuBackendTable* syncplan_gpu_backend(void)`.
inline constexpr const char* kGpuBackendEntryPoint = "syncplan_gpu_backend";
/// The library's file name, looked for in ../lib beside the executable.
inline constexpr const char* kGpuBackendFileName = "libsyncplan_gpu.so";

/// Where one layer's forward and backward ran on the GPU in the last iteration, and the optimizer
/// step: seconds after the iteration's origin (GpuTrainingEntryPoints::begin), from CUDA events.
struct GpuIterationTimes {
  double forward_start_s = 0, forward_s = 0;
  double backward_start_s = 0, backward_s = 0;
};

/// The training functions of the GPU backend library (docs/runtime.md section 10): one rank's
/// model on one CUDA device, as model/cuda/cuda_trainer.cuh's CudaTrainer runs it (the layer graph
/// in fp32, AdamW on the device, one compute stream, CUDA events around every layer). Every
/// function but destroy and parameter_count returns kAbiOk or the error in `status`; `state` is
/// create's result.
/// create: cudaSetDevice(device), the graph of `model` for `workload` (fp32 only), AdamW's moments
///   (zero), the stream and the events; *out the state. InputError when it does not fit.
/// destroy: releases everything (no status: a release has no one to tell).
/// initialize: parameters from `seed` (initialize_parameters: the CPU's numbers).
/// set_batch: `tokens` ids and targets (host memory), and the dropout seed of this step.
/// begin: records the iteration's origin event and enqueues the gradients' zeroing.
/// forward, backward: enqueue one layer (with its timing events); backward's *ready_event is the
///   event recorded after it, which a communicator's bucket waits for (cudaEvent_t, never null).
/// step: enqueues AdamW over every parameter; frozen layers' parameters are put back after it.
/// finish: synchronizes the stream; *loss the iteration's mean loss; times[layer] for each of the
///   `layers` layers and *update the optimizer step (its forward_* fields; backward_* zero).
/// layer_buffers: layer `layer`'s parameter (gradients 0) or gradient (1) tensors on the device,
///   at most `capacity` into `out`, their number in *count (InternalError when more).
/// get_state, set_state: parameters and AdamW's moments, parameter_count floats each in host
///   memory, and AdamW's step counter (a checkpoint); set_state synchronizes.
/// parameter_count: floats in the parameter arena.
/// Delayed averaging (docs/runtime.md section 11, docs/time-model.md section 13), in device memory:
/// snapshot_buffer: `floats` fp32 of device memory owned by the trainer (freed by destroy), *out.
/// snapshot: enqueues, after the work enqueued so far, copies of the `count` tensors (device
///   memory) one after another into `own` and into `mean` (device memory of snapshot_buffer, at
///   least their total floats each); *ready_event is the event recorded after them, which the
///   all-reduce of `mean` waits for (cudaEvent_t, recorded anew at each call).
/// correct: enqueues p <- p + (mean - own) over the tensors (the same order and layout), in fp32
///   without fused multiply-adds (the CPU's bits), before the work enqueued after it (the step).
struct GpuTrainingEntryPoints {
  int (*create)(const Model* model, const Workload* workload, const AdamWOptions* adamw, int device, void** out,
                AbiStatus* status) = nullptr;
  void (*destroy)(void* state) = nullptr;
  int (*initialize)(void* state, std::uint64_t seed, AbiStatus* status) = nullptr;
  int (*set_batch)(void* state, const std::int64_t* ids, const std::int64_t* targets, std::size_t tokens,
                   std::uint64_t dropout_seed, AbiStatus* status) = nullptr;
  int (*begin)(void* state, AbiStatus* status) = nullptr;
  int (*forward)(void* state, std::size_t layer, AbiStatus* status) = nullptr;
  int (*backward)(void* state, std::size_t layer, void** ready_event, AbiStatus* status) = nullptr;
  int (*step)(void* state, AbiStatus* status) = nullptr;
  int (*finish)(void* state, double* loss, GpuIterationTimes* times, std::size_t layers, GpuIterationTimes* update,
                AbiStatus* status) = nullptr;
  int (*layer_buffers)(void* state, std::size_t layer, int gradients, CommBuffer* out, std::size_t capacity,
                       std::size_t* count, AbiStatus* status) = nullptr;
  int (*get_state)(const void* state, float* parameters, float* first_moment, float* second_moment,
                   std::int64_t* adam_step, AbiStatus* status) = nullptr;
  int (*set_state)(void* state, const float* parameters, const float* first_moment, const float* second_moment,
                   std::int64_t adam_step, AbiStatus* status) = nullptr;
  std::int64_t (*parameter_count)(const void* state) = nullptr;
  int (*snapshot_buffer)(void* state, std::size_t floats, float** out, AbiStatus* status) = nullptr;
  int (*snapshot)(void* state, const CommBuffer* tensors, std::size_t count, float* own, float* mean,
                  void** ready_event, AbiStatus* status) = nullptr;
  int (*correct)(void* state, const CommBuffer* tensors, std::size_t count, const float* own, const float* mean,
                 AbiStatus* status) = nullptr;
};

/// The functions of the GPU backend library.
/// device_count: CUDA devices visible (cudaGetDeviceCount); 0 with the reason in status->message
///   (code kAbiOk) when there is no driver or no device.
/// measure_cuda: profiler/cuda_profile.hpp's measure_cuda into *out.
/// device_alloc, device_free, copy: cudaSetDevice(device) then cudaMalloc / cudaFree / cudaMemcpy
///   (cudaMemcpyDefault: either direction).
/// nccl: the communicator's NCCL backend (comm/nccl_backend.hpp).
/// training: the GPU trainer's functions (GpuTrainingEntryPoints); null in a library without them.
struct GpuBackendTable {
  int version = kGpuBackendVersion;
  std::size_t table_bytes = sizeof(GpuBackendTable);  ///< of the library's build
  const char* description = nullptr;                 ///< e.g. "CUDA 13.0, cuBLAS 13.0, NCCL 2.28.3"
  int (*device_count)(AbiStatus* status) = nullptr;
  int (*measure_cuda)(const Model* model, const Workload* workload, const TimingOptions* options, Measurement* out,
                      AbiStatus* status) = nullptr;
  int (*device_alloc)(int device, std::size_t bytes, void** out, AbiStatus* status) = nullptr;
  void (*device_free)(void* pointer) = nullptr;
  int (*copy)(int device, void* to, const void* from, std::size_t bytes, AbiStatus* status) = nullptr;
  NcclEntryPoints nccl;
  GpuTrainingEntryPoints training;
};

}  // extern "C"

/// The loaded GPU backend library; it stays loaded until the process ends (CUDA's libraries do
/// not expect to be unloaded), so a GpuBackend is a cheap handle to copy around.
class GpuBackend {
 public:
  /// Loads the library: the file $SYNCPLAN_GPU_BACKEND names when that is set and not empty,
  /// else kGpuBackendFileName in ../lib relative to the executable (/proc/self/exe). nullopt, with
  /// a one-line reason in `why` (the path tried and dlerror's text, or a version mismatch), when it
  /// cannot be loaded. In a build without CUDA (no library made), the reason says so.
  static std::optional<GpuBackend> load(std::string& why);

  const char* description() const { return table_->description; }
  /// CUDA devices visible; 0 with the reason in `why` when there is none.
  int device_count(std::string& why) const;
  /// measure_cuda (profiler/cuda_profile.hpp) in the library. Throws as that does.
  Measurement measure_cuda(const Model& model, const Workload& workload, const TimingOptions& options) const;
  /// `count` floats on CUDA device `device`, filled with `value`; freed by device_free.
  float* device_floats(int device, std::size_t count, float value) const;
  void device_free(float* pointer) const { table_->device_free(pointer); }
  /// Copies `count` floats between host and device memory (either way).
  void copy_floats(int device, float* to, const float* from, std::size_t count) const;
  const NcclEntryPoints& nccl() const { return table_->nccl; }
  const GpuTrainingEntryPoints& training() const { return table_->training; }

 private:
  explicit GpuBackend(const GpuBackendTable* table) : table_(table) {}
  const GpuBackendTable* table_;
};

/// GpuBackend::load, or FieldError(field) "FIELD VALUE: REASON" when it cannot be loaded (for a
/// request the user asked to run on a GPU, e.g. field "device", value "cuda"; the command line
/// names its flag).
GpuBackend require_gpu_backend(const std::string& field, const std::string& value);

/// True when the GPU backend library loads and sees a CUDA device (`plan --model --device auto`
/// then measures instead of estimating); false, quietly, otherwise. Without $SYNCPLAN_GPU_BACKEND,
/// false at once when the NVIDIA driver (libcuda.so.1) cannot be loaded: the backend is not
/// loaded then (its cuBLAS libraries cost about 0.5 s to map).
bool cuda_device_available();

/// The path GpuBackend::load tries: $SYNCPLAN_GPU_BACKEND, else ../lib/libsyncplan_gpu.so
/// relative to the executable.
std::string gpu_backend_path();

}  // namespace syncplan
