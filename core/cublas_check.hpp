// SYNCPLAN_CUBLAS_CHECK: every cuBLAS call of the profiler goes through it (STYLE item 9).
#pragma once

#include "core/library_check.hpp"

#include <cublas_v2.h>

#define SYNCPLAN_CUBLAS_CHECK(call)                                                                          \
  do {                                                                                                       \
    const cublasStatus_t syncplan_cublas_status_ = (call);                                                   \
    if (syncplan_cublas_status_ != CUBLAS_STATUS_SUCCESS)                                                    \
      ::syncplan::report_library_error("cuBLAS", #call, cublasGetStatusString(syncplan_cublas_status_), __FILE__, \
                                       __LINE__);                                                            \
  } while (0)
