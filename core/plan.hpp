// Sync plan: which layers sync in which iteration of a period (syncplan.plan/v1, SPEC section 4).
#pragma once

#include "core/json_io.hpp"
#include "core/profile.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace syncplan {

inline constexpr const char* kPlanFormat = "syncplan.plan/v1";

/// The largest period H a plan, a schedule or --period may have: every iteration is stored and
/// timed, so a larger H would only exhaust memory (local SGD periods in practice are below 1,000).
inline constexpr int kMaxPeriod = limits::kMaxPeriod;

/// When one layer syncs: iteration indices in 0..period-1, ascending, at least one.
struct LayerSchedule {
  std::string name;                       ///< a layer of the profile
  std::vector<int> sync_iterations;       ///< ascending, unique, each in [0, period)
  /// Delayed averaging (docs/time-model.md section 13): sync_delays[i] is the delay d of the sync in
  /// iteration sync_iterations[i] (its correction is applied before the step of iteration
  /// sync_iterations[i] + d <= period - 1). Empty: every delay is 0 (plans without delayed averaging).
  std::vector<int> sync_delays = {};

  /// The delay of the i-th sync (0 when sync_delays is empty).
  int delay(std::size_t i) const { return sync_delays.empty() ? 0 : sync_delays.at(i); }
};

/// What the simulator predicts for a plan on the profile it was planned on (SPEC section 4).
struct PlanPrediction {
  double period_s = 0;                    ///< time of one period of H iterations (s)
  std::vector<double> iteration_s;        ///< H entries: each iteration's time (s)
  std::vector<double> wait_s;             ///< H entries: each iteration's exposed sync time (s)
  std::optional<double> lower_bound_period_s; ///< lower bound on any plan's period (s)
  /// How lower_bound_period_s was obtained (docs/formats.md "Plan"): "exact" (the exact method
  /// proved the plan optimal, docs/time-model.md 14), "relaxed" (the proven optimum with the
  /// smallest syncs removed, section 14), "suffix", "fused" or "delayed" (the bounds
  /// of sections 6, 12 and 13); empty when the file does not say (files written before the field existed).
  std::string lower_bound;
};

/// A plan's bucket fusion (docs/formats.md "Plan"): per iteration, its all-reduces in issue
/// order, each a bucket of layer names in backprop order.
struct PlanBuckets {
  double alpha_s = 0;  ///< all-reduce start-up time the fusion assumed (s), >= 0
  std::vector<std::vector<std::vector<std::string>>> iterations;  ///< H entries
};

/// A whole plan. `layers` are in the profile's (forward) order, every layer exactly once.
struct Plan {
  std::optional<std::string> model;       ///< copied from the profile
  int period = 1;                         ///< H, iterations per period (>= 1)
  std::string algorithm;                  ///< the algorithm that produced it, e.g. "dp"
  std::vector<LayerSchedule> layers;      ///< profile order
  std::optional<PlanPrediction> predicted;
  std::optional<PlanBuckets> buckets;     ///< absent: every layer is its own all-reduce

  /// The largest delay of any sync (0: not a delayed-averaging plan).
  int max_delay() const;
};

/// Parses a syncplan.plan/v1 document and checks it against `profile`: every profile layer
/// exactly once (an unknown, missing or repeated layer is an error naming it), iterations in
/// [0, period), at least one per layer, no iteration twice; `sync_delays`, when present, one whole
/// number d >= 0 per sync iteration h with h + d <= period - 1, and no `buckets` with a delay.
/// Layers are returned in profile order (sync_delays follow their iterations' sorting).
/// `buckets`, when present, must have H entries naming profile layers that sync in that iteration,
/// none twice in an iteration (the simulator checks the rest, buckets_from_plan).
/// Throws InputError naming `origin`, the field and the layer.
Plan plan_from_json(const Json& document, const std::string& origin, const Profile& profile);

/// Reads a plan file (read_json_file + plan_from_json).
Plan read_plan_file(const std::string& path, const Profile& profile);

/// The syncplan.plan/v1 document for `plan`.
Json plan_to_json(const Plan& plan);

}  // namespace syncplan
