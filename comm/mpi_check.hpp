// SYNCPLAN_MPI_CHECK: every MPI call of the profiler goes through it (STYLE item 9).
#pragma once

#include "core/library_check.hpp"

#include <mpi.h>

namespace syncplan::detail {
/// Reports a failed MPI call with MPI_Error_string's text (through report_library_error).
[[noreturn]] void mpi_failed(int code, const char* expression, const char* file, int line);
}  // namespace syncplan::detail

#define SYNCPLAN_MPI_CHECK(call)                                                              \
  do {                                                                                        \
    const int syncplan_mpi_code_ = (call);                                                    \
    if (syncplan_mpi_code_ != MPI_SUCCESS)                                                    \
      ::syncplan::detail::mpi_failed(syncplan_mpi_code_, #call, __FILE__, __LINE__);          \
  } while (0)
