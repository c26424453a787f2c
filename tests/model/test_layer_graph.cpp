// The layer graph trains: tiny-gpt's and a small Llama's full-model gradients against central
// finite differences of the loss, parameter counts against the specs, buffers and wiring.
#include "tests/model/graph_fixtures.hpp"

#include "core/counter_random.hpp"
#include "core/errors.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <set>
#include <sstream>

using namespace syncplan;
using syncplan::test::forward_loss;
using syncplan::test::shipped_model;
using syncplan::test::text_batch;

namespace {

// ---------------------------------------------------------------------------------------------
// Finite differences on the whole model
//
// numeric = (L(p + h) - L(p - h)) / 2h for one parameter p, L the mean cross-entropy of one fixed
// batch, the forward in fp32 and the mean summed in double from the per-token losses.
//
// Step h = 1e-3 and the check |analytic - numeric| <= 2e-4 + 2e-2 |numeric|:
//  * rounding: each per-token loss (~5.5) carries the rounding of some hundred fp32 operations on
//    its path, about 1e-6 relative, i.e. ~5e-6; the mean over T = 64 tokens of these (partly
//    independent) errors changes by ~1e-6 between the two evaluations, which contributes
//    1e-6 / (2h) = 5e-4 at worst and ~1e-4 typically to the quotient: the absolute term 2e-4
//    covers the typical case and the parameters checked are chosen where |gradient| >> 2e-4;
//  * truncation: h^2/6 |L'''| with parameters of size 0.02 and |L'''| ~ 1e2 on them gives ~2e-5,
//    and any curvature error is relative to the gradient: the 2 % term.
// The printed worst ratio (difference over tolerance) is the evidence; a planted 5 % error in
// one gradient is caught (the last test case), so the tolerance is tight enough to fail.
// ---------------------------------------------------------------------------------------------

constexpr float kStep = 1e-3f;
constexpr double kAbsoluteTolerance = 2e-4;
constexpr double kRelativeTolerance = 2e-2;

struct Probe {
  std::size_t layer = 0;
  std::size_t param = 0;
  std::int64_t element = 0;
  std::string why;  // what the probe checks
};

struct ProbeResult {
  Probe probe;
  double analytic = 0, numeric = 0;
  double ratio() const {  // > 1 outside the tolerance
    return std::abs(analytic - numeric) / (kAbsoluteTolerance + kRelativeTolerance * std::abs(numeric));
  }
};

// Per parameter tensor of every layer that owns one: the element of largest |gradient| among 256
// drawn at random (a strong signal), and one drawn at random (any value, zero included).
std::vector<Probe> sample_probes(cpu::CpuGraph& graph, std::uint64_t seed) {
  std::vector<Probe> probes;
  for (std::size_t i = 0; i < graph.layer_count(); ++i) {
    if (graph.tied(i)) continue;
    const std::vector<std::span<float>> grads = graph.layer_gradients(i);
    for (std::size_t p = 0; p < grads.size(); ++p) {
      const auto n = static_cast<std::int64_t>(grads[p].size());
      const std::uint64_t stream = splitmix64(seed + 1000 * i + p);
      std::int64_t best = 0;
      for (std::uint64_t draw = 0; draw < 256; ++draw) {
        const std::int64_t e = counter_index(stream, draw, n);
        if (std::abs(grads[p][e]) > std::abs(grads[p][best])) best = e;
      }
      probes.push_back({i, p, best, "largest sampled |gradient|"});
      probes.push_back({i, p, counter_index(stream, 999, n), "random element"});
    }
  }
  return probes;
}

// The analytic gradients of every probe (from one forward_backward) against central differences.
std::vector<ProbeResult> check_probes(cpu::CpuGraph& graph, const std::vector<Probe>& probes) {
  graph.forward_backward();
  std::vector<ProbeResult> results;
  for (const Probe& probe : probes) {
    ProbeResult result{probe, graph.layer_gradients(probe.layer)[probe.param][probe.element], 0};
    float& value = graph.layer_parameters(probe.layer)[probe.param][probe.element];
    const float original = value;
    value = original + kStep;
    const double plus = forward_loss(graph);
    value = original - kStep;
    const double minus = forward_loss(graph);
    value = original;
    // The step actually taken in fp32: (original + h) - (original - h) rounds.
    const double step = static_cast<double>(original + kStep) - static_cast<double>(original - kStep);
    result.numeric = (plus - minus) / step;
    results.push_back(result);
  }
  return results;
}

// CHECKs every probe, printing the worst one and any failures by layer, tensor and element.
void require_within_tolerance(const cpu::CpuGraph& graph, const std::vector<ProbeResult>& results) {
  const auto describe = [&](const ProbeResult& r) {
    std::ostringstream text;
    const GraphLayer& layer = graph.graph().layers[r.probe.layer];
    text << layer.name << "." << layer.params[r.probe.param].name << "[" << r.probe.element << "] (" << r.probe.why
         << "): analytic " << r.analytic << ", numeric " << r.numeric << ", ratio to tolerance " << r.ratio();
    return text.str();
  };
  REQUIRE(!results.empty());
  const auto worst = std::max_element(results.begin(), results.end(),
                                      [](const ProbeResult& a, const ProbeResult& b) { return a.ratio() < b.ratio(); });
  std::size_t strong = 0;
  for (const ProbeResult& r : results) strong += std::abs(r.numeric) > 20 * kAbsoluteTolerance;
  WARN(results.size() << " probes (" << strong << " with |gradient| > " << 20 * kAbsoluteTolerance
                      << "); worst: " << describe(*worst));
  for (const ProbeResult& r : results) {
    INFO(describe(r));
    CHECK(r.ratio() <= 1.0);
  }
}

cpu::CpuGraph graph_with_batch(const Model& model, std::int64_t batch, std::int64_t seq, std::uint64_t seed) {
  Workload workload;
  workload.batch = batch;
  workload.seq = seq;
  cpu::CpuGraph graph(model, workload);
  graph.initialize_parameters(seed);
  const test::Batch tokens = text_batch(batch, seq, graph.graph().vocab_size);
  graph.set_batch(tokens.ids, tokens.targets);
  return graph;
}

}  // namespace

TEST_CASE("tiny-gpt: full-model gradient against finite differences, every layer kind, tied wte", "[graph]") {
  const Model model = shipped_model("tiny-gpt");
  cpu::CpuGraph graph = graph_with_batch(model, 2, 32, 7);
  graph.forward_backward();
  std::vector<Probe> probes = sample_probes(graph, 3);
  // The tie: wte's gradient is the embedding's scatter plus lm_head's product. A row of a byte the
  // batch never holds (0x01) gets lm_head's part alone; a row of 'e' gets both.
  const test::Batch tokens = text_batch(2, 32, 256);
  REQUIRE(std::find(tokens.ids.begin(), tokens.ids.end(), 1) == tokens.ids.end());
  REQUIRE(std::find(tokens.ids.begin(), tokens.ids.end(), 'e') != tokens.ids.end());
  REQUIRE(graph.graph().layers[0].name == "transformer.wte");
  for (std::int64_t column : {0, 17, 100}) {
    probes.push_back({0, 0, 1 * 128 + column, "wte row of an absent byte: lm_head's part alone"});
    probes.push_back({0, 0, 'e' * 128 + column, "wte row of 'e': embedding and lm_head"});
  }
  // Every kind of parameterized layer is probed: embeddings, norms, Conv1D weights and biases.
  std::set<std::string> kinds;
  for (const Probe& probe : probes) {
    const GraphLayer& layer = graph.graph().layers[probe.layer];
    kinds.insert(layer.name.substr(layer.name.rfind('.') + 1) + "." + layer.params[probe.param].name);
  }
  CHECK(kinds == std::set<std::string>{"wte.weight", "wpe.weight", "ln_1.weight", "ln_1.bias", "c_attn.weight",
                                       "c_attn.bias", "c_proj.weight", "c_proj.bias", "ln_2.weight", "ln_2.bias",
                                       "c_fc.weight", "c_fc.bias", "ln_f.weight", "ln_f.bias"});
  require_within_tolerance(graph, check_probes(graph, probes));
}

TEST_CASE("small Llama (grouped-query attention, rotary, SwiGLU): gradient against finite differences", "[graph]") {
  cpu::CpuGraph graph = graph_with_batch(test::small_llama(), 2, 16, 11);
  graph.forward_backward();
  require_within_tolerance(graph, check_probes(graph, sample_probes(graph, 5)));
}

TEST_CASE("small GPT-2 with dropout 0.1 and untied lm_head: gradient against finite differences", "[graph]") {
  // The masks depend on the dropout seed only, so every evaluation of the loss drops the same
  // elements and the loss is a smooth function of the parameters.
  cpu::CpuGraph graph = graph_with_batch(test::small_gpt2_dropout(), 2, 16, 13);
  graph.set_dropout_seed(99);
  graph.forward_backward();
  require_within_tolerance(graph, check_probes(graph, sample_probes(graph, 9)));
}

TEST_CASE("a planted 5 % gradient error fails the finite-difference check", "[graph]") {
  cpu::CpuGraph graph = graph_with_batch(shipped_model("tiny-gpt"), 2, 32, 7);
  graph.forward_backward();
  std::vector<Probe> probes = sample_probes(graph, 3);
  std::vector<ProbeResult> results = check_probes(graph, probes);
  // Scale the strong probes' analytic values by 1.05: each must now fail.
  std::size_t strong = 0, caught = 0;
  for (ProbeResult& r : results) {
    if (std::abs(r.numeric) < 50 * kAbsoluteTolerance) continue;
    ++strong;
    r.analytic = r.numeric * 1.05;
    caught += r.ratio() > 1.0;
  }
  CHECK(strong >= 10);
  CHECK(caught == strong);
}

TEST_CASE("the graph's parameters are the spec's: count, layout, ties, per-layer spans", "[graph]") {
  for (const Model& model : {shipped_model("tiny-gpt"), shipped_model("gpt2"), shipped_model("llama-2-7b"),
                             test::small_llama()}) {
    INFO(model.name);
    const LayerGraph graph = build_layer_graph(model, Workload{1, 8, Dtype::kFp32});
    CHECK(graph.parameter_elements == model.param_count());
    REQUIRE(graph.layers.size() == model.layers.size());
    std::int64_t owned = 0, next_offset = 0;
    for (std::size_t i = 0; i < graph.layers.size(); ++i) {
      const GraphLayer& layer = graph.layers[i];
      CHECK(layer.name == model.layers[i].name);
      CHECK(layer.param_count == model.layers[i].param_count());
      CHECK(layer.tied == model.layers[i].tied_to.has_value());
      owned += layer.param_count;
      if (layer.tied) continue;
      // Owned tensors are contiguous in layer order: a bucket of layers is one range of the arena.
      for (const GraphParam& param : layer.params) {
        CHECK(param.value.offset == next_offset);
        next_offset += param.value.elements;
      }
    }
    CHECK(owned == model.param_count());
    CHECK(next_offset == graph.parameter_elements);
  }
  // tiny-gpt: 834,304 parameters (docs/models.md section 1); lm_head computes with wte's table.
  const Model tiny = shipped_model("tiny-gpt");
  cpu::CpuGraph graph(tiny, Workload{1, 8, Dtype::kFp32});
  CHECK(graph.parameters().size() == 834'304);
  const std::size_t head = graph.layer_count() - 1;
  CHECK(graph.tied(head));
  CHECK(graph.param_count(head) == 0);
  REQUIRE(graph.layer_parameters(head).size() == 1);
  CHECK(graph.layer_parameters(head)[0].data() == graph.layer_parameters(0)[0].data());
  CHECK(graph.layer_gradients(head)[0].data() == graph.layer_gradients(0)[0].data());
  CHECK(graph.layer_parameters(head)[0].size() == 256 * 128);
}

TEST_CASE("initialization: GPT-2's scheme from the seed, deterministic", "[graph]") {
  const Model tiny = shipped_model("tiny-gpt");
  cpu::CpuGraph a(tiny, Workload{1, 8, Dtype::kFp32}), b(tiny, Workload{2, 16, Dtype::kFp32});
  a.initialize_parameters(5);
  b.initialize_parameters(5);
  CHECK(std::equal(a.parameters().begin(), a.parameters().end(), b.parameters().begin()));
  const auto stats = [](std::span<const float> values) {
    double sum = 0, squares = 0;
    for (const float v : values) {
      sum += v;
      squares += static_cast<double>(v) * v;
    }
    const double n = static_cast<double>(values.size()), mean = sum / n;
    return std::pair{mean, std::sqrt(squares / n - mean * mean)};
  };
  for (std::size_t i = 0; i < a.layer_count(); ++i) {
    const GraphLayer& layer = a.graph().layers[i];
    if (layer.tied) continue;
    for (std::size_t p = 0; p < layer.params.size(); ++p) {
      INFO(layer.name << "." << layer.params[p].name);
      const std::span<const float> values = a.layer_parameters(i)[p];
      const auto [mean, sd] = stats(values);
      const bool norm = layer.name.find("ln_") != std::string::npos;
      if (layer.params[p].name == "bias") {
        CHECK(sd == 0);
        CHECK(mean == 0);
      } else if (norm) {
        CHECK(sd == 0);
        CHECK(mean == 1);
      } else {
        // normal(0, s): s = 0.02, or 0.02 / sqrt(2 * 4 blocks) = 0.00707 for the c_proj weights.
        // For n >= 8,192 draws (wpe: 64 x 128) the sample sd's relative error is ~1/sqrt(2n) <=
        // 0.8 %, so within 3 % (4 of those); the mean's sd is s / sqrt(n) <= 0.011 s, so within 0.05 s.
        const bool residual = layer.name.ends_with(".c_proj");
        const double s = residual ? 0.02 / std::sqrt(8.0) : 0.02;
        CHECK(values.size() >= 8192);
        CHECK(sd == Approx(s).epsilon(0.03));
        CHECK(std::abs(mean) < 0.05 * s);
      }
    }
  }
  cpu::CpuGraph c(tiny, Workload{1, 8, Dtype::kFp32});
  c.initialize_parameters(6);
  CHECK_FALSE(std::equal(a.parameters().begin(), a.parameters().end(), c.parameters().begin()));
}

TEST_CASE("the start loss is ln(vocab), as the initialization implies", "[graph]") {
  // Logits z = ln_f(x) wte^T: ln_f's output has unit variance per token (weight 1, bias 0) and wte
  // entries are normal(0, 0.02), so each logit is ~normal(0, sigma^2), sigma^2 = d 0.02^2 = 128 *
  // 4e-4 = 0.0512. For small iid logits E[logsumexp(z)] = ln V + sigma^2 / 2 and E[z_target] = 0, so
  // the expected loss is ln 256 + 0.0256 = 5.5452 + 0.0256 = 5.5708. 64 tokens' losses have sd
  // ~sigma / sqrt(64) = 0.03 around it: the loss lies in [ln V - 0.1, ln V + 0.15].
  cpu::CpuGraph graph = graph_with_batch(shipped_model("tiny-gpt"), 2, 32, 7);
  const double loss = forward_loss(graph);
  WARN("tiny-gpt start loss " << loss << " (ln 256 = " << std::log(256.0) << ")");
  CHECK(loss > std::log(256.0) - 0.1);
  CHECK(loss < std::log(256.0) + 0.15);
}

TEST_CASE("the graph refuses bad batches and bf16 with one-line errors", "[graph]") {
  const Model tiny = shipped_model("tiny-gpt");
  cpu::CpuGraph graph(tiny, Workload{1, 4, Dtype::kFp32});
  const std::vector<std::int64_t> ok{1, 2, 3, 4}, bad_id{1, 2, 256, 4}, short_ids{1, 2, 3};
  CHECK_NOTHROW(graph.set_batch(ok, std::vector<std::int64_t>{2, 3, 4, -100}));
  CHECK_THROWS_WITH(graph.set_batch(bad_id, ok), Catch::Contains("token 2") && Catch::Contains("256"));
  CHECK_THROWS_WITH(graph.set_batch(short_ids, ok), Catch::Contains("3 tokens, expected 4"));
  CHECK_THROWS_AS(graph.set_batch(ok, std::vector<std::int64_t>{1, 2, 3, 300}), InputError);
  CHECK_THROWS_WITH(cpu::CpuGraph(tiny, Workload{1, 4, Dtype::kBf16}), Catch::StartsWith("dtype bf16"));
  CHECK_THROWS_WITH(cpu::CpuGraph(tiny, Workload{1, 65, Dtype::kFp32}), Catch::Contains("max_position_embeddings"));
}

TEST_CASE("ignored targets count for nothing, and the forward is deterministic", "[graph]") {
  cpu::CpuGraph graph = graph_with_batch(shipped_model("tiny-gpt"), 1, 8, 7);
  const double full = forward_loss(graph);
  CHECK(forward_loss(graph) == full);  // same buffers, same inputs, same result
  test::Batch tokens = text_batch(1, 8, 256);
  std::fill(tokens.targets.begin(), tokens.targets.end(), -100);
  graph.set_batch(tokens.ids, tokens.targets);
  CHECK(forward_loss(graph) == 0.0);
  // No counted target: the logits' gradient is 0, and so is every gradient before it.
  graph.forward_backward();
  const std::span<const float> grads = graph.gradients();
  CHECK(std::all_of(grads.begin(), grads.end(), [](float g) { return g == 0.0f; }));
}
