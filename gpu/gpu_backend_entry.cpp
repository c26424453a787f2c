// The GPU backend library's one entry point: its table of CUDA, cuBLAS and NCCL functions, each
// catching what it throws into an AbiStatus (built only with CUDA: target syncplan_gpu).
#include "profiler/gpu_backend.hpp"

#include "core/cuda_check.hpp"
#include "core/errors.hpp"
#include "model/cuda/cuda_trainer.cuh"
#include "profiler/cuda_profile.hpp"

#include <cublas_api.h>
#include <cuda_runtime_api.h>
#if SYNCPLAN_NCCL_BACKEND
#include <nccl.h>
#endif

#include <cstring>
#include <string>
#include <vector>

namespace syncplan {

namespace {

int device_count(AbiStatus* status) {
  int count = 0;
  status->code = kAbiOk;
  status->message[0] = '\0';
  // Not through the check macro: no driver or no device is an answer here, not a failure.
  const cudaError_t error = cudaGetDeviceCount(&count);
  if (error == cudaSuccess) return count;
  std::strncpy(status->message, cudaGetErrorString(error), kAbiMessageBytes - 1);
  cudaGetLastError();  // clear it
  return 0;
}

int measure(const Model* model, const Workload* workload, const TimingOptions* options, Measurement* out,
            AbiStatus* status) {
  return abi_call(status, [&] { *out = measure_cuda(*model, *workload, *options); });
}

int device_alloc(int device, std::size_t bytes, void** out, AbiStatus* status) {
  return abi_call(status, [&] {
    SYNCPLAN_CUDA_CHECK(cudaSetDevice(device));
    SYNCPLAN_CUDA_CHECK(cudaMalloc(out, bytes));
  });
}

void device_free(void* pointer) { cudaFree(pointer); }  // no check: a release has no one to tell

int copy(int device, void* to, const void* from, std::size_t bytes, AbiStatus* status) {
  return abi_call(status, [&] {
    SYNCPLAN_CUDA_CHECK(cudaSetDevice(device));
    SYNCPLAN_CUDA_CHECK(cudaMemcpy(to, from, bytes, cudaMemcpyDefault));
  });
}

// ---- the GPU trainer (GpuTrainingEntryPoints): CudaTrainer behind the C ABI ----

cuda::CudaTrainer& trainer(void* state) { return *static_cast<cuda::CudaTrainer*>(state); }

int train_create(const Model* model, const Workload* workload, const AdamWOptions* adamw, int device, void** out,
                 AbiStatus* status) {
  return abi_call(status, [&] { *out = new cuda::CudaTrainer(*model, *workload, *adamw, device); });
}

void train_destroy(void* state) { delete static_cast<cuda::CudaTrainer*>(state); }

int train_initialize(void* state, std::uint64_t seed, AbiStatus* status) {
  return abi_call(status, [&] { trainer(state).initialize(seed); });
}

int train_set_batch(void* state, const std::int64_t* ids, const std::int64_t* targets, std::size_t tokens,
                    std::uint64_t dropout_seed, AbiStatus* status) {
  return abi_call(status, [&] { trainer(state).set_batch({ids, tokens}, {targets, tokens}, dropout_seed); });
}

int train_begin(void* state, AbiStatus* status) { return abi_call(status, [&] { trainer(state).begin(); }); }

int train_forward(void* state, std::size_t layer, AbiStatus* status) {
  return abi_call(status, [&] { trainer(state).forward(layer); });
}

int train_backward(void* state, std::size_t layer, void** ready_event, AbiStatus* status) {
  return abi_call(status, [&] { *ready_event = trainer(state).backward(layer); });
}

int train_step(void* state, AbiStatus* status) { return abi_call(status, [&] { trainer(state).step(); }); }

int train_finish(void* state, double* loss, GpuIterationTimes* times, std::size_t layers, GpuIterationTimes* update,
                 AbiStatus* status) {
  return abi_call(status, [&] {
    std::vector<cuda::LayerTimes> measured(layers);
    cuda::LayerTimes step;
    *loss = trainer(state).finish(measured, step);
    for (std::size_t l = 0; l < layers; ++l)
      times[l] = {measured[l].forward_start_s, measured[l].forward_s, measured[l].backward_start_s, measured[l].backward_s};
    *update = {step.forward_start_s, step.forward_s, 0, 0};
  });
}

int train_layer_buffers(void* state, std::size_t layer, int gradients, CommBuffer* out, std::size_t capacity,
                        std::size_t* count, AbiStatus* status) {
  return abi_call(status, [&] {
    const std::vector<cuda::DeviceSpan> buffers = trainer(state).layer_buffers(layer, gradients != 0);
    if (buffers.size() > capacity)
      throw InternalError("layer_buffers: layer " + std::to_string(layer) + " has " + std::to_string(buffers.size()) +
                          " tensors, room for " + std::to_string(capacity));
    for (std::size_t t = 0; t < buffers.size(); ++t)
      out[t] = {static_cast<float*>(buffers[t].data), static_cast<std::size_t>(buffers[t].elements)};
    *count = buffers.size();
  });
}

int train_get_state(const void* state, float* parameters, float* first_moment, float* second_moment,
                    std::int64_t* adam_step, AbiStatus* status) {
  return abi_call(status, [&] {
    static_cast<const cuda::CudaTrainer*>(state)->get_state(parameters, first_moment, second_moment, *adam_step);
  });
}

int train_set_state(void* state, const float* parameters, const float* first_moment, const float* second_moment,
                    std::int64_t adam_step, AbiStatus* status) {
  return abi_call(status, [&] { trainer(state).set_state(parameters, first_moment, second_moment, adam_step); });
}

std::int64_t train_parameter_count(const void* state) {
  return static_cast<const cuda::CudaTrainer*>(state)->parameter_count();
}

// The tensors of a snapshot or correction as the trainer's device spans.
std::vector<cuda::DeviceSpan> device_spans(const CommBuffer* tensors, std::size_t count) {
  std::vector<cuda::DeviceSpan> spans;
  for (std::size_t t = 0; t < count; ++t)
    spans.push_back(cuda::DeviceSpan{tensors[t].data, static_cast<std::int64_t>(tensors[t].count), Dtype::kFp32});
  return spans;
}

int train_snapshot_buffer(void* state, std::size_t floats, float** out, AbiStatus* status) {
  return abi_call(status, [&] { *out = trainer(state).snapshot_buffer(floats); });
}

int train_snapshot(void* state, const CommBuffer* tensors, std::size_t count, float* own, float* mean,
                   void** ready_event, AbiStatus* status) {
  return abi_call(status, [&] { *ready_event = trainer(state).snapshot(device_spans(tensors, count), own, mean); });
}

int train_correct(void* state, const CommBuffer* tensors, std::size_t count, const float* own, const float* mean,
                  AbiStatus* status) {
  return abi_call(status, [&] { trainer(state).correct(device_spans(tensors, count), own, mean); });
}

GpuTrainingEntryPoints training_entry_points() {
  GpuTrainingEntryPoints entry;
  entry.create = train_create;
  entry.destroy = train_destroy;
  entry.initialize = train_initialize;
  entry.set_batch = train_set_batch;
  entry.begin = train_begin;
  entry.forward = train_forward;
  entry.backward = train_backward;
  entry.step = train_step;
  entry.finish = train_finish;
  entry.layer_buffers = train_layer_buffers;
  entry.get_state = train_get_state;
  entry.set_state = train_set_state;
  entry.parameter_count = train_parameter_count;
  entry.snapshot_buffer = train_snapshot_buffer;
  entry.snapshot = train_snapshot;
  entry.correct = train_correct;
  return entry;
}

// "CUDA 13.0, cuBLAS 13.0.0, NCCL 2.28.3": what the library was built with.
std::string describe() {
  return "CUDA " + std::to_string(CUDART_VERSION / 1000) + "." + std::to_string(CUDART_VERSION % 1000 / 10) +
         ", cuBLAS " + std::to_string(CUBLAS_VER_MAJOR) + "." + std::to_string(CUBLAS_VER_MINOR) +
#if SYNCPLAN_NCCL_BACKEND
         ", NCCL " + std::to_string(NCCL_MAJOR) + "." + std::to_string(NCCL_MINOR) + "." + std::to_string(NCCL_PATCH);
#else
         ", without NCCL";
#endif
}

GpuBackendTable make_table() {
  static const std::string description = describe();
  GpuBackendTable table;
  table.description = description.c_str();
  table.device_count = device_count;
  table.measure_cuda = measure;
  table.device_alloc = device_alloc;
  table.device_free = device_free;
  table.copy = copy;
  table.training = training_entry_points();
#if SYNCPLAN_NCCL_BACKEND
  table.nccl = nccl_entry_points();
#endif
  return table;
}

}  // namespace

}  // namespace syncplan

extern "C" __attribute__((visibility("default"))) const syncplan::GpuBackendTable* syncplan_gpu_backend() {
  static const syncplan::GpuBackendTable table = syncplan::make_table();
  return &table;
}
