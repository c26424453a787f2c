// The CUDA kernels against the CPU reference, op by op and pass by pass, in fp32 and bf16, with a
// tolerance per tensor (llm.c's pattern; docs/profiler.md section 4); then the CUDA profiler on
// tiny-gpt. Without a visible GPU it prints "skipped: no CUDA device (...)" and exits 77, which
// CTest reports as skipped, never as passed.
#include "core/errors.hpp"
#include "profiler/cpu_profile.hpp"
#include "model/cuda/ops.cuh"
#include "profiler/cuda_profile.hpp"
#include "model/model_spec.hpp"

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <exception>
#include <string>
#include <type_traits>
#include <vector>

using namespace syncplan;

namespace {

// Per-tensor tolerance: |gpu - cpu| <= absolute x rms(cpu) + relative x |cpu|.
//  * fp32: cuBLAS and Eigen sum in different orders and the GPU's expf/tanhf differ from glibc's
//    by an ulp or two: relative errors of 1e-6 x sqrt(length of a sum) at most here, so 1e-4 of
//    the tensor's rms plus 1e-3 of each value leaves a wide margin and still catches a wrong index.
//  * bf16: inputs are the same bf16 values on both sides, but the GPU rounds every output, and
//    the backward reads rounded forward outputs (probabilities, logits): 8 significant bits,
//    2^-9 = 0.2 % per rounding, a few roundings deep: 2e-2 of the rms plus 2e-2 of each value.
struct Tolerance {
  double absolute_rms, relative;
};
constexpr Tolerance kFp32{1e-4, 1e-3};
constexpr Tolerance kBf16{2e-2, 2e-2};

struct Case {
  std::string name;
  LayerOp op;
};

// Shapes chosen to exercise partial warps, partial 32-column blocks and several rows per thread:
// d = 80, S = 24, T = 48 tokens, head_dim 16.
Workload test_workload() {
  Workload w;
  w.batch = 2;
  w.seq = 24;
  return w;
}

std::vector<Case> cases() {
  const AttentionHeads mha{3, 3, 16}, gqa{4, 2, 16};
  return {
      {"token embedding", TokenEmbeddingOp{100, 80}},
      {"position embedding", PositionEmbeddingOp{32, 80}},
      {"linear with bias", LinearOp{80, 96, true}},
      {"linear without bias", LinearOp{96, 40, false}},
      {"layer norm", LayerNormOp{80, 1e-5}},
      {"RMS norm", RmsNormOp{80, 1e-6}},
      {"GELU", GeluOp{80}},
      {"SiLU", SiluOp{80}},
      {"gated product", GatedProductOp{80}},
      {"residual add", ResidualAddOp{80}},
      {"dropout 0.1", DropoutOp{0.1, 80}},
      {"rotary table", RotaryTableOp{16, 10000.0}},
      {"rotary application", RotaryApplyOp{gqa}},
      {"attention scores", AttentionScoresOp{mha}},
      {"attention scores, grouped-query", AttentionScoresOp{gqa}},
      {"attention context", AttentionContextOp{mha, 0.0}},
      {"attention context, grouped-query, dropout 0.1", AttentionContextOp{gqa, 0.1}},
      {"cross-entropy", CrossEntropyOp{100}},
  };
}

// Rounds the CPU's inputs to bf16, as the device holds them (same draws, rounded).
void round_inputs_to_bf16(HostTensors& host) {
  for (const OpTensor& tensor : host.tensors()) {
    const bool input = tensor.role == TensorRole::kInput || tensor.role == TensorRole::kGradInput;
    if (!input || tensor.kind != TensorKind::kValue) continue;
    for (float& value : host.values(tensor.name)) value = __bfloat162float(__float2bfloat16(value));
  }
}

// Compares one tensor; prints one line, and the first mismatches when it fails.
bool compare(const std::string& label, const std::string& tensor, const std::vector<float>& gpu,
             std::span<const float> cpu, Tolerance tolerance) {
  double squares = 0;
  for (const float value : cpu) squares += static_cast<double>(value) * value;
  const double rms = cpu.empty() ? 0 : std::sqrt(squares / static_cast<double>(cpu.size()));
  double worst_difference = 0;
  std::vector<std::size_t> mismatches;
  for (std::size_t i = 0; i < cpu.size(); ++i) {
    const double difference = std::abs(static_cast<double>(gpu[i]) - cpu[i]);
    worst_difference = std::max(worst_difference, difference);
    if (!(difference <= tolerance.absolute_rms * rms + tolerance.relative * std::abs(cpu[i]))) mismatches.push_back(i);
  }
  std::printf("%s  %-52s %-10s max |gpu - cpu| %.3g (rms %.3g, tolerance %g rms + %g |cpu|)\n",
              mismatches.empty() ? "ok  " : "FAIL", label.c_str(), tensor.c_str(), worst_difference, rms,
              tolerance.absolute_rms, tolerance.relative);
  for (std::size_t k = 0; k < std::min<std::size_t>(mismatches.size(), 5); ++k)
    std::printf("        [%zu] gpu %.7g cpu %.7g\n", mismatches[k], gpu[mismatches[k]], cpu[mismatches[k]]);
  return mismatches.empty();
}

// The tensors one pass writes: the forward's outputs, or the backward's gradients.
bool written_by(const OpTensor& tensor, Pass pass) {
  if (pass == Pass::kForward) return tensor.role == TensorRole::kOutput;
  return tensor.role == TensorRole::kGradOutput || tensor.role == TensorRole::kGradAccumulate;
}

template <class Element>
bool check_case(const Case& c, const Workload& w, Tolerance tolerance, const cuda::CudaContext& context) {
  constexpr std::uint64_t kSeed = 5;
  const std::string label = c.name + (std::is_same_v<Element, float> ? " fp32" : " bf16");
  HostTensors host(op_tensors(c.op, w), kSeed);
  if (!std::is_same_v<Element, float>) round_inputs_to_bf16(host);
  const cuda::DeviceTensors<Element> device(op_tensors(c.op, w), cuda::op_workspace_elements(c.op, w), kSeed,
                                            context.stream());
  bool ok = true;
  for (const Pass pass : {Pass::kForward, Pass::kBackward}) {
    if (pass == Pass::kBackward && !op_has_backward(c.op)) break;
    run_op_cpu(c.op, w, pass, host, kSeed);
    cuda::run_op_cuda(c.op, w, pass, device, kSeed, context);
    for (const OpTensor& tensor : host.tensors()) {
      if (!written_by(tensor, pass)) continue;
      if (tensor.kind == TensorKind::kMask) {
        const std::vector<std::uint8_t> gpu = device.host_mask(tensor.name, context.stream());
        const std::span<std::uint8_t> cpu = host.mask(tensor.name);
        const bool same = std::equal(gpu.begin(), gpu.end(), cpu.begin(), cpu.end());
        std::printf("%s  %-52s %-10s masks %s\n", same ? "ok  " : "FAIL", label.c_str(), tensor.name.c_str(),
                    same ? "identical" : "differ");
        ok &= same;
        continue;
      }
      ok &= compare(label, tensor.name, device.host_floats(tensor.name, context.stream()), host.values(tensor.name),
                    tolerance);
    }
  }
  return ok;
}

// The CUDA profiler end to end on tiny-gpt: every layer with work gets a positive median.
bool check_profiler(Dtype dtype) {
  const Model model = expand_model(read_model_spec_file(std::string(SYNCPLAN_DATA_DIR) + "/models/tiny-gpt.json"));
  Workload w;
  w.batch = 2;
  w.seq = 32;
  w.dtype = dtype;
  TimingOptions options;
  options.warmup_steps = 1;
  options.repeats = 3;
  const Measurement m = measure_cuda(model, w, options);
  bool ok = m.layers.size() == model.layers.size();
  for (std::size_t i = 0; ok && i < model.layers.size(); ++i) {
    const StepWork work = layer_work(model.layers[i], w);
    const bool busy = work.forward.flops() + work.forward.bytes > 0;
    const bool timed = median(m.layers[i].forward_s) > 0 && median(m.layers[i].backward_s) > 0;
    if (busy != timed) {
      std::printf("FAIL  profiler %s: layer %s busy %d but timed %d\n", dtype_name(dtype), model.layers[i].name.c_str(),
                  busy, timed);
      ok = false;
    }
  }
  const MeasurementSummary summary = summarize_measurement(model, w, m);
  std::printf("%s  profiler %s on tiny-gpt (%s): step forward %.3g s, backward %.3g s, step CV %.3g\n",
              ok ? "ok  " : "FAIL", dtype_name(dtype), m.source.c_str(), summary.step_forward_s,
              summary.step_backward_s, summary.step_cv.value_or(0.0));
  return ok;
}

}  // namespace

int main() {
  int devices = 0;
  const cudaError_t error = cudaGetDeviceCount(&devices);
  if (error != cudaSuccess || devices == 0) {
    std::printf("skipped: no CUDA device (%s)\n",
                error != cudaSuccess ? cudaGetErrorString(error) : "cudaGetDeviceCount found 0 devices");
    return 77;
  }
  try {
    std::printf("device: %s\n", cuda_device_name().c_str());
    const cuda::CudaContext context;
    const Workload w = test_workload();
    int failures = 0;
    for (const Case& c : cases()) {
      failures += !check_case<float>(c, w, kFp32, context);
      failures += !check_case<__nv_bfloat16>(c, w, kBf16, context);
    }
    failures += !check_profiler(Dtype::kFp32);
    failures += !check_profiler(Dtype::kBf16);
    std::printf("%s: %d failing case%s\n", failures == 0 ? "PASS" : "FAIL", failures, failures == 1 ? "" : "s");
    return failures == 0 ? 0 : 1;
  } catch (const std::exception& e) {
    std::printf("FAIL: %s\n", e.what());
    return 1;
  }
}
