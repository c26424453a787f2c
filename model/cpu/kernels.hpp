// The CPU reference kernels (fp32, Eigen): forward and backward of every op of docs/models.md
// section 3; the CPU profiler times them, the CPU runtime trains with them, and the CUDA kernels
// are tested against them (docs/profiler.md).
#pragma once

#include "model/model_layers.hpp"

#include <cstdint>
#include <span>

namespace syncplan::cpu {

// ---------------------------------------------------------------------------------------------
// Conventions (docs/profiler.md section 2)
//  * Tensors are row-major fp32 spans; T = B S tokens, token t = b S + s. Shapes are in brackets.
//  * A kernel writes (=) its outputs and the gradients of its inputs, and adds (+=) into the
//    gradients of parameters (d_weight, d_bias, d_table), so tied weights and steps accumulate.
//  * Sizes are checked: a span of the wrong length is a bug in the caller (InternalError naming
//    the tensor), never bad user input.
// ---------------------------------------------------------------------------------------------

/// A [rows, width] matrix that may be a column slice of a wider one: row r starts at
/// data[r * row_stride] (GPT-2's query third of c_attn's output [T, 3d] has row_stride 3d).
template <class Element>
struct StridedRows {
  std::span<Element> data;      ///< from the first element of row 0 to at least the end of the last row
  std::int64_t row_stride = 0;  ///< elements from one row's start to the next's (>= width)
};

/// Contiguous rows: row_stride = width.
template <class Element>
StridedRows<Element> contiguous_rows(std::span<Element> data, std::int64_t width) {
  return {data, width};
}

// --- embeddings (models.md 3.1, 3.2) ----------------------------------------------------------

/// out[t] = table[ids[t]]: ids [T] in [0, vocab_size), table [V, d], out [T, d].
void token_embedding_forward(const TokenEmbeddingOp& op, std::span<const std::int64_t> ids,
                             std::span<const float> table, std::span<float> out);
/// d_table[ids[t]] += d_out[t] (a scatter-add; repeated ids add up): d_out [T, d], d_table [V, d].
void token_embedding_backward(const TokenEmbeddingOp& op, std::span<const std::int64_t> ids,
                              std::span<const float> d_out, std::span<float> d_table);

/// out[b, s] = x[b, s] + table[s]: x, out [B, S, d] (may be the same span), table [positions, d],
/// S <= positions.
void position_embedding_forward(const PositionEmbeddingOp& op, std::int64_t batch, std::int64_t seq,
                                std::span<const float> x, std::span<const float> table, std::span<float> out);
/// d_table[s] += sum over b of d_out[b, s]. The gradient of x is d_out itself (no kernel).
void position_embedding_backward(const PositionEmbeddingOp& op, std::int64_t batch, std::int64_t seq,
                                 std::span<const float> d_out, std::span<float> d_table);

// --- linear (models.md 3.3) -------------------------------------------------------------------

/// y = x W + b: x [T, k], weight [k, n] (kInOut, HF Conv1D's layout) or [n, k] (kOutIn,
/// nn.Linear's: y = x weight^T), bias [n] or empty when !op.bias, y [T, n].
void linear_forward(const LinearOp& op, std::int64_t tokens, std::span<const float> x, std::span<const float> weight,
                    std::span<const float> bias, std::span<float> y, WeightLayout layout = WeightLayout::kInOut);
/// d_x = d_y W^T [T, k]; d_weight += x^T d_y [k, n] (kOutIn: d_y^T x [n, k]); d_bias += column
/// sums of d_y [n] (empty when !op.bias).
void linear_backward(const LinearOp& op, std::int64_t tokens, std::span<const float> d_y, std::span<const float> x,
                     std::span<const float> weight, std::span<float> d_x, std::span<float> d_weight,
                     std::span<float> d_bias, WeightLayout layout = WeightLayout::kInOut);

// --- norms (models.md 3.4) --------------------------------------------------------------------

/// Layer norm per row: y = (x - mean) rstd * weight + bias, rstd = 1 / sqrt(var + eps) (biased
/// variance, as torch.nn.LayerNorm). x, y [T, d]; weight, bias [d]; saves mean, rstd [T].
void layer_norm_forward(const LayerNormOp& op, std::int64_t tokens, std::span<const float> x,
                        std::span<const float> weight, std::span<const float> bias, std::span<float> y,
                        std::span<float> mean, std::span<float> rstd);
/// With x̂ = (x - mean) rstd and g = d_y weight: d_x = rstd (g - mean(g) - x̂ mean(g x̂)) per row;
/// d_weight += sum_t d_y x̂, d_bias += sum_t d_y.
void layer_norm_backward(const LayerNormOp& op, std::int64_t tokens, std::span<const float> d_y,
                         std::span<const float> x, std::span<const float> weight, std::span<const float> mean,
                         std::span<const float> rstd, std::span<float> d_x, std::span<float> d_weight,
                         std::span<float> d_bias);

/// RMS norm per row (LlamaRMSNorm): y = x rstd * weight, rstd = 1 / sqrt(mean(x^2) + eps).
/// x, y [T, d]; weight [d]; saves rstd [T].
void rms_norm_forward(const RmsNormOp& op, std::int64_t tokens, std::span<const float> x,
                      std::span<const float> weight, std::span<float> y, std::span<float> rstd);
/// With x̂ = x rstd, g = d_y weight: d_x = rstd (g - x̂ mean(g x̂)); d_weight += sum_t d_y x̂.
void rms_norm_backward(const RmsNormOp& op, std::int64_t tokens, std::span<const float> d_y,
                       std::span<const float> x, std::span<const float> weight, std::span<const float> rstd,
                       std::span<float> d_x, std::span<float> d_weight);

// --- elementwise (models.md 3.4); x, y, d_x, d_y of one length ---------------------------------

/// GELU, tanh approximation ("gelu_new"): y = 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))).
void gelu_forward(std::span<const float> x, std::span<float> y);
/// d_x = d_y GELU'(x), recomputing the tanh.
void gelu_backward(std::span<const float> d_y, std::span<const float> x, std::span<float> d_x);

/// SiLU: y = x sigmoid(x).
void silu_forward(std::span<const float> x, std::span<float> y);
/// d_x = d_y sigmoid(x) (1 + x (1 - sigmoid(x))).
void silu_backward(std::span<const float> d_y, std::span<const float> x, std::span<float> d_x);

/// y = a * b elementwise (SwiGLU's act_fn(gate) * up).
void gated_product_forward(std::span<const float> a, std::span<const float> b, std::span<float> y);
/// d_a = d_y b, d_b = d_y a.
void gated_product_backward(std::span<const float> d_y, std::span<const float> a, std::span<const float> b,
                            std::span<float> d_a, std::span<float> d_b);

/// y = a + b (the residual stream plus a branch).
void residual_add_forward(std::span<const float> a, std::span<const float> b, std::span<float> y);
/// Where the residual stream forks, its gradient is the sum of both paths': d_stream += d_branch.
void residual_add_backward(std::span<const float> d_branch, std::span<float> d_stream);

/// Dropout: y = x mask / (1 - p), mask[i] = dropout_keeps(seed, i, p) (core/counter_random.hpp,
/// the same draw as the CUDA kernel). p = 0 copies x and keeps everything. mask [n] bytes, 1 = kept.
void dropout_forward(const DropoutOp& op, std::uint64_t seed, std::span<const float> x, std::span<float> y,
                     std::span<std::uint8_t> mask);
/// d_x = d_y mask / (1 - p).
void dropout_backward(const DropoutOp& op, std::span<const float> d_y, std::span<const std::uint8_t> mask,
                      std::span<float> d_x);

// --- rotary position embedding (models.md 3.5) ------------------------------------------------

/// The cos and sin tables [T, head_dim] for token t at position s = t mod S (HF computes them per
/// batch row, [B, S, head_dim]): angle(s, i) = s theta^(-2i / head_dim) for i < head_dim/2, and
/// column i + head_dim/2 repeats column i (HF's cat(freqs, freqs)).
void rotary_table_forward(const RotaryTableOp& op, std::int64_t batch, std::int64_t seq, std::span<float> cos,
                          std::span<float> sin);
/// HF's apply_rotary_pos_emb on one tensor x [T, heads * head_dim]: y = x cos + rotate_half(x) sin
/// per head, rotate_half(x) = [-x2, x1] for the halves x1, x2. cos, sin [T, head_dim].
void rotary_forward(std::int64_t heads, std::int64_t head_dim, std::int64_t tokens, std::span<const float> cos,
                    std::span<const float> sin, std::span<const float> x, std::span<float> y);
/// The transposed rotation: d_x1 = d_y1 cos1 + d_y2 sin2, d_x2 = d_y2 cos2 - d_y1 sin1.
void rotary_backward(std::int64_t heads, std::int64_t head_dim, std::int64_t tokens, std::span<const float> cos,
                     std::span<const float> sin, std::span<const float> d_y, std::span<float> d_x);

// --- causal attention (models.md 3.6); heads of q, k, v are head_dim-wide column blocks ---------

/// P = softmax(mask(Q K^T / sqrt(head_dim))) per batch row and query head: q [T, heads * head_dim],
/// k [T, kv_heads * head_dim] (query head i uses key head i / (heads / kv_heads)), probs
/// [B, heads, S, S] with zeros above the diagonal (key after query).
void attention_scores_forward(const AttentionHeads& heads, std::int64_t batch, std::int64_t seq,
                              StridedRows<const float> q, StridedRows<const float> k, std::span<float> probs);
/// With dS = P (dP - rowsum(dP P)) / sqrt(head_dim): d_q = dS K (written), d_k = sum over the
/// query heads sharing a key head of dS^T Q (written).
void attention_scores_backward(const AttentionHeads& heads, std::int64_t batch, std::int64_t seq,
                               std::span<const float> d_probs, std::span<const float> probs, StridedRows<const float> q,
                               StridedRows<const float> k, StridedRows<float> d_q, StridedRows<float> d_k);

/// O = dropout_p(P) V per head, merged to out [T, heads * head_dim] (head i in columns i head_dim..);
/// v [T, kv_heads * head_dim]. With dropout_p > 0 the mask [B, heads, S, S] is drawn as in
/// dropout_forward (else it is empty).
void attention_context_forward(const AttentionContextOp& op, std::int64_t batch, std::int64_t seq,
                               std::uint64_t seed, std::span<const float> probs, StridedRows<const float> v,
                               std::span<std::uint8_t> mask, std::span<float> out);
/// d_probs = dropout(d_out V^T) (written), d_v = sum over the query heads sharing it of
/// dropout(P)^T d_out (written).
void attention_context_backward(const AttentionContextOp& op, std::int64_t batch, std::int64_t seq,
                                std::span<const float> d_out, std::span<const float> probs,
                                StridedRows<const float> v, std::span<const std::uint8_t> mask,
                                std::span<float> d_probs, StridedRows<float> d_v);

// --- loss (models.md 3.7) ---------------------------------------------------------------------

/// Cross-entropy of logits [T, V] against targets [T]; a negative target is ignored (PyTorch's
/// ignore_index -100; the caller marks each sequence's last token, which has no next token).
/// Writes losses[t] = logsumexp(logits[t]) - logits[t, target] (0 when ignored) and lse [T];
/// returns the mean over counted tokens (0 when none).
float cross_entropy_forward(const CrossEntropyOp& op, std::int64_t tokens, std::span<const float> logits,
                            std::span<const std::int64_t> targets, std::span<float> losses, std::span<float> lse);
/// d_logits = (softmax(logits) - onehot(target)) d_loss / counted tokens (0 rows where ignored),
/// recomputing the softmax from lse.
void cross_entropy_backward(const CrossEntropyOp& op, std::int64_t tokens, std::span<const float> logits,
                            std::span<const std::int64_t> targets, std::span<const float> lse, float d_loss,
                            std::span<float> d_logits);

}  // namespace syncplan::cpu
