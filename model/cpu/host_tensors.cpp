// Host tensors per op and one pass of an op with the CPU kernels, by the tensor names of
// model/op_tensors.hpp.
#include "model/cpu/host_tensors.hpp"

#include "core/counter_random.hpp"
#include "core/errors.hpp"
#include "core/overloaded.hpp"
#include "model/cpu/kernels.hpp"

namespace syncplan {

// ---------------------------------------------------------------------------------------------
// Host tensors
// ---------------------------------------------------------------------------------------------

HostTensors::HostTensors(std::vector<OpTensor> tensors, std::uint64_t seed) : tensors_(std::move(tensors)) {
  values_.resize(tensors_.size());
  ids_.resize(tensors_.size());
  masks_.resize(tensors_.size());
  for (std::size_t i = 0; i < tensors_.size(); ++i) {
    const OpTensor& tensor = tensors_[i];
    const auto n = static_cast<std::size_t>(tensor.elements);
    const bool random = tensor.role == TensorRole::kInput || tensor.role == TensorRole::kGradInput;
    const std::uint64_t stream = tensor_fill_stream(seed, i);
    switch (tensor.kind) {
      case TensorKind::kValue:
      case TensorKind::kFloat32:
        values_[i].assign(n, 0.0f);
        if (random)
          for (std::size_t e = 0; e < n; ++e) values_[i][e] = counter_signed_uniform(stream, e);
        break;
      case TensorKind::kTokenId:
        SYNCPLAN_CHECK(tensor.id_bound >= 1);
        ids_[i].resize(n);
        for (std::size_t e = 0; e < n; ++e) ids_[i][e] = counter_index(stream, e, tensor.id_bound);
        break;
      case TensorKind::kMask: masks_[i].assign(n, 0); break;
    }
  }
}

std::size_t HostTensors::index(const std::string& name) const {
  for (std::size_t i = 0; i < tensors_.size(); ++i)
    if (tensors_[i].name == name) return i;
  return tensors_.size();
}

bool HostTensors::has(const std::string& name) const { return index(name) < tensors_.size(); }

std::span<float> HostTensors::values(const std::string& name) {
  const std::size_t i = index(name);
  return i < tensors_.size() ? std::span<float>(values_[i]) : std::span<float>();
}

std::span<const std::int64_t> HostTensors::ids(const std::string& name) const {
  const std::size_t i = index(name);
  if (i == tensors_.size()) throw InternalError("HostTensors: no token-id tensor '" + name + "'");
  return ids_[i];
}

std::span<std::uint8_t> HostTensors::mask(const std::string& name) {
  const std::size_t i = index(name);
  return i < tensors_.size() ? std::span<std::uint8_t>(masks_[i]) : std::span<std::uint8_t>();
}

// ---------------------------------------------------------------------------------------------
// One pass of one op
// ---------------------------------------------------------------------------------------------

void run_op_cpu(const LayerOp& op, const Workload& workload, Pass pass, HostTensors& t, std::uint64_t seed) {
  const std::int64_t T = workload.tokens(), B = workload.batch, S = workload.seq;
  const bool forward = pass == Pass::kForward;
  const auto in = [&t](const char* name) { return std::span<const float>(t.values(name)); };
  const auto rows = [&t](const char* name, std::int64_t width) {
    return cpu::contiguous_rows(std::span<const float>(t.values(name)), width);
  };
  const auto out_rows = [&t](const char* name, std::int64_t width) {
    return cpu::contiguous_rows(t.values(name), width);
  };
  std::visit(
      Overloaded{
          [&](const TokenEmbeddingOp& o) {
            if (forward) cpu::token_embedding_forward(o, t.ids("ids"), in("table"), t.values("out"));
            else cpu::token_embedding_backward(o, t.ids("ids"), in("d_out"), t.values("d_table"));
          },
          [&](const PositionEmbeddingOp& o) {
            if (forward) cpu::position_embedding_forward(o, B, S, in("x"), in("table"), t.values("out"));
            else cpu::position_embedding_backward(o, B, S, in("d_out"), t.values("d_table"));
          },
          [&](const LinearOp& o) {
            if (forward) cpu::linear_forward(o, T, in("x"), in("weight"), in("bias"), t.values("y"));
            else
              cpu::linear_backward(o, T, in("d_y"), in("x"), in("weight"), t.values("d_x"), t.values("d_weight"),
                                   t.values("d_bias"));
          },
          [&](const LayerNormOp& o) {
            if (forward)
              cpu::layer_norm_forward(o, T, in("x"), in("weight"), in("bias"), t.values("y"), t.values("mean"),
                                      t.values("rstd"));
            else
              cpu::layer_norm_backward(o, T, in("d_y"), in("x"), in("weight"), in("mean"), in("rstd"),
                                       t.values("d_x"), t.values("d_weight"), t.values("d_bias"));
          },
          [&](const RmsNormOp& o) {
            if (forward) cpu::rms_norm_forward(o, T, in("x"), in("weight"), t.values("y"), t.values("rstd"));
            else
              cpu::rms_norm_backward(o, T, in("d_y"), in("x"), in("weight"), in("rstd"), t.values("d_x"),
                                     t.values("d_weight"));
          },
          [&](const GeluOp&) {
            if (forward) cpu::gelu_forward(in("x"), t.values("y"));
            else cpu::gelu_backward(in("d_y"), in("x"), t.values("d_x"));
          },
          [&](const SiluOp&) {
            if (forward) cpu::silu_forward(in("x"), t.values("y"));
            else cpu::silu_backward(in("d_y"), in("x"), t.values("d_x"));
          },
          [&](const GatedProductOp&) {
            if (forward) cpu::gated_product_forward(in("a"), in("b"), t.values("y"));
            else cpu::gated_product_backward(in("d_y"), in("a"), in("b"), t.values("d_a"), t.values("d_b"));
          },
          [&](const ResidualAddOp&) {
            if (forward) cpu::residual_add_forward(in("a"), in("b"), t.values("y"));
            else cpu::residual_add_backward(in("d_branch"), t.values("d_stream"));
          },
          [&](const DropoutOp& o) {
            if (o.p == 0) return;  // the identity: no kernel (op_tensors lists nothing)
            if (forward) cpu::dropout_forward(o, seed, in("x"), t.values("y"), t.mask("mask"));
            else cpu::dropout_backward(o, in("d_y"), t.mask("mask"), t.values("d_x"));
          },
          [&](const RotaryApplyOp& o) {
            const AttentionHeads& a = o.shape;
            if (forward) {
              cpu::rotary_forward(a.heads, a.head_dim, T, in("cos"), in("sin"), in("q"), t.values("q_out"));
              cpu::rotary_forward(a.kv_heads, a.head_dim, T, in("cos"), in("sin"), in("k"), t.values("k_out"));
            } else {
              cpu::rotary_backward(a.heads, a.head_dim, T, in("cos"), in("sin"), in("d_q_out"), t.values("d_q"));
              cpu::rotary_backward(a.kv_heads, a.head_dim, T, in("cos"), in("sin"), in("d_k_out"), t.values("d_k"));
            }
          },
          [&](const RotaryTableOp& o) {
            if (forward) cpu::rotary_table_forward(o, B, S, t.values("cos"), t.values("sin"));
          },
          [&](const AttentionScoresOp& o) {
            const AttentionHeads& a = o.shape;
            const std::int64_t q_width = a.heads * a.head_dim, kv_width = a.kv_heads * a.head_dim;
            if (forward)
              cpu::attention_scores_forward(a, B, S, rows("q", q_width), rows("k", kv_width), t.values("probs"));
            else
              cpu::attention_scores_backward(a, B, S, in("d_probs"), in("probs"), rows("q", q_width),
                                             rows("k", kv_width), out_rows("d_q", q_width),
                                             out_rows("d_k", kv_width));
          },
          [&](const AttentionContextOp& o) {
            const std::int64_t kv_width = o.shape.kv_heads * o.shape.head_dim;
            if (forward)
              cpu::attention_context_forward(o, B, S, seed, in("probs"), rows("v", kv_width), t.mask("mask"),
                                             t.values("out"));
            else
              cpu::attention_context_backward(o, B, S, in("d_out"), in("probs"), rows("v", kv_width),
                                              t.mask("mask"), t.values("d_probs"), out_rows("d_v", kv_width));
          },
          [&](const CrossEntropyOp& o) {
            if (forward)
              cpu::cross_entropy_forward(o, T, in("logits"), t.ids("targets"), t.values("losses"), t.values("lse"));
            else cpu::cross_entropy_backward(o, T, in("logits"), t.ids("targets"), in("lse"), 1.0f, t.values("d_logits"));
          },
      },
      op);
}

}  // namespace syncplan
