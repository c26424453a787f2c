// Model profiling: one backend per device in one table, the measured devices' shared summary and
// ceiling verdict, and the profile assembled from the spec.
#include "profiler/model_profile.hpp"
#include "core/field_error.hpp"

#include "core/errors.hpp"
#include "model/model_spec.hpp"
#include "profiler/cpu_profile.hpp"
#include "profiler/gpu_backend.hpp"
#include "profiler/measurement.hpp"
#include "profiler/roofline.hpp"

#include <algorithm>
#include <sstream>
#include <stdexcept>

namespace syncplan {

namespace {

/// A measured layer's spreads over the repeats (the profile's forward_spread, ...).
struct LayerSpreads {
  std::optional<TimeSpread> forward, backward, update;
};

/// What a backend measures or estimates: each layer's forward and backward seconds, in the
/// model's layer order, and the profile's `source` (SPEC section 3).
struct BackendResult {
  std::string source;
  std::vector<LayerTimes> times;
  std::vector<std::optional<double>> update_s;  // per layer; empty when the backend does not time the optimizer
  std::vector<LayerSpreads> spreads;            // per layer, measured devices; empty for the estimate
  std::optional<Json> report;      // measured devices: the side report (docs/profiler.md)
  std::vector<std::string> notes;  // lines for people
};

using ComputeBackend = BackendResult (*)(const Model& model, const Workload& workload, const ModelProfileRequest& request);

BackendResult estimate_backend(const Model& model, const Workload& workload, const ModelProfileRequest& request) {
  const GpuCatalog catalog = read_gpu_catalog_file(request.gpu_catalog_path.string());
  if (request.gpu.empty()) {
    std::string known;
    for (const GpuSpec& gpu : catalog.gpus) known += (known.empty() ? "" : ", ") + gpu.name;
    throw FieldError("gpu", "gpu: required with the estimate device (known: " + known + ")");
  }
  const GpuSpec& gpu = catalog.find(request.gpu);
  const RooflineMachine machine = roofline_machine(catalog, gpu, workload.dtype);
  BackendResult result;
  result.source = "estimated:roofline:" + gpu.name;
  for (const ModelLayer& layer : model.layers) result.times.push_back(roofline_layer_times(layer, workload, machine));
  std::ostringstream note;
  note << "roofline on " << gpu.name << " (" << gpu.datasheet << "), compute efficiency "
       << catalog.compute_efficiency << ", memory efficiency " << catalog.memory_efficiency
       << ": an estimate, not a measurement";
  result.notes.push_back(note.str());
  return result;
}

// The measured devices share everything but the measurement (docs/profiler.md): medians, the
// spread in the notes and the report, and the ceiling check, which fails the run.
template <class Measure>
BackendResult measured_backend(const Model& model, const Workload& workload, const ModelProfileRequest& request,
                               const Measure& measure) {
  TimingOptions timing;
  timing.warmup_steps = request.warmup;
  timing.repeats = request.repeats;
  timing.gemm_ceiling = request.gemm_ceiling;
  const Measurement measurement = measure(model, workload, timing);
  const MeasurementSummary summary = summarize_measurement(model, workload, measurement);
  BackendResult result;
  std::ostringstream printed;
  print_measurement_summary(printed, summary, measurement);
  std::istringstream lines(printed.str());
  for (std::string line; std::getline(lines, line);) result.notes.push_back(line);
  if (measurement.gemm_ceiling_flops_per_s) {
    const std::vector<CeilingViolation> above = layers_above_ceiling(summary, *measurement.gemm_ceiling_flops_per_s);
    if (!above.empty())
      throw std::runtime_error("GEMM ceiling check: layer '" + above.front().layer + "' " + above.front().pass + " ran at " +
                               format_shortest(above.front().flops_per_s) + " FLOP/s, more than " +
                               format_short((kGemmCeilingMargin - 1) * 100, 0) + "% above the measured GEMM ceiling " +
                               format_shortest(*measurement.gemm_ceiling_flops_per_s) + " FLOP/s (" +
                               std::to_string(above.size()) +
                               " layer passes above it): a timing or FLOP count is wrong; nothing written");
    result.notes.emplace_back("ceiling check: no layer above the GEMM ceiling");
  }
  result.source = measurement.source;
  for (const MeasuredLayer& layer : summary.layers) {
    result.times.push_back({layer.forward_s, layer.backward_s});
    result.update_s.push_back(layer.update_s);
    result.spreads.push_back({layer.forward_spread, layer.backward_spread, layer.update_spread});
  }
  if (request.report)
    result.report = measurement_report_json(model, workload, request.device, timing, measurement, summary);
  return result;
}

BackendResult cpu_backend(const Model& model, const Workload& workload, const ModelProfileRequest& request) {
  return measured_backend(model, workload, request, measure_cpu);
}

BackendResult cuda_backend(const Model& model, const Workload& workload, const ModelProfileRequest& request) {
  const GpuBackend gpu = require_gpu_backend("device", "cuda");  // loaded here only (docs/comm.md section 4)
  return measured_backend(model, workload, request, [&gpu](const Model& m, const Workload& w, const TimingOptions& t) {
    return gpu.measure_cuda(m, w, t);
  });
}

struct BackendEntry {
  const char* device;
  ComputeBackend run;
};

const BackendEntry kBackends[] = {
    {"estimate", estimate_backend},
    {"cpu", cpu_backend},
    {"cuda", cuda_backend},
};

}  // namespace

std::vector<std::string> model_profile_devices() {
  std::vector<std::string> devices;
  for (const BackendEntry& entry : kBackends) devices.emplace_back(entry.device);
  return devices;
}

ModelProfile make_model_profile(const ModelProfileRequest& request) {
  const Model model = expand_model(read_model_spec_file(request.spec_path.string()));
  Workload workload;
  workload.batch = request.batch;
  workload.seq = request.seq > 0 ? request.seq : std::min<std::int64_t>(model.max_position_embeddings, kDefaultProfileSeq);
  workload.dtype = parse_dtype(request.dtype, "dtype");
  check_workload(model, workload);

  ComputeBackend backend = nullptr;
  for (const BackendEntry& entry : kBackends)
    if (request.device == entry.device) backend = entry.run;
  if (backend == nullptr) throw FieldError("device", "device: unknown device '" + request.device + "' (estimate, cpu or cuda)");
  if (request.device == "estimate" && (request.gemm_ceiling || request.report))
    throw FieldError(request.gemm_ceiling ? "gemm_ceiling" : "report",
                     std::string(request.gemm_ceiling ? "gemm_ceiling" : "report") +
                         ": only with a measured device (cpu or cuda), not the estimate");
  BackendResult result = backend(model, workload, request);
  SYNCPLAN_CHECK(result.times.size() == model.layers.size());
  SYNCPLAN_CHECK(result.update_s.empty() || result.update_s.size() == model.layers.size());
  SYNCPLAN_CHECK(result.spreads.empty() || result.spreads.size() == model.layers.size());

  ModelProfile made;
  made.profile = model_profile_skeleton(model, workload.dtype, result.source);
  made.profile.workload = ProfileWorkload{workload.batch, workload.seq, dtype_name(workload.dtype)};
  double forward_s = 0, backward_s = 0, update_s = 0;
  for (std::size_t i = 0; i < made.profile.layers.size(); ++i) {
    made.profile.layers[i].forward_s = result.times[i].forward_s;
    made.profile.layers[i].backward_s = result.times[i].backward_s;
    if (!result.update_s.empty()) made.profile.layers[i].update_s = result.update_s[i];
    if (!result.spreads.empty()) {
      made.profile.layers[i].forward_spread = result.spreads[i].forward;
      made.profile.layers[i].backward_spread = result.spreads[i].backward;
      made.profile.layers[i].update_spread = result.spreads[i].update;
    }
    forward_s += result.times[i].forward_s;
    backward_s += result.times[i].backward_s;
    update_s += result.update_s.empty() ? 0.0 : result.update_s[i].value_or(0.0);
  }
  validate_profile(made.profile, request.spec_path.string());
  made.report = std::move(result.report);
  made.notes = std::move(result.notes);
  std::ostringstream summary;
  summary << model.name << ": " << model.layers.size() << " layers, " << model.param_count() << " parameters ("
          << model.param_count() * dtype_size_bytes(workload.dtype) << " bytes in " << dtype_name(workload.dtype)
          << "), batch " << workload.batch << " x seq " << workload.seq << ": forward " << format_short(forward_s, 6)
          << " s, backward " << format_short(backward_s, 6) << " s"
          << (update_s > 0 ? ", optimizer step " + format_short(update_s, 6) + " s" : std::string()) << " per step ("
          << result.source << ")";
  made.notes.push_back(summary.str());
  std::int64_t frozen_layers = 0, frozen_params = 0;
  for (const ModelLayer& layer : model.layers)
    if (layer.frozen) {
      ++frozen_layers;
      frozen_params += layer.param_count();
    }
  // A frozen layer's backward is timed in full (weight gradients included), an upper bound.
  if (frozen_layers > 0)
    made.notes.push_back(std::to_string(frozen_layers) + " layers frozen (the spec's 'frozen'): " +
                         std::to_string(frozen_params) + " parameters never synced; their backward is timed whole");
  return made;
}

}  // namespace syncplan
