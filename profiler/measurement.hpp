// Measured profiles, device-independent part: timing options, per-repeat samples, their medians
// and spread, FLOP/s against a GEMM ceiling, and the side report (docs/profiler.md sections 3-5).
#pragma once

#include "core/json_io.hpp"
#include "core/profile.hpp"
#include "core/statistics.hpp"  // median, quantile: the summaries below
#include "model/model_spec.hpp"

#include <cstdint>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

namespace syncplan {

inline constexpr const char* kProfileReportFormat = "syncplan.profile-report/v1";

/// How a backend times a model (docs/profiler.md section 3).
struct TimingOptions {
  int warmup_steps = 2;        ///< untimed training steps (forward and backward of every layer) first, >= 0
  int repeats = 5;             ///< timed steps; the profile keeps each layer's median, >= 1
  std::uint64_t seed = 1;      ///< random inputs and dropout masks
  bool gemm_ceiling = false;   ///< also measure a large GEMM's FLOP/s (the ceiling no layer may exceed)
};

/// One layer's seconds in each timed step, in step order (`repeats` entries each).
struct LayerSamples {
  std::vector<double> forward_s;
  std::vector<double> backward_s;
  /// The layer's share of the optimizer step in each timed step (docs/profiler.md section 3);
  /// empty when the backend does not time the step (the profile's update_s stays null).
  std::vector<double> update_s;
};

/// What a device backend returns.
struct Measurement {
  std::string source;                               ///< "measured:cpu" or "measured:<GPU name>"
  std::vector<LayerSamples> layers;                 ///< in the model's layer order
  std::optional<double> gemm_ceiling_flops_per_s;   ///< best FLOP/s of large GEMMs in the dtype, when asked
  std::string gemm_ceiling_shape;                   ///< e.g. "8192 x 8192 x 8192 bf16", when measured
};

/// Sample standard deviation (n - 1) over the mean; std::nullopt for fewer than 2 samples or a
/// zero mean.
std::optional<double> coefficient_of_variation(const std::vector<double>& samples);

/// The sample standard deviation (n - 1) of `samples`; std::nullopt for fewer than 2.
std::optional<double> standard_deviation(const std::vector<double>& samples);

/// One layer of a measured profile: medians, spreads and the spec's FLOPs (docs/models.md section 3).
struct MeasuredLayer {
  std::string name;
  double forward_s = 0;                   ///< median over repeats (s)
  double backward_s = 0;                  ///< median over repeats (s)
  std::optional<double> update_s;         ///< median over repeats of the optimizer step's share (s); none when not timed
  std::optional<double> forward_cv;       ///< coefficient of variation over repeats
  std::optional<double> backward_cv;
  TimeSpread forward_spread;              ///< min, p10, p90, max over repeats (the profile's forward_spread)
  TimeSpread backward_spread;             ///< likewise of the backward (backward_spread)
  std::optional<TimeSpread> update_spread;///< likewise of the update's share; none when not timed
  double forward_flops = 0;               ///< the spec's FLOPs of the layer's forward (matmul + vector)
  double backward_flops = 0;
  std::optional<double> forward_flops_per_s;   ///< forward_flops / forward_s; none when forward_s is 0
  std::optional<double> backward_flops_per_s;
};

/// A measurement summarized for the profile and the report.
struct MeasurementSummary {
  std::vector<MeasuredLayer> layers;
  double step_forward_s = 0;         ///< median over repeats of the sum of all layers' forward (s)
  double step_backward_s = 0;        ///< median over repeats of the sum of all layers' backward (s)
  std::optional<double> step_cv;     ///< coefficient of variation of the whole step's time over repeats
  /// The one correlation r in [0, 1] between layer passes (forward and backward) that gives the
  /// whole step's variance from theirs: (s^2 - sum s_k^2) / ((sum s_k)^2 - sum s_k^2), clamped
  /// (docs/profiler.md section 5). std::nullopt for fewer than 2 repeats or passes that never vary.
  std::optional<double> layer_correlation;
};

/// Medians, spreads and FLOP/s of `measurement`, which must hold one entry per layer of `model`
/// with the same number of samples each.
MeasurementSummary summarize_measurement(const Model& model, const Workload& workload, const Measurement& measurement);

/// The side report (syncplan.profile-report/v1, docs/formats.md): the summary, every sample, the
/// options and the ceiling.
Json measurement_report_json(const Model& model, const Workload& workload, const std::string& device,
                             const TimingOptions& options, const Measurement& measurement,
                             const MeasurementSummary& summary);

/// Prints the spread (step CV, median and largest layer CV) and, when measured, the ceiling and
/// the layer closest to it.
void print_measurement_summary(std::ostream& out, const MeasurementSummary& summary, const Measurement& measurement);

/// A layer whose measured FLOP/s exceeds the ceiling.
struct CeilingViolation {
  std::string layer;
  std::string pass;          ///< "forward" or "backward"
  double flops_per_s = 0;
};

/// How far above the measured GEMM ceiling a layer may run before the check fails it: 1.5, i.e.
/// 50 %. The ceiling (best of 5 runs) and the layers (median of the repeats) are timed at different
/// moments, and on a shared or frequency-scaling machine the same product's rate varies by 10-20 %
/// between moments, more on a loaded 2-core CI machine (25 % failed falsely there once); the
/// errors the check exists to catch (a FLOP count or a timer off by a factor, typically 2 or
/// more) stay outside this margin (docs/profiler.md section 6).
inline constexpr double kGemmCeilingMargin = 1.5;

/// The layers (and passes) whose median FLOP/s exceeds `ceiling_flops_per_s` x kGemmCeilingMargin:
/// the ceiling rule of every device (CPU and CUDA alike).
std::vector<CeilingViolation> layers_above_ceiling(const MeasurementSummary& summary, double ceiling_flops_per_s);

}  // namespace syncplan
