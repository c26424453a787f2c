// The sweep's sizes and option checks (profiler/link_sweep.hpp); the measurement itself runs under
// mpirun in the CLI tests (profile_link.sh).
#include "profiler/link_sweep.hpp"

#include "core/errors.hpp"

#include <catch2/catch.hpp>

using namespace syncplan;
using Catch::Contains;

TEST_CASE("sweep sizes: min x factor^k up to max, whole floats, no repeats", "[sweep]") {
  LinkSweepOptions options;
  options.min_bytes = 8;
  options.max_bytes = 65536;
  // 8, 16, ..., 65536 = 2^3 .. 2^16: 14 sizes.
  const auto sizes = sweep_sizes(options);
  REQUIRE(sizes.size() == 14);
  CHECK(sizes.front() == 8);
  CHECK(sizes.back() == 65536);
  // 5 -> 4 (whole floats), 10 -> 8, 20 > 12 ends the sweep.
  options.min_bytes = 5;
  options.max_bytes = 12;
  CHECK(sweep_sizes(options) == std::vector<std::int64_t>{4, 8});
  // Factor 3 from 4: 4, 12, 36, 108, 324 (max 400).
  options.min_bytes = 4;
  options.max_bytes = 400;
  options.step_factor = 3;
  CHECK(sweep_sizes(options) == std::vector<std::int64_t>{4, 12, 36, 108, 324});
  // Sizes near the int64 limit do not overflow.
  options.min_bytes = std::int64_t{1} << 61;
  options.max_bytes = std::int64_t{1} << 62;
  options.step_factor = 8;
  CHECK(sweep_sizes(options).size() == 1);
}

TEST_CASE("sweep options are checked, naming the option", "[sweep]") {
  const auto refused = [](LinkSweepOptions options, const char* text, std::int64_t max_count = 1 << 30) {
    CHECK_THROWS_WITH(check_sweep_options(options, max_count), Contains(text));
  };
  LinkSweepOptions options;
  CHECK_NOTHROW(check_sweep_options(options, 1 << 30));
  options.min_bytes = 2;
  refused(options, "min_bytes:");
  options = {};
  options.max_bytes = 4;
  refused(options, "max_bytes:");
  options = {};
  options.max_bytes = 8 << 20;  // 2 Mi floats > 1 Mi
  refused(options, "at most 4194304 bytes", 1 << 20);
  options = {};
  options.step_factor = 1;
  refused(options, "step_factor:");
  options = {};
  options.warmup_iters = -1;
  refused(options, "warmup_iters:");
  options = {};
  options.iters = 0;
  refused(options, "iters:");
}

TEST_CASE("the sweep's expected average and its tolerance", "[sweep]") {
  // Ranks contribute 1, 2, ..., n: the mean is (n + 1) / 2.
  CHECK(expected_allreduce_average(1) == 1.0f);
  CHECK(expected_allreduce_average(3) == 2.0f);
  CHECK(expected_allreduce_average(4) == 2.5f);
  // 1e-6 of 2.5 is 2.5e-6: 2.5 + 2e-6 is within, 2.5 + 1e-5 and 2.51 are not; only the first 3 count.
  const std::vector<float> values = {2.5f, 2.5f + 2e-6f, 2.5f + 1e-5f, 2.51f, 0.0f};
  CHECK(count_wrong(values, 4, 2.5f) == 2);
  CHECK(count_wrong(values, 2, 2.5f) == 0);
  CHECK_THROWS_AS(count_wrong(values, 6, 2.5f), InternalError);
}
