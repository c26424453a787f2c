// The matrix products of the linear and attention ops as lists of strided-batched GEMM calls,
// and their translation to cuBLAS's column-major arguments: plain C++, so that the CPU build tests
// the index arithmetic the CUDA kernels rely on (docs/profiler.md section 4).
#pragma once

#include "model/model_layers.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace syncplan {

/// One strided-batched GEMM: C_q = alpha op(A_q) op(B_q) + beta C_q for q = 0 .. batch-1, where
/// matrix q of an operand starts at offset + q stride (elements from the operand's base pointer)
/// and op(X) is X or X^T; op(A) is m x k, op(B) k x n, C m x n. In a row-major call (what
/// linear_gemm and attention_gemms return) `ld` is the row stride and element (i, j) of a stored X
/// is X[i ldx + j]; in a column-major call (what column_major returns: cublasGemmStridedBatchedEx's
/// arguments, cuBLAS documentation "cublasGemmEx") it is X[i + j ldx].
struct StridedGemm {
  bool transpose_a = false, transpose_b = false;
  std::int64_t m = 0, n = 0, k = 0;
  float alpha = 1, beta = 0;
  std::int64_t a_offset = 0, lda = 0, stride_a = 0;
  std::int64_t b_offset = 0, ldb = 0, stride_b = 0;
  std::int64_t c_offset = 0, ldc = 0, stride_c = 0;
  std::int64_t batch = 1;
};

/// A stored row-major X is the column-major X^T, so the row-major C = op(A) op(B) is the
/// column-major C^T = op(B)^T op(A)^T: the call takes B as its A and A as its B, with the same
/// transposes, and m, n swapped.
StridedGemm column_major(const StridedGemm& row_major);

/// The first of cuBLAS's argument rules for a column-major call that `call` breaks, or "" when it
/// keeps them all (cuBLAS documentation, "cublasGemmStridedBatchedEx": m, n, k >= 0; batch >= 1;
/// lda >= max(1, m) untransposed or max(1, k) transposed; ldb >= max(1, k) or max(1, n);
/// ldc >= max(1, m)). A call that breaks one fails with CUBLAS_STATUS_INVALID_VALUE on the GPU.
std::string cublas_argument_error(const StridedGemm& call);

/// How many elements from its base pointer each operand of a column-major call reaches: the last
/// element of the last matrix plus one, offset + (batch - 1) stride + (columns - 1) ld + rows for a
/// stored matrix of rows x columns (op(A) m x k, op(B) k x n, C m x n). The launcher checks these
/// against the tensors' lengths, so a wrong stride is an error rather than an out-of-bounds read.
struct GemmExtents {
  std::int64_t a = 0, b = 0, c = 0;  ///< elements, of the call's A, B and C
};
GemmExtents column_major_extents(const StridedGemm& call);

/// The products of a linear layer (model/cpu/kernels.hpp): x [T, k], weight [k, n] (kInOut) or
/// [n, k] (kOutIn), y and d_y [T, n].
enum class LinearProduct {
  kForward,        ///< y = x W, or x W^T          (A = x, B = weight, C = y)
  kInputGradient,  ///< d_x = d_y W^T, or d_y W    (A = d_y, B = weight, C = d_x)
  kWeightGradient, ///< d_W += x^T d_y             (A = x, B = d_y, C = d_weight; beta 1);
                   ///< kOutIn: d_W += d_y^T x     (A = d_y, B = x: the operands swap)
};
StridedGemm linear_gemm(LinearProduct product, const LinearOp& op, std::int64_t tokens,
                        WeightLayout layout = WeightLayout::kInOut);

/// The products of causal attention, per batch row b and query head i = j group + r (key/value
/// head j): q, d_q, out, d_out [T, heads head_dim]; k, v, d_k, d_v [T, kv_heads head_dim]; P and
/// its kin [B, heads, S, S].
enum class AttentionProduct {
  kScores,        ///< P_i = scale Q_i K_j^T        (A = q, B = k, C = probs)
  kQueryGradient, ///< d_Q_i = dS_i K_j              (A = dS, B = k, C = d_q)
  kKeyGradient,   ///< d_K_j = sum_r dS_i^T Q_i      (A = dS, B = q, C = d_k)
  kContext,       ///< O_i = P_i V_j                 (A = probs, B = v, C = out)
  kProbsGradient, ///< dP_i = d_O_i V_j^T            (A = d_out, B = v, C = d_probs)
  kValueGradient, ///< d_V_j = sum_r P_i^T d_O_i     (A = probs, B = d_out, C = d_v)
};

/// One strided-batched GEMM per batch row and offset r < heads / kv_heads, each over the kv_heads
/// key/value heads; the per-key-head gradients add the group's heads up (beta 1 after r = 0).
std::vector<StridedGemm> attention_gemms(AttentionProduct product, const AttentionHeads& heads, std::int64_t batch,
                                          std::int64_t seq);

}  // namespace syncplan
