// The GEMM calls of the linear and attention products, row-major, and their cuBLAS translation.
#include "model/gemm_plan.hpp"

#include "core/errors.hpp"

#include <algorithm>
#include <cmath>
#include <utility>

namespace syncplan {

StridedGemm column_major(const StridedGemm& g) {
  StridedGemm c = g;  // alpha, beta, k, C and the batch stay
  std::swap(c.transpose_a, c.transpose_b);
  std::swap(c.m, c.n);
  std::swap(c.a_offset, c.b_offset);
  std::swap(c.lda, c.ldb);
  std::swap(c.stride_a, c.stride_b);
  return c;
}

std::string cublas_argument_error(const StridedGemm& g) {
  const auto at_least = [](const char* name, std::int64_t value, std::int64_t minimum, const char* rule) {
    return value >= minimum ? std::string()
                            : std::string(name) + " " + std::to_string(value) + " < " + std::to_string(minimum) +
                                  " (" + rule + ")";
  };
  for (const std::string& error :
       {at_least("m", g.m, 0, "m >= 0"), at_least("n", g.n, 0, "n >= 0"), at_least("k", g.k, 0, "k >= 0"),
        at_least("batch", g.batch, 1, "batch >= 1"),
        g.transpose_a ? at_least("lda", g.lda, std::max<std::int64_t>(1, g.k), "lda >= max(1, k) for A^T")
                      : at_least("lda", g.lda, std::max<std::int64_t>(1, g.m), "lda >= max(1, m) for A"),
        g.transpose_b ? at_least("ldb", g.ldb, std::max<std::int64_t>(1, g.n), "ldb >= max(1, n) for B^T")
                      : at_least("ldb", g.ldb, std::max<std::int64_t>(1, g.k), "ldb >= max(1, k) for B"),
        at_least("ldc", g.ldc, std::max<std::int64_t>(1, g.m), "ldc >= max(1, m)")})
    if (!error.empty()) return error;
  return {};
}

GemmExtents column_major_extents(const StridedGemm& g) {
  // A stored matrix of `rows` x `columns`, column-major with leading dimension ld.
  const auto extent = [&g](std::int64_t offset, std::int64_t stride, std::int64_t ld, std::int64_t rows,
                           std::int64_t columns) {
    if (rows == 0 || columns == 0) return offset;
    return offset + (g.batch - 1) * stride + (columns - 1) * ld + rows;
  };
  GemmExtents e;
  e.a = g.transpose_a ? extent(g.a_offset, g.stride_a, g.lda, g.k, g.m) : extent(g.a_offset, g.stride_a, g.lda, g.m, g.k);
  e.b = g.transpose_b ? extent(g.b_offset, g.stride_b, g.ldb, g.n, g.k) : extent(g.b_offset, g.stride_b, g.ldb, g.k, g.n);
  e.c = extent(g.c_offset, g.stride_c, g.ldc, g.m, g.n);
  return e;
}

StridedGemm linear_gemm(LinearProduct product, const LinearOp& op, std::int64_t tokens, WeightLayout layout) {
  const std::int64_t k = op.in_features, n = op.out_features;
  const bool out_in = layout == WeightLayout::kOutIn;
  StridedGemm g;
  switch (product) {
    case LinearProduct::kForward:  // y [T, n] = x [T, k] W [k, n], or x W^T with W [n, k]
      g.transpose_b = out_in;
      g.m = tokens, g.n = n, g.k = k, g.lda = k, g.ldb = out_in ? k : n, g.ldc = n;
      break;
    case LinearProduct::kInputGradient:  // d_x [T, k] = d_y [T, n] W^T [n, k], or d_y W with W [n, k]
      g.transpose_b = !out_in;
      g.m = tokens, g.n = k, g.k = n, g.lda = n, g.ldb = out_in ? k : n, g.ldc = k;
      break;
    case LinearProduct::kWeightGradient:
      g.transpose_a = true;
      g.beta = 1;
      if (out_in) g.m = n, g.n = k, g.k = tokens, g.lda = n, g.ldb = k, g.ldc = k;  // d_W [n, k] += d_y^T x
      else g.m = k, g.n = n, g.k = tokens, g.lda = k, g.ldb = n, g.ldc = n;          // d_W [k, n] += x^T d_y
      break;
  }
  return g;
}

namespace {

// Where the heads of one operand lie, in elements: row stride, batch-row stride, head stride, and
// whether it is indexed by query head (i = j group + r) or by key/value head (j).
struct HeadLayout {
  std::int64_t ld, batch_row, head;
  bool per_query_head;
};

}  // namespace

std::vector<StridedGemm> attention_gemms(AttentionProduct product, const AttentionHeads& heads, std::int64_t batch,
                                          std::int64_t seq) {
  SYNCPLAN_CHECK(heads.heads > 0 && heads.kv_heads > 0 && heads.heads % heads.kv_heads == 0 && heads.head_dim > 0);
  const std::int64_t h = heads.heads, g = heads.kv_heads, dh = heads.head_dim, S = seq, group = h / g;
  const HeadLayout query{h * dh, S * h * dh, dh, true};  // q, d_q, out, d_out
  const HeadLayout kv{g * dh, S * g * dh, dh, false};     // k, v, d_k, d_v
  const HeadLayout scores{S, h * S * S, S * S, true};     // probs, d_probs, dS
  const float scale = 1.0f / std::sqrt(static_cast<float>(dh));

  struct Shape {
    bool transpose_a, transpose_b;
    std::int64_t m, n, k;
    float alpha;
    HeadLayout a, b, c;
  };
  const Shape shape = [&]() -> Shape {
    switch (product) {
      case AttentionProduct::kScores: return {false, true, S, S, dh, scale, query, kv, scores};
      case AttentionProduct::kQueryGradient: return {false, false, S, dh, S, 1, scores, kv, query};
      case AttentionProduct::kKeyGradient: return {true, false, S, dh, S, 1, scores, query, kv};
      case AttentionProduct::kContext: return {false, false, S, dh, S, 1, scores, kv, query};
      case AttentionProduct::kProbsGradient: return {false, true, S, S, dh, 1, query, kv, scores};
      case AttentionProduct::kValueGradient: return {true, false, S, dh, S, 1, scores, query, kv};
    }
    SYNCPLAN_CHECK(false);
    return {};
  }();

  const auto offset = [&](const HeadLayout& l, std::int64_t b, std::int64_t r) {
    return b * l.batch_row + (l.per_query_head ? r * l.head : 0);
  };
  // Consecutive key/value heads j are `group` query heads apart.
  const auto stride = [&](const HeadLayout& l) { return l.per_query_head ? group * l.head : l.head; };
  std::vector<StridedGemm> gemms;
  for (std::int64_t b = 0; b < batch; ++b)
    for (std::int64_t r = 0; r < group; ++r) {
      StridedGemm gemm;
      gemm.transpose_a = shape.transpose_a;
      gemm.transpose_b = shape.transpose_b;
      gemm.m = shape.m, gemm.n = shape.n, gemm.k = shape.k;
      gemm.alpha = shape.alpha;
      gemm.beta = (!shape.c.per_query_head && r > 0) ? 1.0f : 0.0f;  // add the group's later heads
      gemm.a_offset = offset(shape.a, b, r), gemm.lda = shape.a.ld, gemm.stride_a = stride(shape.a);
      gemm.b_offset = offset(shape.b, b, r), gemm.ldb = shape.b.ld, gemm.stride_b = stride(shape.b);
      gemm.c_offset = offset(shape.c, b, r), gemm.ldc = shape.c.ld, gemm.stride_c = stride(shape.c);
      gemm.batch = g;
      gemms.push_back(gemm);
    }
  return gemms;
}

}  // namespace syncplan
