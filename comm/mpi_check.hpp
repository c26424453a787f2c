// SYNCPLAN_MPI_CHECK: every MPI call of the profiler goes through it (STYLE item 9).
#pragma once

#include "core/library_check.hpp"

#include <mpi.h>

#include <functional>
#include <string>

namespace syncplan {
/// Tests `request` (MPI_Test) until it completes, calling `between` (when set) and sleeping
/// `sleep_us` microseconds between tests, so that a stopped rank cannot hold this one forever and
/// a polling rank leaves its core to the others. Throws CommTimeout::step(what, deadline_s) once
/// `deadline_s` seconds (> 0; infinity waits as long as it takes) have passed since the call (the
/// request stays in flight: the caller ends the rank), LibraryError when MPI_Test fails.
void wait_request_within(MPI_Request& request, const std::string& what, double deadline_s,
                         const std::function<void()>& between = {}, int sleep_us = 50);

/// Duplicates MPI_COMM_WORLD into *comm with MPI_Comm_idup, tested every 50 us, so that a stopped
/// rank cannot hold this rank forever (MPI_Comm_dup would; MPI-3.0 section 6.4.2), then sets
/// MPI_ERRORS_RETURN on it. Collective. Throws CommTimeout naming `what` once `deadline_s`
/// seconds (> 0; infinity waits as long as it takes) have passed (the duplicate stays pending:
/// the caller ends the rank), LibraryError when an MPI call fails.
void duplicate_world_within(MPI_Comm* comm, double deadline_s, const std::string& what);
}  // namespace syncplan

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
