// `syncplan profile`: a model spec expanded into layers and timed by one backend per --device
// (docs/models.md). Adding a backend is one function and one row of kBackends.
#include "core/errors.hpp"
#include "core/json_io.hpp"
#include "profiler/model_spec.hpp"
#include "profiler/roofline.hpp"
#include "tools/cli_common.hpp"
#include "tools/model_profile.hpp"

#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <memory>

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

BackendResult not_implemented_backend(const Model&, const Workload&, const ProfileOptions& options) {
  throw InputError("--device " + options.device +
                   ": not implemented yet; use --device estimate --gpu NAME for a roofline estimate");
}

struct BackendEntry {
  const char* device;
  Backend run;
};

const BackendEntry kBackends[] = {
    {"estimate", estimate_backend},
    {"cpu", not_implemented_backend},
    {"cuda", not_implemented_backend},
};

}  // namespace

std::filesystem::path data_dir() {
  const char* override_dir = std::getenv("SYNCPLAN_DATA_DIR");
  if (override_dir != nullptr && *override_dir != '\0') return override_dir;
  return SYNCPLAN_DATA_DIR;
}

Profile make_model_profile(const ProfileOptions& options) {
  const std::filesystem::path spec_path = resolve_model_spec(options.model, data_dir() / "models");
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
  const BackendResult result = backend(model, workload, options);
  SYNCPLAN_CHECK(result.times.size() == model.layers.size());

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
  check_output_paths({{"-o", options.output_path}},
                     {{"--model", resolve_model_spec(options.model, data_dir() / "models").string()}});
  const Profile profile = make_model_profile(options);
  write_json_file_atomic(options.output_path, profile_to_json(profile));
  std::cout << "profile written to " << options.output_path << '\n';
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
  std::string models;
  for (const std::string& name : known_model_names(std::filesystem::path(data) / "models"))
    models += (models.empty() ? "" : ", ") + name;
  profile->add_option("--model", options->model,
                      "a model name from " + data + "/models (" + models +
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
                      "cpu, cuda: measured (not implemented yet)")
      ->required()
      ->check(CLI::IsMember(devices));
  profile->add_option("--gpu", options->gpu, "GPU name in gpus.json, for --device estimate (e.g. H100-SXM)");
  profile->add_option("-o,--output", options->output_path, "profile to write (JSON)")->required();
  profile->callback([&action, options] { action = [options] { return run_profile(*options); }; });
}

}  // namespace syncplan::cli
