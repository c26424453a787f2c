// The CUDA backend of `syncplan profile --device cuda`: every layer's ops run on the GPU
// (model/cuda/kernels.cuh), timed with CUDA events, and the GEMM ceiling (docs/profiler.md
// sections 3 and 5). Host-only declarations: built when SYNCPLAN_HAVE_CUDA, into the GPU backend
// library (profiler/gpu_backend.hpp, which the CLI loads with dlopen) and test_cuda_kernels.
#pragma once

#include "profiler/measurement.hpp"
#include "model/model_spec.hpp"

#include <string>

namespace syncplan {

/// The name of CUDA device 0 (cudaGetDeviceProperties), e.g. "NVIDIA H200". Throws InputError
/// "--device cuda: no CUDA device visible (REASON); ..." when the runtime finds none.
std::string cuda_device_name();

/// Times every layer of `model` on CUDA device 0 in the workload's dtype: all buffers allocated
/// and filled first, then `options.warmup_steps` untimed and `options.repeats` timed steps, each
/// a forward through the layers in order and a backward in reverse, each layer between two CUDA
/// events. With options.gemm_ceiling, afterwards (buffers freed) the best FLOP/s of square GEMMs
/// of n = 4096, 8192, 16384 in the dtype. Source "measured:<device name>". Throws InputError when
/// there is no device or the buffers exceed the free device memory; LibraryError when a CUDA or
/// cuBLAS call fails.
Measurement measure_cuda(const Model& model, const Workload& workload, const TimingOptions& options);

}  // namespace syncplan
