// AdamW by hand on one parameter, its option checks, and training: 20 steps on one repeated batch
// halve tiny-gpt's loss.
#include "tests/model/graph_fixtures.hpp"

#include "core/errors.hpp"
#include "model/adamw.hpp"

#include <catch2/catch.hpp>

#include <cmath>

using namespace syncplan;

TEST_CASE("AdamW: two steps on one parameter by hand", "[adamw]") {
  // lr 0.1, betas 0.9 / 0.999, eps 1e-8, weight decay 0.01; p = 1, gradients 0.5 then -0.5.
  // Step 1: p = 1 (1 - 0.1 * 0.01) = 0.999; m = 0.05, v = 0.00025; m^ = 0.05 / 0.1 = 0.5,
  //   v^ = 0.00025 / 0.001 = 0.25; p = 0.999 - 0.1 * 0.5 / (0.5 + 1e-8) = 0.899 (to 2e-8).
  // Step 2: p = 0.899 * 0.999 = 0.898101; m = 0.9 * 0.05 - 0.05 = -0.005, v = 0.999 * 0.00025 +
  //   0.00025 = 0.00049975; m^ = -0.005 / 0.19 = -0.0263158, v^ = 0.00049975 / 0.001999 = 0.25;
  //   p = 0.898101 + 0.1 * 0.0263158 / 0.5 = 0.903364.
  AdamWOptions options;
  options.learning_rate = 0.1;
  AdamW adamw(1, options);
  std::vector<float> p{1.0f};
  adamw.step(p, std::vector<float>{0.5f});
  CHECK(adamw.step_count() == 1);
  CHECK(p[0] == Approx(0.899).margin(1e-6));
  adamw.step(p, std::vector<float>{-0.5f});
  CHECK(adamw.step_count() == 2);
  CHECK(p[0] == Approx(0.898101 + 0.1 * (0.005 / 0.19) / 0.5).margin(1e-6));
}

TEST_CASE("AdamW: PyTorch defaults, a zero gradient only decays, bad options refused", "[adamw]") {
  const AdamWOptions defaults;
  CHECK(defaults.learning_rate == 1e-3);
  CHECK(defaults.beta1 == 0.9);
  CHECK(defaults.beta2 == 0.999);
  CHECK(defaults.eps == 1e-8);
  CHECK(defaults.weight_decay == 0.01);
  // g = 0: m = v = 0, so only the decay acts: p (1 - 1e-3 * 0.01) per step; 3 steps: (1 - 1e-5)^3.
  AdamW adamw(2);
  std::vector<float> p{2.0f, -4.0f};
  for (int i = 0; i < 3; ++i) adamw.step(p, std::vector<float>{0.0f, 0.0f});
  CHECK(p[0] == Approx(2.0 * std::pow(1 - 1e-5, 3)).epsilon(1e-7));
  CHECK(p[1] == Approx(-4.0 * std::pow(1 - 1e-5, 3)).epsilon(1e-7));
  CHECK(adamw.step_count() == 3);
  AdamWOptions bad;
  bad.beta1 = 1.0;
  CHECK_THROWS_WITH(AdamW(1, bad), Catch::Contains("beta1"));
  bad = AdamWOptions{};
  bad.learning_rate = 0;
  CHECK_THROWS_AS(AdamW(1, bad), InputError);
  bad.learning_rate = kMaxLearningRate;  // the bound is exclusive
  CHECK_THROWS_WITH(AdamW(1, bad), Catch::Contains("learning_rate"));
  bad.learning_rate = 1e20;
  CHECK_THROWS_WITH(AdamW(1, bad), Catch::Contains("learning_rate"));
  bad = AdamWOptions{};
  bad.weight_decay = -1;
  CHECK_THROWS_WITH(AdamW(1, bad), Catch::Contains("weight_decay"));
}

TEST_CASE("20 AdamW steps on one repeated batch lower tiny-gpt's loss by more than half", "[adamw][graph]") {
  // One batch of 2 x 32 bytes, learned by heart with torch.optim.AdamW's defaults (lr 1e-3): the
  // loss starts at ln 256 = 5.55 (the initialization's, checked in test_layer_graph.cpp) and must
  // end below half of that. Adam moves every weight by about lr per step whatever its gradient's
  // size, ~0.02 in 20 steps, as large as the weights themselves (std 0.02): enough to memorize 64
  // tokens, not to diverge.
  Workload workload;
  workload.batch = 2;
  workload.seq = 32;
  cpu::CpuGraph graph(test::shipped_model("tiny-gpt"), workload);
  graph.initialize_parameters(7);
  const test::Batch tokens = test::text_batch(2, 32, 256);
  graph.set_batch(tokens.ids, tokens.targets);
  AdamW adamw(static_cast<std::int64_t>(graph.parameters().size()));
  std::vector<double> losses;
  for (int step = 0; step < 20; ++step) {
    losses.push_back(graph.forward_backward());
    adamw.step(graph.parameters(), graph.gradients());
  }
  const double final_loss = test::forward_loss(graph);
  WARN("tiny-gpt losses: first " << losses.front() << ", step 10 " << losses[10] << ", after 20 steps " << final_loss);
  CHECK(adamw.step_count() == 20);
  CHECK(losses.front() == Approx(std::log(256.0)).margin(0.15));
  CHECK(final_loss < losses.front() / 2);
}
