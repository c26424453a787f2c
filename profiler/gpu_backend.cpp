// Loading the GPU backend library with dlopen, and the C++ side of its table.
#include "profiler/gpu_backend.hpp"
#include "core/field_error.hpp"

#include "core/errors.hpp"

#include <dlfcn.h>

#include <cstdlib>
#include <filesystem>
#include <system_error>
#include <vector>

#ifndef SYNCPLAN_GPU_BACKEND_BUILT
#define SYNCPLAN_GPU_BACKEND_BUILT 0
#endif

namespace syncplan {

namespace {
constexpr bool kGpuBackendBuilt = SYNCPLAN_GPU_BACKEND_BUILT;  // this build makes libsyncplan_gpu.so
}  // namespace

std::string gpu_backend_path() {
  const char* named = std::getenv("SYNCPLAN_GPU_BACKEND");
  if (named != nullptr && *named != '\0') return named;
  std::error_code error;
  const std::filesystem::path executable = std::filesystem::read_symlink("/proc/self/exe", error);
  if (error) return kGpuBackendFileName;  // then dlopen's own search (LD_LIBRARY_PATH, ...)
  return (executable.parent_path().parent_path() / "lib" / kGpuBackendFileName).string();
}

std::optional<GpuBackend> GpuBackend::load(std::string& why) {
  const std::string path = gpu_backend_path();
  // RTLD_LOCAL: the library's copies of syncplan's code stay its own.
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* error = dlerror();
    const char* named = std::getenv("SYNCPLAN_GPU_BACKEND");
    if (!kGpuBackendBuilt && (named == nullptr || *named == '\0'))
      why = "this syncplan was built without CUDA and NCCL, so it has no GPU backend " + path +
            " (configure with -DSYNCPLAN_WITH_CUDA=ON, or name one in $SYNCPLAN_GPU_BACKEND; docs/comm.md)";
    else
      why = "cannot load the GPU backend " + path + " (" + (error != nullptr ? error : "dlopen failed") + ")";
    return std::nullopt;
  }
  using Entry = const GpuBackendTable* (*)();
  const auto entry = reinterpret_cast<Entry>(dlsym(handle, kGpuBackendEntryPoint));
  const GpuBackendTable* table = entry != nullptr ? entry() : nullptr;
  if (table == nullptr || table->version != kGpuBackendVersion || table->table_bytes != sizeof(GpuBackendTable)) {
    why = "the GPU backend " + path + " is not of this syncplan build (" +
          (table == nullptr ? std::string("no ") + kGpuBackendEntryPoint
                            : "table version " + std::to_string(table->version) + ", " +
                                  std::to_string(table->table_bytes) + " bytes; this build wants version " +
                                  std::to_string(kGpuBackendVersion) + ", " +
                                  std::to_string(sizeof(GpuBackendTable)) + " bytes") +
          ")";
    dlclose(handle);
    return std::nullopt;
  }
  return GpuBackend(table);  // never dlclose'd: see the class comment
}

GpuBackend require_gpu_backend(const std::string& field, const std::string& value) {
  std::string why;
  std::optional<GpuBackend> gpu = GpuBackend::load(why);
  if (!gpu) throw FieldError(field, field + " " + value + ": " + why);
  return *gpu;
}

bool cuda_device_available() {
  // Without the NVIDIA driver's library there is no device: say so before loading the backend,
  // whose cuBLAS/cuBLASLt take about 0.5 s and 200 MB to map (every `plan --model` paid it on a
  // machine without a GPU). A backend named in $SYNCPLAN_GPU_BACKEND (a test's fake one) is asked.
  const char* named = std::getenv("SYNCPLAN_GPU_BACKEND");
  if (named == nullptr || *named == '\0') {
    void* driver = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL);
    if (driver == nullptr) return false;
    dlclose(driver);
  }
  std::string why;
  const std::optional<GpuBackend> gpu = GpuBackend::load(why);
  return gpu && gpu->device_count(why) > 0;
}

int GpuBackend::device_count(std::string& why) const {
  AbiStatus status;
  const int count = table_->device_count(&status);
  throw_abi_status(status, "GPU backend");
  if (count == 0) why = status.message[0] != '\0' ? status.message : "cudaGetDeviceCount found 0 devices";
  return count;
}

Measurement GpuBackend::measure_cuda(const Model& model, const Workload& workload, const TimingOptions& options) const {
  Measurement measurement;
  AbiStatus status;
  table_->measure_cuda(&model, &workload, &options, &measurement, &status);
  throw_abi_status(status, "GPU backend");
  return measurement;
}

float* GpuBackend::device_floats(int device, std::size_t count, float value) const {
  AbiStatus status;
  void* pointer = nullptr;
  table_->device_alloc(device, count * sizeof(float), &pointer, &status);
  throw_abi_status(status, "GPU backend");
  const std::vector<float> host(count, value);
  try {
    copy_floats(device, static_cast<float*>(pointer), host.data(), count);
  } catch (...) {
    table_->device_free(pointer);
    throw;
  }
  return static_cast<float*>(pointer);
}

void GpuBackend::copy_floats(int device, float* to, const float* from, std::size_t count) const {
  AbiStatus status;
  table_->copy(device, to, from, count * sizeof(float), &status);
  throw_abi_status(status, "GPU backend");
}

}  // namespace syncplan
