// The affinity mask (Linux: sched_getaffinity) and the oversubscription warning.
#include "core/host_cpus.hpp"

#include <algorithm>
#include <bit>
#include <thread>

#if defined(__linux__)
#include <sched.h>
#endif

namespace syncplan {

std::vector<unsigned char> affinity_mask_bytes() {
  constexpr int kBits = 1024;  // CPU_SETSIZE on glibc
  std::vector<unsigned char> mask(kBits / 8, 0);
  const auto set_bit = [&](int cpu) { mask[static_cast<std::size_t>(cpu / 8)] |= static_cast<unsigned char>(1u << (cpu % 8)); };
#if defined(__linux__)
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) == 0 && CPU_COUNT(&set) > 0) {
    for (int cpu = 0; cpu < std::min(kBits, static_cast<int>(CPU_SETSIZE)); ++cpu)
      if (CPU_ISSET(cpu, &set)) set_bit(cpu);
    return mask;
  }
#endif
  const int cpus = std::clamp(static_cast<int>(std::thread::hardware_concurrency()), 1, kBits);
  for (int cpu = 0; cpu < cpus; ++cpu) set_bit(cpu);
  return mask;
}

int count_cpus(const std::vector<unsigned char>& mask) {
  int cpus = 0;
  for (const unsigned char byte : mask) cpus += std::popcount(byte);
  return std::max(cpus, 1);
}

std::optional<std::string> oversubscription_warning(int ranks, int cpus) {
  ranks = std::max(ranks, 1);
  cpus = std::max(cpus, 1);
  if (ranks <= cpus) return std::nullopt;
  const std::string cpu_text = std::to_string(cpus) + (cpus == 1 ? " CPU" : " CPUs");
  return std::to_string(ranks) + " ranks on this machine share " + cpu_text +
         ": they compute in time slices, so each computes more than the profile's step and more than the DES "
         "predicts (it gives every rank a processor of its own; docs/runtime.md section 7.1); for timings run at most " +
         std::to_string(cpus) + (cpus == 1 ? " rank" : " ranks") + " here";
}

}  // namespace syncplan
