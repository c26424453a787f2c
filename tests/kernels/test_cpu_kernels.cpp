// The CPU reference kernels: every backward against central finite differences of its forward,
// each op run alone as a one-layer graph through cpu::CpuGraph (the graph the CPU profiler times
// and the CPU runtime trains), and hand-derived values on tiny inputs (docs/profiler.md section 2).
#include "model/cpu/cpu_graph.hpp"
#include "model/cpu/kernels.hpp"
#include "model/op_graph.hpp"
#include "tests/kernels/check_close.hpp"
#include "tests/kernels/op_graph_inputs.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <sstream>
#include <vector>

using namespace syncplan;

namespace {

// ---------------------------------------------------------------------------------------------
// Finite differences
//
// Objective: L = sum over the forward's outputs y of <d_y, y> (d_y the random arriving gradient
// the backward reads), or the mean loss for the cross-entropy (d_loss = 1). Then the backward's
// d_x must equal dL/dx for every input x that has a gradient tensor d_x.
//
// Step h = 1e-2 and the check |analytic - numeric| <= 1e-3 + 1e-2 |numeric|: L is a sum of
// O(100) fp32 outputs of size O(1), so its rounding error is about 1e-6 and contributes
// 1e-6 / (2h) = 5e-5 to the quotient; the truncation error of the central difference is
// h^2/6 |L'''| ~ 2e-5 |L'''|, which stays below 2e-4 for these smooth ops (|L'''| < 10 on inputs in
// [-1, 1)). The largest difference seen is 1.3e-4 (printed by the first test); the bound is 7x
// that, and "the check catches a 2 % error" shows it is still tight enough to fail.
// ---------------------------------------------------------------------------------------------

constexpr float kStep = 1e-2f;
constexpr double kAbsoluteTolerance = 1e-3;
constexpr double kRelativeTolerance = 1e-2;

// One op as a one-layer graph on the CPU backend, its inputs and batch drawn from a seed.
class OpOnCpu {
 public:
  OpOnCpu(const LayerOp& op, const Workload& workload, std::uint64_t seed)
      : op_(build_op_graph(op, workload)), graph_(op_.graph) {
    for (const test::RandomTensor& tensor : test::random_op_inputs(op_, seed))
      std::copy(tensor.values.begin(), tensor.values.end(), graph_.at(tensor.ref).begin());
    const TokenBatch batch = random_token_batch(graph_.graph(), seed);
    graph_.set_batch(batch.ids, batch.targets);
    cross_entropy_ = std::holds_alternative<CrossEntropyOp>(op);
  }

  const OpGraph& op() const { return op_; }
  cpu::CpuGraph& graph() { return graph_; }
  void forward() { graph_.forward(0); }
  void backward() {
    graph_.zero_gradients();
    graph_.backward(0);
  }

  // The mean loss for the cross-entropy (its backward starts from d_loss = 1), else the sum over
  // the outputs y of <d_y, y>, d_y the arriving gradient the backward reads.
  double objective() {
    if (cross_entropy_) return graph_.loss();
    double total = 0;
    for (const OpGraphTensor& output : op_.outputs) {
      if (output.grad.elements == 0) continue;
      const std::span<float> y = graph_.at(output.value), d_y = graph_.at(output.grad);
      for (std::size_t i = 0; i < y.size(); ++i) total += static_cast<double>(y[i]) * d_y[i];
    }
    return total;
  }

 private:
  OpGraph op_;
  cpu::CpuGraph graph_;
  bool cross_entropy_ = false;
};

struct GradientError {
  std::string tensor;
  std::size_t index = 0;
  double analytic = 0, numeric = 0;
  double largest_difference = 0;  // max |analytic - numeric| over all elements checked
  double excess() const {  // > 0 when outside the tolerance
    return std::abs(analytic - numeric) - (kAbsoluteTolerance + kRelativeTolerance * std::abs(numeric));
  }
};

// The worst element (largest excess over the tolerance) over every input with a gradient.
// `analytic_scale` multiplies the analytic gradients: 1 for the real check, else a planted error.
GradientError worst_gradient_error(const LayerOp& op, const Workload& workload, double analytic_scale = 1.0) {
  OpOnCpu run(op, workload, 7);
  run.forward();
  run.backward();
  GradientError worst;
  double largest = 0;
  bool first = true;
  for (const OpGraphTensor& input : run.op().inputs) {
    if (input.grad.elements == 0) continue;
    const std::span<float> gradient = run.graph().at(input.grad);
    const std::vector<float> analytic(gradient.begin(), gradient.end());
    const std::span<float> x = run.graph().at(input.value);
    for (std::size_t i = 0; i < x.size(); ++i) {
      const float saved = x[i];
      x[i] = saved + kStep;
      run.forward();
      const double plus = run.objective();
      x[i] = saved - kStep;
      run.forward();
      const double minus = run.objective();
      x[i] = saved;
      const GradientError error{input.name, i, analytic[i] * analytic_scale, (plus - minus) / (2.0 * kStep)};
      largest = std::max(largest, std::abs(error.analytic - error.numeric));
      if (first || error.excess() > worst.excess()) worst = error;
      first = false;
    }
  }
  REQUIRE_FALSE(first);  // the op has at least one input with a gradient
  worst.largest_difference = largest;
  return worst;
}

std::string describe(const GradientError& e) {
  std::ostringstream text;
  text << "d_" << e.tensor << "[" << e.index << "]: analytic " << e.analytic << ", numeric " << e.numeric
       << ", tolerance " << kAbsoluteTolerance + kRelativeTolerance * std::abs(e.numeric);
  return text.str();
}

// B = 2 sequences of S = 3 tokens: T = 6, small enough for an exhaustive check.
Workload small_workload() {
  Workload workload;
  workload.batch = 2;
  workload.seq = 3;
  return workload;
}

std::vector<std::pair<std::string, LayerOp>> ops_with_gradients() {
  const AttentionHeads mha{2, 2, 4}, gqa{4, 2, 2};  // grouped-query: 2 query heads per key head
  return {
      {"token embedding", TokenEmbeddingOp{5, 4}},
      {"position embedding", PositionEmbeddingOp{4, 4}},
      {"linear with bias", LinearOp{4, 3, true}},
      {"linear without bias", LinearOp{3, 5, false}},
      {"layer norm", LayerNormOp{5, 1e-5}},
      {"RMS norm", RmsNormOp{5, 1e-6}},
      {"GELU", GeluOp{4}},
      {"SiLU", SiluOp{4}},
      {"gated product", GatedProductOp{4}},
      {"residual add", ResidualAddOp{4}},
      {"dropout p = 0.3", DropoutOp{0.3, 4}},
      {"rotary application", RotaryApplyOp{gqa}},
      {"attention scores", AttentionScoresOp{mha}},
      {"attention scores, grouped-query", AttentionScoresOp{gqa}},
      {"attention context", AttentionContextOp{mha, 0.0}},
      {"attention context, grouped-query, dropout 0.25", AttentionContextOp{gqa, 0.25}},
      {"cross-entropy", CrossEntropyOp{7}},
  };
}

template <class Container>
std::vector<float> as_vector(const Container& values) {
  return std::vector<float>(values.begin(), values.end());
}

// Elementwise within 1e-6 absolute: values of O(1) computed in fp32 from exact inputs.
void check_close(const std::vector<float>& actual, const std::vector<float>& expected) {
  ::check_close(actual, expected, 1e-6);
}

}  // namespace

TEST_CASE("every backward matches central finite differences of its forward", "[kernels][gradients]") {
  const Workload workload = small_workload();
  double largest_error = 0;
  for (const auto& [name, op] : ops_with_gradients()) {
    INFO(name);
    const GradientError worst = worst_gradient_error(op, workload);
    INFO(describe(worst));
    CHECK(worst.excess() <= 0);
    largest_error = std::max(largest_error, worst.largest_difference);
  }
  WARN("largest |analytic - numeric| gradient difference over all ops: " << largest_error);
}

TEST_CASE("the finite-difference check catches a 2 % error in a gradient", "[kernels][gradients]") {
  // Gradients of O(1) are off by 0.02 > 1e-3 + 1e-2 * 1: each op's worst element must fail.
  const Workload workload = small_workload();
  for (const auto& [name, op] : ops_with_gradients()) {
    INFO(name);
    const GradientError worst = worst_gradient_error(op, workload, 1.02);
    INFO(describe(worst));
    CHECK(worst.excess() > 0);
  }
}

// ---------------------------------------------------------------------------------------------
// Hand-derived values
// ---------------------------------------------------------------------------------------------

TEST_CASE("layer norm of [1, 2, 3]", "[kernels]") {
  // mean 2, biased variance (1 + 0 + 1) / 3 = 2/3, rstd = 1 / sqrt(2/3 + 1e-5) = 1.2247357;
  // y = (x - 2) rstd = [-1.2247357, 0, 1.2247357] with weight 1 and bias 0; with weight 2 and
  // bias 1: [-1.4494714, 1, 3.4494714].
  const LayerNormOp op{3, 1e-5};
  const std::vector<float> x{1, 2, 3}, ones{1, 1, 1}, zeros{0, 0, 0}, twos{2, 2, 2};
  std::vector<float> y(3), mean(1), rstd(1);
  cpu::layer_norm_forward(op, 1, x, ones, zeros, y, mean, rstd);
  CHECK(mean[0] == Approx(2.0f));
  CHECK(rstd[0] == Approx(1.2247357).epsilon(1e-6));
  CHECK(y[0] == Approx(-1.2247357).epsilon(1e-6));
  CHECK(y[1] == Approx(0.0).margin(1e-7));
  CHECK(y[2] == Approx(1.2247357).epsilon(1e-6));
  cpu::layer_norm_forward(op, 1, x, twos, ones, y, mean, rstd);
  CHECK(y[0] == Approx(-1.4494714).epsilon(1e-6));
  CHECK(y[2] == Approx(3.4494714).epsilon(1e-6));

  // Backward with d_y = [1, 1, 1] and weight 1: g = 1, mean(g) = 1, mean(g x̂) = mean(x̂) = 0, so
  // d_x = rstd (1 - 1 - 0) = 0 (a uniform shift does not change a normalized row); d_bias = 1 each,
  // d_weight = x̂ = [-1.2247357, 0, 1.2247357].
  std::vector<float> d_x(3), d_weight(3, 0.0f), d_bias(3, 0.0f);
  cpu::layer_norm_backward(op, 1, ones, x, ones, mean, rstd, d_x, d_weight, d_bias);
  for (const float g : d_x) CHECK(g == Approx(0.0).margin(1e-6));
  CHECK(d_bias == std::vector<float>{1, 1, 1});
  CHECK(d_weight[0] == Approx(-1.2247357).epsilon(1e-6));
}

TEST_CASE("RMS norm of [3, 4]", "[kernels]") {
  // mean of squares (9 + 16) / 2 = 12.5; y = x / sqrt(12.5 + 1e-6) = [0.84852810, 1.13137080].
  const RmsNormOp op{2, 1e-6};
  const std::vector<float> x{3, 4}, ones{1, 1};
  std::vector<float> y(2), rstd(1);
  cpu::rms_norm_forward(op, 1, x, ones, y, rstd);
  CHECK(y[0] == Approx(0.84852810).epsilon(1e-6));
  CHECK(y[1] == Approx(1.13137080).epsilon(1e-6));
}

TEST_CASE("GELU (tanh) and SiLU at a few points", "[kernels]") {
  // GELU(1) = 0.5 (1 + tanh(sqrt(2/pi) 1.044715)) = 0.5 (1 + tanh(0.83356197)) = 0.5 (1 + 0.68238398)
  // = 0.84119199. GELU(-x) = GELU(x) - x, so GELU(-1) = -0.15880801. GELU(0) = 0.
  const std::vector<float> x{0, 1, -1};
  std::vector<float> y(3);
  cpu::gelu_forward(x, y);
  CHECK(y[0] == 0.0f);
  CHECK(y[1] == Approx(0.84119199).epsilon(1e-6));
  CHECK(y[2] == Approx(-0.15880801).epsilon(1e-5));
  // SiLU(1) = 1 / (1 + e^-1) = 0.73105858; SiLU(0) = 0; SiLU(-1) = -1 / (1 + e) = -0.26894142.
  cpu::silu_forward(x, y);
  CHECK(y[0] == 0.0f);
  CHECK(y[1] == Approx(0.73105858).epsilon(1e-6));
  CHECK(y[2] == Approx(-0.26894142).epsilon(1e-6));
  // GELU'(0) = 0.5 and SiLU'(0) = sigmoid(0) = 0.5.
  std::vector<float> d_x(3);
  const std::vector<float> ones{1, 1, 1};
  cpu::gelu_backward(ones, x, d_x);
  CHECK(d_x[0] == Approx(0.5));
  cpu::silu_backward(ones, x, d_x);
  CHECK(d_x[0] == Approx(0.5));
}

TEST_CASE("causal softmax attention on a 2 x 2 case", "[kernels][attention]") {
  // One sequence of S = 2, one head of size 1 (scale 1/sqrt(1) = 1). q = [1, 1], k = [0, ln 3].
  // Query 0 sees key 0 only: P[0] = [1, 0]. Query 1: scores [0, ln 3] -> softmax [1/4, 3/4].
  // With v = [2, 6]: out = [2, 1/4 * 2 + 3/4 * 6] = [2, 5].
  const AttentionHeads heads{1, 1, 1};
  const std::vector<float> q{1, 1}, k{0, std::log(3.0f)}, v{2, 6};
  std::vector<float> probs(4);
  cpu::attention_scores_forward(heads, 1, 2, cpu::contiguous_rows(std::span<const float>(q), 1),
                                cpu::contiguous_rows(std::span<const float>(k), 1), probs);
  CHECK(probs[0] == Approx(1.0f));
  CHECK(probs[1] == 0.0f);
  CHECK(probs[2] == Approx(0.25f));
  CHECK(probs[3] == Approx(0.75f));
  std::vector<float> out(2);
  cpu::attention_context_forward(AttentionContextOp{heads, 0.0}, 1, 2, 1, probs,
                                 cpu::contiguous_rows(std::span<const float>(v), 1), {}, out);
  CHECK(out[0] == Approx(2.0f));
  CHECK(out[1] == Approx(5.0f));
}

TEST_CASE("attention on column slices of a packed [T, 3d] matrix equals attention on copies", "[kernels][attention]") {
  // GPT-2's c_attn writes q, k, v side by side; the kernels read them in place with row stride 3d.
  const AttentionHeads heads{2, 2, 3};
  const std::int64_t batch = 2, seq = 4, d = 6, T = batch * seq;
  std::vector<float> packed(T * 3 * d);
  for (std::size_t e = 0; e < packed.size(); ++e) packed[e] = counter_signed_uniform(11, e);
  const std::span<const float> qkv = packed;
  std::vector<float> q(T * d), k(T * d);
  for (std::int64_t t = 0; t < T; ++t)
    for (std::int64_t c = 0; c < d; ++c) {
      q[t * d + c] = qkv[t * 3 * d + c];
      k[t * d + c] = qkv[t * 3 * d + d + c];
    }
  std::vector<float> from_slices(batch * 2 * seq * seq), from_copies(from_slices.size());
  cpu::attention_scores_forward(heads, batch, seq, {qkv, 3 * d}, {qkv.subspan(d), 3 * d}, from_slices);
  cpu::attention_scores_forward(heads, batch, seq, cpu::contiguous_rows(std::span<const float>(q), d),
                                cpu::contiguous_rows(std::span<const float>(k), d), from_copies);
  CHECK(from_slices == from_copies);
}

TEST_CASE("cross-entropy of uniform logits is ln V", "[kernels]") {
  // Equal logits over V = 4: softmax 1/4 each, loss ln 4 = 1.3862944 per token. The second
  // token's target is negative (ignored): the mean is over the first only, and its gradient row
  // is (1/4 - onehot) / 1; the ignored row is 0.
  const CrossEntropyOp op{4};
  const std::vector<float> logits(8, 0.5f);
  const std::vector<std::int64_t> targets{2, -100};
  std::vector<float> losses(2), lse(2), d_logits(8);
  const float mean = cpu::cross_entropy_forward(op, 2, logits, targets, losses, lse);
  CHECK(mean == Approx(1.3862944));
  CHECK(losses[1] == 0.0f);
  cpu::cross_entropy_backward(op, 2, logits, targets, lse, 1.0f, d_logits);
  check_close(as_vector(std::span(d_logits).first(4)), {0.25f, 0.25f, -0.75f, 0.25f});
  CHECK(as_vector(std::span(d_logits).last(4)) == std::vector<float>{0, 0, 0, 0});
}

TEST_CASE("linear y = x W + b, and gradients accumulate into parameters", "[kernels]") {
  // x = [1, 2], W = [[1, 2], [3, 4]] ([in, out]), b = [10, 20]: y = [1 + 6 + 10, 2 + 8 + 20] = [17, 30].
  const LinearOp op{2, 2, true};
  const std::vector<float> x{1, 2}, w{1, 2, 3, 4}, b{10, 20};
  std::vector<float> y(2);
  cpu::linear_forward(op, 1, x, w, b, y);
  CHECK(y == std::vector<float>{17, 30});
  // d_y = [1, 0]: d_x = d_y W^T = [1, 3]; d_W = x^T d_y = [[1, 0], [2, 0]]; d_b = [1, 0].
  // A second backward adds the same again into d_W and d_b, not into d_x.
  const std::vector<float> d_y{1, 0};
  std::vector<float> d_x(2), d_w(4, 0.0f), d_b(2, 0.0f);
  cpu::linear_backward(op, 1, d_y, x, w, d_x, d_w, d_b);
  cpu::linear_backward(op, 1, d_y, x, w, d_x, d_w, d_b);
  CHECK(d_x == std::vector<float>{1, 3});
  CHECK(d_w == std::vector<float>{2, 0, 4, 0});
  CHECK(d_b == std::vector<float>{2, 0});
}

TEST_CASE("linear with nn.Linear's [out, in] weight: y = x W^T, d_W = d_y^T x", "[kernels]") {
  // The same product as above with W stored transposed: W^T = [[1, 3], [2, 4]] ([out, in]),
  // no bias, 2 -> 3 features to make the shapes distinct: W^T rows [1, 3], [2, 4], [5, 6].
  // x = [1, 2]: y = [1 + 6, 2 + 8, 5 + 12] = [7, 10, 17].
  const LinearOp op{2, 3, false};
  const std::vector<float> x{1, 2}, w_out_in{1, 3, 2, 4, 5, 6};
  std::vector<float> y(3);
  cpu::linear_forward(op, 1, x, w_out_in, {}, y, WeightLayout::kOutIn);
  CHECK(y == std::vector<float>{7, 10, 17});
  // d_y = [1, 0, 1]: d_x = d_y W = [1 + 5, 3 + 6] = [6, 9]; d_W [out, in] = d_y^T x =
  // [[1, 2], [0, 0], [1, 2]].
  const std::vector<float> d_y{1, 0, 1};
  std::vector<float> d_x(2), d_w(6, 0.0f);
  cpu::linear_backward(op, 1, d_y, x, w_out_in, d_x, d_w, {}, WeightLayout::kOutIn);
  CHECK(d_x == std::vector<float>{6, 9});
  CHECK(d_w == std::vector<float>{1, 2, 0, 0, 1, 2});
  CHECK(weight_layout(ModuleKind::kLinear) == WeightLayout::kOutIn);
  CHECK(weight_layout(ModuleKind::kConv1D) == WeightLayout::kInOut);
}

TEST_CASE("embeddings: lookup, position rows, scatter-add with repeated ids", "[kernels]") {
  // table rows r = [10 r, 10 r + 1]; ids [1, 1, 0] -> out rows [10, 11], [10, 11], [0, 1].
  const TokenEmbeddingOp op{3, 2};
  const std::vector<float> table{0, 1, 10, 11, 20, 21};
  const std::vector<std::int64_t> ids{1, 1, 0};
  std::vector<float> out(6);
  cpu::token_embedding_forward(op, ids, table, out);
  CHECK(out == std::vector<float>{10, 11, 10, 11, 0, 1});
  // d_out rows [1, 2], [3, 4], [5, 6]: d_table row 1 = [1 + 3, 2 + 4] = [4, 6], row 0 = [5, 6], row 2 = 0.
  const std::vector<float> d_out{1, 2, 3, 4, 5, 6};
  std::vector<float> d_table(6, 0.0f);
  cpu::token_embedding_backward(op, ids, d_out, d_table);
  CHECK(d_table == std::vector<float>{5, 6, 4, 6, 0, 0});

  // Two sequences of 2 tokens, positions table rows [1, 2], [3, 4], [5, 6] (3 positions): out =
  // x + table[s]; the gradient of row s sums d_out over the batch: rows [1 + 1, ...].
  const PositionEmbeddingOp positions{3, 2};
  const std::vector<float> x{0, 0, 0, 0, 100, 100, 100, 100}, position_table{1, 2, 3, 4, 5, 6};
  std::vector<float> summed(8);
  cpu::position_embedding_forward(positions, 2, 2, x, position_table, summed);
  CHECK(summed == std::vector<float>{1, 2, 3, 4, 101, 102, 103, 104});
  std::vector<float> d_positions(6, 0.0f);
  cpu::position_embedding_backward(positions, 2, 2, std::vector<float>{1, 1, 2, 2, 1, 1, 2, 2}, d_positions);
  CHECK(d_positions == std::vector<float>{2, 2, 4, 4, 0, 0});
}

TEST_CASE("rotary: position 0 is the identity, position 1 rotates by 1 radian", "[kernels]") {
  // head_dim 2: inverse frequency theta^0 = 1, angle = position. cos/sin columns repeat.
  // x = [1, 0] at position 1: y = [x1 cos 1 - x2 sin 1, x2 cos 1 + x1 sin 1] = [0.54030231, 0.84147098].
  const RotaryTableOp table{2, 10000.0};
  std::vector<float> cos(4), sin(4);
  cpu::rotary_table_forward(table, 1, 2, cos, sin);
  check_close(cos, {1, 1, 0.54030231f, 0.54030231f});
  check_close(sin, {0, 0, 0.84147098f, 0.84147098f});
  const std::vector<float> x{0.3f, -0.7f, 1, 0};
  std::vector<float> y(4), back(4);
  cpu::rotary_forward(1, 2, 2, cos, sin, x, y);
  check_close(y, {0.3f, -0.7f, 0.54030231f, 0.84147098f});
  // The backward is the transposed (inverse) rotation: it takes y back to x.
  cpu::rotary_backward(1, 2, 2, cos, sin, y, back);
  check_close(back, {0.3f, -0.7f, 1, 0});
}

TEST_CASE("residual add and gated product", "[kernels]") {
  const std::vector<float> a{1, 2}, b{3, -4};
  std::vector<float> y(2);
  cpu::residual_add_forward(a, b, y);
  CHECK(y == std::vector<float>{4, -2});
  // The residual stream's gradient [1, 1] gains the branch's [0.5, -2].
  std::vector<float> d_stream{1, 1};
  cpu::residual_add_backward(std::vector<float>{0.5f, -2}, d_stream);
  CHECK(d_stream == std::vector<float>{1.5f, -1});
  cpu::gated_product_forward(a, b, y);
  CHECK(y == std::vector<float>{3, -8});
  std::vector<float> d_a(2), d_b(2);
  cpu::gated_product_backward(std::vector<float>{1, 2}, a, b, d_a, d_b);
  CHECK(d_a == std::vector<float>{3, -8});  // d_y b
  CHECK(d_b == std::vector<float>{1, 4});   // d_y a
}

TEST_CASE("dropout keeps 1 - p of the elements, scaled by 1 / (1 - p), the same for a seed", "[kernels]") {
  // p = 0.5 over n = 100,000 elements: the kept fraction is binomial with standard deviation
  // sqrt(0.25 / n) = 0.0016; within 4 of those (0.0063) of 0.5 unless the draw is broken.
  const std::int64_t n = 100000;
  const DropoutOp op{0.5, n};
  const std::vector<float> x(n, 3.0f);
  std::vector<float> y(n), again(n);
  std::vector<std::uint8_t> mask(n), other_mask(n);
  cpu::dropout_forward(op, 42, x, y, mask);
  const double kept = static_cast<double>(std::count(mask.begin(), mask.end(), 1)) / static_cast<double>(n);
  CHECK(kept == Approx(0.5).margin(0.0063));
  for (std::int64_t i = 0; i < n; ++i) REQUIRE(y[i] == (mask[i] ? 6.0f : 0.0f));
  cpu::dropout_forward(op, 42, x, again, other_mask);
  CHECK(other_mask == mask);
  cpu::dropout_forward(op, 43, x, again, other_mask);
  CHECK(other_mask != mask);
  // p = 0 is the identity.
  const DropoutOp none{0.0, n};
  cpu::dropout_forward(none, 42, x, y, mask);
  CHECK(y == x);
}

TEST_CASE("a tensor of the wrong length is an internal error naming it", "[kernels]") {
  const std::vector<float> x{1, 2, 3};
  std::vector<float> y(2);
  CHECK_THROWS_WITH(cpu::gelu_forward(x, y), Catch::Contains("'y'") && Catch::Contains("expected 3"));
  const LinearOp op{2, 2, false};
  std::vector<float> out(2);
  CHECK_THROWS_WITH(cpu::linear_forward(op, 1, std::vector<float>{1, 2}, std::vector<float>{1, 2, 3}, {}, out),
                    Catch::Contains("'weight'"));
}
