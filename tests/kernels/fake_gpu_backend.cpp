// A stand-in for libsyncplan_gpu.so, for machines without CUDA: the same entry point and table
// (profiler/gpu_backend.hpp), one "device", and a measure_cuda that reports bad input naming the
// model and batch it was given, so the CLI tests can see that syncplan found, loaded and called
// it through the C ABI, and turned the status back into an exit-2 error. Built a second time
// with FAKE_GPU_BACKEND_VERSION = 999, a library of another build, which must be refused.
#include "profiler/gpu_backend.hpp"

#include <cstdio>

#ifndef FAKE_GPU_BACKEND_VERSION
#define FAKE_GPU_BACKEND_VERSION ::syncplan::kGpuBackendVersion
#endif

namespace {

using namespace syncplan;

int fail(AbiStatus* status, int code, const char* message) {
  status->code = code;
  std::snprintf(status->message, kAbiMessageBytes, "%s", message);
  return code;
}

int device_count(AbiStatus* status) {
  status->code = kAbiOk;
  status->message[0] = '\0';
  return 1;
}

int measure(const Model* model, const Workload* workload, const TimingOptions*, Measurement*, AbiStatus* status) {
  status->code = kAbiInputError;
  std::snprintf(status->message, kAbiMessageBytes, "fake GPU backend: measure_cuda called for model '%s' at batch %lld",
                model->name.c_str(), static_cast<long long>(workload->batch));
  return status->code;
}

int device_alloc(int, std::size_t, void**, AbiStatus* status) {
  return fail(status, kAbiLibraryError, "fake GPU backend: no device memory");
}

void device_free(void*) {}

int copy(int, void*, const void*, std::size_t, AbiStatus* status) {
  return fail(status, kAbiLibraryError, "fake GPU backend: no device memory");
}

}  // namespace

extern "C" __attribute__((visibility("default"))) const GpuBackendTable* syncplan_gpu_backend() {
  static const GpuBackendTable table = [] {
    GpuBackendTable made;
    made.version = FAKE_GPU_BACKEND_VERSION;
    made.description = "fake GPU backend (tests/kernels)";
    made.device_count = device_count;
    made.measure_cuda = measure;
    made.device_alloc = device_alloc;
    made.device_free = device_free;
    made.copy = copy;
    return made;  // nccl stays null: "built without NCCL"
  }();
  return &table;
}
