// Bucket fusion under the alpha-beta model (docs/time-model.md section 12): the fused cost, the
// per-iteration dynamic program that chooses buckets, their timing, and plan conversion.
#include "simulator/bucket_fusion.hpp"

#include "core/errors.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

namespace syncplan {

namespace {

// A fusion must lower the link's end by more than this share of the iteration's times: equal ends
// (up to rounding) keep the layers apart.
constexpr double kRelativeGain = 1e-12;

std::vector<int> allreduce_layers(const BackpropTimes& times, std::span<const int> layers) {
  std::vector<int> out;
  for (const int j : layers)
    if (has_allreduce(times, j)) out.push_back(j);
  return out;
}

void check_alpha(double alpha_s) {
  if (!(alpha_s >= 0) || !std::isfinite(alpha_s))
    throw InputError("alpha_s: the all-reduce start-up time must be a finite number >= 0 s, got " +
                     format_shortest(alpha_s));
}

}  // namespace

bool has_allreduce(const BackpropTimes& times, int j) {
  const bool carries = times.carrier.empty() || times.carrier[j] == j;
  return carries && times.sync_s[j] > 0;
}

double fused_sync_s(std::span<const double> member_sync_s, double alpha_s) {
  double startup = 0, excess = 0;
  for (const double c : member_sync_s) {
    startup = std::max(startup, std::min(c, alpha_s));
    excess += std::max(c - alpha_s, 0.0);
  }
  return startup + excess;
}

double largest_allreduce_bytes(const BackpropTimes& times, bool fused) {
  if (!times.link) return 0;
  double largest = 0, all = 0;
  for (std::size_t j = 0; j < times.size(); ++j)
    if (has_allreduce(times, static_cast<int>(j))) {
      largest = std::max(largest, times.sync_bytes[j]);
      all += times.sync_bytes[j];
    }
  return fused ? all : largest;
}

double largest_allreduce_bytes(const BackpropTimes& times, const Buckets& buckets) {
  if (!times.link) return 0;
  double largest = 0;
  for (const auto& iteration : buckets.iterations)
    for (const auto& bucket : iteration) {
      double bytes = 0;
      for (const int j : bucket) bytes += times.sync_bytes[j];
      largest = std::max(largest, bytes);
    }
  return largest;
}

double bucket_sync_s(const BackpropTimes& times, std::span<const int> bucket, double alpha_s) {
  if (bucket.size() == 1) return times.sync_s[bucket.front()];
  if (times.bucket_time_by_bytes()) {
    double bytes = 0;
    for (const int j : bucket) bytes += times.sync_bytes[j];
    return times.bucket_time_s(bytes);
  }
  thread_local std::vector<double> member_sync_s;  // scratch: time_buckets calls this per bucket
  member_sync_s.clear();
  for (const int j : bucket) member_sync_s.push_back(times.sync_s[j]);
  return fused_sync_s(member_sync_s, alpha_s);
}

Buckets unfused_buckets(const BackpropTimes& times, const Assignment& assignment, double alpha_s) {
  check_alpha(alpha_s);
  Buckets buckets;
  buckets.alpha_s = alpha_s;
  for (const auto& layers : assignment.iterations) {
    std::vector<std::vector<int>> iteration;
    for (const int j : allreduce_layers(times, layers)) iteration.push_back({j});
    buckets.iterations.push_back(std::move(iteration));
  }
  return buckets;
}

namespace {

// One iteration's fusion: the optimal contiguous partition of `layers`' all-reduce layers into
// buckets (appended to `buckets` when not null) and the link's end time it achieves (s after backprop
// starts). `min_gain_s`: a fusion must lower an end by more than this.
double fuse_iteration(const BackpropTimes& times, std::span<const int> layers, double alpha_s, double min_gain_s,
                      std::vector<std::vector<int>>* buckets) {
  // Scratch kept per thread: search calls this for every move it tries.
  thread_local std::vector<int> a;
  thread_local std::vector<double> end;
  thread_local std::vector<std::size_t> first;
  a.clear();
  for (const int j : layers)
    if (has_allreduce(times, j)) a.push_back(j);
  const std::size_t m = a.size();
  const bool by_bytes = times.bucket_time_by_bytes();
  // end[i]: earliest the link can finish the first i layers when a bucket ends at layer i-1;
  // first[i]: that last bucket's first layer. Later buckets start at max(ready, link free), which
  // is monotone in the link's end, so the earliest end of every prefix is all that matters.
  end.assign(m + 1, 0.0);
  first.assign(m + 1, 0);
  for (std::size_t i = 1; i <= m; ++i) {
    const double ready = times.ready_s[a[i - 1]];
    double startup = 0, excess = 0, bytes = 0;
    end[i] = std::numeric_limits<double>::infinity();
    for (std::size_t s = i; s-- > 0;) {  // the last bucket is a[s..i-1]; singleton first
      const double c = times.sync_s[a[s]];
      startup = std::max(startup, std::min(c, alpha_s));
      excess += std::max(c - alpha_s, 0.0);
      if (by_bytes) bytes += times.sync_bytes[a[s]];
      const double cost = !by_bytes ? startup + excess : s + 1 == i ? c : times.bucket_time_s(bytes);
      const double candidate = std::max(ready, end[s]) + cost;
      if (candidate < end[i] - (s + 1 == i ? 0.0 : min_gain_s)) {
        end[i] = candidate;
        first[i] = s;
      }
    }
  }
  if (buckets)
    for (std::size_t i = m; i > 0; i = first[i])
      buckets->insert(buckets->begin(), std::vector<int>(a.begin() + first[i], a.begin() + i));
  return end[m];
}

double fusion_min_gain_s(const BackpropTimes& times) {
  return kRelativeGain * std::max(1e-30, times.backprop_s() + times.sync_total_s());
}

}  // namespace

Buckets fuse_buckets(const BackpropTimes& times, const Assignment& assignment, double alpha_s) {
  check_alpha(alpha_s);
  const double min_gain_s = fusion_min_gain_s(times);
  Buckets buckets;
  buckets.alpha_s = alpha_s;
  for (const auto& layers : assignment.iterations) {
    std::vector<std::vector<int>> iteration;
    fuse_iteration(times, layers, alpha_s, min_gain_s, &iteration);
    buckets.iterations.push_back(std::move(iteration));
  }
  return buckets;
}

double fused_iteration_wait_s(const BackpropTimes& times, std::span<const int> layers, double alpha_s) {
  check_alpha(alpha_s);
  return std::max(0.0, fuse_iteration(times, layers, alpha_s, fusion_min_gain_s(times), nullptr) - times.backprop_s());
}

PeriodTiming time_buckets(const BackpropTimes& times, const Buckets& buckets) {
  PeriodTiming timing;
  const int layer_count = static_cast<int>(times.size());
  for (const auto& iteration : buckets.iterations) {
    std::vector<SyncEvent> events;
    double link_free = 0;
    int previous = -1;
    for (const std::vector<int>& bucket : iteration) {
      SYNCPLAN_CHECK(!bucket.empty());
      for (const int j : bucket) {
        SYNCPLAN_CHECK(j >= 0 && j < layer_count && j > previous);
        previous = j;
      }
      const double start = std::max(times.ready_s[bucket.back()], link_free);
      link_free = start + bucket_sync_s(times, bucket, buckets.alpha_s);
      SyncEvent event{bucket.back(), times.backward_start_s() + start, times.backward_start_s() + link_free, {}};
      if (bucket.size() > 1) event.bucket = bucket;
      events.push_back(std::move(event));
    }
    timing.add_overlapped_iteration(times, link_free, std::move(events));
  }
  return timing;
}

PeriodTiming time_planned(const BackpropTimes& times, const Assignment& assignment, std::optional<double> alpha_s) {
  if (!alpha_s) return time_assignment(times, assignment);
  return time_buckets(times, fuse_buckets(times, assignment, *alpha_s));
}

std::size_t allreduce_count(const Buckets& buckets) {
  std::size_t count = 0;
  for (const auto& iteration : buckets.iterations) count += iteration.size();
  return count;
}

PlanBuckets plan_buckets(const Buckets& buckets, const BackpropTimes& times) {
  PlanBuckets out;
  out.alpha_s = buckets.alpha_s;
  for (const auto& iteration : buckets.iterations) {
    std::vector<std::vector<std::string>> named;
    for (const auto& bucket : iteration) {
      std::vector<std::string> names;
      for (const int j : bucket) names.push_back(times.names[j]);
      named.push_back(std::move(names));
    }
    out.iterations.push_back(std::move(named));
  }
  return out;
}

Buckets buckets_from_plan(const PlanBuckets& plan_buckets, const Assignment& assignment,
                          const BackpropTimes& times, const std::string& origin) {
  SYNCPLAN_CHECK(plan_buckets.iterations.size() == assignment.iterations.size());
  check_alpha(plan_buckets.alpha_s);
  std::map<std::string, int> index;
  for (std::size_t j = 0; j < times.size(); ++j) index.emplace(times.names[j], static_cast<int>(j));
  Buckets buckets;
  buckets.alpha_s = plan_buckets.alpha_s;
  for (int h = 0; h < assignment.period(); ++h) {
    const std::string at = origin + ": field 'buckets': iterations[" + std::to_string(h) + "]";
    const std::vector<int> expected = allreduce_layers(times, assignment.iterations[h]);
    std::vector<std::vector<int>> iteration;
    std::size_t next = 0;  // position in `expected`: buckets must cover it in order
    for (const auto& names : plan_buckets.iterations[h]) {
      std::vector<int> bucket;
      for (const std::string& name : names) bucket.push_back(index.at(name));
      std::sort(bucket.begin(), bucket.end());
      for (const int j : bucket) {
        if (!has_allreduce(times, j))
          throw InputError(at + ": layer '" + times.names[j] + "' has no all-reduce of its own (" +
                           (times.sync_s[j] > 0 ? "it is tied to another layer" : "its sync time is 0") +
                           ") and belongs to no bucket");
        if (next >= expected.size() || expected[next] != j)
          throw InputError(at + ": layer '" + times.names[j] + "': buckets must list the iteration's layers in "
                           "backprop (issue) order, each bucket a run of consecutive ones" +
                           (next < expected.size() ? "; expected '" + times.names[expected[next]] + "' here" : ""));
        ++next;
      }
      iteration.push_back(std::move(bucket));
    }
    if (next < expected.size())
      throw InputError(at + ": layer '" + times.names[expected[next]] + "' syncs in this iteration but is in "
                       "none of its buckets");
    buckets.iterations.push_back(std::move(iteration));
  }
  return buckets;
}

BackpropTimes excess_sync_times(const BackpropTimes& times, double alpha_s) {
  BackpropTimes excess = times;
  if (times.bucket_time_by_bytes()) {
    // A bucket costs link.time_s(n) >= slope x n (LinkModel::least_s_per_byte; an "auto" cluster's
    // AllreduceModel::least_s_per_byte), so each layer's share slope x n_j sums to at most any
    // bucket's cost, whatever the curve (docs/link.md, docs/collectives.md 6).
    const double slope = times.bucket_least_s_per_byte();
    for (std::size_t j = 0; j < excess.size(); ++j)
      excess.sync_s[j] = std::min(times.sync_s[j], slope * times.sync_bytes[j]);
    return excess;
  }
  for (double& c : excess.sync_s) c = std::max(c - alpha_s, 0.0);
  return excess;
}

}  // namespace syncplan
