// A profile made from a model spec (`syncplan profile`, `syncplan plan --model`, and any job that
// needs one): the spec expanded into layers, timed or estimated by one backend per device
// (docs/models.md, docs/profiler.md), the GEMM-ceiling verdict and the side report. Prints
// nothing: the lines for people come back in ModelProfile::notes.
#pragma once

#include "core/json_io.hpp"
#include "core/profile.hpp"

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace syncplan {

/// The sequence length profiled when a request leaves it 0 (GPT-2's context), at most the model's.
inline constexpr std::int64_t kDefaultProfileSeq = 1024;

/// What to profile and how.
struct ModelProfileRequest {
  std::filesystem::path spec_path;         ///< a syncplan.model/v1 file
  std::filesystem::path gpu_catalog_path;  ///< gpus.json, read by the estimate only
  std::string device;                      ///< estimate, cpu or cuda (model_profile_devices())
  std::string dtype = "fp32";              ///< fp32 or bf16
  std::string gpu;                         ///< estimate: a GPU name in the catalog
  std::int64_t batch = 1;                  ///< sequences per step and worker, >= 1
  std::int64_t seq = 0;                    ///< tokens per sequence; 0: the model's context, at most kDefaultProfileSeq
  int warmup = 2;                          ///< cpu, cuda: untimed training steps first, >= 0
  int repeats = 5;                         ///< cpu, cuda: timed steps; each layer keeps its median, >= 1
  bool gemm_ceiling = false;               ///< cpu, cuda: measure a large GEMM's FLOP/s; no layer may exceed it
  bool report = false;                     ///< cpu, cuda: also build the side report
};

/// What make_model_profile returns.
struct ModelProfile {
  Profile profile;              ///< validated; forward_s and backward_s per layer, update_s on the cpu
                                ///< device (AdamW's step, apportioned by parameter count; null
                                ///< elsewhere), sync_s null; on the measured devices each time's
                                ///< spread over the repeats (forward_spread, ...; docs/profiler.md section 5)
  std::optional<Json> report;   ///< measured devices, when asked: syncplan.profile-report/v1 (docs/formats.md)
  std::vector<std::string> notes;  ///< lines for people, in order: the backend's, the spread, the
                                   ///< ceiling verdict, and a summary of the model and its step time
};

/// The devices make_model_profile knows, in the order of its table: estimate, cpu, cuda.
std::vector<std::string> model_profile_devices();

/// Expands the spec and times its layers with the request's device: "estimate" the roofline of
/// the catalog's GPU (source estimated:roofline:<gpu>), "cpu" the Eigen kernels (measured:cpu),
/// "cuda" the GPU backend library's CUDA profiler (measured:<GPU name>; the library is loaded here
/// only). Throws InputError for a bad spec, GPU name, size or device (e.g. no GPU backend, no
/// device), and for gemm_ceiling or report with the estimate; std::runtime_error when a layer ran
/// above the measured GEMM ceiling (a timing or FLOP count is wrong); LibraryError when a device
/// call fails.
ModelProfile make_model_profile(const ModelProfileRequest& request);

}  // namespace syncplan
