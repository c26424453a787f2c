// Available host memory from /proc/meminfo (Linux), for the measurements' up-front checks.
#include "core/host_memory.hpp"

#include <sys/resource.h>
#include <unistd.h>
#if defined(__GLIBC__)
#include <malloc.h>
#endif

#include <algorithm>
#include <limits>

#include <fstream>
#include <sstream>
#include <string>

namespace syncplan {

namespace {

// The value of `key` (in kiB) in a /proc file of "Key: value kB" lines, or a negative number.
double proc_kibibytes(const char* path, const std::string& key) {
  std::ifstream file(path);
  std::string line;
  while (std::getline(file, line)) {
    std::istringstream fields(line);
    std::string name;
    double kibibytes = 0;
    if (fields >> name >> kibibytes && name == key) return kibibytes;
  }
  return -1;
}

}  // namespace

double available_memory_bytes() {
  constexpr double kBytesPerKiB = 1024.0;
  const double mem_available = proc_kibibytes("/proc/meminfo", "MemAvailable:");
  double available = mem_available >= 0
                         ? mem_available * kBytesPerKiB
                         : static_cast<double>(sysconf(_SC_AVPHYS_PAGES)) * static_cast<double>(sysconf(_SC_PAGESIZE));
  // An address-space limit (ulimit -v) caps what this process can allocate below the machine's.
  rlimit limit{};
  if (getrlimit(RLIMIT_AS, &limit) == 0 && limit.rlim_cur != RLIM_INFINITY) {
    const double used = std::max(0.0, proc_kibibytes("/proc/self/status", "VmSize:")) * kBytesPerKiB;
    available = std::min(available, std::max(0.0, static_cast<double>(limit.rlim_cur) - used));
  }
  return available;
}

bool keep_freed_memory() {
#if defined(__GLIBC__)
  // No mmap-served blocks (they are unmapped on free), and a trim threshold no heap reaches (the
  // largest value mallopt takes is INT_MAX bytes: 2 GiB of free top kept).
  const bool no_mmap = mallopt(M_MMAP_MAX, 0) == 1;
  const bool no_trim = mallopt(M_TRIM_THRESHOLD, std::numeric_limits<int>::max()) == 1;
  return no_mmap && no_trim;
#else
  return false;
#endif
}

long minor_page_faults() {
  rusage usage{};
  return getrusage(RUSAGE_SELF, &usage) == 0 ? usage.ru_minflt : 0;
}

}  // namespace syncplan
