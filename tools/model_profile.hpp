// The command line's side of a model profile (`syncplan profile`, `syncplan plan --model`): the
// options, where specs and GPUs are found, and thin wrappers over profiler/model_profile.hpp that
// print its notes.
#pragma once

#include "core/json_io.hpp"
#include "core/profile.hpp"
#include "profiler/model_profile.hpp"

#include <filesystem>
#include <string>

namespace syncplan::cli {

/// The sequence length `plan --model` profiles at unless told (GPT-2's context).
inline constexpr long long kDefaultSeq = kDefaultProfileSeq;

/// The GPU the roofline estimate assumes unless --gpu names one, in `profile` and `plan --model` alike.
inline constexpr const char* kDefaultEstimateGpu = "H100-SXM";

/// The element type `profile` and `plan --model` use unless --dtype names one: fp32 on the CPU (its
/// reference kernels compute in fp32 only), bf16 on a GPU and in the estimate (mixed-precision
/// training's usual type).
inline const char* default_dtype(const std::string& device) { return device == "cpu" ? "fp32" : "bf16"; }

/// What to profile and how (the options of `syncplan profile`).
struct ProfileOptions {
  std::string model;          ///< a name in data/models or a path to a syncplan.model/v1 file
  std::string dtype;          ///< fp32 or bf16; empty: default_dtype(device)
  std::string device;         ///< estimate, cpu or cuda
  std::string gpu;            ///< GPU name in data/gpus.json, for estimate; empty: kDefaultEstimateGpu
  std::string output_path;    ///< where `syncplan profile` writes (unused by make_model_profile)
  long long batch = 0;        ///< sequences per step and worker, >= 1
  long long seq = 0;          ///< tokens per sequence; 0: the model's context, at most kDefaultSeq
  int warmup = 2;             ///< cpu, cuda: untimed training steps before the timed ones, >= 0
  int repeats = 5;            ///< cpu, cuda: timed steps; the profile keeps each layer's median, >= 1
  bool gemm_ceiling = false;  ///< cpu, cuda: measure a large GEMM's FLOP/s; no layer may exceed it
  std::string report_path{};  ///< cpu, cuda: where `syncplan profile` writes the side report; empty: none
  bool warmup_given = false;  ///< --warmup was given (an error with the estimate, which runs nothing)
  bool repeats_given = false; ///< --repeats was given (likewise)
};

/// Refuses options that would do nothing with options.device (estimate, cpu or cuda; "auto" is
/// checked once resolved by the caller): --gpu with a measured device (cpu measures the host,
/// cuda GPU 0), --warmup or --repeats with the estimate. Throws InputError naming the flag.
void check_profile_options(const ProfileOptions& options);

/// The folder holding models/ and gpus.json: $SYNCPLAN_DATA_DIR when set and non-empty, else the
/// repository's data/ compiled in.
std::filesystem::path data_dir();

/// The spec file --model names (resolve_model_spec in data_dir()/models), checked to be a readable
/// file. Throws InputError "--model ...": a directory (not a spec file or a known model name; the
/// message lists the known names and where they are), an unknown name, a missing file.
std::filesystem::path model_spec_path(const std::string& model);

/// True when the GPU backend library loads and sees a CUDA device (plan --model's `--device auto`
/// then measures instead of estimating): profiler/gpu_backend.hpp's cuda_device_available.
bool cuda_profiling_available();

/// profiler/model_profile.hpp's make_model_profile for options.model (model_spec_path) and
/// data_dir()'s gpus.json, with the default dtype and GPU where options leave them empty; prints
/// its notes to stdout, one per line. Throws as that does and as
/// model_spec_path, and InputError "--model M at --batch B --seq S: the profile: ..." when the
/// profile's file would not read back (profile_from_json's limits, e.g. a time over a day). `report`, when given and options.report_path is set, receives the measured
/// devices' side report (syncplan.profile-report/v1, docs/profiler.md).
Profile make_model_profile(const ProfileOptions& options, Json* report = nullptr);

}  // namespace syncplan::cli
