// core/host_cpus: the affinity mask against /proc/self/status, the CPU count of a mask, and the
// oversubscription warning's cases.
#include "core/host_cpus.hpp"

#include <catch2/catch.hpp>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace syncplan {

namespace {
// The CPUs of /proc/self/status's Cpus_allowed_list ("0-1,4" is 3), an independent reading of the
// affinity; -1 where there is no such file.
int cpus_allowed_by_proc() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("Cpus_allowed_list:", 0) != 0) continue;
    std::stringstream list(line.substr(line.find(':') + 1));
    std::string range;
    int count = 0;
    while (std::getline(list, range, ',')) {
      const auto dash = range.find('-');
      count += dash == std::string::npos ? 1 : std::stoi(range.substr(dash + 1)) - std::stoi(range.substr(0, dash)) + 1;
    }
    return count;
  }
  return -1;
}
}  // namespace

TEST_CASE("host cpus: the affinity mask counts the CPUs /proc says this process may use", "[host]") {
  const int expected = cpus_allowed_by_proc();
  REQUIRE(expected >= 1);  // Linux: the project runs only there (sched_getaffinity)
  CHECK(count_cpus(affinity_mask_bytes()) == expected);
}

TEST_CASE("host cpus: a mask's count, and the OR of two ranks' masks", "[host]") {
  // Byte 0 = 0b101 (CPUs 0 and 2), byte 1 = 0b1 (CPU 8): 3 CPUs. An empty mask counts 1.
  CHECK(count_cpus({0b101, 0b1}) == 3);
  CHECK(count_cpus({0, 0}) == 1);
  // Two ranks bound to CPU 0 and CPU 1 share 2 CPUs; both on CPU 0, 1.
  CHECK(count_cpus({0b01 | 0b10}) == 2);
  CHECK(count_cpus({0b01 | 0b01}) == 1);
}

TEST_CASE("host cpus: the oversubscription warning", "[host]") {
  CHECK_FALSE(oversubscription_warning(2, 2));
  CHECK_FALSE(oversubscription_warning(1, 1));
  CHECK_FALSE(oversubscription_warning(0, 0));  // counted as 1 and 1
  const auto four = oversubscription_warning(4, 2);
  REQUIRE(four);
  CHECK(*four ==
        "4 ranks on this machine share 2 CPUs: they compute in time slices, so each computes more than the profile's "
        "step and more than the DES predicts (it gives every rank a processor of its own; docs/runtime.md section "
        "7.1); for timings run at most 2 ranks here");
  const auto two = oversubscription_warning(2, 1);
  REQUIRE(two);
  CHECK(two->find("2 ranks on this machine share 1 CPU:") == 0);
  CHECK(two->find("run at most 1 rank here") != std::string::npos);
}

}  // namespace syncplan
