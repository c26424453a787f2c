// The GPU backend library's one entry point: its table of CUDA, cuBLAS and NCCL functions, each
// catching what it throws into an AbiStatus (built only with CUDA: target syncplan_gpu).
#include "profiler/gpu_backend.hpp"

#include "core/cuda_check.hpp"
#include "profiler/cuda_profile.hpp"

#include <cublas_api.h>
#include <cuda_runtime_api.h>
#if SYNCPLAN_NCCL_BACKEND
#include <nccl.h>
#endif

#include <cstring>
#include <string>

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
