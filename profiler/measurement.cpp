// Statistics over timed repeats, the ceiling check and the side report of measured profiles.
#include "profiler/measurement.hpp"

#include "core/errors.hpp"

#include <algorithm>
#include <cmath>
#include <iomanip>
#include <sstream>

namespace syncplan {

std::optional<double> standard_deviation(const std::vector<double>& samples) {
  if (samples.size() < 2) return std::nullopt;
  const double n = static_cast<double>(samples.size());
  const double average = mean(samples);
  double squares = 0;
  for (const double x : samples) squares += (x - average) * (x - average);
  return std::sqrt(squares / (n - 1));
}

std::optional<double> coefficient_of_variation(const std::vector<double>& samples) {
  const std::optional<double> deviation = standard_deviation(samples);
  if (!deviation) return std::nullopt;
  const double average = mean(samples);
  if (average == 0) return std::nullopt;
  return *deviation / average;
}

namespace {

std::optional<double> rate(double flops, double seconds) {
  if (seconds <= 0) return std::nullopt;
  return flops / seconds;
}

Json optional_json(const std::optional<double>& value) { return value ? Json(*value) : Json(nullptr); }

std::string percent_text(const std::optional<double>& fraction) {
  if (!fraction) return "n/a";
  std::ostringstream text;
  text << std::fixed << std::setprecision(1) << 100 * *fraction << " %";
  return text.str();
}

}  // namespace

MeasurementSummary summarize_measurement(const Model& model, const Workload& workload, const Measurement& measurement) {
  SYNCPLAN_CHECK(measurement.layers.size() == model.layers.size() && !model.layers.empty());
  const std::size_t repeats = measurement.layers.front().forward_s.size();
  SYNCPLAN_CHECK(repeats >= 1);
  MeasurementSummary summary;
  std::vector<double> step_forward_s(repeats, 0.0), step_backward_s(repeats, 0.0), step_s(repeats, 0.0);
  for (std::size_t i = 0; i < model.layers.size(); ++i) {
    const LayerSamples& samples = measurement.layers[i];
    SYNCPLAN_CHECK(samples.forward_s.size() == repeats && samples.backward_s.size() == repeats);
    const StepWork work = layer_work(model.layers[i], workload);
    MeasuredLayer layer;
    layer.name = model.layers[i].name;
    layer.forward_s = median(samples.forward_s);
    layer.backward_s = median(samples.backward_s);
    SYNCPLAN_CHECK(samples.update_s.empty() || samples.update_s.size() == repeats);
    if (!samples.update_s.empty()) {
      layer.update_s = median(samples.update_s);
      layer.update_spread = time_spread(samples.update_s);
    }
    layer.forward_spread = time_spread(samples.forward_s);
    layer.backward_spread = time_spread(samples.backward_s);
    layer.forward_cv = coefficient_of_variation(samples.forward_s);
    layer.backward_cv = coefficient_of_variation(samples.backward_s);
    layer.forward_flops = work.forward.flops();
    layer.backward_flops = work.backward.flops();
    layer.forward_flops_per_s = rate(layer.forward_flops, layer.forward_s);
    layer.backward_flops_per_s = rate(layer.backward_flops, layer.backward_s);
    summary.layers.push_back(std::move(layer));
    for (std::size_t r = 0; r < repeats; ++r) {
      step_forward_s[r] += samples.forward_s[r];
      step_backward_s[r] += samples.backward_s[r];
      step_s[r] += samples.forward_s[r] + samples.backward_s[r];
    }
  }
  summary.step_forward_s = median(step_forward_s);
  summary.step_backward_s = median(step_backward_s);
  summary.step_cv = coefficient_of_variation(step_s);
  // The shared correlation of the layer passes (docs/profiler.md section 5): the step's variance
  // is sum s_k^2 + r sum over pairs k != l of s_k s_l, and that sum is (sum s_k)^2 - sum s_k^2.
  if (const std::optional<double> step_deviation = standard_deviation(step_s)) {
    double deviations = 0, variances = 0;
    for (const LayerSamples& samples : measurement.layers)
      for (const auto* pass : {&samples.forward_s, &samples.backward_s}) {
        const double deviation = standard_deviation(*pass).value_or(0.0);
        deviations += deviation;
        variances += deviation * deviation;
      }
    const double pairs = deviations * deviations - variances;
    if (pairs > 0)
      summary.layer_correlation = std::clamp((*step_deviation * *step_deviation - variances) / pairs, 0.0, 1.0);
  }
  return summary;
}

Json measurement_report_json(const Model& model, const Workload& workload, const std::string& device,
                             const TimingOptions& options, const Measurement& measurement,
                             const MeasurementSummary& summary) {
  Json report;
  report["format"] = kProfileReportFormat;
  report["model"] = model.name;
  report["source"] = measurement.source;
  report["device"] = device;
  report["batch"] = workload.batch;
  report["seq"] = workload.seq;
  report["dtype"] = dtype_name(workload.dtype);
  report["warmup_steps"] = options.warmup_steps;
  report["repeats"] = options.repeats;
  report["gemm_ceiling_flops_per_s"] = optional_json(measurement.gemm_ceiling_flops_per_s);
  report["gemm_ceiling_shape"] = measurement.gemm_ceiling_flops_per_s ? Json(measurement.gemm_ceiling_shape)
                                                                      : Json(nullptr);
  report["step"] = Json{{"forward_s", summary.step_forward_s},
                        {"backward_s", summary.step_backward_s},
                        {"cv", optional_json(summary.step_cv)},
                        {"layer_correlation", optional_json(summary.layer_correlation)}};
  Json layers = Json::array();
  for (std::size_t i = 0; i < summary.layers.size(); ++i) {
    const MeasuredLayer& layer = summary.layers[i];
    layers.push_back(Json{{"name", layer.name},
                          {"forward_s", layer.forward_s},
                          {"backward_s", layer.backward_s},
                          {"forward_cv", optional_json(layer.forward_cv)},
                          {"backward_cv", optional_json(layer.backward_cv)},
                          {"forward_flops", layer.forward_flops},
                          {"backward_flops", layer.backward_flops},
                          {"forward_flops_per_s", optional_json(layer.forward_flops_per_s)},
                          {"backward_flops_per_s", optional_json(layer.backward_flops_per_s)},
                          {"forward_samples_s", measurement.layers[i].forward_s},
                          {"backward_samples_s", measurement.layers[i].backward_s}});
  }
  report["layers"] = std::move(layers);
  return report;
}

void print_measurement_summary(std::ostream& out, const MeasurementSummary& summary, const Measurement& measurement) {
  // The layers that ran something: a layer with no kernel (dropout p = 0) has no spread.
  std::vector<std::pair<double, std::string>> spreads;
  for (const MeasuredLayer& layer : summary.layers)
    for (const auto& cv : {layer.forward_cv, layer.backward_cv})
      if (cv) spreads.emplace_back(*cv, layer.name);
  out << "spread over " << measurement.layers.front().forward_s.size()
      << " repeats (coefficient of variation): whole step " << percent_text(summary.step_cv);
  if (!spreads.empty()) {
    std::sort(spreads.begin(), spreads.end());
    out << ", per layer and pass median " << percent_text(spreads[spreads.size() / 2].first) << ", largest "
        << percent_text(spreads.back().first) << " (" << spreads.back().second << ")";
  }
  out << "; layer correlation "
      << (summary.layer_correlation ? format_short(*summary.layer_correlation, 2) : std::string("n/a")) << '\n';
  if (!measurement.gemm_ceiling_flops_per_s) return;
  const MeasuredLayer* fastest = nullptr;
  double fastest_rate = 0;
  for (const MeasuredLayer& layer : summary.layers)
    for (const auto& flops_per_s : {layer.forward_flops_per_s, layer.backward_flops_per_s})
      if (flops_per_s && *flops_per_s > fastest_rate) {
        fastest_rate = *flops_per_s;
        fastest = &layer;
      }
  out << "GEMM ceiling " << measurement.gemm_ceiling_flops_per_s.value() << " FLOP/s ("
      << measurement.gemm_ceiling_shape << ")";
  if (fastest != nullptr)
    out << "; fastest layer " << fastest->name << " at " << fastest_rate << " FLOP/s ("
        << percent_text(fastest_rate / *measurement.gemm_ceiling_flops_per_s) << " of the ceiling)";
  out << '\n';
}

std::vector<CeilingViolation> layers_above_ceiling(const MeasurementSummary& summary, double ceiling_flops_per_s) {
  const double limit = ceiling_flops_per_s * kGemmCeilingMargin;
  std::vector<CeilingViolation> violations;
  for (const MeasuredLayer& layer : summary.layers) {
    if (layer.forward_flops_per_s && *layer.forward_flops_per_s > limit)
      violations.push_back({layer.name, "forward", *layer.forward_flops_per_s});
    if (layer.backward_flops_per_s && *layer.backward_flops_per_s > limit)
      violations.push_back({layer.name, "backward", *layer.backward_flops_per_s});
  }
  return violations;
}

}  // namespace syncplan
