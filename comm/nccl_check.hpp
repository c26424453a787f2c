// SYNCPLAN_NCCL_CHECK: every NCCL call of the profiler goes through it (STYLE item 9).
#pragma once

#include "core/library_check.hpp"

#include <nccl.h>

#define SYNCPLAN_NCCL_CHECK(call)                                                                      \
  do {                                                                                                 \
    const ncclResult_t syncplan_nccl_result_ = (call);                                                 \
    if (syncplan_nccl_result_ != ncclSuccess)                                                          \
      ::syncplan::report_library_error("NCCL", #call, ncclGetErrorString(syncplan_nccl_result_), __FILE__, \
                                       __LINE__);                                                      \
  } while (0)
