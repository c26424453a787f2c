// The executed schedule of a period (docs/runtime.md section 1): for every iteration h of H, the
// all-reduce buckets a rank runs, which layers each holds, when it is launched and whether it
// averages gradients or parameters, built from a strategy name or a plan (SPEC sections 4 and 5).
#pragma once

#include "core/plan.hpp"
#include "core/profile.hpp"
#include "model/model_spec.hpp"

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace syncplan {

/// What a schedule averages across the ranks.
enum class SyncKind {
  kGradients,   ///< S-SGD (ssgd, wfbp): every rank steps with the mean gradient
  kParameters,  ///< local SGD (flsgd) and partial sync (plsgd-even, plans): the mean parameters
};

/// "gradients" or "parameters".
const char* sync_kind_name(SyncKind kind);

/// When a bucket is launched in its iteration.
enum class LaunchPoint {
  kLayerDone,      ///< as soon as its last layer's backward is done (wfbp, DreamDDP's pre-step average)
  kAfterBackward,  ///< after the whole backprop (ssgd)
  kAfterStep,      ///< after the optimizer step (flsgd's model average)
};

/// One all-reduce: layers of the model (indices into Model::layers, forward order), listed in
/// backprop order (descending index), so `layers.back()` is the last one whose backward ends.
/// Only layers with parameters of their own to average appear (tie carriers, not frozen, > 0
/// parameters); each bucket has at least one.
struct ScheduleBucket {
  std::vector<std::size_t> layers;
  LaunchPoint launch = LaunchPoint::kLayerDone;
  std::int64_t bytes = 0;  ///< fp32 bytes all-reduced: 4 x the parameters of its layers' tie groups
  /// Delayed averaging (docs/time-model.md section 13, the plan's `sync_delays`): the bucket of
  /// iteration h averages a snapshot of its parameters taken at launch and is applied as the
  /// correction p <- p + (mean - snapshot) before the step of iteration h + delay (h + delay <=
  /// H - 1). 0 (default): averaged in place before h's step (a replacement, as in every plan
  /// without sync_delays). Only kLayerDone buckets of plans have delays.
  int delay = 0;
};

/// A period's schedule: per iteration its buckets in issue order (kLayerDone ones in the order
/// their last layers finish, then kAfterBackward, then kAfterStep).
struct Schedule {
  std::string strategy;  ///< "ssgd", "wfbp", "flsgd", "plsgd-even", or "plan" for a --plan file
  std::string algorithm; ///< the plan's algorithm (a plan), else = strategy
  SyncKind kind = SyncKind::kParameters;
  std::vector<std::vector<ScheduleBucket>> iterations;  ///< H entries (H = period)
  std::vector<std::string> layer_names;                 ///< the model's layers, forward order

  int period() const { return static_cast<int>(iterations.size()); }
  /// The layers iteration h averages (model indices, in issue order then backprop order).
  std::vector<std::size_t> synced_layers(int h) const;
  /// Whether any bucket has a delay > 0 (a delayed-averaging plan).
  bool delayed() const;
  /// A bucket still in flight when iteration `position` (0..H-1) of the period starts: one started
  /// in an iteration h < position with h + delay >= position, as {h, its index in iterations[h]};
  /// none at position 0 (no sync crosses the period's end) and in a schedule without delays.
  /// Checkpoints and resumed runs start only where there is none (docs/runtime.md section 11).
  std::optional<std::pair<int, std::size_t>> in_flight_at(int position) const;
};

/// The profile the runtime checks plans against: the model's layers, parameter counts and bytes at
/// fp32, tied_to and frozen, no times (model_profile_skeleton with source "model").
Profile runtime_profile(const Model& model);

/// The schedule of strategy `strategy` over a period of `period` iterations: the strategy table's
/// row (planner/strategy_table.hpp, StrategyUse::kRun) gives its DES program on the model's layers,
/// the one `simulate --strategy` runs, and whether gradients or parameters are averaged
/// (RuntimeExecution). Today's rows: ssgd (every layer's gradient after backprop), wfbp (every
/// layer's gradient as its backward ends), flsgd (every layer's parameters after the step of
/// iteration H-1), plsgd-even (backprop order cut into H groups of ceil(L/H) layers, group h's
/// parameters before the step of iteration h). Throws FieldError "strategy: ..." for another name
/// (dreamddp, dp, search and best need a profile: plan them and pass the plan) and "period: ..."
/// outside [1, kMaxPeriod].
Schedule strategy_schedule(const Model& model, const std::string& strategy, int period);

/// The schedule of `plan` (read against runtime_profile(model), so its layers are exactly the
/// model's): in iteration h the parameters of the layers it syncs in h, each layer its own bucket,
/// or the plan's `buckets` as given, each launched when its last layer's backward ends. A tied
/// layer's parameters are averaged once, with its carrier (docs/time-model.md section 11).
/// Throws InputError naming `origin` and the layer when a tied layer syncs apart from its carrier
/// or the buckets do not match the plan (buckets_from_plan).
Schedule plan_schedule(const Model& model, const Plan& plan, const std::string& origin);

/// Reads a plan file for `model` (read_plan_file against runtime_profile(model)) and makes its
/// schedule. Throws InputError naming the file and the layer: a layer the model lacks, one the plan
/// lacks, a layer twice, and what plan_schedule refuses.
Schedule read_plan_schedule(const Model& model, const std::string& path);

}  // namespace syncplan
