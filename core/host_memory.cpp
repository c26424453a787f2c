// Available host memory from /proc/meminfo (Linux), for the measurements' up-front checks.
#include "core/host_memory.hpp"

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>

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

}  // namespace syncplan
