// The CUDA kernels of every op of docs/models.md section 3, forward and backward, in fp32 and bf16:
// host launchers that check shapes, take a stream and check the launch, mirroring the CPU
// reference (model/cpu/kernels.hpp) argument for argument (docs/profiler.md section 4).
#pragma once

#include "model/model_layers.hpp"

#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <span>

namespace syncplan::cuda {

// ---------------------------------------------------------------------------------------------
// Conventions: as in model/cpu/kernels.hpp (row-major, T = B S tokens, outputs and input gradients
// written, parameter gradients added into), with these differences:
//  * spans hold device memory; Element is float or __nv_bfloat16 (activations, parameters and
//    gradients in the workload's dtype); saved statistics (mean, rstd, lse, losses) are fp32.
//  * Arithmetic is fp32 in registers; matrix products are cuBLAS GEMMs with fp32 accumulation
//    (CUBLAS_COMPUTE_32F: no TF32 for fp32, tensor cores for bf16).
//  * Attention's q, k, v are contiguous [T, heads * head_dim] and [T, kv_heads * head_dim].
//  * A launcher that needs scratch memory takes it as `workspace`.
//  * Every launcher runs asynchronously on `stream`; GEMM launchers set `blas` to that stream.
// ---------------------------------------------------------------------------------------------

// --- embeddings ---
template <class Element>
void token_embedding_forward(const TokenEmbeddingOp& op, std::span<const std::int64_t> ids,
                             std::span<const Element> table, std::span<Element> out, cudaStream_t stream);
/// Scatter-add with atomics (bf16 atomics round each addition).
template <class Element>
void token_embedding_backward(const TokenEmbeddingOp& op, std::span<const std::int64_t> ids,
                              std::span<const Element> d_out, std::span<Element> d_table, cudaStream_t stream);
template <class Element>
void position_embedding_forward(const PositionEmbeddingOp& op, std::int64_t batch, std::int64_t seq,
                                std::span<const Element> x, std::span<const Element> table, std::span<Element> out,
                                cudaStream_t stream);
template <class Element>
void position_embedding_backward(const PositionEmbeddingOp& op, std::int64_t batch, std::int64_t seq,
                                 std::span<const Element> d_out, std::span<Element> d_table, cudaStream_t stream);

// --- linear: one GEMM (plus a bias kernel) forward, two GEMMs (plus a column sum) backward; the
// weight stored as `layout` says (Conv1D's [in, out] or nn.Linear's [out, in]) ---
template <class Element>
void linear_forward(const LinearOp& op, std::int64_t tokens, std::span<const Element> x,
                    std::span<const Element> weight, std::span<const Element> bias, std::span<Element> y,
                    cublasHandle_t blas, cudaStream_t stream, WeightLayout layout = WeightLayout::kInOut);
template <class Element>
void linear_backward(const LinearOp& op, std::int64_t tokens, std::span<const Element> d_y, std::span<const Element> x,
                     std::span<const Element> weight, std::span<Element> d_x, std::span<Element> d_weight,
                     std::span<Element> d_bias, cublasHandle_t blas, cudaStream_t stream,
                     WeightLayout layout = WeightLayout::kInOut);

// --- norms: one warp per row; parameter gradients by a column-sum kernel ---
template <class Element>
void layer_norm_forward(const LayerNormOp& op, std::int64_t tokens, std::span<const Element> x,
                        std::span<const Element> weight, std::span<const Element> bias, std::span<Element> y,
                        std::span<float> mean, std::span<float> rstd, cudaStream_t stream);
template <class Element>
void layer_norm_backward(const LayerNormOp& op, std::int64_t tokens, std::span<const Element> d_y,
                         std::span<const Element> x, std::span<const Element> weight, std::span<const float> mean,
                         std::span<const float> rstd, std::span<Element> d_x, std::span<Element> d_weight,
                         std::span<Element> d_bias, cudaStream_t stream);
template <class Element>
void rms_norm_forward(const RmsNormOp& op, std::int64_t tokens, std::span<const Element> x,
                      std::span<const Element> weight, std::span<Element> y, std::span<float> rstd,
                      cudaStream_t stream);
template <class Element>
void rms_norm_backward(const RmsNormOp& op, std::int64_t tokens, std::span<const Element> d_y,
                       std::span<const Element> x, std::span<const Element> weight, std::span<const float> rstd,
                       std::span<Element> d_x, std::span<Element> d_weight, cudaStream_t stream);

// --- elementwise ---
template <class Element>
void gelu_forward(std::span<const Element> x, std::span<Element> y, cudaStream_t stream);
template <class Element>
void gelu_backward(std::span<const Element> d_y, std::span<const Element> x, std::span<Element> d_x,
                   cudaStream_t stream);
template <class Element>
void silu_forward(std::span<const Element> x, std::span<Element> y, cudaStream_t stream);
template <class Element>
void silu_backward(std::span<const Element> d_y, std::span<const Element> x, std::span<Element> d_x,
                   cudaStream_t stream);
template <class Element>
void gated_product_forward(std::span<const Element> a, std::span<const Element> b, std::span<Element> y,
                           cudaStream_t stream);
template <class Element>
void gated_product_backward(std::span<const Element> d_y, std::span<const Element> a, std::span<const Element> b,
                            std::span<Element> d_a, std::span<Element> d_b, cudaStream_t stream);
template <class Element>
void residual_add_forward(std::span<const Element> a, std::span<const Element> b, std::span<Element> y,
                          cudaStream_t stream);
template <class Element>
void residual_add_backward(std::span<const Element> d_branch, std::span<Element> d_stream, cudaStream_t stream);
/// The mask is drawn as on the CPU (counter_random.hpp): identical for a seed.
template <class Element>
void dropout_forward(const DropoutOp& op, std::uint64_t seed, std::span<const Element> x, std::span<Element> y,
                     std::span<std::uint8_t> mask, cudaStream_t stream);
template <class Element>
void dropout_backward(const DropoutOp& op, std::span<const Element> d_y, std::span<const std::uint8_t> mask,
                      std::span<Element> d_x, cudaStream_t stream);

// --- rotary ---
template <class Element>
void rotary_table_forward(const RotaryTableOp& op, std::int64_t batch, std::int64_t seq, std::span<Element> cos,
                          std::span<Element> sin, cudaStream_t stream);
template <class Element>
void rotary_forward(std::int64_t heads, std::int64_t head_dim, std::int64_t tokens, std::span<const Element> cos,
                    std::span<const Element> sin, std::span<const Element> x, std::span<Element> y,
                    cudaStream_t stream);
template <class Element>
void rotary_backward(std::int64_t heads, std::int64_t head_dim, std::int64_t tokens, std::span<const Element> cos,
                     std::span<const Element> sin, std::span<const Element> d_y, std::span<Element> d_x,
                     cudaStream_t stream);

// --- causal attention: strided-batched GEMMs per batch row, softmax one warp per row ---
template <class Element>
void attention_scores_forward(const AttentionHeads& heads, std::int64_t batch, std::int64_t seq,
                              std::span<const Element> q, std::span<const Element> k, std::span<Element> probs,
                              cublasHandle_t blas, cudaStream_t stream);
/// workspace [B, heads, S, S] holds dS.
template <class Element>
void attention_scores_backward(const AttentionHeads& heads, std::int64_t batch, std::int64_t seq,
                               std::span<const Element> d_probs, std::span<const Element> probs,
                               std::span<const Element> q, std::span<const Element> k, std::span<Element> d_q,
                               std::span<Element> d_k, std::span<Element> workspace, cublasHandle_t blas,
                               cudaStream_t stream);
/// workspace [B, heads, S, S] holds dropout(P) when dropout_p > 0 (else empty).
template <class Element>
void attention_context_forward(const AttentionContextOp& op, std::int64_t batch, std::int64_t seq,
                               std::uint64_t seed, std::span<const Element> probs, std::span<const Element> v,
                               std::span<std::uint8_t> mask, std::span<Element> out, std::span<Element> workspace,
                               cublasHandle_t blas, cudaStream_t stream);
template <class Element>
void attention_context_backward(const AttentionContextOp& op, std::int64_t batch, std::int64_t seq,
                                std::span<const Element> d_out, std::span<const Element> probs,
                                std::span<const Element> v, std::span<const std::uint8_t> mask,
                                std::span<Element> d_probs, std::span<Element> d_v, std::span<Element> workspace,
                                cublasHandle_t blas, cudaStream_t stream);

// --- loss ---
/// Per-token losses and lse (fp32), one warp per row; the mean is left to the caller.
template <class Element>
void cross_entropy_forward(const CrossEntropyOp& op, std::int64_t tokens, std::span<const Element> logits,
                           std::span<const std::int64_t> targets, std::span<float> losses, std::span<float> lse,
                           cudaStream_t stream);
/// As the CPU's, but the count of non-ignored targets is given (the targets live on the device).
template <class Element>
void cross_entropy_backward(const CrossEntropyOp& op, std::int64_t tokens, std::span<const Element> logits,
                            std::span<const std::int64_t> targets, std::span<const float> lse, float d_loss,
                            std::int64_t counted_tokens, std::span<Element> d_logits, cudaStream_t stream);

// --- the GEMM ceiling ---
/// C [n, n] = A B for square row-major matrices in Element: the operation the ceiling times.
template <class Element>
void square_gemm(std::int64_t n, std::span<const Element> a, std::span<const Element> b, std::span<Element> c,
                 cublasHandle_t blas, cudaStream_t stream);

/// Fills `values` with counter_signed_uniform(stream_seed, i) (the numbers the CPU draws for the same stream and index).
template <class Element>
void fill_uniform(std::uint64_t stream_seed, std::span<Element> values, cudaStream_t stream);
/// Fills `ids` with counter_index(stream_seed, i, bound).
void fill_ids(std::uint64_t stream_seed, std::int64_t bound, std::span<std::int64_t> ids, cudaStream_t stream);

}  // namespace syncplan::cuda
