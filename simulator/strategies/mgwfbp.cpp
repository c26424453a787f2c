// mgwfbp: MG-WFBP's merged gradients (Shi et al., INFOCOM 2019; docs/des.md "mgwfbp"); DES only,
// since the merge rule needs a time for any size: the cost model's or a link fit's.
#include "simulator/strategies/strategies.hpp"

#include "core/errors.hpp"
#include "core/field_error.hpp"

#include <algorithm>

namespace syncplan {

SyncProgram mgwfbp_program(const BackpropTimes& times, const std::vector<double>& param_bytes, int period,
                           const std::function<double(double bytes)>& allreduce_s, const std::vector<bool>& frozen) {
  SYNCPLAN_CHECK(param_bytes.size() == times.size());
  SYNCPLAN_CHECK(frozen.empty() || frozen.size() == times.size());
  std::vector<std::vector<int>> buckets;
  double bucket_bytes = 0;
  double link_free_before = 0;  // when the link is free for the open bucket
  for (int j = 0; j < static_cast<int>(times.size()); ++j) {
    if (!frozen.empty() && frozen[j]) continue;  // nothing to average: in no bucket, no say in the merges
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
  return every_iteration_program(buckets, period);
}

SyncProgram mgwfbp_des_program(const DesStrategyContext& context, const BackpropTimes& times, int period) {
  // Measured per-layer times say nothing about the start-up cost a merge saves: MG-WFBP's rule
  // needs the cost model.
  // A link fit is such a model too: its time of any size (docs/link.md).
  const auto bytes = required_param_bytes(context.layers, "mgwfbp");
  if (context.sync_time == SyncTimeSource::kMeasured && context.link)
    return mgwfbp_program(times, bytes, period, [&](double bytes) { return context.link->time_s(bytes); });
  if (context.sync_time != SyncTimeSource::kModel)
    throw FieldError("sync_time", "sync_time: strategy mgwfbp needs the cluster's cost model ('model') or a link fit "
                                  "(--link), not measured all-reduce times");
  return mgwfbp_program(times, bytes, period, [&](double bytes) { return context.model.time_s(bytes); },
                        context.layers.frozen);
}

}  // namespace syncplan
