// SYNCPLAN_CUDA_CHECK: every CUDA runtime call of the profiler goes through it (STYLE item 9).
#pragma once

#include "core/library_check.hpp"

#include <cuda_runtime_api.h>

#define SYNCPLAN_CUDA_CHECK(call)                                                                     \
  do {                                                                                                \
    const cudaError_t syncplan_cuda_error_ = (call);                                                  \
    if (syncplan_cuda_error_ != cudaSuccess)                                                          \
      ::syncplan::report_library_error("CUDA", #call, cudaGetErrorString(syncplan_cuda_error_), __FILE__, \
                                       __LINE__);                                                     \
  } while (0)
