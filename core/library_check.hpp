// The one reporter behind the MPI, CUDA and NCCL check macros (STYLE item 9): a failed library
// call becomes a LibraryError naming the library, the call, its message, the file and the line.
#pragma once

#include <stdexcept>
#include <string>

namespace syncplan {

/// A call into MPI, CUDA or NCCL failed (not bad input, not a bug in syncplan); exit code 1.
class LibraryError : public std::runtime_error {
 public:
  explicit LibraryError(const std::string& message) : std::runtime_error(message) {}
};

/// Throws LibraryError "LIBRARY: EXPRESSION failed: MESSAGE (FILE:LINE)". Called by the
/// SYNCPLAN_MPI_CHECK, SYNCPLAN_CUDA_CHECK and SYNCPLAN_NCCL_CHECK macros only.
[[noreturn]] void report_library_error(const char* library, const char* expression, const std::string& message,
                                       const char* file, int line);

}  // namespace syncplan
