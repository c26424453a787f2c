// Per-layer profile of a model (syncplan.profile/v1, SPEC section 3, docs/formats.md).
#pragma once

#include "core/json_io.hpp"

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace syncplan {

inline constexpr const char* kProfileFormat = "syncplan.profile/v1";
/// The longest layer name a profile may hold (characters; docs/formats.md).
inline constexpr std::size_t kLongestLayerName = limits::kLongestLayerName;

/// The spread of one layer's pass (forward, backward or update) over the timed repeats: the
/// five-number summary whose middle, the median, is the pass's own time in the profile
/// (`forward_s`, ...). Profile keys `forward_spread`, `backward_spread`, `update_spread`
/// (docs/formats.md, "Compute spread"); quantiles as core/statistics.hpp defines them.
struct TimeSpread {
  std::int64_t samples = 1;  ///< timed repeats behind it, 1..limits::kMaxSpreadSamples
  double min_s = 0;          ///< the smallest sample (s)
  double p10_s = 0;          ///< the 10th percentile (s)
  double p90_s = 0;          ///< the 90th percentile (s)
  double max_s = 0;          ///< the largest sample (s)

  /// The same spread with every time multiplied by `factor` (> 0), as a time scaled with its batch.
  TimeSpread scaled(double factor) const;
};

/// The probabilities of the spread's knots: min, p10, median, p90, max.
inline constexpr std::array<double, 5> kSpreadProbabilities = {0.0, 0.1, 0.5, 0.9, 1.0};

/// The spread of `samples` (seconds, at least one): its smallest and largest sample and its 10th
/// and 90th percentiles (core/statistics.hpp's quantile). Its median is median(samples).
TimeSpread time_spread(const std::vector<double>& samples);

/// The inverse distribution function of a pass whose median is `median_s` and spread `spread`, at
/// u in [0, 1]: piecewise linear through the knots (0, min_s), (0.1, p10_s), (0.5, median_s),
/// (0.9, p90_s), (1, max_s) (docs/des.md, "Compute spread"). So a uniform u gives a time
/// distributed as the measured repeats, smoothed between them. Throws InternalError for u outside
/// [0, 1].
double spread_quantile_s(const TimeSpread& spread, double median_s, double u);

/// One layer (module) of the model. std::nullopt means unknown, never zero (SPEC section 3).
struct LayerProfile {
  std::string name;                        ///< unique module name, e.g. "transformer.h.0.attn.c_attn"
  std::optional<std::int64_t> param_count; ///< parameters owned by this layer (count)
  std::optional<std::int64_t> param_bytes; ///< bytes of those parameters as synced (bytes)
  std::optional<double> forward_s;         ///< forward compute time of one iteration (s)
  std::optional<double> backward_s;        ///< backward compute time of one iteration (s)
  std::optional<double> update_s;          ///< optimizer update time of one iteration (s)
  std::optional<double> sync_s;            ///< one all-reduce of its parameters across `workers` (s)
  std::optional<std::string> tied_to;      ///< another layer whose parameters this one shares (GPT-2's
                                           ///< lm_head -> transformer.wte): synced once, with that layer
  bool frozen = false;                     ///< its parameters are not trained (LoRA base weights, requires_grad
                                           ///< false): no all-reduce under any sync-time source, backward_s still
                                           ///< counts; profile key "frozen", absent = false (docs/formats.md)
  /// The spread of forward_s, backward_s and update_s over the timed repeats (those times are
  /// their medians); std::nullopt when not measured. Only with its time known (docs/formats.md,
  /// "Compute spread").
  std::optional<TimeSpread> forward_spread{}, backward_spread{}, update_spread{};
};

/// Compute of a training iteration that no layer's span covers (functional code outside modules:
/// attention matmuls, residual adds, the loss), as `tools/torch_profile.py` measures it: the whole
/// pass minus the layers' sum. Optional profile key `unattributed` (docs/formats.md); the engines
/// charge it as serial compute, after the last layer's forward and before the first layer's backward (docs/time-model.md,
/// "Unattributed compute").
struct UnattributedTimes {
  std::optional<double> forward_s;   ///< forward compute outside every layer, per iteration (s); null: unknown (0)
  std::optional<double> backward_s;  ///< backward compute outside every layer, per iteration (s); null: unknown (0)
};

/// What one worker's step computed when the profile was measured or estimated: optional profile
/// key `workload` {"batch": B, "seq": S, "dtype": "fp32"|"bf16"} (docs/formats.md, an addition to
/// SPEC section 3), written by `profile` and `plan --model`, so that `whatif --profile` knows the
/// batch behind samples/s and tokens/s without --batch.
struct ProfileWorkload {
  std::int64_t batch = 1;  ///< sequences per step and worker, 1 .. limits::kMaxBatch
  std::int64_t seq = 1;    ///< tokens per sequence, 1 .. limits::kMaxSeq
  std::string dtype;       ///< "fp32" or "bf16"
};

/// A whole profile: layers in forward order (input-most first); backprop visits them in reverse.
struct Profile {
  std::optional<std::string> model;   ///< model name, e.g. "gpt2"; std::nullopt when unknown
  std::string source;                 ///< "measured:<device>", "imported:<format>" or "estimated:<method>"
  std::optional<std::int64_t> workers;///< worker count the sync_s values were measured at
  std::vector<LayerProfile> layers;   ///< forward order, unique non-empty names, at least one
  std::optional<UnattributedTimes> unattributed;  ///< key `unattributed`; std::nullopt when absent
  std::optional<ProfileWorkload> workload{};      ///< key `workload`; std::nullopt when absent (unknown)

  /// Index of the layer called `name` in forward order, or std::nullopt.
  std::optional<std::size_t> find(const std::string& name) const;
};

/// Checks the invariants every profile holds (non-empty; unique, non-empty, printable names of at
/// most kLongestLayerName bytes, as the reader requires; finite
/// non-negative times, the unattributed ones included; a frozen layer has no sync_s above 0, and a
/// tie group is frozen as a whole; a spread has its time, samples in 1..kMaxSpreadSamples, and
/// min_s <= p10_s <= the time (its median) <= p90_s <= max_s, all equal for one sample);
/// `origin` names the file in errors. Throws InputError naming the layer and the field.
void validate_profile(const Profile& profile, const std::string& origin);

/// Parses a syncplan.profile/v1 document. Unknown keys, wrong types, negative or non-finite
/// numbers, duplicate, empty or over-long (kLongestLayerName) names and an empty layer list throw
/// InputError naming `origin`,
/// the field and the layer.
Profile profile_from_json(const Json& document, const std::string& origin);

/// Reads a profile file (read_json_file + profile_from_json).
Profile read_profile_file(const std::string& path);

/// The syncplan.profile/v1 document for `profile` (nulls written for unknown values).
Json profile_to_json(const Profile& profile);

}  // namespace syncplan
