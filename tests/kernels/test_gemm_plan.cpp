// The GEMM calls the CUDA kernels make (profiler/gemm_plan.hpp), executed on the CPU by a
// reference of cublasGemmStridedBatchedEx's column-major semantics and compared with the products
// written out index by index: the CUDA kernels' index arithmetic, tested without a GPU.
#include "profiler/gemm_plan.hpp"
#include "tests/kernels/check_close.hpp"

#include <catch2/catch.hpp>

#include <cmath>
#include <vector>

using namespace syncplan;

namespace {

// cublasGemmStridedBatchedEx as its documentation defines it, on the CPU: for each q < batch,
// C_q(i, j) = alpha sum_l op(A_q)(i, l) op(B_q)(l, j) + beta C_q(i, j), X(i, j) stored at
// X[i + j ldx], op(X)(i, l) = X(l, i) when transposed.
void reference_cublas(const StridedGemm& g, const float* a, const float* b, float* c) {
  for (std::int64_t q = 0; q < g.batch; ++q) {
    const float* aq = a + g.a_offset + q * g.stride_a;
    const float* bq = b + g.b_offset + q * g.stride_b;
    float* cq = c + g.c_offset + q * g.stride_c;
    for (std::int64_t i = 0; i < g.m; ++i)
      for (std::int64_t j = 0; j < g.n; ++j) {
        double sum = 0;
        for (std::int64_t l = 0; l < g.k; ++l) {
          const float op_a = g.transpose_a ? aq[l + i * g.lda] : aq[i + l * g.lda];
          const float op_b = g.transpose_b ? bq[j + l * g.ldb] : bq[l + j * g.ldb];
          sum += static_cast<double>(op_a) * op_b;
        }
        float& out = cq[i + j * g.ldc];
        out = static_cast<float>(g.alpha * sum + (g.beta == 0 ? 0.0 : g.beta * out));
      }
  }
}

// Runs row-major GEMM calls the way the CUDA launcher does: through column_major(), whose call
// takes the row-major B as its A.
void run(const std::vector<StridedGemm>& gemms, const std::vector<float>& a, const std::vector<float>& b,
         std::vector<float>& c) {
  for (const StridedGemm& gemm : gemms) reference_cublas(column_major(gemm), b.data(), a.data(), c.data());
}

std::vector<float> numbers(std::size_t n, float start) {
  std::vector<float> values(n);
  for (std::size_t i = 0; i < n; ++i) values[i] = std::sin(start + 0.37f * static_cast<float>(i));
  return values;
}

// Sums of a few products of O(1) numbers, in float against double: 1e-5 is ample.
void check_equal(const std::vector<float>& actual, const std::vector<float>& expected) {
  check_close(actual, expected, 1e-5);
}

}  // namespace

TEST_CASE("linear GEMM calls compute x W, d_y W^T and x^T d_y", "[kernels][gemm_plan]") {
  const LinearOp op{3, 4, false};
  const std::int64_t T = 5, k = 3, n = 4;
  const std::vector<float> x = numbers(T * k, 0.1f), w = numbers(k * n, 0.2f), d_y = numbers(T * n, 0.3f);
  std::vector<float> y(T * n), d_x(T * k), d_w = numbers(k * n, 0.4f);
  const std::vector<float> d_w_before = d_w;
  run({linear_gemm(LinearProduct::kForward, op, T)}, x, w, y);
  run({linear_gemm(LinearProduct::kInputGradient, op, T)}, d_y, w, d_x);
  run({linear_gemm(LinearProduct::kWeightGradient, op, T)}, x, d_y, d_w);
  std::vector<float> y_ref(T * n, 0), d_x_ref(T * k, 0), d_w_ref = d_w_before;
  for (std::int64_t t = 0; t < T; ++t)
    for (std::int64_t l = 0; l < k; ++l)
      for (std::int64_t c = 0; c < n; ++c) {
        y_ref[t * n + c] += x[t * k + l] * w[l * n + c];
        d_x_ref[t * k + l] += d_y[t * n + c] * w[l * n + c];
        d_w_ref[l * n + c] += x[t * k + l] * d_y[t * n + c];  // added to what was there
      }
  check_equal(y, y_ref);
  check_equal(d_x, d_x_ref);
  check_equal(d_w, d_w_ref);
}

TEST_CASE("attention GEMM calls compute every head's products, grouped-query included", "[kernels][gemm_plan]") {
  for (const AttentionHeads& heads : {AttentionHeads{3, 3, 2}, AttentionHeads{4, 2, 3}, AttentionHeads{6, 2, 2}}) {
    INFO("heads " << heads.heads << ", kv_heads " << heads.kv_heads << ", head_dim " << heads.head_dim);
    const std::int64_t B = 2, S = 3, h = heads.heads, g = heads.kv_heads, dh = heads.head_dim, group = h / g;
    const float scale = 1.0f / std::sqrt(static_cast<float>(dh));
    // Index helpers, row-major: q-like [B, S, h, dh], k-like [B, S, g, dh], P-like [B, h, S, S].
    const auto qi = [&](std::int64_t b, std::int64_t s, std::int64_t i, std::int64_t c) {
      return ((b * S + s) * h + i) * dh + c;
    };
    const auto ki = [&](std::int64_t b, std::int64_t s, std::int64_t j, std::int64_t c) {
      return ((b * S + s) * g + j) * dh + c;
    };
    const auto pi = [&](std::int64_t b, std::int64_t i, std::int64_t s, std::int64_t t) {
      return ((b * h + i) * S + s) * S + t;
    };
    const std::vector<float> q = numbers(B * S * h * dh, 0.5f), k = numbers(B * S * g * dh, 1.5f),
                             p = numbers(B * h * S * S, 2.5f), d_o = numbers(B * S * h * dh, 3.5f);
    std::vector<float> scores(p.size()), d_q(q.size()), d_k(k.size(), 9.0f), out(q.size()), d_p(p.size()),
        d_v(k.size(), 9.0f);  // the key/value gradients are overwritten, whatever they held
    run(attention_gemms(AttentionProduct::kScores, heads, B, S), q, k, scores);
    run(attention_gemms(AttentionProduct::kQueryGradient, heads, B, S), p, k, d_q);
    run(attention_gemms(AttentionProduct::kKeyGradient, heads, B, S), p, q, d_k);
    run(attention_gemms(AttentionProduct::kContext, heads, B, S), p, k, out);
    run(attention_gemms(AttentionProduct::kProbsGradient, heads, B, S), d_o, k, d_p);
    run(attention_gemms(AttentionProduct::kValueGradient, heads, B, S), p, d_o, d_v);

    std::vector<float> scores_ref(p.size(), 0), d_q_ref(q.size(), 0), d_k_ref(k.size(), 0), out_ref(q.size(), 0),
        d_p_ref(p.size(), 0), d_v_ref(k.size(), 0);
    for (std::int64_t b = 0; b < B; ++b)
      for (std::int64_t i = 0; i < h; ++i) {
        const std::int64_t j = i / group;  // query head i reads key/value head j
        for (std::int64_t s = 0; s < S; ++s)
          for (std::int64_t t = 0; t < S; ++t)
            for (std::int64_t c = 0; c < dh; ++c) {
              scores_ref[pi(b, i, s, t)] += scale * q[qi(b, s, i, c)] * k[ki(b, t, j, c)];
              d_q_ref[qi(b, s, i, c)] += p[pi(b, i, s, t)] * k[ki(b, t, j, c)];
              d_k_ref[ki(b, t, j, c)] += p[pi(b, i, s, t)] * q[qi(b, s, i, c)];
              out_ref[qi(b, s, i, c)] += p[pi(b, i, s, t)] * k[ki(b, t, j, c)];
              d_p_ref[pi(b, i, s, t)] += d_o[qi(b, s, i, c)] * k[ki(b, t, j, c)];
              d_v_ref[ki(b, t, j, c)] += p[pi(b, i, s, t)] * d_o[qi(b, s, i, c)];
            }
      }
    check_equal(scores, scores_ref);
    check_equal(d_q, d_q_ref);
    check_equal(d_k, d_k_ref);
    check_equal(out, out_ref);
    check_equal(d_p, d_p_ref);
    check_equal(d_v, d_v_ref);
  }
}
