// The single reporter of failed MPI, CUDA and NCCL calls.
#include "core/library_check.hpp"

#include <filesystem>

namespace syncplan {

void report_library_error(const char* library, const char* expression, const std::string& message,
                          const char* file, int line) {
  throw LibraryError(std::string(library) + ": " + expression + " failed: " + message + " (" +
                     std::filesystem::path(file).filename().string() + ":" + std::to_string(line) + ")");
}

}  // namespace syncplan
