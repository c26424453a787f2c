// The CPU profiler: the layer graph on the host (model/cpu/cpu_graph.hpp), steady_clock around
// each layer's forward and backward and the trainer's AdamW step, and the Eigen GEMM ceiling.
#include "profiler/cpu_profile.hpp"
#include "core/units.hpp"
#include "core/field_error.hpp"

#include "core/errors.hpp"
#include "model/adamw.hpp"
#include "model/cpu/cpu_graph.hpp"

#include <Eigen/Core>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <set>
#include <sstream>
#include <unistd.h>
#include <utility>

namespace syncplan {

// ---------------------------------------------------------------------------------------------
// Timing
// ---------------------------------------------------------------------------------------------

namespace {

using Clock = std::chrono::steady_clock;

// Seconds of `pass` of one layer; 0 exactly when the layer runs nothing in that pass.
template <class Pass>
double time_layer(bool runs, Pass&& pass) {
  if (!runs) return 0.0;
  const Clock::time_point start = Clock::now();
  pass();
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// Best FLOP/s of 5 timed runs (after one untimed) of c = a b, a [m, k], b [k, n].
double best_gemm_flops_per_s(Eigen::Index m, Eigen::Index k, Eigen::Index n) {
  const Eigen::MatrixXf a = Eigen::MatrixXf::Random(m, k), b = Eigen::MatrixXf::Random(k, n);
  Eigen::MatrixXf c(m, n);
  c.noalias() = a * b;  // untimed: first touch of c, code and caches
  double best = 0;
  for (int repeat = 0; repeat < 5; ++repeat) {
    const Clock::time_point start = Clock::now();
    c.noalias() = a * b;
    const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
    best = std::max(best, 2.0 * static_cast<double>(m) * static_cast<double>(k) * static_cast<double>(n) / seconds);
  }
  return best;
}

}  // namespace

Measurement measure_cpu(const Model& model, const Workload& workload, const TimingOptions& options) {
  if (workload.dtype != Dtype::kFp32)
    throw FieldError("dtype", std::string("dtype ") + dtype_name(workload.dtype) +
                                  ": the cpu device computes in fp32 only (its kernels are the CPU runtime's, which "
                                  "trains in fp32); use fp32, or the cuda device or the estimate for bf16");
  SYNCPLAN_CHECK(options.warmup_steps >= 0 && options.repeats >= 1);

  // The buffers of the whole graph, as in training (activations are kept for the backward), and
  // the AdamW step's two moments (4 bytes each per parameter).
  cpu::require_host_memory(model, workload, 8.0 * static_cast<double>(model.param_count()), "cpu profile");

  cpu::CpuGraph graph(model, workload);
  graph.initialize_parameters(options.seed);
  const TokenBatch batch = random_token_batch(graph.graph(), options.seed);
  graph.set_batch(batch.ids, batch.targets);
  graph.set_dropout_seed(options.seed);

  // The optimizer step the trainer runs (runtime/trainer.cpp): one AdamW step over the whole
  // arena, timed whole and apportioned to the layers by their own parameters (AdamW's work is the
  // same per element; a tied layer's parameters are its owner's, a layer without any gets 0).
  // Timing each layer's slice alone would add a call and a cache miss per small tensor (a norm's
  // 128 weights) that the trainer's single call does not pay.
  AdamW optimizer(model.param_count());
  SYNCPLAN_CHECK(static_cast<std::int64_t>(graph.parameters().size()) == model.param_count());

  Measurement measurement;
  measurement.source = "measured:cpu";
  measurement.layers.resize(model.layers.size());
  for (int step = 0; step < options.warmup_steps + options.repeats; ++step) {
    const bool timed = step >= options.warmup_steps;
    graph.zero_gradients();  // untimed, as in the trainer (outside its compute and update events)
    for (std::size_t i = 0; i < graph.layer_count(); ++i) {
      const double seconds = time_layer(graph.graph().layers[i].has_forward(), [&] { graph.forward(i); });
      if (timed) measurement.layers[i].forward_s.push_back(seconds);
    }
    for (std::size_t i = graph.layer_count(); i-- > 0;) {
      const double seconds = time_layer(graph.graph().layers[i].has_backward(), [&] { graph.backward(i); });
      if (timed) measurement.layers[i].backward_s.push_back(seconds);
    }
    const double update_s = time_layer(true, [&] { optimizer.step(graph.parameters(), graph.gradients()); });
    if (timed)
      for (std::size_t i = 0; i < model.layers.size(); ++i)
        measurement.layers[i].update_s.push_back(update_s * static_cast<double>(model.layers[i].param_count()) /
                                                 static_cast<double>(model.param_count()));
  }
  if (options.gemm_ceiling)
    measurement.gemm_ceiling_flops_per_s = gemm_ceiling_cpu(model, workload, measurement.gemm_ceiling_shape);
  return measurement;
}

std::vector<GemmShape> ceiling_gemm_shapes(const Model& model, const Workload& workload) {
  std::set<std::pair<std::int64_t, std::int64_t>> projections;  // (in, out) of every linear op
  for (const ModelLayer& layer : model.layers)
    for (const LayerOp& op : layer.ops)
      if (const auto* linear = std::get_if<LinearOp>(&op)) projections.emplace(linear->in_features, linear->out_features);
  std::vector<GemmShape> shapes;
  for (const std::int64_t n : {256, 512, 1024}) shapes.push_back({n, n, n});
  for (const auto& [in, out] : projections) {
    std::int64_t rows = workload.tokens();
    const auto flops = [&] { return 2.0 * static_cast<double>(rows) * static_cast<double>(in) * static_cast<double>(out); };
    while (rows > kCeilingMinRows && flops() > kCeilingMaxGemmFlops) rows /= 2;
    shapes.push_back({rows, in, out});
  }
  return shapes;
}

double gemm_ceiling_cpu(const Model& model, const Workload& workload, std::string& shape) {
  double best_flops_per_s = 0;
  for (const GemmShape& gemm : ceiling_gemm_shapes(model, workload)) {
    const double flops_per_s = best_gemm_flops_per_s(gemm.m, gemm.k, gemm.n);
    if (flops_per_s > best_flops_per_s) {
      best_flops_per_s = flops_per_s;
      shape = std::to_string(gemm.m) + " x " + std::to_string(gemm.k) + " x " + std::to_string(gemm.n) +
              " fp32 (Eigen)";
    }
  }
  return best_flops_per_s;
}

}  // namespace syncplan
