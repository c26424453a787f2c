// Bucket fusion: the layers that sync in one iteration grouped into buckets, one all-reduce each,
// under the alpha-beta model (docs/time-model.md section 12).
#pragma once

#include "core/plan.hpp"
#include "simulator/period_model.hpp"

#include <optional>
#include <span>
#include <string>
#include <vector>

namespace syncplan {

/// The buckets of one period. iterations[h] lists iteration h's all-reduces in issue order; each
/// bucket holds backprop indices, ascending, and is issued when its last (input-most) layer's
/// gradient is ready. Only layers with an all-reduce of their own appear (has_allreduce); every
/// such layer synced in iteration h is in exactly one of h's buckets.
struct Buckets {
  double alpha_s = 0;  ///< all-reduce start-up time (alpha of the alpha-beta model), s; >= 0
  std::vector<std::vector<std::vector<int>>> iterations;  ///< H entries
  int period() const { return static_cast<int>(iterations.size()); }
};

/// True when layer j (backprop index) runs an all-reduce of its own: it carries its tie group
/// (times.carrier) and its sync time is > 0. Tied layers and layers without a sync time are averaged
/// with their carrier or not at all, and belong to no bucket.
bool has_allreduce(const BackpropTimes& times, int j);

/// Time of one all-reduce of a bucket whose members alone take `member_sync_s` (s each), with
/// start-up time `alpha_s` (docs/time-model.md section 12):
///   max_j min(c_j, alpha) + sum_j max(c_j - alpha, 0).
/// When every c_j >= alpha this is sum c - (k-1) alpha (k start-ups become one); a single member
/// costs exactly c_j; the result never exceeds sum c. Empty: 0.
double fused_sync_s(std::span<const double> member_sync_s, double alpha_s);

/// Time of one all-reduce of `bucket` (backprop indices): its layer's c_j alone; with a link fit in
/// `times` (times.link) link->time_s of the bucket's summed sync_bytes (docs/link.md); otherwise
/// fused_sync_s of its members' c_j with start-up `alpha_s`.
double bucket_sync_s(const BackpropTimes& times, std::span<const int> bucket, double alpha_s);

/// Each all-reduce layer of every iteration in a bucket of its own (no fusion), with `alpha_s`.
Buckets unfused_buckets(const BackpropTimes& times, const Assignment& assignment, double alpha_s);

/// Under a link fit in `times` (times.link), the bytes of the largest all-reduce a plan on `times`
/// can issue: with `fused` (buckets) every all-reduce layer's sync_bytes summed, the bucket of an
/// iteration that syncs them all (ssgd's; fuse_buckets times it), else the largest layer's; 0
/// without a link fit. For the link's beyond-the-sweep warning (docs/link.md "Warnings").
double largest_allreduce_bytes(const BackpropTimes& times, bool fused);

/// Under a link fit in `times`, the bytes of the largest all-reduce (bucket) in `buckets`; 0
/// without a link fit.
double largest_allreduce_bytes(const BackpropTimes& times, const Buckets& buckets);

/// Bucket fusion: for each iteration, the partition of its all-reduce layers into buckets that are
/// contiguous in backprop order and make the link finish earliest, by dynamic programming over
/// the last bucket's first layer, O(m^2) for m layers in the iteration. Layers are fused only when
/// that strictly lowers the link's end time (the start-up saved exceeds the delay). Never a later
/// end, so never a longer wait, than unfused_buckets. Throws InputError when alpha_s is negative or
/// not finite.
Buckets fuse_buckets(const BackpropTimes& times, const Assignment& assignment, double alpha_s);

/// The wait of one iteration that syncs `layers` (ascending backprop indices) fused as
/// fuse_buckets would: max(0, link end - B_L) (s; SPEC section 5 with docs/time-model.md section
/// 12's bucket cost). Equals time_buckets' wait for that iteration. Throws InputError when alpha_s
/// is negative or not finite.
double fused_iteration_wait_s(const BackpropTimes& times, std::span<const int> layers, double alpha_s);

/// Times a period whose iterations sync `buckets` under SPEC section 5's rules, a bucket taking
/// bucket_sync_s: it starts at max(its last layer ready, link free). syncs[h] holds one SyncEvent
/// per bucket (layer: its last layer; bucket: all of them). Throws InternalError on bad indices.
PeriodTiming time_buckets(const BackpropTimes& times, const Buckets& buckets);

/// The period of `assignment` as planned: fused into buckets (fuse_buckets, then time_buckets) when
/// `alpha_s` is set, else time_assignment. Throws as those do.
PeriodTiming time_planned(const BackpropTimes& times, const Assignment& assignment, std::optional<double> alpha_s);

/// Number of all-reduces (buckets) in a period.
std::size_t allreduce_count(const Buckets& buckets);

/// The plan's `buckets` block for `buckets` (layer names, issue order).
PlanBuckets plan_buckets(const Buckets& buckets, const BackpropTimes& times);

/// A plan's `buckets` block as Buckets, checked against the plan's assignment: every all-reduce
/// layer synced in an iteration is in exactly one of its buckets, no other layer is, and buckets
/// are contiguous runs of the iteration's all-reduce layers in issue order. Throws InputError
/// naming `origin`, the iteration and the layer.
Buckets buckets_from_plan(const PlanBuckets& plan_buckets, const Assignment& assignment,
                          const BackpropTimes& times, const std::string& origin);

/// `times` with each sync time c_j replaced by max(c_j - alpha_s, 0) (with a link fit in `times`:
/// min(c_j, s n_j), s = LinkModel::least_s_per_byte): a bucket costs at least the sum of these over
/// its layers and starts after all of them are ready, so any lower bound of the unfused model on
/// these times holds for fused plans too (docs/time-model.md section 12, docs/link.md).
BackpropTimes excess_sync_times(const BackpropTimes& times, double alpha_s);

}  // namespace syncplan
