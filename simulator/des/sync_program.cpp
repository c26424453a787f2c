// Builders of sync programs for the strategies (docs/des.md).
#include "simulator/des/sync_program.hpp"

#include "core/errors.hpp"
#include "simulator/strategy_table.hpp"

#include <algorithm>

namespace syncplan {

SyncProgram program_from_assignment(const Assignment& assignment) {
  SyncProgram program;
  program.iterations.resize(assignment.period());
  for (int h = 0; h < assignment.period(); ++h)
    for (const int j : assignment.iterations[h]) program.iterations[h].push_back({{j}, IssuePoint::kGradientReady});
  return program;
}

SyncProgram program_from_buckets(const Buckets& buckets) {
  SyncProgram program;
  program.iterations.resize(buckets.period());
  for (int h = 0; h < buckets.period(); ++h)
    for (const std::vector<int>& bucket : buckets.iterations[h])
      program.iterations[h].push_back({bucket, IssuePoint::kGradientReady});
  return program;
}

namespace {
SyncProgram all_layers_at(std::size_t layer_count, int period, IssuePoint issue, bool every_iteration) {
  require_valid_period(period);
  SyncProgram program;
  program.iterations.resize(period);
  for (int h = 0; h < period; ++h) {
    if (!every_iteration && h != period - 1) continue;
    for (std::size_t j = 0; j < layer_count; ++j) program.iterations[h].push_back({{static_cast<int>(j)}, issue});
  }
  return program;
}

SyncProgram every_iteration(const std::vector<std::vector<int>>& buckets, int period) {
  require_valid_period(period);
  SyncProgram program;
  program.iterations.resize(period);
  for (auto& ops : program.iterations)
    for (const auto& bucket : buckets) ops.push_back({bucket, IssuePoint::kGradientReady});
  return program;
}
}  // namespace

SyncProgram ssgd_program(std::size_t layer_count, int period) {
  return all_layers_at(layer_count, period, IssuePoint::kAfterBackward, true);
}

SyncProgram flsgd_program(std::size_t layer_count, int period) {
  return all_layers_at(layer_count, period, IssuePoint::kAfterUpdate, false);
}

SyncProgram ddp_program(const std::vector<double>& param_bytes, int period, double bucket_cap_bytes,
                        double first_bucket_bytes) {
  // As PyTorch's compute_bucket_assignment_by_size: a layer joins the open bucket, and the bucket
  // closes once it holds at least its cap (so its last layer may take it past the cap).
  std::vector<std::vector<int>> buckets(1);
  double filled = 0;
  for (int j = 0; j < static_cast<int>(param_bytes.size()); ++j) {
    buckets.back().push_back(j);
    filled += param_bytes[j];
    const double cap = buckets.size() == 1 ? first_bucket_bytes : bucket_cap_bytes;
    if (filled >= cap && j + 1 < static_cast<int>(param_bytes.size())) {
      buckets.emplace_back();
      filled = 0;
    }
  }
  return every_iteration(buckets, period);
}

SyncProgram mgwfbp_program(const BackpropTimes& times, const std::vector<double>& param_bytes, int period,
                           const std::function<double(double bytes)>& allreduce_s) {
  SYNCPLAN_CHECK(param_bytes.size() == times.size());
  std::vector<std::vector<int>> buckets;
  double bucket_bytes = 0;
  double link_free_before = 0;  // when the link is free for the open bucket
  for (int j = 0; j < static_cast<int>(times.size()); ++j) {
    if (!buckets.empty()) {
      // Separate: the open bucket starts when its last gradient is ready, then j follows it.
      const int last = buckets.back().back();
      const double bucket_end = std::max(times.ready_s[last], link_free_before) + allreduce_s(bucket_bytes);
      const double separate_end = std::max(times.ready_s[j], bucket_end) + allreduce_s(param_bytes[j]);
      // Merged: one all-reduce once j's gradient is ready; saves a start-up, may delay the bucket.
      const double merged_end =
          std::max(times.ready_s[j], link_free_before) + allreduce_s(bucket_bytes + param_bytes[j]);
      if (merged_end <= separate_end) {
        buckets.back().push_back(j);
        bucket_bytes += param_bytes[j];
        continue;
      }
      link_free_before = bucket_end;
    }
    buckets.push_back({j});
    bucket_bytes = param_bytes[j];
  }
  return every_iteration(buckets, period);
}

}  // namespace syncplan
