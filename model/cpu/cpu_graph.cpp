// The layer graph on the host: fp32 arenas and one kernel call (model/cpu/kernels.hpp) per step
// and pass.
#include "model/cpu/cpu_graph.hpp"
#include "core/field_error.hpp"

#include "core/errors.hpp"
#include "core/host_memory.hpp"
#include "core/units.hpp"
#include "core/overloaded.hpp"
#include "model/cpu/kernels.hpp"
#include "model/require_elements.hpp"

#include <algorithm>
#include <utility>

namespace syncplan::cpu {

namespace {

std::vector<float> zeros(std::int64_t elements) { return std::vector<float>(static_cast<std::size_t>(elements), 0.0f); }

// The workload, unless its dtype is not fp32 (checked before the graph is built).
const Workload& require_fp32(const Workload& workload) {
  if (workload.dtype != Dtype::kFp32)
    throw FieldError("dtype", std::string("dtype ") + dtype_name(workload.dtype) +
                                  ": the CPU layer graph computes in fp32 only; use fp32");
  return workload;
}

StridedRows<const float> const_rows(StridedRows<float> rows) {
  return {std::span<const float>(rows.data), rows.row_stride};
}

}  // namespace

void require_host_memory(const Model& model, const Workload& workload, double extra_bytes, const std::string& job) {
  const double needed_bytes =
      static_cast<double>(build_layer_graph(model, workload).total_bytes(dtype_size_bytes(Dtype::kFp32))) + extra_bytes;
  const double available_bytes = available_memory_bytes();
  if (needed_bytes > available_bytes)
    throw FieldError("batch", "batch " + std::to_string(workload.batch) + " x seq " + std::to_string(workload.seq) +
                                  ": the " + job + " of " + model.name + " needs " +
                                  format_short(needed_bytes / units::kBytesPerGiB, 2) + " GiB of buffers, more than the " +
                                  format_short(available_bytes / units::kBytesPerGiB, 2) +
                                  " GiB available; use a smaller batch or sequence");
}

CpuGraph::CpuGraph(const Model& model, const Workload& workload)
    : CpuGraph(build_layer_graph(model, require_fp32(workload))) {}

CpuGraph::CpuGraph(LayerGraph graph) : graph_(std::move(graph)) {
  const Workload& workload = require_fp32(graph_.workload);
  parameters_ = zeros(graph_.parameter_elements);
  gradients_ = zeros(graph_.parameter_elements);
  activations_ = zeros(graph_.activation_elements);
  activation_grads_ = zeros(graph_.activation_grad_elements);
  masks_.assign(static_cast<std::size_t>(graph_.mask_elements), 0);
  ids_.assign(static_cast<std::size_t>(workload.tokens()), 0);
  targets_.assign(static_cast<std::size_t>(workload.tokens()), -1);
  if (graph_.layers.empty() || graph_.layers.back().steps.empty()) return;
  if (const auto* loss = std::get_if<CrossEntropyStep>(&graph_.layers.back().steps.back())) losses_ = loss->losses;
}

void CpuGraph::initialize_parameters(std::uint64_t seed) { syncplan::initialize_parameters(graph_, seed, parameters_); }

void CpuGraph::set_batch(std::span<const std::int64_t> ids, std::span<const std::int64_t> targets) {
  check_token_batch(graph_, ids, targets);
  std::copy(ids.begin(), ids.end(), ids_.begin());
  std::copy(targets.begin(), targets.end(), targets_.begin());
}

std::span<float> CpuGraph::arena(Arena arena) {
  switch (arena) {
    case Arena::kParameters: return parameters_;
    case Arena::kGradients: return gradients_;
    case Arena::kActivations: return activations_;
    case Arena::kActivationGrads: return activation_grads_;
    case Arena::kMasks: break;
  }
  throw InternalError("CpuGraph: the mask arena holds bytes, not floats");
}

std::span<float> CpuGraph::at(const TensorRef& ref) {
  const std::span<float> whole = arena(ref.arena);
  SYNCPLAN_CHECK(ref.offset >= 0 && ref.elements >= 0 &&
                 ref.offset + ref.elements <= static_cast<std::int64_t>(whole.size()));
  return whole.subspan(static_cast<std::size_t>(ref.offset), static_cast<std::size_t>(ref.elements));
}

std::span<std::uint8_t> CpuGraph::mask(const TensorRef& ref) {
  SYNCPLAN_CHECK(ref.arena == Arena::kMasks && ref.offset + ref.elements <= graph_.mask_elements);
  return std::span<std::uint8_t>(masks_).subspan(static_cast<std::size_t>(ref.offset),
                                                  static_cast<std::size_t>(ref.elements));
}

void CpuGraph::forward(std::size_t layer) {
  for (const GraphStep& step : graph_.layers.at(layer).steps) run(step, true);
}

void CpuGraph::backward(std::size_t layer) {
  const std::vector<GraphStep>& steps = graph_.layers.at(layer).steps;
  for (auto it = steps.rbegin(); it != steps.rend(); ++it) run(*it, false);
}

void CpuGraph::zero_gradients() { std::fill(gradients_.begin(), gradients_.end(), 0.0f); }

double CpuGraph::forward_backward() {
  zero_gradients();
  for (std::size_t i = 0; i < layer_count(); ++i) forward(i);
  for (std::size_t i = layer_count(); i-- > 0;) backward(i);
  return loss();
}

double CpuGraph::loss() const {
  if (losses_.elements == 0) return 0.0;
  double total = 0;
  std::int64_t counted = 0;
  for (std::size_t t = 0; t < targets_.size(); ++t) {
    if (targets_[t] < 0) continue;
    total += static_cast<double>(activations_[static_cast<std::size_t>(losses_.offset) + t]);
    ++counted;
  }
  return counted == 0 ? 0.0 : total / static_cast<double>(counted);
}

std::vector<std::span<float>> CpuGraph::layer_parameters(std::size_t layer) {
  std::vector<std::span<float>> spans;
  for (const GraphParam& param : graph_.layers.at(layer).params) spans.push_back(at(param.value));
  return spans;
}

std::vector<std::span<float>> CpuGraph::layer_gradients(std::size_t layer) {
  std::vector<std::span<float>> spans;
  for (const GraphParam& param : graph_.layers.at(layer).params)
    spans.push_back(at({Arena::kGradients, param.value.offset, param.value.elements}));
  return spans;
}

// ---------------------------------------------------------------------------------------------
// One step, one pass
// ---------------------------------------------------------------------------------------------

void CpuGraph::run(const GraphStep& step, bool forward) {
  const Workload& w = graph_.workload;
  const std::int64_t T = w.tokens(), B = w.batch, S = w.seq;
  const auto rows = [&](const StridedRef& ref) {
    const TensorRef whole{ref.arena, ref.offset, ref.span_elements()};
    return StridedRows<float>{at(whole), ref.row_stride};
  };
  // A norm's or projection's input gradient: written, or added through the scratch.
  const auto input_gradient = [&](bool accumulate, const TensorRef& d_x, const TensorRef& scratch) {
    return accumulate ? at(scratch) : at(d_x);
  };
  const auto finish_input_gradient = [&](bool accumulate, const TensorRef& d_x, const TensorRef& scratch) {
    if (accumulate) residual_add_backward(in(scratch), at(d_x));
  };
  std::visit(
      Overloaded{
          [&](const TokenEmbeddingStep& s) {
            if (forward) token_embedding_forward(s.op, ids_, in(s.table), at(s.out));
            else token_embedding_backward(s.op, ids_, in(s.d_out), at(s.d_table));
          },
          [&](const PositionEmbeddingStep& s) {
            if (forward) position_embedding_forward(s.op, B, S, in(s.x), in(s.table), at(s.out));
            else position_embedding_backward(s.op, B, S, in(s.d_out), at(s.d_table));
          },
          [&](const LinearStep& s) {
            if (forward) return linear_forward(s.op, T, in(s.x), in(s.weight), in(s.bias), at(s.y), s.layout);
            linear_backward(s.op, T, in(s.d_y), in(s.x), in(s.weight), input_gradient(s.accumulate_d_x, s.d_x, s.d_x_scratch),
                            at(s.d_weight), at(s.d_bias), s.layout);
            finish_input_gradient(s.accumulate_d_x, s.d_x, s.d_x_scratch);
          },
          [&](const LayerNormStep& s) {
            if (forward)
              return layer_norm_forward(s.op, T, in(s.x), in(s.weight), in(s.bias), at(s.y), at(s.mean), at(s.rstd));
            layer_norm_backward(s.op, T, in(s.d_y), in(s.x), in(s.weight), in(s.mean), in(s.rstd),
                                input_gradient(s.accumulate_d_x, s.d_x, s.d_x_scratch), at(s.d_weight), at(s.d_bias));
            finish_input_gradient(s.accumulate_d_x, s.d_x, s.d_x_scratch);
          },
          [&](const RmsNormStep& s) {
            if (forward) return rms_norm_forward(s.op, T, in(s.x), in(s.weight), at(s.y), at(s.rstd));
            rms_norm_backward(s.op, T, in(s.d_y), in(s.x), in(s.weight), in(s.rstd),
                              input_gradient(s.accumulate_d_x, s.d_x, s.d_x_scratch), at(s.d_weight));
            finish_input_gradient(s.accumulate_d_x, s.d_x, s.d_x_scratch);
          },
          [&](const ActivationStep& s) {
            const bool gelu = std::holds_alternative<GeluOp>(s.op);
            SYNCPLAN_CHECK(gelu || std::holds_alternative<SiluOp>(s.op));
            if (forward) (gelu ? gelu_forward : silu_forward)(in(s.x), at(s.y));
            else (gelu ? gelu_backward : silu_backward)(in(s.d_y), in(s.x), at(s.d_x));
          },
          [&](const GatedProductStep& s) {
            if (forward) gated_product_forward(in(s.a), in(s.b), at(s.y));
            else gated_product_backward(in(s.d_y), in(s.a), in(s.b), at(s.d_a), at(s.d_b));
          },
          [&](const ResidualAddStep& s) {
            if (forward) return residual_add_forward(in(s.stream), in(s.branch), at(s.y));
            // The stream's gradient starts as the sum's; the norm reading the stream adds its part.
            const std::span<const float> d_y = in(s.d_y);
            const std::span<float> d_stream = at(s.d_stream);
            require_elements(d_stream.size(), static_cast<std::int64_t>(d_y.size()), "d_stream");
            std::copy(d_y.begin(), d_y.end(), d_stream.begin());
          },
          [&](const DropoutStep& s) {
            if (forward) dropout_forward(s.op, dropout_seed(dropout_seed_, s.stream), in(s.x), at(s.y), mask(s.mask));
            else dropout_backward(s.op, in(s.d_y), mask(s.mask), at(s.d_x));
          },
          [&](const RotaryTableStep& s) {
            if (forward) rotary_table_forward(s.op, B, S, at(s.cos), at(s.sin));
          },
          [&](const RotaryApplyStep& s) {
            const AttentionHeads& a = s.op.shape;
            if (forward) {
              rotary_forward(a.heads, a.head_dim, T, in(s.cos), in(s.sin), in(s.q), at(s.q_out));
              rotary_forward(a.kv_heads, a.head_dim, T, in(s.cos), in(s.sin), in(s.k), at(s.k_out));
            } else {
              rotary_backward(a.heads, a.head_dim, T, in(s.cos), in(s.sin), in(s.d_q_out), at(s.d_q));
              rotary_backward(a.kv_heads, a.head_dim, T, in(s.cos), in(s.sin), in(s.d_k_out), at(s.d_k));
            }
          },
          [&](const AttentionScoresStep& s) {
            if (forward)
              return attention_scores_forward(s.op.shape, B, S, const_rows(rows(s.q)), const_rows(rows(s.k)),
                                              at(s.probs));
            attention_scores_backward(s.op.shape, B, S, in(s.d_probs), in(s.probs), const_rows(rows(s.q)),
                                      const_rows(rows(s.k)), rows(s.d_q), rows(s.d_k));
          },
          [&](const AttentionContextStep& s) {
            const std::span<std::uint8_t> m = s.mask.elements == 0 ? std::span<std::uint8_t>() : mask(s.mask);
            if (forward)
              return attention_context_forward(s.op, B, S, dropout_seed(dropout_seed_, s.stream), in(s.probs),
                                               const_rows(rows(s.v)), m, at(s.out));
            attention_context_backward(s.op, B, S, in(s.d_out), in(s.probs), const_rows(rows(s.v)), m, at(s.d_probs),
                                       rows(s.d_v));
          },
          [&](const CrossEntropyStep& s) {
            if (forward) cross_entropy_forward(s.op, T, in(s.logits), targets_, at(s.losses), at(s.lse));
            else cross_entropy_backward(s.op, T, in(s.logits), targets_, in(s.lse), 1.0f, at(s.d_logits));
          },
      },
      step);
}

}  // namespace syncplan::cpu
