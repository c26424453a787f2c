// The CUDA backend of `syncplan profile --device cuda`: every layer of the model's layer graph run
// on the GPU through the graph the GPU runtime trains with (model/cuda/cuda_graph.cuh), timed with
// CUDA events, and the GEMM ceiling (docs/profiler.md sections 3 and 6). Host-only declarations:
// built when SYNCPLAN_HAVE_CUDA, into the GPU backend library (profiler/gpu_backend.hpp, which the
// CLI loads with dlopen) and test_cuda_kernels.
#pragma once

#include "profiler/measurement.hpp"
#include "model/model_spec.hpp"

#include <string>

namespace syncplan {

/// The name of CUDA device 0 (cudaGetDeviceProperties), e.g. "NVIDIA H200". Throws InputError
/// "--device cuda: no CUDA device visible (REASON); ..." when the runtime finds none.
std::string cuda_device_name();

/// Times every layer of `model` on CUDA device 0 in the workload's dtype (fp32 or bf16) through
/// cuda::CudaGraph: all buffers allocated once, parameters initialized from `options.seed` and a
/// batch drawn from it (random_token_batch, as the CPU profiler does); then
/// `options.warmup_steps` untimed and `options.repeats` timed steps, each a forward through the
/// layers in order and a backward in reverse, each layer's pass between two CUDA events (0 exactly
/// when the layer runs nothing in that pass). With options.gemm_ceiling, afterwards (buffers
/// freed) the best FLOP/s of square GEMMs of n = 4096, 8192, 16384 in the dtype. Source
/// "measured:<device name>". Throws InputError when there is no device or the buffers and 1 GiB
/// of headroom exceed the free device memory ("--batch B --seq S: the cuda layer graph of ...");
/// LibraryError when a CUDA or cuBLAS call fails.
Measurement measure_cuda(const Model& model, const Workload& workload, const TimingOptions& options);

}  // namespace syncplan
