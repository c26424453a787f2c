// Statistics over timed repeats, the ceiling check and the side report of measured profiles.
#include "profiler/measurement.hpp"

#include "core/errors.hpp"

#include <algorithm>
#include <cmath>
#include <iomanip>
#include <numeric>
#include <sstream>

namespace syncplan {

double median(std::vector<double> samples) {
  SYNCPLAN_CHECK(!samples.empty());
  const std::size_t middle = samples.size() / 2;
  std::nth_element(samples.begin(), samples.begin() + static_cast<std::ptrdiff_t>(middle), samples.end());
  const double upper = samples[middle];
  if (samples.size() % 2 == 1) return upper;
  const double lower = *std::max_element(samples.begin(), samples.begin() + static_cast<std::ptrdiff_t>(middle));
  return (lower + upper) / 2;
}

std::optional<double> coefficient_of_variation(const std::vector<double>& samples) {
  if (samples.size() < 2) return std::nullopt;
  const double n = static_cast<double>(samples.size());
  const double mean = std::accumulate(samples.begin(), samples.end(), 0.0) / n;
  if (mean == 0) return std::nullopt;
  double squares = 0;
  for (const double x : samples) squares += (x - mean) * (x - mean);
  return std::sqrt(squares / (n - 1)) / mean;
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
    if (!samples.update_s.empty()) layer.update_s = median(samples.update_s);
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
                        {"cv", optional_json(summary.step_cv)}};
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
  out << '\n';
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
