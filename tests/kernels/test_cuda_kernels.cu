// The CUDA kernels against the CPU reference, op by op and pass by pass, each op alone as a
// one-layer graph through cuda::CudaGraph and cpu::CpuGraph (ggml's test-backend-ops pattern), in
// fp32 and bf16, with a tolerance per tensor (llm.c's pattern; docs/profiler.md section 4); the
// CUDA layer graph against
// the CPU one, loss and every parameter's gradient of a whole training step; then the CUDA
// profiler on tiny-gpt. Without a visible GPU it prints "skipped: no CUDA device (...)" and exits
// 77, which CTest reports as skipped, never as passed.
#include "core/cuda_check.hpp"
#include "core/errors.hpp"
#include "model/cpu/cpu_graph.hpp"
#include "model/adamw.hpp"
#include "model/cuda/cuda_graph.cuh"
#include "model/cuda/cuda_trainer.cuh"
#include "profiler/cpu_profile.hpp"
#include "model/cuda/device_buffer.cuh"
#include "model/op_graph.hpp"
#include "profiler/cuda_profile.hpp"
#include "model/model_spec.hpp"
#include "tests/kernels/op_graph_inputs.hpp"
#include "tests/model/graph_fixtures.hpp"

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <exception>
#include <random>
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

// The tensors one pass writes: the forward's outputs, or the backward's gradients of the inputs
// (a gradient shared with an output, which the backward only reads, is skipped).
std::vector<OpGraphTensor> written_by(const OpGraph& op, bool forward) {
  if (forward) return op.outputs;
  std::vector<OpGraphTensor> written;
  for (const OpGraphTensor& input : op.inputs) {
    const bool shared = std::any_of(op.outputs.begin(), op.outputs.end(), [&](const OpGraphTensor& output) {
      return output.grad.elements > 0 && output.grad.arena == input.grad.arena && output.grad.offset == input.grad.offset;
    });
    if (input.grad.elements > 0 && !shared) written.push_back({"d_" + input.name, input.grad, {}});
  }
  return written;
}

// One op as a one-layer graph on both backends from the same inputs (rounded to bf16 for a bf16
// graph, as the device holds them), batch and dropout seed; every tensor each pass writes compared.
template <class Element>
bool check_case(const Case& c, Workload w, Tolerance tolerance, const cuda::CudaContext& context) {
  constexpr std::uint64_t kSeed = 5;
  const bool bf16 = !std::is_same_v<Element, float>;
  const std::string label = c.name + (bf16 ? " bf16" : " fp32");
  const cudaStream_t stream = context.stream();
  const OpGraph op = build_op_graph(c.op, w);
  LayerGraph device_graph = op.graph;
  device_graph.workload.dtype = bf16 ? Dtype::kBf16 : Dtype::kFp32;
  cuda::CudaGraph gpu(std::move(device_graph));
  cpu::CpuGraph cpu(op.graph);
  for (test::RandomTensor& tensor : test::random_op_inputs(op, kSeed)) {
    if (bf16)
      for (float& value : tensor.values) value = __bfloat162float(__float2bfloat16(value));
    std::copy(tensor.values.begin(), tensor.values.end(), cpu.at(tensor.ref).begin());
    gpu.set_tensor(tensor.ref, tensor.values, stream);
  }
  const TokenBatch batch = random_token_batch(op.graph, kSeed);
  cpu.set_batch(batch.ids, batch.targets);
  gpu.set_batch(batch.ids, batch.targets, stream);
  cpu.set_dropout_seed(kSeed);
  gpu.set_dropout_seed(kSeed);
  bool ok = true;
  for (const bool forward : {true, false}) {
    if (!forward && !op.graph.layers.front().has_backward()) break;
    if (forward) {
      cpu.forward(0);
      gpu.forward(0, stream);
    } else {
      cpu.zero_gradients();
      gpu.zero_gradients(stream);
      cpu.backward(0);
      gpu.backward(0, stream);
    }
    for (const OpGraphTensor& tensor : written_by(op, forward))
      ok &= compare(label, tensor.name, gpu.host_tensor(tensor.value, stream), cpu.at(tensor.value), tolerance);
    if (!forward) continue;
    for (const TensorRef& mask : op.masks) {
      const std::vector<std::uint8_t> on_gpu = gpu.host_mask(mask, stream);
      const std::span<std::uint8_t> on_cpu = cpu.mask(mask);
      const bool same = std::equal(on_gpu.begin(), on_gpu.end(), on_cpu.begin(), on_cpu.end());
      std::printf("%s  %-52s %-10s masks %s\n", same ? "ok  " : "FAIL", label.c_str(), "mask", same ? "identical" : "differ");
      ok &= same;
    }
  }
  return ok;
}

// ---------------------------------------------------------------------------------------------
// The layer graph: CudaGraph against CpuGraph on one training step
// ---------------------------------------------------------------------------------------------

// Per-tensor tolerance of a whole step, on the norm of the difference: ||gpu - cpu||_2 <=
// norm x ||cpu||_2, and, where `max_rms` is finite, every |gpu - cpu| <= max_rms x rms(cpu).
//  * fp32: both sides start from the same fp32 parameters and batch; cuBLAS and Eigen sum in
//    different orders and the embedding's scatter adds in any order, relative errors of about
//    1e-7 per operation, some 80 operations deep from the embedding to the loss and back: ~1e-6.
//    1e-4 of the norm and 1e-3 of the rms per element leave a wide margin and still catch a wrong
//    index or a missed accumulation, which are errors of the order of the values themselves.
//  * bf16: the same bf16 parameters on both sides, the CPU computing in fp32; the GPU rounds every
//    stored activation and gradient to 8 significant bits (0.23 % rms error per rounding), some 80
//    roundings deep: about sqrt(80) x 0.23 % = 2 % of the norm, which the subtractions of the
//    softmax's and the norms' backward (dP - rowsum(dP P), g - mean(g) - x̂ mean(g x̂)) can
//    amplify a few times for q, k and the norms' inputs: 1e-1 of the norm. A wiring error (a
//    wrong index or layout, a missed accumulation) is an error of the order of the gradient
//    itself, far above it. An element-wise bound would fail on the tails of 834k such errors, so
//    none. The loss is a mean of fp32 per-token losses from bf16 logits: 1e-2 of it.
struct StepTolerance {
  double loss_relative, norm, max_rms;
};
constexpr StepTolerance kStepFp32{1e-5, 1e-4, 1e-3};
constexpr StepTolerance kStepBf16{1e-2, 1e-1, INFINITY};

// Compares one parameter's gradient; one line, and its largest differences when it fails.
bool compare_gradient(const std::string& label, const std::string& tensor, std::span<const float> gpu,
                      std::span<const float> cpu, StepTolerance tolerance) {
  double cpu_squares = 0, difference_squares = 0, worst = 0;
  for (std::size_t i = 0; i < cpu.size(); ++i) {
    const double difference = static_cast<double>(gpu[i]) - cpu[i];
    cpu_squares += static_cast<double>(cpu[i]) * cpu[i];
    difference_squares += difference * difference;
    worst = std::max(worst, std::abs(difference));
  }
  const double rms = cpu.empty() ? 0 : std::sqrt(cpu_squares / static_cast<double>(cpu.size()));
  const double relative = cpu_squares == 0 ? std::sqrt(difference_squares) : std::sqrt(difference_squares / cpu_squares);
  const bool ok = relative <= tolerance.norm && !(worst > tolerance.max_rms * rms) && std::isfinite(relative);
  std::printf("%s  %-28s %-40s |gpu - cpu| / |cpu| %.3g (tolerance %g), max %.3g rms\n", ok ? "ok  " : "FAIL",
              label.c_str(), tensor.c_str(), relative, tolerance.norm, rms == 0 ? worst : worst / rms);
  if (ok) return true;
  // The first elements beyond the norm's share of the rms: the evidence, llm.c style.
  int shown = 0;
  for (std::size_t i = 0; i < cpu.size() && shown < 5; ++i)
    if (std::abs(static_cast<double>(gpu[i]) - cpu[i]) > tolerance.norm * rms) {
      std::printf("        %s[%zu] gpu %.7g cpu %.7g\n", tensor.c_str(), i, gpu[i], cpu[i]);
      ++shown;
    }
  return false;
}

// One step of `model` at `workload` on both backends from the same parameters (seed 11, rounded
// to bf16 for a bf16 graph), batch and dropout seed: the losses, then every owned parameter's
// gradient, by layer name.
bool check_graph(const Model& model, Workload w, Dtype dtype, StepTolerance tolerance,
                 const cuda::CudaContext& context) {
  const std::string label = model.name + " " + dtype_name(dtype);
  const cudaStream_t stream = context.stream();
  w.dtype = dtype;
  cuda::CudaGraph gpu(model, w);
  w.dtype = Dtype::kFp32;
  cpu::CpuGraph cpu(model, w);

  std::vector<float> parameters(static_cast<std::size_t>(cpu.graph().parameter_elements));
  initialize_parameters(cpu.graph(), 11, parameters);
  if (dtype == Dtype::kBf16)
    for (float& value : parameters) value = __bfloat162float(__float2bfloat16(value));
  std::copy(parameters.begin(), parameters.end(), cpu.parameters().begin());
  gpu.set_parameters(parameters, stream);
  const test::Batch batch = test::text_batch(w.batch, w.seq, cpu.graph().vocab_size);
  cpu.set_batch(batch.ids, batch.targets);
  gpu.set_batch(batch.ids, batch.targets, stream);
  cpu.set_dropout_seed(3);
  gpu.set_dropout_seed(3);

  const double cpu_loss = cpu.forward_backward(), gpu_loss = gpu.forward_backward(stream);
  const double loss_error = std::abs(gpu_loss - cpu_loss) / std::abs(cpu_loss);
  bool ok = loss_error <= tolerance.loss_relative;
  std::printf("%s  %-28s %-40s gpu %.7g cpu %.7g (relative %.3g, tolerance %g)\n", ok ? "ok  " : "FAIL", label.c_str(),
              "loss", gpu_loss, cpu_loss, loss_error, tolerance.loss_relative);

  const std::vector<float> gradients = gpu.host_copy(Arena::kGradients, stream);
  for (std::size_t i = 0; i < cpu.layer_count(); ++i) {
    const GraphLayer& layer = cpu.graph().layers[i];
    if (layer.tied) continue;  // its gradient is in the owner's
    for (const GraphParam& param : layer.params) {
      const auto offset = static_cast<std::size_t>(param.value.offset), count = static_cast<std::size_t>(param.value.elements);
      ok &= compare_gradient(label, layer.name + "." + param.name, std::span<const float>(gradients).subspan(offset, count),
                             std::span<const float>(cpu.gradients()).subspan(offset, count), tolerance);
    }
  }
  // A tied layer's spans are its owner's (a bucket syncs them once).
  for (std::size_t i = 0; i < gpu.layer_count(); ++i) {
    const GraphLayer& layer = gpu.graph().layers[i];
    if (!layer.tied) continue;
    const std::vector<cuda::DeviceSpan> spans = gpu.layer_gradients(i);
    const bool shared = !spans.empty() && static_cast<std::uint8_t*>(spans[0].data) ==
                                              static_cast<std::uint8_t*>(gpu.gradients().data) +
                                                  layer.params[0].value.offset * dtype_size_bytes(dtype);
    std::printf("%s  %-28s %-40s spans the owner's gradients\n", shared ? "ok  " : "FAIL", label.c_str(),
                layer.name.c_str());
    ok &= shared;
  }
  return ok;
}

// The device bytes of tiny-gpt's graph at batch 2 x seq 32 (T = 64) in bf16, beyond the arenas
// (LayerGraph::total_bytes(2)), by hand: 20 fp32 statistics of [T] (mean and rstd of 9 layer
// norms, the losses and lse) = 20 x 64 x 4 = 5120 bytes; the scores' backward scratch
// [B, heads, S, S] = 2 x 4 x 32 x 32 = 8192 values = 16384 bytes; contiguous q, k, d_q, d_k
// (GPT-2's are column slices of c_attn's output) 4 x T x d = 4 x 64 x 128 = 32768 values =
// 65536 bytes. Host arithmetic only: runs without a GPU.
bool check_graph_bytes() {
  Workload w;
  w.batch = 2;
  w.seq = 32;
  w.dtype = Dtype::kBf16;
  const LayerGraph graph = build_layer_graph(test::shipped_model("tiny-gpt"), w);
  const std::int64_t expected = graph.total_bytes(2) + 5120 + 16384 + 65536, actual = cuda::cuda_graph_bytes(graph);
  std::printf("%s  cuda_graph_bytes of tiny-gpt bf16 at 2 x 32: %lld, expected %lld\n", actual == expected ? "ok  " : "FAIL",
              static_cast<long long>(actual), static_cast<long long>(expected));
  return actual == expected;
}

// A graph too large for the device: one InputError line naming the workload, before any allocation.
bool check_graph_too_large() {
  const Model model = test::shipped_model("gpt2-xl");
  Workload w;
  w.batch = 4096;
  w.seq = 1024;
  w.dtype = Dtype::kBf16;
  try {
    cuda::CudaGraph graph(model, w);
  } catch (const InputError& e) {
    const std::string message = e.what();
    const bool ok = message.find("--batch 4096 --seq 1024: the cuda layer graph of gpt2-xl needs") == 0 &&
                    message.find('\n') == std::string::npos;
    std::printf("%s  graph too large: %s\n", ok ? "ok  " : "FAIL", message.c_str());
    return ok;
  }
  std::printf("FAIL  graph too large: gpt2-xl at batch 4096 x seq 1024 was allocated\n");
  return false;
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

// The CUDA AdamW against model/adamw.hpp's on 10,000 random elements for 3 steps. Expected: the
// same bits. Both compute in fp32 with the scalars rounded from the same double expressions; the
// kernel avoids fused multiply-adds (__fmul_rn, __fadd_rn) and CUDA's default division and sqrtf
// are IEEE round-to-nearest, as x86-64's SSE are; the host build has no FMA either.
bool check_adamw(const cuda::CudaContext& context) {
  constexpr std::size_t n = 10000;
  std::mt19937 random(5);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> p(n), m(n), v(n);
  for (std::size_t i = 0; i < n; ++i) {
    p[i] = normal(random);
    m[i] = 0.1f * normal(random);
    v[i] = std::abs(0.01f * normal(random));
  }
  AdamWOptions options;
  options.learning_rate = 3e-3;
  AdamW cpu(static_cast<std::int64_t>(n), options);
  cpu.restore(m, v, 4);  // continuing from step 4: the bias corrections of steps 5..7
  std::vector<float> cpu_p = p;
  const cudaStream_t stream = context.stream();
  cuda::DeviceBuffer dp(n * 4), dg(n * 4), dm(n * 4), dv(n * 4);
  const auto up = [&](cuda::DeviceBuffer& to, const std::vector<float>& from) {
    SYNCPLAN_CUDA_CHECK(cudaMemcpy(to.data(), from.data(), n * 4, cudaMemcpyHostToDevice));
  };
  up(dp, p);
  up(dm, m);
  up(dv, v);
  const auto f = [](cuda::DeviceBuffer& b) { return std::span<float>(static_cast<float*>(b.data()), n); };
  for (std::int64_t step = 5; step <= 7; ++step) {
    std::vector<float> g(n);
    for (float& value : g) value = normal(random);
    cpu.step(cpu_p, g);
    up(dg, g);
    cuda::adamw_step(f(dp), f(dg), f(dm), f(dv), options, step, stream);
  }
  std::vector<float> gpu_p(n), gpu_m(n), gpu_v(n);
  SYNCPLAN_CUDA_CHECK(cudaStreamSynchronize(stream));
  SYNCPLAN_CUDA_CHECK(cudaMemcpy(gpu_p.data(), dp.data(), n * 4, cudaMemcpyDeviceToHost));
  SYNCPLAN_CUDA_CHECK(cudaMemcpy(gpu_m.data(), dm.data(), n * 4, cudaMemcpyDeviceToHost));
  SYNCPLAN_CUDA_CHECK(cudaMemcpy(gpu_v.data(), dv.data(), n * 4, cudaMemcpyDeviceToHost));
  std::size_t differ = 0;
  for (std::size_t i = 0; i < n; ++i)
    differ += std::memcmp(&gpu_p[i], &cpu_p[i], 4) != 0 || std::memcmp(&gpu_m[i], &cpu.first_moment()[i], 4) != 0 ||
              std::memcmp(&gpu_v[i], &cpu.second_moment()[i], 4) != 0;
  std::printf("%s  adamw_step: %zu of %zu elements differ from the CPU's bits after 3 steps\n", differ == 0 ? "ok  " : "FAIL",
              differ, n);
  return differ == 0;
}

// The CUDA trainer against the CPU graph and AdamW on tiny-gpt for 3 steps (batch 2 x 32, fp32):
// each step's loss within kStepFp32's relative tolerance, and the parameters' difference after
// the last step, as an rms, within 5% of the rms of the CPU's own change over the 3 steps. Adam
// moves a parameter by about lr per step whatever its gradient's size, so the few elements whose
// gradient is at rounding level can move by up to 2 lr apart (a sign flip); at fp32's 1e-4 relative
// gradient error such elements are well under 0.1% of them, which makes the rms difference about
// 1-3% of the change, while a wrong update differs by the whole change. The layers' buffers are
// the graph's tensors, and get_state/set_state give back what they took.
bool check_trainer() {
  const Model model = test::shipped_model("tiny-gpt");
  Workload w;
  w.batch = 2;
  w.seq = 32;
  AdamWOptions options;
  cuda::CudaTrainer gpu(model, w, options, 0);
  cpu::CpuGraph cpu(model, w);
  AdamW cpu_adam(model.param_count(), options);
  gpu.initialize(9);
  cpu.initialize_parameters(9);
  const std::vector<float> initial(cpu.parameters().begin(), cpu.parameters().end());
  bool ok = gpu.parameter_count() == static_cast<std::int64_t>(cpu.parameters().size());
  for (std::size_t l = 0; l < cpu.layer_count(); ++l) {
    const std::vector<cuda::DeviceSpan> buffers = gpu.layer_buffers(l, false);
    const std::vector<std::span<float>> tensors = cpu.layer_parameters(l);
    ok &= buffers.size() == tensors.size();
    for (std::size_t t = 0; ok && t < tensors.size(); ++t)
      ok &= buffers[t].elements == static_cast<std::int64_t>(tensors[t].size());
  }
  std::vector<cuda::LayerTimes> times(gpu.layer_count());
  cuda::LayerTimes update;
  double worst_loss = 0;
  for (std::uint64_t step = 0; step < 3; ++step) {
    const test::Batch batch = test::text_batch(w.batch, w.seq, cpu.graph().vocab_size);
    gpu.set_batch(batch.ids, batch.targets, step);
    cpu.set_batch(batch.ids, batch.targets);
    cpu.set_dropout_seed(step);
    gpu.begin();
    for (std::size_t l = 0; l < gpu.layer_count(); ++l) gpu.forward(l);
    for (std::size_t l = gpu.layer_count(); l-- > 0;) ok &= gpu.backward(l) != nullptr;
    gpu.step();
    const double gpu_loss = gpu.finish(times, update);
    const double cpu_loss = cpu.forward_backward();
    cpu_adam.step(cpu.parameters(), cpu.gradients());
    worst_loss = std::max(worst_loss, std::abs(gpu_loss - cpu_loss) / std::abs(cpu_loss));
    for (const cuda::LayerTimes& t : times) ok &= t.forward_s > 0 && t.backward_s >= 0 && t.backward_start_s >= t.forward_start_s;
    ok &= update.forward_s > 0;
  }
  const auto n = static_cast<std::size_t>(gpu.parameter_count());
  std::vector<float> p(n), m(n), v(n);
  std::int64_t adam_step = 0;
  gpu.get_state(p.data(), m.data(), v.data(), adam_step);
  double change = 0, difference = 0;
  for (std::size_t i = 0; i < n; ++i) {
    change += std::pow(static_cast<double>(cpu.parameters()[i]) - initial[i], 2);
    difference += std::pow(static_cast<double>(p[i]) - cpu.parameters()[i], 2);
  }
  change = std::sqrt(change / static_cast<double>(n));
  difference = std::sqrt(difference / static_cast<double>(n));
  ok &= adam_step == 3 && worst_loss <= kStepFp32.loss_relative && change > 0 && difference <= 0.05 * change;
  // A round trip through set_state: the state read back is the state written.
  std::vector<float> q(p);
  q[0] += 1.0f;
  gpu.set_state(q.data(), m.data(), v.data(), 7);
  std::vector<float> p2(n), m2(n), v2(n);
  gpu.get_state(p2.data(), m2.data(), v2.data(), adam_step);
  ok &= p2 == q && m2 == m && v2 == v && adam_step == 7;
  std::printf("%s  CudaTrainer tiny-gpt fp32, 3 steps: loss relative error %.3g (tolerance %g), parameters' rms "
              "difference %.3g of a change of %.3g (tolerance 5%%), buffers, timing events and state round trip\n",
              ok ? "ok  " : "FAIL", worst_loss, kStepFp32.loss_relative, difference, change);
  return ok;
}

// Delayed averaging's device half (docs/runtime.md section 11) on tiny-gpt's wte and c_fc tensors:
// snapshot copies them, one after another, into own and mean; after mean is changed (as the
// all-reduce would) and the live parameters moved (as a step would), correct gives, bit for bit,
// p + (mean - own) as the CPU executor computes it (fp32, no fused multiply-add).
bool check_snapshots() {
  const Model model = test::shipped_model("tiny-gpt");
  Workload w;
  w.batch = 2;
  w.seq = 32;
  cuda::CudaTrainer gpu(model, w, AdamWOptions{}, 0);
  gpu.initialize(5);
  std::vector<cuda::DeviceSpan> tensors;
  for (std::size_t l = 0; l < model.layers.size(); ++l)
    if (model.layers[l].name == "transformer.wte" || model.layers[l].name == "transformer.h.0.mlp.c_fc")
      for (const cuda::DeviceSpan& tensor : gpu.layer_buffers(l, false)) tensors.push_back(tensor);
  std::size_t total = 0;
  for (const cuda::DeviceSpan& tensor : tensors) total += static_cast<std::size_t>(tensor.elements);
  float* own = gpu.snapshot_buffer(total);
  float* mean = gpu.snapshot_buffer(total);
  bool ok = !tensors.empty() && gpu.snapshot(tensors, own, mean) != nullptr;
  SYNCPLAN_CUDA_CHECK(cudaDeviceSynchronize());
  // The live tensors as the host sees them now (the snapshot's expected content).
  std::vector<float> live(total), own_host(total), mean_host(total);
  std::size_t at = 0;
  for (const cuda::DeviceSpan& tensor : tensors) {
    SYNCPLAN_CUDA_CHECK(cudaMemcpy(live.data() + at, tensor.data, static_cast<std::size_t>(tensor.bytes()),
                                   cudaMemcpyDeviceToHost));
    at += static_cast<std::size_t>(tensor.elements);
  }
  SYNCPLAN_CUDA_CHECK(cudaMemcpy(own_host.data(), own, total * sizeof(float), cudaMemcpyDeviceToHost));
  SYNCPLAN_CUDA_CHECK(cudaMemcpy(mean_host.data(), mean, total * sizeof(float), cudaMemcpyDeviceToHost));
  ok &= own_host == live && mean_host == live;
  // "All-reduced" mean and "stepped" parameters: arbitrary, distinct values.
  std::vector<float> new_mean(total), moved(total), expected(total);
  for (std::size_t i = 0; i < total; ++i) {
    new_mean[i] = live[i] * 0.5f + 0.001f * static_cast<float>(i % 97);
    moved[i] = live[i] - 0.003f * static_cast<float>(i % 13);
    volatile float difference = new_mean[i] - own_host[i];  // rounded on its own, as the executor's
    expected[i] = moved[i] + difference;
  }
  SYNCPLAN_CUDA_CHECK(cudaMemcpy(mean, new_mean.data(), total * sizeof(float), cudaMemcpyHostToDevice));
  at = 0;
  for (const cuda::DeviceSpan& tensor : tensors) {
    SYNCPLAN_CUDA_CHECK(cudaMemcpy(tensor.data, moved.data() + at, static_cast<std::size_t>(tensor.bytes()),
                                   cudaMemcpyHostToDevice));
    at += static_cast<std::size_t>(tensor.elements);
  }
  gpu.correct(tensors, own, mean);
  SYNCPLAN_CUDA_CHECK(cudaDeviceSynchronize());
  std::vector<float> corrected(total);
  at = 0;
  for (const cuda::DeviceSpan& tensor : tensors) {
    SYNCPLAN_CUDA_CHECK(cudaMemcpy(corrected.data() + at, tensor.data, static_cast<std::size_t>(tensor.bytes()),
                                   cudaMemcpyDeviceToHost));
    at += static_cast<std::size_t>(tensor.elements);
  }
  ok &= corrected == expected;
  std::printf("%s  CudaTrainer snapshot and correction of %zu tensors (%zu floats): copies exact, p + (m - s) bit for bit\n",
              ok ? "ok  " : "FAIL", tensors.size(), total);
  return ok;
}

}  // namespace

int main() {
  if (!check_graph_bytes()) {
    std::printf("FAIL: 1 failing case (before looking for a device)\n");
    return 1;
  }
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
    const Model tiny_gpt = test::shipped_model("tiny-gpt"), small_llama = test::small_llama();
    Workload graph_workload;
    graph_workload.batch = 2;
    graph_workload.seq = 32;
    for (const Dtype dtype : {Dtype::kFp32, Dtype::kBf16}) {
      const StepTolerance tolerance = dtype == Dtype::kFp32 ? kStepFp32 : kStepBf16;
      failures += !check_graph(tiny_gpt, graph_workload, dtype, tolerance, context);
      failures += !check_graph(small_llama, graph_workload, dtype, tolerance, context);
    }
    failures += !check_graph(test::small_gpt2_dropout(), graph_workload, Dtype::kFp32, kStepFp32, context);
    failures += !check_graph_too_large();
    failures += !check_adamw(context);
    failures += !check_trainer();
    failures += !check_snapshots();
    failures += !check_profiler(Dtype::kFp32);
    failures += !check_profiler(Dtype::kBf16);
    std::printf("%s: %d failing case%s\n", failures == 0 ? "PASS" : "FAIL", failures, failures == 1 ? "" : "s");
    return failures == 0 ? 0 : 1;
  } catch (const std::exception& e) {
    std::printf("FAIL: %s\n", e.what());
    return 1;
  }
}
