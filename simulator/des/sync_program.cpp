// The generic builders of sync programs that the strategies use (docs/des.md).
#include "simulator/des/sync_program.hpp"

#include "core/errors.hpp"

#include <algorithm>
#include <cmath>

namespace syncplan {

SyncProgram program_from_assignment(const Assignment& assignment) {
  SyncProgram program;
  program.iterations.resize(assignment.period());
  for (int h = 0; h < assignment.period(); ++h)
    for (std::size_t i = 0; i < assignment.iterations[h].size(); ++i)
      program.iterations[h].push_back({{assignment.iterations[h][i]}, IssuePoint::kGradientReady, assignment.delay(h, i)});
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

SyncProgram all_layers_program(std::size_t layer_count, int period, IssuePoint issue, bool every_iteration) {
  require_valid_period(period);
  SyncProgram program;
  program.iterations.resize(period);
  for (int h = 0; h < period; ++h) {
    if (!every_iteration && h != period - 1) continue;
    for (std::size_t j = 0; j < layer_count; ++j) program.iterations[h].push_back({{static_cast<int>(j)}, issue});
  }
  return program;
}

SyncProgram every_iteration_program(const std::vector<std::vector<int>>& buckets, int period) {
  require_valid_period(period);
  SyncProgram program;
  program.iterations.resize(period);
  for (auto& ops : program.iterations)
    for (const auto& bucket : buckets) ops.push_back({bucket, IssuePoint::kGradientReady});
  return program;
}

double largest_allreduce_bytes(const SyncProgram& program, const std::vector<double>& param_bytes) {
  double largest = 0;
  for (const auto& ops : program.iterations)
    for (const SyncOp& op : ops) {
      double bytes = 0;
      for (const int j : op.layers)
        if (!std::isnan(param_bytes[j])) bytes += param_bytes[j];
      largest = std::max(largest, bytes);
    }
  return largest;
}

}  // namespace syncplan
