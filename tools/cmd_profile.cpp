// `syncplan profile`: a model spec expanded into layers and timed by one backend per --device
// (docs/models.md). Adding a backend is one function and one row of kBackends.
#include "core/errors.hpp"
#include "core/json_io.hpp"
#include "profiler/cpu_profile.hpp"
#include "profiler/measurement.hpp"
#include "model/model_spec.hpp"
#include "profiler/roofline.hpp"
#include "profiler/gpu_backend.hpp"
#include "tools/cli_common.hpp"
#include "tools/model_profile.hpp"

#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <memory>
#include <optional>
#include <stdexcept>

#ifndef SYNCPLAN_DATA_DIR
#error "SYNCPLAN_DATA_DIR (the repository's data/ folder) must be defined by tools/CMakeLists.txt"
#endif

namespace syncplan::cli {

namespace {

/// What a backend measures or estimates: each layer's forward and backward seconds, in the
/// model's layer order, and the profile's `source` (SPEC section 3).
struct BackendResult {
  std::string source;
  std::vector<LayerTimes> times;
  std::optional<Json> report;  // measured devices: the side report (docs/profiler.md)
};

using Backend = BackendResult (*)(const Model& model, const Workload& workload, const ProfileOptions& options);

BackendResult estimate_backend(const Model& model, const Workload& workload, const ProfileOptions& options) {
  const GpuCatalog catalog = read_gpu_catalog_file((data_dir() / "gpus.json").string());
  if (options.gpu.empty()) {
    std::string known;
    for (const GpuSpec& gpu : catalog.gpus) known += (known.empty() ? "" : ", ") + gpu.name;
    throw InputError("--gpu: required with --device estimate (known: " + known + ")");
  }
  const GpuSpec& gpu = catalog.find(options.gpu);
  const RooflineMachine machine = roofline_machine(catalog, gpu, workload.dtype);
  BackendResult result;
  result.source = "estimated:roofline:" + gpu.name;
  for (const ModelLayer& layer : model.layers) result.times.push_back(roofline_layer_times(layer, workload, machine));
  std::cout << "roofline on " << gpu.name << " (" << gpu.datasheet << "), compute efficiency "
            << catalog.compute_efficiency << ", memory efficiency " << catalog.memory_efficiency
            << ": an estimate, not a measurement\n";
  return result;
}

// The measured devices share everything but the measurement (docs/profiler.md): medians, the
// spread printed and reported, and the ceiling check, which fails the run (exit 1, nothing written).
template <class Measure>
BackendResult measured_backend(const Model& model, const Workload& workload, const ProfileOptions& options,
                               const Measure& measure) {
  TimingOptions timing;
  timing.warmup_steps = options.warmup;
  timing.repeats = options.repeats;
  timing.gemm_ceiling = options.gemm_ceiling;
  const Measurement measurement = measure(model, workload, timing);
  const MeasurementSummary summary = summarize_measurement(model, workload, measurement);
  print_measurement_summary(std::cout, summary, measurement);
  if (measurement.gemm_ceiling_flops_per_s) {
    const std::vector<CeilingViolation> above = layers_above_ceiling(summary, *measurement.gemm_ceiling_flops_per_s);
    if (!above.empty())
      throw std::runtime_error("--gemm-ceiling: layer '" + above.front().layer + "' " + above.front().pass + " ran at " +
                               format_exact(above.front().flops_per_s) + " FLOP/s, above the measured GEMM ceiling " +
                               format_exact(*measurement.gemm_ceiling_flops_per_s) + " FLOP/s (" +
                               std::to_string(above.size()) +
                               " layer passes above it): a timing or FLOP count is wrong; nothing written");
    std::cout << "ceiling check: no layer above the GEMM ceiling\n";
  }
  BackendResult result;
  result.source = measurement.source;
  for (const MeasuredLayer& layer : summary.layers) result.times.push_back({layer.forward_s, layer.backward_s});
  result.report = measurement_report_json(model, workload, options.device, timing, measurement, summary);
  return result;
}

BackendResult cpu_backend(const Model& model, const Workload& workload, const ProfileOptions& options) {
  return measured_backend(model, workload, options, measure_cpu);
}

BackendResult cuda_backend(const Model& model, const Workload& workload, const ProfileOptions& options) {
  // The GPU backend library is loaded only here (docs/comm.md section 4).
  const GpuBackend gpu = require_gpu_backend("--device cuda");
  return measured_backend(model, workload, options,
                          [&gpu](const Model& m, const Workload& w, const TimingOptions& t) {
                            return gpu.measure_cuda(m, w, t);
                          });
}

struct BackendEntry {
  const char* device;
  Backend run;
};

const BackendEntry kBackends[] = {
    {"estimate", estimate_backend},
    {"cpu", cpu_backend},
    {"cuda", cuda_backend},
};

// The model names --model accepts: "dreamddp-llama-8l, gpt2, ...".
std::string known_models_text(const std::filesystem::path& models_dir) {
  std::string names;
  for (const std::string& name : known_model_names(models_dir)) names += (names.empty() ? "" : ", ") + name;
  return names;
}

}  // namespace

bool cuda_profiling_available() {
  std::string why;
  const std::optional<GpuBackend> gpu = GpuBackend::load(why);
  return gpu && gpu->device_count(why) > 0;
}

std::filesystem::path data_dir() {
  const char* override_dir = std::getenv("SYNCPLAN_DATA_DIR");
  if (override_dir != nullptr && *override_dir != '\0') return override_dir;
  return SYNCPLAN_DATA_DIR;
}

std::filesystem::path model_spec_path(const std::string& model) {
  const std::filesystem::path models_dir = data_dir() / "models";
  std::error_code ec;
  const bool known_name = std::filesystem::is_regular_file(models_dir / (model + ".json"), ec);
  if (!known_name && std::filesystem::is_directory(model, ec))
    throw InputError("--model '" + model + "': is a directory, not a model spec file or a known model name (the " +
                     "known models are the specs in " + models_dir.string() + ": " + known_models_text(models_dir) + ")");
  const std::filesystem::path path = resolve_model_spec(model, models_dir);
  check_input_paths({{"--model", path.string()}});
  return path;
}

Profile make_model_profile(const ProfileOptions& options, Json* report) {
  const std::filesystem::path spec_path = model_spec_path(options.model);
  const Model model = expand_model(read_model_spec_file(spec_path.string()));
  Workload workload;
  workload.batch = options.batch;
  // seq 0 (plan --model's default): the model's context, at most kDefaultSeq tokens.
  workload.seq = options.seq > 0 ? options.seq : std::min<long long>(model.max_position_embeddings, kDefaultSeq);
  workload.dtype = parse_dtype(options.dtype, "--dtype");
  check_workload(model, workload);

  Backend backend = nullptr;
  for (const BackendEntry& entry : kBackends)
    if (options.device == entry.device) backend = entry.run;
  SYNCPLAN_CHECK(backend != nullptr);  // CLI11 admits only the devices of kBackends
  if (options.device == "estimate" && (options.gemm_ceiling || !options.report_path.empty()))
    throw InputError(std::string(options.gemm_ceiling ? "--gemm-ceiling" : "--report") +
                     ": only with the measured devices (--device cpu or cuda)");
  const BackendResult result = backend(model, workload, options);
  SYNCPLAN_CHECK(result.times.size() == model.layers.size());
  if (report != nullptr && result.report) *report = *result.report;

  Profile profile = model_profile_skeleton(model, workload.dtype, result.source);
  double forward_s = 0, backward_s = 0;
  for (std::size_t i = 0; i < profile.layers.size(); ++i) {
    profile.layers[i].forward_s = result.times[i].forward_s;
    profile.layers[i].backward_s = result.times[i].backward_s;
    forward_s += result.times[i].forward_s;
    backward_s += result.times[i].backward_s;
  }
  validate_profile(profile, spec_path.string());
  std::cout << model.name << ": " << model.layers.size() << " layers, " << model.param_count() << " parameters ("
            << model.param_count() * dtype_size_bytes(workload.dtype) << " bytes in " << dtype_name(workload.dtype)
            << "), batch " << workload.batch << " x seq " << workload.seq << ": forward " << seconds_text(forward_s)
            << " s, backward " << seconds_text(backward_s) << " s per step (" << result.source << ")\n";
  return profile;
}

namespace {

int run_profile(const ProfileOptions& options) {
  check_output_paths({{"-o", options.output_path}, {"--report", options.report_path}},
                     {{"--model", model_spec_path(options.model).string()}});
  Json report;
  const Profile profile = make_model_profile(options, &report);
  OutputFiles outputs;
  outputs.add_json(options.output_path, profile_to_json(profile));
  if (!options.report_path.empty()) outputs.add_json(options.report_path, report);
  outputs.commit();
  std::cout << "profile written to " << options.output_path << '\n';
  if (!options.report_path.empty()) std::cout << "report written to " << options.report_path << '\n';
  return 0;
}

}  // namespace

void add_profile_command(CLI::App& app, Action& action) {
  auto options = std::make_shared<ProfileOptions>();
  const std::string data = data_dir().string();
  CLI::App* profile = app.add_subcommand(
      "profile", "Per-layer parameter counts and forward/backward times (s) of a model spec, as a "
                 "syncplan.profile/v1 (sync_s left null). Specs and GPUs are read from " + data +
                 " ($SYNCPLAN_DATA_DIR when set, else the repository's data/)");
  std::vector<std::string> devices;
  for (const BackendEntry& entry : kBackends) devices.emplace_back(entry.device);
  profile->add_option("--model", options->model,
                      "a model name from " + data + "/models (" + known_models_text(data_dir() / "models") +
                          ") or a path to a syncplan.model/v1 file (one containing '/' or ending in .json)")
      ->required();
  profile->add_option("--batch", options->batch, "sequences per step and worker (B)")
      ->required()
      ->check(CLI::Range(1LL, 1LL << 20));
  profile->add_option("--seq", options->seq, "tokens per sequence (S), at most the model's max_position_embeddings")
      ->required()
      ->check(CLI::Range(1LL, 1LL << 24));
  profile->add_option("--dtype", options->dtype,
                      "element type of parameters and activations; param_bytes = 4 or 2 bytes per parameter "
                      "(default: fp32)")
      ->check(CLI::IsMember({"fp32", "bf16"}));
  profile->add_option("--device", options->device,
                      "estimate: roofline from " + data + "/gpus.json, source estimated:roofline:<gpu>; "
                      "cpu: measured with the fp32 reference kernels (Eigen, one thread; fp32 only), source "
                      "measured:cpu: meant for small models (with the default repeats, tiny-gpt at batch 8 x seq 64 "
                      "takes about 2 s, gpt2 at batch 1 x seq 64 about 15 s; the time grows with B S); "
                      "cuda: measured on GPU 0 (cuBLAS and syncplan's kernels, fp32 or bf16), source "
                      "measured:<GPU name>, needs a CUDA build (docs/profiler.md)")
      ->required()
      ->check(CLI::IsMember(devices));
  profile->add_option("--warmup", options->warmup,
                      "cpu, cuda: untimed training steps (forward and backward of every layer) first (default: 2)")
      ->check(CLI::Range(0, 1000));
  profile->add_option("--repeats", options->repeats,
                      "cpu, cuda: timed steps; each layer's forward_s and backward_s are the medians (default: 5)")
      ->check(CLI::Range(1, 1000));
  profile->add_option("--report", options->report_path,
                      "cpu, cuda: also write the per-layer spread (coefficient of variation over the repeats), "
                      "every sample (s), FLOPs and FLOP/s as a syncplan.profile-report/v1 JSON (docs/formats.md)");
  profile->add_flag("--gemm-ceiling", options->gemm_ceiling,
                    "cpu, cuda: also measure the best FLOP/s of large square GEMMs in --dtype (cuBLAS on the GPU, "
                    "Eigen on the CPU) and fail (exit 1, nothing written) if any layer's FLOP/s (spec FLOPs / "
                    "median time) exceeds it");
  profile->add_option("--gpu", options->gpu, "GPU name in gpus.json, for --device estimate (e.g. H100-SXM)");
  profile->add_option("-o,--output", options->output_path, "profile to write (JSON)")->required();
  profile->callback([&action, options] { action = [options] { return run_profile(*options); }; });
}

}  // namespace syncplan::cli
