// The CPU reference kernels with Eigen: row-major maps over the callers' spans, one function per
// op and pass, as docs/models.md section 3 and docs/profiler.md section 2 write them.
#include "model/cpu/kernels.hpp"

#include "core/errors.hpp"
#include "core/counter_random.hpp"
#include "model/require_elements.hpp"

#include <Eigen/Core>

#include <cmath>
#include <numbers>
#include <string>
#include <type_traits>

namespace syncplan::cpu {

namespace {

using RowMatrix = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using Stride = Eigen::OuterStride<>;
using MatrixView = Eigen::Map<RowMatrix, Eigen::Unaligned, Stride>;
using ConstMatrixView = Eigen::Map<const RowMatrix, Eigen::Unaligned, Stride>;
using RowArray = Eigen::Array<float, 1, Eigen::Dynamic>;
using VectorView = Eigen::Map<RowArray>;  // a vector as a row, to combine with matrix rows
using ConstVectorView = Eigen::Map<const RowArray>;

// A span of the wrong length is the caller's bug: name the tensor and both lengths.
void require_size(std::size_t actual, std::int64_t expected, const char* tensor) {
  require_elements(actual, expected, tensor);
}

template <class Element>
void require_rows(const StridedRows<Element>& rows, std::int64_t count, std::int64_t width, const char* tensor) {
  const std::int64_t needed = count == 0 ? 0 : (count - 1) * rows.row_stride + width;
  if (rows.row_stride < width || static_cast<std::int64_t>(rows.data.size()) < needed)
    throw InternalError(std::string("kernel tensor '") + tensor + "' (" + std::to_string(rows.data.size()) +
                        " elements, row stride " + std::to_string(rows.row_stride) + ") cannot hold " +
                        std::to_string(count) + " rows of " + std::to_string(width));
}

MatrixView matrix(std::span<float> data, std::int64_t rows, std::int64_t cols, const char* tensor) {
  require_size(data.size(), rows * cols, tensor);
  return MatrixView(data.data(), rows, cols, Stride(cols));
}

ConstMatrixView matrix(std::span<const float> data, std::int64_t rows, std::int64_t cols, const char* tensor) {
  require_size(data.size(), rows * cols, tensor);
  return ConstMatrixView(data.data(), rows, cols, Stride(cols));
}

VectorView vector(std::span<float> data, std::int64_t size, const char* tensor) {
  require_size(data.size(), size, tensor);
  return VectorView(data.data(), size);
}

ConstVectorView vector(std::span<const float> data, std::int64_t size, const char* tensor) {
  require_size(data.size(), size, tensor);
  return ConstVectorView(data.data(), size);
}

// Rows [first, first + count) of head `head` (columns head * head_dim ..) of a strided matrix.
template <class Element>
auto head_block(const StridedRows<Element>& rows, std::int64_t first, std::int64_t count, std::int64_t head,
                std::int64_t head_dim) {
  using View = std::conditional_t<std::is_const_v<Element>, ConstMatrixView, MatrixView>;
  return View(rows.data.data() + first * rows.row_stride + head * head_dim, count, head_dim, Stride(rows.row_stride));
}

// The attention sizes every kernel checks.
struct AttentionShape {
  std::int64_t batch, seq, heads, kv_heads, head_dim, group;  // group: query heads per key/value head
  AttentionShape(const AttentionHeads& a, std::int64_t batch_, std::int64_t seq_)
      : batch(batch_), seq(seq_), heads(a.heads), kv_heads(a.kv_heads), head_dim(a.head_dim), group(0) {
    SYNCPLAN_CHECK(batch > 0 && seq > 0 && heads > 0 && kv_heads > 0 && head_dim > 0 && heads % kv_heads == 0);
    group = heads / kv_heads;
  }
  std::int64_t tokens() const { return batch * seq; }
  std::int64_t scores() const { return batch * heads * seq * seq; }
  // P [S, S] of batch row b and query head i.
  MatrixView probs(std::span<float> p, std::int64_t b, std::int64_t i) const {
    return MatrixView(p.data() + (b * heads + i) * seq * seq, seq, seq, Stride(seq));
  }
  ConstMatrixView probs(std::span<const float> p, std::int64_t b, std::int64_t i) const {
    return ConstMatrixView(p.data() + (b * heads + i) * seq * seq, seq, seq, Stride(seq));
  }
  float scale() const { return 1.0f / std::sqrt(static_cast<float>(head_dim)); }
};

// Softmax of each row r over its first r + 1 entries (the keys at or before the query); the rest
// become 0. Subtracting the row maximum keeps exp finite.
void causal_softmax_rows(MatrixView p) {
  const std::int64_t n = p.rows();
  for (std::int64_t r = 0; r < n; ++r) {
    auto row = p.row(r).head(r + 1).array();
    row = (row - row.maxCoeff()).exp();
    row /= row.sum();
    p.row(r).tail(n - r - 1).setZero();
  }
}

// dropout(P) of one head into `out`: P mask / (1 - p), the mask drawn at flat indices from `base`.
void dropped_probs(ConstMatrixView p, double dropout_p, std::span<const std::uint8_t> mask, std::int64_t base,
                   RowMatrix& out) {
  out = p;
  if (dropout_p == 0) return;
  const float keep_scale = static_cast<float>(1.0 / (1.0 - dropout_p));
  float* values = out.data();
  for (std::int64_t i = 0; i < out.size(); ++i) values[i] = mask[base + i] ? values[i] * keep_scale : 0.0f;
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Embeddings
// ---------------------------------------------------------------------------------------------

void token_embedding_forward(const TokenEmbeddingOp& op, std::span<const std::int64_t> ids,
                             std::span<const float> table, std::span<float> out) {
  const auto tokens = static_cast<std::int64_t>(ids.size());
  const ConstMatrixView w = matrix(table, op.vocab_size, op.dim, "table");
  MatrixView y = matrix(out, tokens, op.dim, "out");
  for (std::int64_t t = 0; t < tokens; ++t) {
    SYNCPLAN_CHECK(ids[t] >= 0 && ids[t] < op.vocab_size);
    y.row(t) = w.row(ids[t]);
  }
}

void token_embedding_backward(const TokenEmbeddingOp& op, std::span<const std::int64_t> ids,
                              std::span<const float> d_out, std::span<float> d_table) {
  const auto tokens = static_cast<std::int64_t>(ids.size());
  const ConstMatrixView dy = matrix(d_out, tokens, op.dim, "d_out");
  MatrixView dw = matrix(d_table, op.vocab_size, op.dim, "d_table");
  for (std::int64_t t = 0; t < tokens; ++t) {
    SYNCPLAN_CHECK(ids[t] >= 0 && ids[t] < op.vocab_size);
    dw.row(ids[t]) += dy.row(t);
  }
}

void position_embedding_forward(const PositionEmbeddingOp& op, std::int64_t batch, std::int64_t seq,
                                std::span<const float> x, std::span<const float> table, std::span<float> out) {
  SYNCPLAN_CHECK(seq <= op.positions);
  const ConstMatrixView w = matrix(table, op.positions, op.dim, "table");
  const ConstMatrixView in = matrix(x, batch * seq, op.dim, "x");
  MatrixView y = matrix(out, batch * seq, op.dim, "out");
  for (std::int64_t b = 0; b < batch; ++b) y.middleRows(b * seq, seq) = in.middleRows(b * seq, seq) + w.topRows(seq);
}

void position_embedding_backward(const PositionEmbeddingOp& op, std::int64_t batch, std::int64_t seq,
                                 std::span<const float> d_out, std::span<float> d_table) {
  SYNCPLAN_CHECK(seq <= op.positions);
  const ConstMatrixView dy = matrix(d_out, batch * seq, op.dim, "d_out");
  MatrixView dw = matrix(d_table, op.positions, op.dim, "d_table");
  for (std::int64_t b = 0; b < batch; ++b) dw.topRows(seq) += dy.middleRows(b * seq, seq);
}

// ---------------------------------------------------------------------------------------------
// Linear
// ---------------------------------------------------------------------------------------------

void linear_forward(const LinearOp& op, std::int64_t tokens, std::span<const float> x, std::span<const float> weight,
                    std::span<const float> bias, std::span<float> y, WeightLayout layout) {
  const ConstMatrixView in = matrix(x, tokens, op.in_features, "x");
  MatrixView out = matrix(y, tokens, op.out_features, "y");
  if (layout == WeightLayout::kInOut) out.noalias() = in * matrix(weight, op.in_features, op.out_features, "weight");
  else out.noalias() = in * matrix(weight, op.out_features, op.in_features, "weight").transpose();
  if (op.bias) out.rowwise() += vector(bias, op.out_features, "bias").matrix();
  else require_size(bias.size(), 0, "bias");
}

void linear_backward(const LinearOp& op, std::int64_t tokens, std::span<const float> d_y, std::span<const float> x,
                     std::span<const float> weight, std::span<float> d_x, std::span<float> d_weight,
                     std::span<float> d_bias, WeightLayout layout) {
  const ConstMatrixView dy = matrix(d_y, tokens, op.out_features, "d_y");
  const ConstMatrixView in = matrix(x, tokens, op.in_features, "x");
  MatrixView dx = matrix(d_x, tokens, op.in_features, "d_x");
  if (layout == WeightLayout::kInOut) {
    dx.noalias() = dy * matrix(weight, op.in_features, op.out_features, "weight").transpose();
    matrix(d_weight, op.in_features, op.out_features, "d_weight").noalias() += in.transpose() * dy;
  } else {
    dx.noalias() = dy * matrix(weight, op.out_features, op.in_features, "weight");
    matrix(d_weight, op.out_features, op.in_features, "d_weight").noalias() += dy.transpose() * in;
  }
  if (op.bias) vector(d_bias, op.out_features, "d_bias") += dy.colwise().sum().array();
  else require_size(d_bias.size(), 0, "d_bias");
}

// ---------------------------------------------------------------------------------------------
// Norms
// ---------------------------------------------------------------------------------------------

void layer_norm_forward(const LayerNormOp& op, std::int64_t tokens, std::span<const float> x,
                        std::span<const float> weight, std::span<const float> bias, std::span<float> y,
                        std::span<float> mean, std::span<float> rstd) {
  const std::int64_t d = op.dim;
  const ConstMatrixView in = matrix(x, tokens, d, "x");
  MatrixView out = matrix(y, tokens, d, "y");
  const ConstVectorView w = vector(weight, d, "weight"), b = vector(bias, d, "bias");
  VectorView mu = vector(mean, tokens, "mean"), rs = vector(rstd, tokens, "rstd");
  const auto eps = static_cast<float>(op.eps);
  for (std::int64_t t = 0; t < tokens; ++t) {
    const auto row = in.row(t).array();
    const float m = row.mean();
    const float r = 1.0f / std::sqrt((row - m).square().mean() + eps);
    out.row(t).array() = (row - m) * r * w + b;
    mu[t] = m;
    rs[t] = r;
  }
}

void layer_norm_backward(const LayerNormOp& op, std::int64_t tokens, std::span<const float> d_y,
                         std::span<const float> x, std::span<const float> weight, std::span<const float> mean,
                         std::span<const float> rstd, std::span<float> d_x, std::span<float> d_weight,
                         std::span<float> d_bias) {
  const std::int64_t d = op.dim;
  const ConstMatrixView dy = matrix(d_y, tokens, d, "d_y"), in = matrix(x, tokens, d, "x");
  MatrixView dx = matrix(d_x, tokens, d, "d_x");
  const ConstVectorView w = vector(weight, d, "weight");
  const ConstVectorView mu = vector(mean, tokens, "mean"), rs = vector(rstd, tokens, "rstd");
  VectorView dw = vector(d_weight, d, "d_weight"), db = vector(d_bias, d, "d_bias");
  for (std::int64_t t = 0; t < tokens; ++t) {
    const RowArray xhat = (in.row(t).array() - mu[t]) * rs[t];
    const RowArray g = dy.row(t).array() * w;
    dw += dy.row(t).array() * xhat;
    db += dy.row(t).array();
    dx.row(t).array() = rs[t] * (g - g.mean() - xhat * (g * xhat).mean());
  }
}

void rms_norm_forward(const RmsNormOp& op, std::int64_t tokens, std::span<const float> x,
                      std::span<const float> weight, std::span<float> y, std::span<float> rstd) {
  const std::int64_t d = op.dim;
  const ConstMatrixView in = matrix(x, tokens, d, "x");
  MatrixView out = matrix(y, tokens, d, "y");
  const ConstVectorView w = vector(weight, d, "weight");
  VectorView rs = vector(rstd, tokens, "rstd");
  const auto eps = static_cast<float>(op.eps);
  for (std::int64_t t = 0; t < tokens; ++t) {
    const float r = 1.0f / std::sqrt(in.row(t).array().square().mean() + eps);
    out.row(t).array() = in.row(t).array() * r * w;
    rs[t] = r;
  }
}

void rms_norm_backward(const RmsNormOp& op, std::int64_t tokens, std::span<const float> d_y,
                       std::span<const float> x, std::span<const float> weight, std::span<const float> rstd,
                       std::span<float> d_x, std::span<float> d_weight) {
  const std::int64_t d = op.dim;
  const ConstMatrixView dy = matrix(d_y, tokens, d, "d_y"), in = matrix(x, tokens, d, "x");
  MatrixView dx = matrix(d_x, tokens, d, "d_x");
  const ConstVectorView w = vector(weight, d, "weight");
  const ConstVectorView rs = vector(rstd, tokens, "rstd");
  VectorView dw = vector(d_weight, d, "d_weight");
  for (std::int64_t t = 0; t < tokens; ++t) {
    const RowArray xhat = in.row(t).array() * rs[t];
    const RowArray g = dy.row(t).array() * w;
    dw += dy.row(t).array() * xhat;
    dx.row(t).array() = rs[t] * (g - xhat * (g * xhat).mean());
  }
}

// ---------------------------------------------------------------------------------------------
// Elementwise
// ---------------------------------------------------------------------------------------------

namespace {

constexpr float kGeluCubic = 0.044715f;
const float kSqrtTwoOverPi = static_cast<float>(std::sqrt(2.0 / std::numbers::pi));

std::int64_t same_length(std::span<const float> a, std::span<const float> b, const char* tensor) {
  require_size(b.size(), static_cast<std::int64_t>(a.size()), tensor);
  return static_cast<std::int64_t>(a.size());
}

}  // namespace

void gelu_forward(std::span<const float> x, std::span<float> y) {
  const std::int64_t n = same_length(x, y, "y");
  const ConstVectorView in(x.data(), n);
  const RowArray inner = kSqrtTwoOverPi * (in + kGeluCubic * in.cube());
  VectorView(y.data(), n) = 0.5f * in * (1.0f + inner.tanh());
}

void gelu_backward(std::span<const float> d_y, std::span<const float> x, std::span<float> d_x) {
  const std::int64_t n = same_length(x, d_y, "d_y");
  require_size(d_x.size(), n, "d_x");
  const ConstVectorView in(x.data(), n), dy(d_y.data(), n);
  const RowArray t = (kSqrtTwoOverPi * (in + kGeluCubic * in.cube())).tanh();
  const RowArray inner_derivative = kSqrtTwoOverPi * (1.0f + 3.0f * kGeluCubic * in.square());
  VectorView(d_x.data(), n) = dy * (0.5f * (1.0f + t) + 0.5f * in * (1.0f - t.square()) * inner_derivative);
}

void silu_forward(std::span<const float> x, std::span<float> y) {
  const std::int64_t n = same_length(x, y, "y");
  const ConstVectorView in(x.data(), n);
  VectorView(y.data(), n) = in / (1.0f + (-in).exp());
}

void silu_backward(std::span<const float> d_y, std::span<const float> x, std::span<float> d_x) {
  const std::int64_t n = same_length(x, d_y, "d_y");
  require_size(d_x.size(), n, "d_x");
  const ConstVectorView in(x.data(), n), dy(d_y.data(), n);
  const RowArray sigmoid = 1.0f / (1.0f + (-in).exp());
  VectorView(d_x.data(), n) = dy * sigmoid * (1.0f + in * (1.0f - sigmoid));
}

void gated_product_forward(std::span<const float> a, std::span<const float> b, std::span<float> y) {
  const std::int64_t n = same_length(a, b, "b");
  require_size(y.size(), n, "y");
  VectorView(y.data(), n) = ConstVectorView(a.data(), n) * ConstVectorView(b.data(), n);
}

void gated_product_backward(std::span<const float> d_y, std::span<const float> a, std::span<const float> b,
                            std::span<float> d_a, std::span<float> d_b) {
  const std::int64_t n = same_length(d_y, a, "a");
  same_length(d_y, b, "b");
  require_size(d_a.size(), n, "d_a");
  require_size(d_b.size(), n, "d_b");
  const ConstVectorView dy(d_y.data(), n);
  VectorView(d_a.data(), n) = dy * ConstVectorView(b.data(), n);
  VectorView(d_b.data(), n) = dy * ConstVectorView(a.data(), n);
}

void residual_add_forward(std::span<const float> a, std::span<const float> b, std::span<float> y) {
  const std::int64_t n = same_length(a, b, "b");
  require_size(y.size(), n, "y");
  VectorView(y.data(), n) = ConstVectorView(a.data(), n) + ConstVectorView(b.data(), n);
}

void residual_add_backward(std::span<const float> d_branch, std::span<float> d_stream) {
  const std::int64_t n = same_length(d_branch, d_stream, "d_stream");
  VectorView(d_stream.data(), n) += ConstVectorView(d_branch.data(), n);
}

void dropout_forward(const DropoutOp& op, std::uint64_t seed, std::span<const float> x, std::span<float> y,
                     std::span<std::uint8_t> mask) {
  const std::int64_t n = same_length(x, y, "y");
  require_size(mask.size(), n, "mask");
  const auto p = static_cast<float>(op.p);
  const float keep_scale = static_cast<float>(1.0 / (1.0 - op.p));
  for (std::int64_t i = 0; i < n; ++i) {
    mask[i] = dropout_keeps(seed, static_cast<std::uint64_t>(i), p) ? 1 : 0;
    y[i] = mask[i] ? x[i] * keep_scale : 0.0f;
  }
}

void dropout_backward(const DropoutOp& op, std::span<const float> d_y, std::span<const std::uint8_t> mask,
                      std::span<float> d_x) {
  const std::int64_t n = same_length(d_y, d_x, "d_x");
  require_size(mask.size(), n, "mask");
  const float keep_scale = static_cast<float>(1.0 / (1.0 - op.p));
  for (std::int64_t i = 0; i < n; ++i) d_x[i] = mask[i] ? d_y[i] * keep_scale : 0.0f;
}

// ---------------------------------------------------------------------------------------------
// Rotary position embedding
// ---------------------------------------------------------------------------------------------

void rotary_table_forward(const RotaryTableOp& op, std::int64_t batch, std::int64_t seq, std::span<float> cos,
                          std::span<float> sin) {
  const std::int64_t dh = op.head_dim, half = dh / 2;
  SYNCPLAN_CHECK(dh % 2 == 0);
  MatrixView c = matrix(cos, batch * seq, dh, "cos"), s = matrix(sin, batch * seq, dh, "sin");
  for (std::int64_t t = 0; t < batch * seq; ++t) {
    const auto position = static_cast<double>(t % seq);
    for (std::int64_t i = 0; i < half; ++i) {
      const double angle = position * std::pow(op.theta, -2.0 * static_cast<double>(i) / static_cast<double>(dh));
      c(t, i) = c(t, i + half) = static_cast<float>(std::cos(angle));
      s(t, i) = s(t, i + half) = static_cast<float>(std::sin(angle));
    }
  }
}

namespace {

// y = R x (forward) or R^T x (backward) per head, R the rotation of rotate_half.
void rotate(std::int64_t heads, std::int64_t head_dim, std::int64_t tokens, std::span<const float> cos,
            std::span<const float> sin, std::span<const float> x, std::span<float> y, bool transpose) {
  SYNCPLAN_CHECK(head_dim % 2 == 0);
  const std::int64_t half = head_dim / 2;
  const ConstMatrixView c = matrix(cos, tokens, head_dim, "cos"), s = matrix(sin, tokens, head_dim, "sin");
  const ConstMatrixView in = matrix(x, tokens, heads * head_dim, "x");
  MatrixView out = matrix(y, tokens, heads * head_dim, "y");
  const float sign = transpose ? -1.0f : 1.0f;
  for (std::int64_t t = 0; t < tokens; ++t)
    for (std::int64_t h = 0; h < heads; ++h)
      for (std::int64_t i = 0; i < half; ++i) {
        const float x1 = in(t, h * head_dim + i), x2 = in(t, h * head_dim + half + i);
        // forward: y1 = x1 c1 - x2 s1, y2 = x2 c2 + x1 s2; transposed: y1 = x1 c1 + x2 s2, y2 = x2 c2 - x1 s1.
        const float s_first = transpose ? s(t, half + i) : s(t, i);
        const float s_second = transpose ? s(t, i) : s(t, half + i);
        out(t, h * head_dim + i) = x1 * c(t, i) - sign * x2 * s_first;
        out(t, h * head_dim + half + i) = x2 * c(t, half + i) + sign * x1 * s_second;
      }
}

}  // namespace

void rotary_forward(std::int64_t heads, std::int64_t head_dim, std::int64_t tokens, std::span<const float> cos,
                    std::span<const float> sin, std::span<const float> x, std::span<float> y) {
  rotate(heads, head_dim, tokens, cos, sin, x, y, false);
}

void rotary_backward(std::int64_t heads, std::int64_t head_dim, std::int64_t tokens, std::span<const float> cos,
                     std::span<const float> sin, std::span<const float> d_y, std::span<float> d_x) {
  rotate(heads, head_dim, tokens, cos, sin, d_y, d_x, true);
}

// ---------------------------------------------------------------------------------------------
// Causal attention
// ---------------------------------------------------------------------------------------------

void attention_scores_forward(const AttentionHeads& heads, std::int64_t batch, std::int64_t seq,
                              StridedRows<const float> q, StridedRows<const float> k, std::span<float> probs) {
  const AttentionShape a(heads, batch, seq);
  require_rows(q, a.tokens(), a.heads * a.head_dim, "q");
  require_rows(k, a.tokens(), a.kv_heads * a.head_dim, "k");
  require_size(probs.size(), a.scores(), "probs");
  for (std::int64_t b = 0; b < a.batch; ++b)
    for (std::int64_t i = 0; i < a.heads; ++i) {
      MatrixView p = a.probs(probs, b, i);
      // The full S x S product, then the mask, as Hugging Face's eager attention computes it.
      p.noalias() = a.scale() * (head_block(q, b * seq, seq, i, a.head_dim) *
                                 head_block(k, b * seq, seq, i / a.group, a.head_dim).transpose());
      causal_softmax_rows(p);
    }
}

void attention_scores_backward(const AttentionHeads& heads, std::int64_t batch, std::int64_t seq,
                               std::span<const float> d_probs, std::span<const float> probs, StridedRows<const float> q,
                               StridedRows<const float> k, StridedRows<float> d_q, StridedRows<float> d_k) {
  const AttentionShape a(heads, batch, seq);
  require_rows(q, a.tokens(), a.heads * a.head_dim, "q");
  require_rows(k, a.tokens(), a.kv_heads * a.head_dim, "k");
  require_rows(d_q, a.tokens(), a.heads * a.head_dim, "d_q");
  require_rows(d_k, a.tokens(), a.kv_heads * a.head_dim, "d_k");
  require_size(probs.size(), a.scores(), "probs");
  require_size(d_probs.size(), a.scores(), "d_probs");
  RowMatrix d_scores(seq, seq);
  for (std::int64_t b = 0; b < a.batch; ++b) {
    for (std::int64_t j = 0; j < a.kv_heads; ++j) head_block(d_k, b * seq, seq, j, a.head_dim).setZero();
    for (std::int64_t i = 0; i < a.heads; ++i) {
      const ConstMatrixView p = a.probs(probs, b, i), dp = a.probs(d_probs, b, i);
      // Softmax backward: dS = P (dP - rowsum(dP P)); masked entries have P = 0 and stay 0.
      const Eigen::VectorXf row_dot = (p.array() * dp.array()).rowwise().sum();
      d_scores.array() = p.array() * (dp.array().colwise() - row_dot.array()) * a.scale();
      head_block(d_q, b * seq, seq, i, a.head_dim).noalias() =
          d_scores * head_block(k, b * seq, seq, i / a.group, a.head_dim);
      head_block(d_k, b * seq, seq, i / a.group, a.head_dim).noalias() +=
          d_scores.transpose() * head_block(q, b * seq, seq, i, a.head_dim);
    }
  }
}

void attention_context_forward(const AttentionContextOp& op, std::int64_t batch, std::int64_t seq,
                               std::uint64_t seed, std::span<const float> probs, StridedRows<const float> v,
                               std::span<std::uint8_t> mask, std::span<float> out) {
  const AttentionShape a(op.shape, batch, seq);
  require_size(probs.size(), a.scores(), "probs");
  require_rows(v, a.tokens(), a.kv_heads * a.head_dim, "v");
  require_size(out.size(), a.tokens() * a.heads * a.head_dim, "out");
  require_size(mask.size(), op.dropout_p > 0 ? a.scores() : 0, "mask");
  const auto p_drop = static_cast<float>(op.dropout_p);
  for (std::int64_t i = 0; i < static_cast<std::int64_t>(mask.size()); ++i)
    mask[i] = dropout_keeps(seed, static_cast<std::uint64_t>(i), p_drop) ? 1 : 0;
  const StridedRows<float> o = contiguous_rows(out, a.heads * a.head_dim);
  RowMatrix dropped(seq, seq);
  for (std::int64_t b = 0; b < a.batch; ++b)
    for (std::int64_t i = 0; i < a.heads; ++i) {
      dropped_probs(a.probs(probs, b, i), op.dropout_p, mask, (b * a.heads + i) * seq * seq, dropped);
      head_block(o, b * seq, seq, i, a.head_dim).noalias() =
          dropped * head_block(v, b * seq, seq, i / a.group, a.head_dim);
    }
}

void attention_context_backward(const AttentionContextOp& op, std::int64_t batch, std::int64_t seq,
                                std::span<const float> d_out, std::span<const float> probs,
                                StridedRows<const float> v, std::span<const std::uint8_t> mask,
                                std::span<float> d_probs, StridedRows<float> d_v) {
  const AttentionShape a(op.shape, batch, seq);
  require_size(d_out.size(), a.tokens() * a.heads * a.head_dim, "d_out");
  require_size(probs.size(), a.scores(), "probs");
  require_rows(v, a.tokens(), a.kv_heads * a.head_dim, "v");
  require_size(mask.size(), op.dropout_p > 0 ? a.scores() : 0, "mask");
  require_size(d_probs.size(), a.scores(), "d_probs");
  require_rows(d_v, a.tokens(), a.kv_heads * a.head_dim, "d_v");
  const StridedRows<const float> d_o = contiguous_rows(d_out, a.heads * a.head_dim);
  const float keep_scale = static_cast<float>(1.0 / (1.0 - op.dropout_p));
  RowMatrix dropped(seq, seq);
  for (std::int64_t b = 0; b < a.batch; ++b) {
    for (std::int64_t j = 0; j < a.kv_heads; ++j) head_block(d_v, b * seq, seq, j, a.head_dim).setZero();
    for (std::int64_t i = 0; i < a.heads; ++i) {
      const std::int64_t base = (b * a.heads + i) * seq * seq;
      const auto d_oi = head_block(d_o, b * seq, seq, i, a.head_dim);
      MatrixView dp = a.probs(d_probs, b, i);
      dp.noalias() = d_oi * head_block(v, b * seq, seq, i / a.group, a.head_dim).transpose();
      if (op.dropout_p > 0)
        for (std::int64_t e = 0; e < seq * seq; ++e) dp.data()[e] = mask[base + e] ? dp.data()[e] * keep_scale : 0.0f;
      dropped_probs(a.probs(probs, b, i), op.dropout_p, mask, base, dropped);
      head_block(d_v, b * seq, seq, i / a.group, a.head_dim).noalias() += dropped.transpose() * d_oi;
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Loss
// ---------------------------------------------------------------------------------------------

float cross_entropy_forward(const CrossEntropyOp& op, std::int64_t tokens, std::span<const float> logits,
                            std::span<const std::int64_t> targets, std::span<float> losses, std::span<float> lse) {
  const ConstMatrixView z = matrix(logits, tokens, op.vocab_size, "logits");
  require_size(targets.size(), tokens, "targets");
  VectorView loss = vector(losses, tokens, "losses"), log_sum = vector(lse, tokens, "lse");
  double total = 0;
  std::int64_t counted = 0;
  for (std::int64_t t = 0; t < tokens; ++t) {
    const auto row = z.row(t).array();
    const float m = row.maxCoeff();
    log_sum[t] = m + std::log((row - m).exp().sum());
    loss[t] = 0;
    if (targets[t] < 0) continue;
    SYNCPLAN_CHECK(targets[t] < op.vocab_size);
    loss[t] = log_sum[t] - row[targets[t]];
    total += loss[t];
    ++counted;
  }
  return counted == 0 ? 0.0f : static_cast<float>(total / static_cast<double>(counted));
}

void cross_entropy_backward(const CrossEntropyOp& op, std::int64_t tokens, std::span<const float> logits,
                            std::span<const std::int64_t> targets, std::span<const float> lse, float d_loss,
                            std::span<float> d_logits) {
  const ConstMatrixView z = matrix(logits, tokens, op.vocab_size, "logits");
  require_size(targets.size(), tokens, "targets");
  const ConstVectorView log_sum = vector(lse, tokens, "lse");
  MatrixView dz = matrix(d_logits, tokens, op.vocab_size, "d_logits");
  std::int64_t counted = 0;
  for (const std::int64_t target : targets) counted += target >= 0;
  const float scale = counted == 0 ? 0.0f : d_loss / static_cast<float>(counted);
  for (std::int64_t t = 0; t < tokens; ++t) {
    if (targets[t] < 0) {
      dz.row(t).setZero();
      continue;
    }
    dz.row(t).array() = (z.row(t).array() - log_sum[t]).exp() * scale;
    dz(t, targets[t]) -= scale;
  }
}

}  // namespace syncplan::cpu
