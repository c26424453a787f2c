// FLOP and byte accounting of the ops, formula by formula as docs/models.md section 3 writes them.
#include "model/model_layers.hpp"
#include "core/field_error.hpp"

#include "core/errors.hpp"
#include "core/overloaded.hpp"

#include <numeric>

namespace syncplan {

std::int64_t dtype_size_bytes(Dtype dtype) { return dtype == Dtype::kBf16 ? 2 : 4; }

const char* dtype_name(Dtype dtype) { return dtype == Dtype::kBf16 ? "bf16" : "fp32"; }

Dtype parse_dtype(const std::string& text, const std::string& where) {
  if (text == "fp32") return Dtype::kFp32;
  if (text == "bf16") return Dtype::kBf16;
  throw FieldError(where, where + ": unknown dtype '" + text + "' (known: fp32, bf16)");
}

namespace {

// Every formula below counts in doubles: T d V of a large model overflows no double, and the
// small shapes of the tests stay exact integers.
struct Sizes {
  double batch, seq, tokens, element_bytes;
  explicit Sizes(const Workload& workload)
      : batch(static_cast<double>(workload.batch)),
        seq(static_cast<double>(workload.seq)),
        tokens(static_cast<double>(workload.tokens())),
        element_bytes(static_cast<double>(dtype_size_bytes(workload.dtype))) {}
};

constexpr double kIdBytes = static_cast<double>(kTokenIdBytes);
constexpr double kMaskBytes = 1;  // a dropout mask keeps one bool per element

StepWork work(PassWork forward, PassWork backward) { return StepWork{forward, backward}; }

// docs/models.md 3.1
StepWork token_embedding(const TokenEmbeddingOp& op, const Sizes& n) {
  const double T = n.tokens, d = static_cast<double>(op.dim), V = static_cast<double>(op.vocab_size);
  const double e = n.element_bytes;
  return work({0, 0, kIdBytes * T + e * 2 * T * d},                // gather T rows
              {0, T * d, kIdBytes * T + e * (T * d + V * d)});    // scatter-add dY into a dense V x d gradient
}

// docs/models.md 3.2
StepWork position_embedding(const PositionEmbeddingOp& op, const Sizes& n) {
  const double T = n.tokens, S = n.seq, d = static_cast<double>(op.dim), P = static_cast<double>(op.positions),
               e = n.element_bytes;
  // forward: read S rows and the token embeddings, write the sum; backward: sum dY over the batch
  // into a dense P x d gradient
  return work({0, T * d, kIdBytes * S + e * (S * d + 2 * T * d)}, {0, T * d, kIdBytes * S + e * (T * d + P * d)});
}

// docs/models.md 3.3
StepWork linear(const LinearOp& op, const Sizes& n) {
  const double T = n.tokens, k = static_cast<double>(op.in_features), m = static_cast<double>(op.out_features),
               e = n.element_bytes, bias = op.bias ? 1 : 0;
  return work({2 * T * k * m, bias * T * m, e * (T * k + k * m + T * m + bias * m)},
              // dX = dY W^T and dW = X^T dY: two products of the forward's size; db sums dY over tokens
              {4 * T * k * m, bias * T * m, e * (2 * T * k + 2 * T * m + 2 * k * m + bias * m)});
}

// docs/models.md 3.4 (elementwise ops: FLOPs per element, bytes in tensors of T x width elements)
StepWork elementwise(double width, const Sizes& n, double forward_per_element, double backward_per_element,
                     double forward_tensors, double backward_tensors) {
  const double elements = n.tokens * width, e = n.element_bytes;
  return work({0, forward_per_element * elements, e * forward_tensors * elements},
              {0, backward_per_element * elements, e * backward_tensors * elements});
}

StepWork layer_norm(const LayerNormOp& op, const Sizes& n) {
  const double d = static_cast<double>(op.dim), e = n.element_bytes;
  StepWork step = elementwise(d, n, 7, 13, 2, 3);  // read x write y; read dY, x, write dX
  step.forward.bytes += e * 2 * d;                 // weight, bias
  step.backward.bytes += e * 3 * d;                // read weight, write its and the bias's gradients
  return step;
}

StepWork rms_norm(const RmsNormOp& op, const Sizes& n) {
  const double d = static_cast<double>(op.dim), e = n.element_bytes;
  StepWork step = elementwise(d, n, 4, 9, 2, 3);
  step.forward.bytes += e * d;
  step.backward.bytes += e * 2 * d;
  return step;
}

StepWork dropout(const DropoutOp& op, const Sizes& n) {
  if (op.p == 0) return {};
  const double width = static_cast<double>(op.width);
  StepWork step = elementwise(width, n, 2, 2, 2, 2);
  step.forward.bytes += kMaskBytes * n.tokens * width;   // write the mask
  step.backward.bytes += kMaskBytes * n.tokens * width;  // read it
  return step;
}

// docs/models.md 3.5
StepWork rotary_apply(const RotaryApplyOp& op, const Sizes& n) {
  const AttentionHeads& a = op.shape;
  const double E = n.tokens * static_cast<double>(a.heads + a.kv_heads) * static_cast<double>(a.head_dim);
  const double tables = 2 * n.tokens * static_cast<double>(a.head_dim);  // cos and sin, [B, S, head_dim] each
  const PassWork pass{0, 3 * E, n.element_bytes * (2 * E + tables)};
  return work(pass, pass);  // the backward is the inverse rotation: the same arithmetic
}

StepWork rotary_table(const RotaryTableOp& op, const Sizes& n) {
  const double T = n.tokens, dh = static_cast<double>(op.head_dim);
  // positions x inverse frequencies (T dh/2), cos and sin (2 T dh), attention scaling (2 T dh)
  return work({0, T * dh / 2 + 4 * T * dh, kIdBytes * T + n.element_bytes * 2 * T * dh}, {});
}

// docs/models.md 3.6: N scores, head size, and the query (or output) and key (or value) elements.
struct AttentionSizes {
  double N, dh, q, kv;
  AttentionSizes(const AttentionHeads& a, const Sizes& n)
      : N(n.batch * static_cast<double>(a.heads) * n.seq * n.seq),
        dh(static_cast<double>(a.head_dim)),
        q(n.tokens * static_cast<double>(a.heads) * dh),
        kv(n.tokens * static_cast<double>(a.kv_heads) * dh) {}
};

StepWork attention_scores(const AttentionScoresOp& op, const Sizes& n) {
  const AttentionSizes a(op.shape, n);
  const double e = n.element_bytes;
  // forward: Q K^T; scale, mask, softmax (max, sub, exp, sum, div). backward: dQ, dK; softmax
  // backward (4), scale (1).
  return work({2 * a.N * a.dh, 7 * a.N, e * (a.q + a.kv + a.N)},
              {4 * a.N * a.dh, 5 * a.N, e * (2 * a.N + 2 * (a.q + a.kv))});
}

StepWork attention_context(const AttentionContextOp& op, const Sizes& n) {
  const AttentionSizes a(op.shape, n);
  const double e = n.element_bytes;
  const double dropout_flops = op.dropout_p > 0 ? 2 * a.N : 0, mask_bytes = op.dropout_p > 0 ? kMaskBytes * a.N : 0;
  // forward: P V. backward: dP = dO V^T, dV = P^T dO.
  return work({2 * a.N * a.dh, dropout_flops, e * (a.N + a.kv + a.q) + mask_bytes},
              {4 * a.N * a.dh, dropout_flops, e * (2 * a.N + a.q + 2 * a.kv) + mask_bytes});
}

// docs/models.md 3.7
StepWork cross_entropy(const CrossEntropyOp& op, const Sizes& n) {
  const double logits = n.tokens * static_cast<double>(op.vocab_size), e = n.element_bytes;
  return work({0, 4 * logits, e * logits + kIdBytes * n.tokens},       // max, sub, exp, sum per logit
              {0, 3 * logits, e * 2 * logits + kIdBytes * n.tokens});  // (softmax - one-hot) / T
}

}  // namespace

const char* op_name(const LayerOp& op) {
  return std::visit(Overloaded{
                        [](const TokenEmbeddingOp&) { return "token_embedding"; },
                        [](const PositionEmbeddingOp&) { return "position_embedding"; },
                        [](const LinearOp&) { return "linear"; },
                        [](const LayerNormOp&) { return "layer_norm"; },
                        [](const RmsNormOp&) { return "rms_norm"; },
                        [](const GeluOp&) { return "gelu"; },
                        [](const SiluOp&) { return "silu"; },
                        [](const GatedProductOp&) { return "gated_product"; },
                        [](const ResidualAddOp&) { return "residual_add"; },
                        [](const DropoutOp&) { return "dropout"; },
                        [](const RotaryApplyOp&) { return "rotary_apply"; },
                        [](const RotaryTableOp&) { return "rotary_table"; },
                        [](const AttentionScoresOp&) { return "attention_scores"; },
                        [](const AttentionContextOp&) { return "attention_context"; },
                        [](const CrossEntropyOp&) { return "cross_entropy"; },
                    },
                    op);
}

const char* module_kind_name(ModuleKind kind) {
  switch (kind) {
    case ModuleKind::kEmbedding: return "Embedding";
    case ModuleKind::kLinear: return "Linear";
    case ModuleKind::kConv1D: return "Conv1D";
    case ModuleKind::kLayerNorm: return "LayerNorm";
    case ModuleKind::kRmsNorm: return "LlamaRMSNorm";
    case ModuleKind::kGelu: return "NewGELUActivation";
    case ModuleKind::kSilu: return "SiLU";
    case ModuleKind::kDropout: return "Dropout";
    case ModuleKind::kRotaryEmbedding: return "LlamaRotaryEmbedding";
  }
  SYNCPLAN_CHECK(false);
  return "";
}

WeightLayout weight_layout(ModuleKind kind) {
  return kind == ModuleKind::kLinear ? WeightLayout::kOutIn : WeightLayout::kInOut;
}

std::int64_t ParamTensor::count() const {
  return std::accumulate(shape.begin(), shape.end(), std::int64_t{1}, std::multiplies<>());
}

std::int64_t ModelLayer::param_count() const {
  if (tied_to) return 0;
  std::int64_t total = 0;
  for (const ParamTensor& tensor : params) total += tensor.count();
  return total;
}

PassWork& PassWork::operator+=(const PassWork& other) {
  matmul_flops += other.matmul_flops;
  vector_flops += other.vector_flops;
  bytes += other.bytes;
  return *this;
}

StepWork& StepWork::operator+=(const StepWork& other) {
  forward += other.forward;
  backward += other.backward;
  return *this;
}

StepWork op_work(const LayerOp& op, const Workload& workload) {
  const Sizes n(workload);
  return std::visit(
      Overloaded{
          [&](const TokenEmbeddingOp& o) { return token_embedding(o, n); },
          [&](const PositionEmbeddingOp& o) { return position_embedding(o, n); },
          [&](const LinearOp& o) { return linear(o, n); },
          [&](const LayerNormOp& o) { return layer_norm(o, n); },
          [&](const RmsNormOp& o) { return rms_norm(o, n); },
          // per element: x^3 (2), * a, + x, * sqrt(2/pi), tanh, + 1, * x, * 0.5 = 9; backward 18
          [&](const GeluOp& o) { return elementwise(static_cast<double>(o.width), n, 9, 18, 2, 3); },
          // x / (1 + exp(-x)): exp, + 1, reciprocal, * x = 4; backward 8
          [&](const SiluOp& o) { return elementwise(static_cast<double>(o.width), n, 4, 8, 2, 3); },
          [&](const GatedProductOp& o) { return elementwise(static_cast<double>(o.width), n, 1, 2, 3, 5); },
          [&](const ResidualAddOp& o) { return elementwise(static_cast<double>(o.width), n, 1, 1, 3, 3); },
          [&](const DropoutOp& o) { return dropout(o, n); },
          [&](const RotaryApplyOp& o) { return rotary_apply(o, n); },
          [&](const RotaryTableOp& o) { return rotary_table(o, n); },
          [&](const AttentionScoresOp& o) { return attention_scores(o, n); },
          [&](const AttentionContextOp& o) { return attention_context(o, n); },
          [&](const CrossEntropyOp& o) { return cross_entropy(o, n); },
      },
      op);
}

StepWork layer_work(const ModelLayer& layer, const Workload& workload) {
  StepWork total;
  for (const LayerOp& op : layer.ops) total += op_work(op, workload);
  return total;
}

}  // namespace syncplan
