// `syncplan profile`: the options, the spec and data folders, and the printing and writing of a
// model profile (made by profiler/model_profile.hpp, which has the backends).
#include "core/errors.hpp"
#include "core/json_io.hpp"
#include "core/limits.hpp"
#include "model/model_spec.hpp"
#include "profiler/gpu_backend.hpp"
#include "profiler/model_profile.hpp"
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

// The model names --model accepts: "dreamddp-llama-8l, gpt2, ...".
std::string known_models_text(const std::filesystem::path& models_dir) {
  std::string names;
  for (const std::string& name : known_model_names(models_dir)) names += (names.empty() ? "" : ", ") + name;
  return names;
}

}  // namespace

bool cuda_profiling_available() { return cuda_device_available(); }

std::filesystem::path data_dir() {
  const char* override_dir = std::getenv("SYNCPLAN_DATA_DIR");
  if (override_dir != nullptr && *override_dir != '\0') return override_dir;
  return SYNCPLAN_DATA_DIR;
}

namespace {

// The request fields of model profiling and the flags of `profile` and `plan --model` that set them.
constexpr std::initializer_list<FieldFlag> kProfileFlags = {
    {"model", "--model"}, {"batch", "--batch"}, {"seq", "--seq"},         {"dtype", "--dtype"},
    {"gpu", "--gpu"},     {"device", "--device"}, {"gemm_ceiling", "--gemm-ceiling"}, {"report", "--report"},
};

}  // namespace

std::filesystem::path model_spec_path(const std::string& model) {
  const std::filesystem::path models_dir = data_dir() / "models";
  std::error_code ec;
  const bool known_name = std::filesystem::is_regular_file(models_dir / (model + ".json"), ec);
  if (!known_name && std::filesystem::is_directory(model, ec))
    throw InputError("--model '" + model + "': is a directory, not a model spec file or a known model name (the " +
                     "known models are the specs in " + models_dir.string() + ": " + known_models_text(models_dir) + ")");
  const std::filesystem::path path = with_flags(kProfileFlags, [&] { return resolve_model_spec(model, models_dir); });
  check_input_paths({{"--model", path.string()}});
  return path;
}

void check_profile_options(const ProfileOptions& options) {
  if (!options.gpu.empty() && (options.device == "cpu" || options.device == "cuda"))
    throw InputError("--gpu: only with --device estimate (--device " + options.device + " measures " +
                     (options.device == "cpu" ? "this machine's CPU" : "the first CUDA device") + ", not '" +
                     options.gpu + "')");
  if (options.device == "estimate" && (options.warmup_given || options.repeats_given))
    throw InputError(std::string(options.repeats_given ? "--repeats" : "--warmup") +
                     ": only with a measured device (--device cpu or cuda); the estimate runs nothing");
}

Profile make_model_profile(const ProfileOptions& options, Json* report) {
  check_profile_options(options);
  ModelProfileRequest request;
  request.spec_path = model_spec_path(options.model);
  request.gpu_catalog_path = data_dir() / "gpus.json";
  request.device = options.device;
  request.dtype = options.dtype.empty() ? default_dtype(options.device) : options.dtype;
  request.gpu = options.gpu.empty() ? kDefaultEstimateGpu : options.gpu;
  request.batch = options.batch;
  request.seq = options.seq;
  request.warmup = options.warmup;
  request.repeats = options.repeats;
  request.gemm_ceiling = options.gemm_ceiling;
  request.report = !options.report_path.empty();
  ModelProfile made = with_flags(kProfileFlags, [&] { return syncplan::make_model_profile(request); });
  // What `plan --profile` would refuse on reading the file back (a time over a day at a huge
  // --batch x --seq) is refused here, before anything is written or planned.
  try {
    profile_from_json(profile_to_json(made.profile), "the profile");
  } catch (const InputError& e) {
    throw InputError("--model " + options.model + " at --batch " + std::to_string(options.batch) +
                     (options.seq > 0 ? " --seq " + std::to_string(options.seq) : " and the model's context") + ": " +
                     e.what() + " (a profile file holds at most a day per time)");
  }
  for (const std::string& note : made.notes) std::cout << note << '\n';
  if (report != nullptr && made.report) *report = std::move(*made.report);
  return std::move(made.profile);
}

namespace {

int run_profile(const ProfileOptions& options) {
  check_profile_options(options);
  check_output_paths({{"-o", options.output_path}, {"--report", options.report_path}},
                     {{"--model", model_spec_path(options.model).string()}});
  Json report;
  const Profile profile = make_model_profile(options, &report);
  OutputFiles outputs;
  outputs.add_json(options.output_path, profile_to_json(profile), "-o,--output");
  if (!options.report_path.empty()) outputs.add_json(options.report_path, report, "--report");
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
  const std::vector<std::string> devices = model_profile_devices();
  profile->add_option("--model", options->model,
                      "a model name from " + data + "/models (" + known_models_text(data_dir() / "models") +
                          ") or a path to a syncplan.model/v1 file (one containing '/' or ending in .json)")
      ->required();
  profile->add_option("--batch", options->batch, "sequences per step and worker (B)")
      ->required()
      ->check(CLI::Range(std::int64_t{1}, limits::kMaxBatch));
  profile->add_option("--seq", options->seq, "tokens per sequence (S), at most the model's max_position_embeddings")
      ->required()
      ->check(CLI::Range(std::int64_t{1}, limits::kMaxSeq));
  profile->add_option("--dtype", options->dtype,
                      "element type of parameters and activations; param_bytes = 4 or 2 bytes per parameter "
                      "(default: bf16; fp32 with --device cpu, as plan --model)")
      ->check(CLI::IsMember({"fp32", "bf16"}));
  profile->add_option("--device", options->device,
                      "estimate: roofline from " + data + "/gpus.json, source estimated:roofline:<gpu>; "
                      "cpu: measured with the fp32 reference kernels (Eigen, one thread; fp32 only), source "
                      "measured:cpu: meant for small models (with the default repeats, tiny-gpt at batch 8 x seq 64 "
                      "takes about 2 s, gpt2 at batch 1 x seq 64 about 15 s; the time grows with B S); "
                      "cuda: measured on GPU 0 (cuBLAS and syncplan's kernels, fp32 or bf16), source "
                      "measured:<GPU name>, needs the GPU backend library (lib/libsyncplan_gpu.so beside bin/, made by a CUDA "
                      "build, or $SYNCPLAN_GPU_BACKEND; docs/comm.md)")
      ->required()
      ->check(CLI::IsMember(devices));
  CLI::Option* warmup = profile->add_option("--warmup", options->warmup,
                      "cpu, cuda: untimed training steps (forward and backward of every layer) first (default: 2)")
      ->check(CLI::Range(0, 1000));
  CLI::Option* repeats = profile->add_option("--repeats", options->repeats,
                      "cpu, cuda: timed steps; each layer's forward_s and backward_s are the medians, with their "
                      "spread beside them (forward_spread, ...: min, p10, p90, max; docs/formats.md) (default: 5)")
      ->check(CLI::Range(1, 1000));
  profile->add_option("--report", options->report_path,
                      "cpu, cuda: also write the per-layer spread (coefficient of variation over the repeats), "
                      "every sample (s), FLOPs and FLOP/s as a syncplan.profile-report/v1 JSON (docs/formats.md)");
  profile->add_flag("--gemm-ceiling", options->gemm_ceiling,
                    "cpu, cuda: also measure the best FLOP/s of large square GEMMs in --dtype (cuBLAS on the GPU, "
                    "Eigen on the CPU) and fail (exit 1, nothing written) if any layer's FLOP/s (spec FLOPs / "
                    "median time) exceeds it");
  profile->add_option("--gpu", options->gpu,
                      std::string("GPU name in gpus.json (or a unique prefix of one, any case), for --device estimate "
                                  "(default: ") + kDefaultEstimateGpu + ", as plan --model)");
  profile->add_option("-o,--output", options->output_path, "profile to write (JSON)")->required();
  profile->callback([&action, options, warmup, repeats] {
    options->warmup_given = warmup->count() > 0;
    options->repeats_given = repeats->count() > 0;
    action = [options] { return run_profile(*options); };
  });
}

}  // namespace syncplan::cli
