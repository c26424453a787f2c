// The graph computes GPT-2 and Llama: its loss against a naive double-precision forward pass
// written from Hugging Face's modeling code (GPT2LMHeadModel, LlamaForCausalLM), on random
// parameters large enough that a wrong wiring (q and k swapped, a missing residual, the wrong
// weight layout) moves the loss by far more than the tolerance.
#include "tests/model/graph_fixtures.hpp"

#include "core/counter_random.hpp"

#include <catch2/catch.hpp>

#include <cmath>
#include <map>
#include <numbers>

using namespace syncplan;

namespace {

using Matrix = std::vector<std::vector<double>>;  // [rows][cols]

// The parameters of a graph by "layer.tensor" name, as doubles.
class Params {
 public:
  explicit Params(cpu::CpuGraph& graph) {
    for (std::size_t i = 0; i < graph.layer_count(); ++i) {
      const GraphLayer& layer = graph.graph().layers[i];
      const std::vector<std::span<float>> spans = graph.layer_parameters(i);
      for (std::size_t p = 0; p < spans.size(); ++p)
        values_[layer.name + "." + layer.params[p].name] = std::vector<double>(spans[p].begin(), spans[p].end());
    }
  }
  const std::vector<double>& operator[](const std::string& name) const { return values_.at(name); }

 private:
  std::map<std::string, std::vector<double>> values_;
};

// x [T, in] times a weight: Conv1D's [in, out] (x W) or nn.Linear's [out, in] (x W^T), plus bias.
Matrix project(const Matrix& x, const std::vector<double>& w, std::size_t out, bool out_in,
               const std::vector<double>* bias = nullptr) {
  const std::size_t in = x[0].size();
  Matrix y(x.size(), std::vector<double>(out, 0.0));
  for (std::size_t t = 0; t < x.size(); ++t)
    for (std::size_t o = 0; o < out; ++o) {
      double sum = bias ? (*bias)[o] : 0.0;
      for (std::size_t i = 0; i < in; ++i) sum += x[t][i] * (out_in ? w[o * in + i] : w[i * out + o]);
      y[t][o] = sum;
    }
  return y;
}

Matrix layer_norm(const Matrix& x, const std::vector<double>& w, const std::vector<double>& b, double eps) {
  Matrix y = x;
  for (std::size_t t = 0; t < x.size(); ++t) {
    double mean = 0, var = 0;
    for (const double v : x[t]) mean += v;
    mean /= static_cast<double>(x[t].size());
    for (const double v : x[t]) var += (v - mean) * (v - mean);
    var /= static_cast<double>(x[t].size());
    for (std::size_t i = 0; i < x[t].size(); ++i) y[t][i] = (x[t][i] - mean) / std::sqrt(var + eps) * w[i] + b[i];
  }
  return y;
}

Matrix rms_norm(const Matrix& x, const std::vector<double>& w, double eps) {
  Matrix y = x;
  for (std::size_t t = 0; t < x.size(); ++t) {
    double squares = 0;
    for (const double v : x[t]) squares += v * v;
    const double r = 1.0 / std::sqrt(squares / static_cast<double>(x[t].size()) + eps);
    for (std::size_t i = 0; i < x[t].size(); ++i) y[t][i] = x[t][i] * r * w[i];
  }
  return y;
}

void add(Matrix& a, const Matrix& b) {
  for (std::size_t t = 0; t < a.size(); ++t)
    for (std::size_t i = 0; i < a[t].size(); ++i) a[t][i] += b[t][i];
}

// Causal attention of one sequence: q [S, h dh], k and v [S, g dh]; query head i reads key/value
// head i / (h / g) (repeat_kv). Returns [S, h dh].
Matrix attention(const Matrix& q, const Matrix& k, const Matrix& v, std::size_t heads, std::size_t kv_heads,
                 std::size_t dh) {
  const std::size_t S = q.size(), group = heads / kv_heads;
  Matrix out(S, std::vector<double>(heads * dh, 0.0));
  for (std::size_t h = 0; h < heads; ++h) {
    const std::size_t kv = h / group;
    for (std::size_t s = 0; s < S; ++s) {
      std::vector<double> scores(s + 1);
      double top = -1e300, total = 0;
      for (std::size_t r = 0; r <= s; ++r) {
        double dot = 0;
        for (std::size_t e = 0; e < dh; ++e) dot += q[s][h * dh + e] * k[r][kv * dh + e];
        scores[r] = dot / std::sqrt(static_cast<double>(dh));
        top = std::max(top, scores[r]);
      }
      for (double& score : scores) total += (score = std::exp(score - top));
      for (std::size_t r = 0; r <= s; ++r)
        for (std::size_t e = 0; e < dh; ++e) out[s][h * dh + e] += scores[r] / total * v[r][kv * dh + e];
    }
  }
  return out;
}

// Mean next-token cross-entropy of logits [T, V].
double cross_entropy(const Matrix& logits, const std::vector<std::int64_t>& targets) {
  double total = 0;
  for (std::size_t t = 0; t < logits.size(); ++t) {
    double top = -1e300, sum = 0;
    for (const double z : logits[t]) top = std::max(top, z);
    for (const double z : logits[t]) sum += std::exp(z - top);
    total += top + std::log(sum) - logits[t][static_cast<std::size_t>(targets[t])];
  }
  return total / static_cast<double>(logits.size());
}

Matrix rows_of(const std::vector<double>& table, std::size_t width, const std::vector<std::int64_t>& ids) {
  Matrix x;
  for (const std::int64_t id : ids)
    x.emplace_back(table.begin() + static_cast<std::ptrdiff_t>(id * width),
                   table.begin() + static_cast<std::ptrdiff_t>((id + 1) * width));
  return x;
}

// GPT2LMHeadModel.forward for one sequence (batch 1), dropout off.
double gpt2_loss(const Params& p, std::size_t blocks, std::size_t d, std::size_t heads, std::size_t inner,
                 std::size_t vocab, const test::Batch& batch) {
  Matrix h = rows_of(p["transformer.wte.weight"], d, batch.ids);
  for (std::size_t s = 0; s < h.size(); ++s)
    for (std::size_t i = 0; i < d; ++i) h[s][i] += p["transformer.wpe.weight"][s * d + i];
  for (std::size_t l = 0; l < blocks; ++l) {
    const std::string b = "transformer.h." + std::to_string(l) + ".";
    const Matrix a = layer_norm(h, p[b + "ln_1.weight"], p[b + "ln_1.bias"], 1e-5);
    const Matrix qkv = project(a, p[b + "attn.c_attn.weight"], 3 * d, false, &p[b + "attn.c_attn.bias"]);
    Matrix q, k, v;
    for (const auto& row : qkv) {
      q.emplace_back(row.begin(), row.begin() + static_cast<std::ptrdiff_t>(d));
      k.emplace_back(row.begin() + static_cast<std::ptrdiff_t>(d), row.begin() + static_cast<std::ptrdiff_t>(2 * d));
      v.emplace_back(row.begin() + static_cast<std::ptrdiff_t>(2 * d), row.end());
    }
    add(h, project(attention(q, k, v, heads, heads, d / heads), p[b + "attn.c_proj.weight"], d, false,
                   &p[b + "attn.c_proj.bias"]));
    Matrix f = project(layer_norm(h, p[b + "ln_2.weight"], p[b + "ln_2.bias"], 1e-5), p[b + "mlp.c_fc.weight"], inner,
                       false, &p[b + "mlp.c_fc.bias"]);
    for (auto& row : f)
      for (double& x : row)
        x = 0.5 * x * (1 + std::tanh(std::sqrt(2 / std::numbers::pi) * (x + 0.044715 * x * x * x)));
    add(h, project(f, p[b + "mlp.c_proj.weight"], d, false, &p[b + "mlp.c_proj.bias"]));
  }
  const Matrix out = layer_norm(h, p["transformer.ln_f.weight"], p["transformer.ln_f.bias"], 1e-5);
  return cross_entropy(project(out, p["lm_head.weight"], vocab, true), batch.targets);  // tied: wte [V, d]
}

// LlamaForCausalLM.forward for one sequence: rotary on q and k (rotate_half), grouped-query
// attention, SwiGLU.
double llama_loss(const Params& p, std::size_t blocks, std::size_t d, std::size_t heads, std::size_t kv_heads,
                  std::size_t inner, std::size_t vocab, double theta, const test::Batch& batch) {
  const std::size_t dh = d / heads, half = dh / 2;
  Matrix h = rows_of(p["model.embed_tokens.weight"], d, batch.ids);
  const auto rotate = [&](Matrix x, std::size_t n_heads) {
    for (std::size_t s = 0; s < x.size(); ++s)
      for (std::size_t hd = 0; hd < n_heads; ++hd)
        for (std::size_t i = 0; i < half; ++i) {
          const double angle = static_cast<double>(s) * std::pow(theta, -2.0 * static_cast<double>(i) / static_cast<double>(dh));
          const double x1 = x[s][hd * dh + i], x2 = x[s][hd * dh + half + i];
          x[s][hd * dh + i] = x1 * std::cos(angle) - x2 * std::sin(angle);
          x[s][hd * dh + half + i] = x2 * std::cos(angle) + x1 * std::sin(angle);
        }
    return x;
  };
  for (std::size_t l = 0; l < blocks; ++l) {
    const std::string b = "model.layers." + std::to_string(l) + ".";
    const Matrix a = rms_norm(h, p[b + "input_layernorm.weight"], 1e-5);
    const Matrix q = rotate(project(a, p[b + "self_attn.q_proj.weight"], heads * dh, true), heads);
    const Matrix k = rotate(project(a, p[b + "self_attn.k_proj.weight"], kv_heads * dh, true), kv_heads);
    const Matrix v = project(a, p[b + "self_attn.v_proj.weight"], kv_heads * dh, true);
    add(h, project(attention(q, k, v, heads, kv_heads, dh), p[b + "self_attn.o_proj.weight"], d, true));
    const Matrix m = rms_norm(h, p[b + "post_attention_layernorm.weight"], 1e-5);
    Matrix gate = project(m, p[b + "mlp.gate_proj.weight"], inner, true);
    const Matrix up = project(m, p[b + "mlp.up_proj.weight"], inner, true);
    for (std::size_t s = 0; s < gate.size(); ++s)
      for (std::size_t i = 0; i < inner; ++i) gate[s][i] = gate[s][i] / (1 + std::exp(-gate[s][i])) * up[s][i];
    add(h, project(gate, p[b + "mlp.down_proj.weight"], d, true));
  }
  return cross_entropy(project(rms_norm(h, p["model.norm.weight"], 1e-5), p["lm_head.weight"], vocab, true),
                       batch.targets);
}

// Every parameter uniform in [-0.3, 0.3), norm weights around 1 (1 + that), biases too: logits of
// order 1, so the loss depends strongly on every path.
void randomize(cpu::CpuGraph& graph, std::uint64_t seed) {
  for (std::size_t i = 0; i < graph.layer_count(); ++i) {
    if (graph.tied(i)) continue;
    const GraphLayer& layer = graph.graph().layers[i];
    const std::vector<std::span<float>> spans = graph.layer_parameters(i);
    for (std::size_t p = 0; p < spans.size(); ++p) {
      const bool norm_weight = layer.params[p].init == ParamInit::kOnes;
      for (std::size_t e = 0; e < spans[p].size(); ++e)
        spans[p][e] = (norm_weight ? 1.0f : 0.0f) + 0.3f * counter_signed_uniform(splitmix64(seed + 97 * i + p), e);
    }
  }
}

// fp32 against double: the loss (~5) carries the rounding of a few hundred fp32 operations per
// token, about 1e-6 relative each, so |difference| < 1e-4 is 20x or more above that, while a
// wiring error moves the loss by O(0.1) at these parameter sizes.
constexpr double kLossTolerance = 1e-4;

}  // namespace

TEST_CASE("tiny-gpt's graph loss equals a naive double forward of GPT2LMHeadModel", "[graph][reference]") {
  Workload workload;
  workload.seq = 12;
  cpu::CpuGraph graph(test::shipped_model("tiny-gpt"), workload);
  randomize(graph, 21);
  const test::Batch batch = test::text_batch(1, 12, 256);
  graph.set_batch(batch.ids, batch.targets);
  const double loss = test::forward_loss(graph);
  const double reference = gpt2_loss(Params(graph), 4, 128, 4, 512, 256, batch);
  WARN("tiny-gpt, random parameters: graph loss " << loss << ", reference " << reference);
  CHECK(std::abs(loss - std::log(256.0)) > 0.1);  // far from the uniform prediction: paths matter
  CHECK(loss == Approx(reference).margin(kLossTolerance));
}

TEST_CASE("a small Llama's graph loss equals a naive double forward of LlamaForCausalLM", "[graph][reference]") {
  Workload workload;
  workload.seq = 12;
  cpu::CpuGraph graph(test::small_llama(), workload);
  randomize(graph, 22);
  const test::Batch batch = test::text_batch(1, 12, 64);
  graph.set_batch(batch.ids, batch.targets);
  const double loss = test::forward_loss(graph);
  const double reference = llama_loss(Params(graph), 2, 32, 4, 2, 48, 64, 10000.0, batch);
  WARN("small Llama, random parameters: graph loss " << loss << ", reference " << reference);
  CHECK(std::abs(loss - std::log(64.0)) > 0.1);
  CHECK(loss == Approx(reference).margin(kLossTolerance));
}
