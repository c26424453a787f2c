// The GPU backend (docs/comm.md section 4): CUDA kernels, cuBLAS, the CUDA profiler and NCCL live
// in one shared library, libsyncplan_gpu.so, that syncplan loads with dlopen only when a command
// needs a GPU (as ggml loads its backends). The library exports one C function returning a table
// of functions with a version; no exception crosses it (AbiStatus). This header needs no CUDA.
#pragma once

#include "comm/abi_status.hpp"
#include "comm/communicator.hpp"
#include "comm/mpi_session.hpp"
#include "comm/nccl_backend.hpp"
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
/// Measurement has another layout.
inline constexpr int kGpuBackendVersion = 2;
/// The one symbol the library exports: `const GpuBackendTable* syncplan_gpu_backend(void)`.
inline constexpr const char* kGpuBackendEntryPoint = "syncplan_gpu_backend";
/// The library's file name, looked for in ../lib beside the executable.
inline constexpr const char* kGpuBackendFileName = "libsyncplan_gpu.so";

/// The functions of the GPU backend library.
/// device_count: CUDA devices visible (cudaGetDeviceCount); 0 with the reason in status->message
///   (code kAbiOk) when there is no driver or no device.
/// measure_cuda: profiler/cuda_profile.hpp's measure_cuda into *out.
/// device_alloc, device_free, copy: cudaSetDevice(device) then cudaMalloc / cudaFree / cudaMemcpy
///   (cudaMemcpyDefault: either direction).
/// nccl: the communicator's NCCL backend (comm/nccl_backend.hpp).
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

 private:
  explicit GpuBackend(const GpuBackendTable* table) : table_(table) {}
  const GpuBackendTable* table_;
};

/// GpuBackend::load, or FieldError(field) "FIELD VALUE: REASON" when it cannot be loaded (for a
/// request the user asked to run on a GPU, e.g. field "device", value "cuda"; the command line
/// names its flag).
GpuBackend require_gpu_backend(const std::string& field, const std::string& value);

/// True when the GPU backend library loads and sees a CUDA device (`plan --model --device auto`
/// then measures instead of estimating); false, quietly, otherwise.
bool cuda_device_available();

/// The path GpuBackend::load tries: $SYNCPLAN_GPU_BACKEND, else ../lib/libsyncplan_gpu.so
/// relative to the executable.
std::string gpu_backend_path();

}  // namespace syncplan
