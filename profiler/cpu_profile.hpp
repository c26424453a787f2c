// The CPU backend of `syncplan profile --device cpu`: every layer of the model's layer graph run on
// the host with the reference kernels (model/cpu/cpu_graph.hpp), timed with std::chrono::steady_clock
// (docs/profiler.md section 3), and the CPU GEMM ceiling.
#pragma once

#include "profiler/measurement.hpp"
#include "model/model_spec.hpp"

#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace syncplan {

/// Times every layer of `model` on the CPU (fp32 only) through the layer graph the CPU runtime
/// trains with (model/cpu/cpu_graph.hpp): all buffers allocated once, parameters initialized from
/// `options.seed` and a batch of token ids and targets drawn from it; then `options.warmup_steps`
/// untimed and `options.repeats` timed steps, each a forward through the layers in order and a
/// backward in reverse, each layer's pass timed alone with steady_clock (0 exactly when the
/// layer runs nothing in that pass), then the trainer's optimizer step (model/adamw.hpp, one
/// AdamW step over the whole parameter arena) timed whole and apportioned to the layers by
/// parameter count into LayerSamples::update_s (a tied or parameter-free layer gets 0; docs/
/// profiler.md section 3). Throws InputError "--dtype bf16: ..." for bf16, and "--batch N --seq
/// M: ..." when the buffers would not fit in the available memory. Source "measured:cpu".
Measurement measure_cpu(const Model& model, const Workload& workload, const TimingOptions& options);

/// One GEMM c [m, n] = a [m, k] b [k, n].
struct GemmShape {
  std::int64_t m = 0, k = 0, n = 0;
};

/// Tokens a ceiling GEMM keeps at least, and the FLOPs above which its rows are halved (a product
/// of 4 GFLOP, a few tenths of a second on one core, already runs at Eigen's full speed).
inline constexpr std::int64_t kCeilingMinRows = 256;
inline constexpr double kCeilingMaxGemmFlops = 4e9;

/// The GEMMs the CPU ceiling is measured on (docs/profiler.md section 6): squares n = 256, 512,
/// 1024, and every projection shape of the model at the workload, [T, in] x [in, out], with T
/// halved while the product exceeds kCeilingMaxGemmFlops (but not below kCeilingMinRows), so the
/// ceiling comes from products at least as large as the layers' own.
std::vector<GemmShape> ceiling_gemm_shapes(const Model& model, const Workload& workload);

/// The best FLOP/s of fp32 Eigen GEMMs over ceiling_gemm_shapes (best of 5 each, after one
/// untimed run): the ceiling of the CPU profile's check. `shape` is set to the best one.
double gemm_ceiling_cpu(const Model& model, const Workload& workload, std::string& shape);

}  // namespace syncplan
