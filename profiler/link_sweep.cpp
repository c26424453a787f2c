// Sweep options, sizes, the timed loop through a communicator, and the samples of a sweep.
#include "profiler/link_sweep.hpp"
#include "core/field_error.hpp"

#include "core/errors.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <span>
#include <string>

namespace syncplan {

namespace {
constexpr std::int64_t kFloatBytes = 4;  // the sweeps all-reduce float32 buffers, as nccl-tests' default
}  // namespace

void check_sweep_options(const LinkSweepOptions& options, std::int64_t max_count) {
  if (options.min_bytes < kFloatBytes)
    throw FieldError("min_bytes", "min_bytes: must be >= 4 (one float), got " + std::to_string(options.min_bytes));
  if (options.max_bytes < options.min_bytes)
    throw FieldError("max_bytes", "max_bytes: must be >= the first size (" + std::to_string(options.min_bytes) + " bytes), got " +
                     std::to_string(options.max_bytes));
  if (options.max_bytes / kFloatBytes > max_count)
    throw FieldError("max_bytes", "max_bytes: at most " + std::to_string(max_count * kFloatBytes) +
                     " bytes with this backend, got " + std::to_string(options.max_bytes));
  if (options.step_factor < 2)
    throw FieldError("step_factor", "step_factor: must be >= 2, got " + std::to_string(options.step_factor));
  // Bounded as profile's --warmup and --repeats are (nccl-tests' defaults are 5 and 20): 2^31 - 1
  // all-reduces per size ran for hours (the command-line fuzzer, docs/fuzzing.md).
  constexpr int kMostWarmup = 1000, kMostIters = 10000;
  if (options.warmup_iters < 0 || options.warmup_iters > kMostWarmup)
    throw FieldError("warmup_iters", "warmup_iters: must be in 0.." + std::to_string(kMostWarmup) + ", got " +
                                         std::to_string(options.warmup_iters));
  if (options.iters < 1 || options.iters > kMostIters)
    throw FieldError("iters", "iters: must be in 1.." + std::to_string(kMostIters) + ", got " + std::to_string(options.iters));
}

std::vector<std::int64_t> sweep_sizes(const LinkSweepOptions& options) {
  std::vector<std::int64_t> sizes;
  for (std::int64_t size = options.min_bytes; size <= options.max_bytes;) {
    const std::int64_t whole = size - size % kFloatBytes;
    if (sizes.empty() || sizes.back() != whole) sizes.push_back(whole);
    if (size > options.max_bytes / options.step_factor) break;  // the next size would pass max (or overflow)
    size *= options.step_factor;
  }
  return sizes;
}

std::vector<SweepPoint> run_sweep(const MpiSession& mpi, Communicator& comm, const LinkSweepOptions& options,
                                  const SweepProgress& progress, const SweepBuffer& buffer) {
  const float expected = expected_allreduce_average(mpi.size());
  std::vector<SweepPoint> points;
  for (const std::int64_t size_bytes : sweep_sizes(options)) {
    SweepPoint point;
    point.size_bytes = size_bytes;
    point.count = size_bytes / kFloatBytes;
    const std::span<float> bucket[] = {std::span<float>(buffer.data, static_cast<std::size_t>(point.count))};
    const std::string name = std::to_string(size_bytes) + " B";
    buffer.fill(point.count, static_cast<float>(mpi.rank() + 1));
    for (int i = 0; i < options.warmup_iters; ++i) comm.average(name, bucket, kSweepDeadline_s);
    mpi.barrier();
    using Clock = std::chrono::steady_clock;
    const Clock::time_point start = Clock::now();
    for (int i = 0; i < options.iters; ++i) comm.average(name, bucket, kSweepDeadline_s);
    const double mean_s = std::chrono::duration<double>(Clock::now() - start).count() / options.iters;
    point.time_s = mpi.max(mean_s);
    point.wrong_elements = mpi.sum(count_wrong(buffer.read(point.count), point.count, expected));
    points.push_back(point);
    if (progress) progress(point);
  }
  return points;
}

float expected_allreduce_average(int ranks) { return static_cast<float>(ranks + 1) / 2; }

std::int64_t count_wrong(const std::vector<float>& values, std::int64_t count, float expected) {
  SYNCPLAN_CHECK(count >= 0 && static_cast<std::size_t>(count) <= values.size());
  const float tolerance = 1e-6f * std::fabs(expected);
  return std::count_if(values.begin(), values.begin() + count,
                       [&](float value) { return !(std::fabs(value - expected) <= tolerance); });
}

std::vector<LinkSample> sweep_samples(const std::vector<SweepPoint>& points, int workers) {
  std::vector<LinkSample> samples;
  for (const SweepPoint& point : points) samples.push_back(allreduce_sample(point.size_bytes, point.time_s, workers));
  return samples;
}

}  // namespace syncplan
