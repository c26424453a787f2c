// The GEMM calls the CUDA kernels make (model/gemm_plan.hpp), executed on the CPU by a
// reference of cublasGemmStridedBatchedEx's column-major semantics and compared with the products
// written out index by index: the CUDA kernels' index arithmetic, tested without a GPU.
#include "model/gemm_plan.hpp"
#include "model/model_spec.hpp"
#include "tests/kernels/check_close.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <string>
#include <variant>
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

TEST_CASE("linear GEMM calls compute x W, d_y W^T and x^T d_y in both weight layouts", "[kernels][gemm_plan]") {
  // kInOut (Conv1D): W [k, n], y = x W. kOutIn (nn.Linear: Llama, lm_head): W [n, k], y = x W^T,
  // and the weight gradient d_W = d_y^T x takes its operands swapped (A = d_y, B = x).
  const WeightLayout layout = GENERATE(WeightLayout::kInOut, WeightLayout::kOutIn);
  const bool out_in = layout == WeightLayout::kOutIn;
  const LinearOp op{3, 4, false};
  const std::int64_t T = 5, k = 3, n = 4;
  const auto w_at = [&](std::int64_t l, std::int64_t c) { return out_in ? c * k + l : l * n + c; };
  const std::vector<float> x = numbers(T * k, 0.1f), w = numbers(k * n, 0.2f), d_y = numbers(T * n, 0.3f);
  std::vector<float> y(T * n), d_x(T * k), d_w = numbers(k * n, 0.4f);
  const std::vector<float> d_w_before = d_w;
  run({linear_gemm(LinearProduct::kForward, op, T, layout)}, x, w, y);
  run({linear_gemm(LinearProduct::kInputGradient, op, T, layout)}, d_y, w, d_x);
  if (out_in) run({linear_gemm(LinearProduct::kWeightGradient, op, T, layout)}, d_y, x, d_w);
  else run({linear_gemm(LinearProduct::kWeightGradient, op, T, layout)}, x, d_y, d_w);
  std::vector<float> y_ref(T * n, 0), d_x_ref(T * k, 0), d_w_ref = d_w_before;
  for (std::int64_t t = 0; t < T; ++t)
    for (std::int64_t l = 0; l < k; ++l)
      for (std::int64_t c = 0; c < n; ++c) {
        y_ref[t * n + c] += x[t * k + l] * w[w_at(l, c)];
        d_x_ref[t * k + l] += d_y[t * n + c] * w[w_at(l, c)];
        d_w_ref[w_at(l, c)] += x[t * k + l] * d_y[t * n + c];  // added to what was there
      }
  check_equal(y, y_ref);
  check_equal(d_x, d_x_ref);
  check_equal(d_w, d_w_ref);
  for (const LinearProduct product : {LinearProduct::kForward, LinearProduct::kInputGradient, LinearProduct::kWeightGradient})
    CHECK(cublas_argument_error(column_major(linear_gemm(product, op, T, layout))).empty());
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

namespace {

// The checks the CUDA launcher makes before each cuBLAS call (model/cuda/kernels.cu, run_gemm): cuBLAS's
// argument rules, and every operand within its tensor. Returns the extents for the caller to compare.
GemmExtents checked_call(const StridedGemm& row_major, std::int64_t a_size, std::int64_t b_size, std::int64_t c_size) {
  const StridedGemm call = column_major(row_major);
  INFO("cuBLAS rule broken: " << cublas_argument_error(call));
  CHECK(cublas_argument_error(call).empty());
  const GemmExtents reach = column_major_extents(call);
  // The call's A is the row-major B and its B the row-major A.
  CHECK(reach.b <= a_size);
  CHECK(reach.a <= b_size);
  CHECK(reach.c <= c_size);
  return reach;
}

}  // namespace

TEST_CASE("cuBLAS argument rules and operand extents, by hand", "[kernels][gemm_plan]") {
  // Linear forward, T = 5, k = 3, n = 4: the column-major call computes y^T [4 x 5] = W^T x^T, so
  // m = 4, n = 5, k = 3; its A is W stored 4 x 3 (ld 4): reaches (3 - 1) 4 + 4 = 12 = k n elements;
  // its B is x stored 3 x 5 (ld 3): (5 - 1) 3 + 3 = 15 = T k; C is 4 x 5 (ld 4): 4 x 4 + 4 = 20 = T n.
  const StridedGemm call = column_major(linear_gemm(LinearProduct::kForward, LinearOp{3, 4, false}, 5));
  CHECK(call.m == 4);
  CHECK(call.n == 5);
  CHECK(call.k == 3);
  CHECK(cublas_argument_error(call).empty());
  const GemmExtents reach = column_major_extents(call);
  CHECK(reach.a == 12);
  CHECK(reach.b == 15);
  CHECK(reach.c == 20);

  // Broken calls name the rule: lda 3 < m = 4 (A untransposed); ldb 2 < n = 5 with B transposed.
  StridedGemm bad = call;
  bad.lda = 3;
  CHECK(cublas_argument_error(bad).rfind("lda 3 < 4", 0) == 0);
  bad = call;
  bad.transpose_b = true;
  bad.ldb = 2;
  CHECK(cublas_argument_error(bad).rfind("ldb 2 < 5", 0) == 0);
  bad = call;
  bad.batch = 0;
  CHECK(cublas_argument_error(bad).rfind("batch 0 < 1", 0) == 0);

  // A batch of 3 matrices 20 elements apart starting at offset 7 reaches 7 + 2 x 20 + 20 = 67 of C.
  StridedGemm batched = call;
  batched.batch = 3;
  batched.c_offset = 7;
  batched.stride_c = 20;
  CHECK(column_major_extents(batched).c == 67);
}

TEST_CASE("every GEMM call of GPT-2 and Llama-2-7B at full size keeps cuBLAS's rules and its tensors",
          "[kernels][gemm_plan]") {
  // The sizes the GPU check profiles (batch 8 x seq 1024) and a long Llama sequence; the last call of
  // each product must reach the end of its output exactly (the output is covered, and no further).
  struct Size {
    const char* model;
    std::int64_t batch, seq;
  };
  for (const Size size : {Size{"gpt2", 8, 1024}, Size{"llama-2-7b", 1, 4096}, Size{"tiny-gpt", 2, 24}}) {
    INFO(size.model << " at batch " << size.batch << " x seq " << size.seq);
    const Model model = expand_model(read_model_spec_file(std::string(SYNCPLAN_DATA_DIR) + "/models/" + size.model +
                                                          ".json"));
    const std::int64_t B = size.batch, S = size.seq, T = B * S;
    int linear_products = 0, attention_products = 0;
    for (const ModelLayer& layer : model.layers)
      for (const LayerOp& op : layer.ops) {
        if (const auto* linear = std::get_if<LinearOp>(&op)) {
          const std::int64_t k = linear->in_features, n = linear->out_features;
          CHECK(checked_call(linear_gemm(LinearProduct::kForward, *linear, T), T * k, k * n, T * n).c == T * n);
          CHECK(checked_call(linear_gemm(LinearProduct::kInputGradient, *linear, T), T * n, k * n, T * k).c == T * k);
          CHECK(checked_call(linear_gemm(LinearProduct::kWeightGradient, *linear, T), T * k, T * n, k * n).c == k * n);
          ++linear_products;
        }
        const AttentionHeads* heads = nullptr;
        if (const auto* scores = std::get_if<AttentionScoresOp>(&op)) heads = &scores->shape;
        if (const auto* context = std::get_if<AttentionContextOp>(&op)) heads = &context->shape;
        if (heads == nullptr) continue;
        const std::int64_t queries = T * heads->heads * heads->head_dim, kv = T * heads->kv_heads * heads->head_dim,
                           probs = B * heads->heads * S * S;
        struct Product {
          AttentionProduct product;
          std::int64_t a, b, c;
        };
        for (const Product p : {Product{AttentionProduct::kScores, queries, kv, probs},
                                Product{AttentionProduct::kQueryGradient, probs, kv, queries},
                                Product{AttentionProduct::kKeyGradient, probs, queries, kv},
                                Product{AttentionProduct::kContext, probs, kv, queries},
                                Product{AttentionProduct::kProbsGradient, queries, kv, probs},
                                Product{AttentionProduct::kValueGradient, probs, queries, kv}}) {
          std::int64_t furthest_c = 0;
          for (const StridedGemm& gemm : attention_gemms(p.product, *heads, B, S))
            furthest_c = std::max(furthest_c, checked_call(gemm, p.a, p.b, p.c).c);
          CHECK(furthest_c == p.c);
        }
        ++attention_products;
      }
    CHECK(linear_products > 0);
    CHECK(attention_products > 0);
  }
}
