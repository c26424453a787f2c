// Measured profiles: the statistics over repeats, the ceiling check, and the CPU backend on
// tiny-gpt (docs/profiler.md sections 3-5).
#include "core/errors.hpp"
#include "profiler/cpu_profile.hpp"
#include "profiler/measurement.hpp"
#include "profiler/model_profile.hpp"
#include "model/model_spec.hpp"

#include <catch2/catch.hpp>

#include <chrono>
#include <sstream>

using namespace syncplan;

namespace {

Model tiny_gpt() {
  return expand_model(read_model_spec_file(std::string(SYNCPLAN_DATA_DIR) + "/models/tiny-gpt.json"));
}

Workload workload(std::int64_t batch, std::int64_t seq) {
  Workload w;
  w.batch = batch;
  w.seq = seq;
  return w;
}

}  // namespace

TEST_CASE("median and coefficient of variation by hand", "[measurement]") {
  CHECK(median({3, 1, 2}) == 2);
  CHECK(median({4, 1, 3, 2}) == 2.5);  // (2 + 3) / 2
  CHECK(median({7}) == 7);
  // [1, 2, 3]: mean 2, sample variance (1 + 0 + 1) / (3 - 1) = 1, so CV = 1 / 2.
  CHECK(coefficient_of_variation({1, 2, 3}).value() == Approx(0.5));
  // [2, 2, 2, 2]: no spread.
  CHECK(coefficient_of_variation({2, 2, 2, 2}).value() == 0);
  CHECK_FALSE(coefficient_of_variation({5}).has_value());
  CHECK_FALSE(coefficient_of_variation({0, 0}).has_value());
}

TEST_CASE("summary: medians, step spread and FLOP/s, and the ceiling check naming the layer", "[measurement]") {
  const Model model = tiny_gpt();
  const Workload w = workload(1, 8);
  Measurement m;
  m.source = "measured:test";
  // Every layer takes 1, 2, 3 ms forward and 2 ms backward in the three repeats, except
  // transformer.drop (p = 0, no kernel): 0.
  for (const ModelLayer& layer : model.layers) {
    const bool idle = layer.name == "transformer.drop";
    m.layers.push_back(idle ? LayerSamples{{0, 0, 0}, {0, 0, 0}, {}}
                            : LayerSamples{{1e-3, 2e-3, 3e-3}, {2e-3, 2e-3, 2e-3}, {}});
  }
  const MeasurementSummary summary = summarize_measurement(model, w, m);
  // wte, wpe, drop, h.0.ln_1, attn.c_attn, attn.attn_dropout, attn.c_proj, attn.resid_dropout, ln_2, mlp.c_fc
  REQUIRE(summary.layers[9].name == "transformer.h.0.mlp.c_fc");
  const MeasuredLayer& c_fc = summary.layers[9];
  CHECK(c_fc.forward_s == 2e-3);
  CHECK(c_fc.forward_cv.value() == Approx(0.5));
  CHECK(c_fc.backward_cv.value() == 0);
  // c_fc: 128 -> 512 with bias at T = 8: forward 2 * 8 * 128 * 512 + 8 * 512 = 1,052,672 FLOPs,
  // at the median 2 ms: 526,336,000 FLOP/s.
  CHECK(c_fc.forward_flops == 1052672);
  CHECK(c_fc.forward_flops_per_s.value() == Approx(526336000.0));
  CHECK_FALSE(summary.layers[2].forward_flops_per_s.has_value());  // transformer.drop: 0 s
  // 44 busy layers: steps of 44 * (1 + 2), 44 * (2 + 2), 44 * (3 + 2) ms = 132, 176, 220 ms:
  // mean 176, sample sd 44, CV 0.25.
  CHECK(summary.step_cv.value() == Approx(0.25));
  CHECK(summary.step_forward_s == Approx(44 * 2e-3));
  // The profile's spreads (docs/formats.md, "Compute spread"): c_fc's forward repeats 1, 2, 3 ms
  // (h = 2 p): min 1, p10 at h = 0.2 1.2, p90 at h = 1.8 2.8, max 3 ms; its backward 2 ms throughout.
  CHECK(c_fc.forward_spread.samples == 3);
  CHECK(c_fc.forward_spread.min_s == 1e-3);
  CHECK(c_fc.forward_spread.p10_s == Approx(1.2e-3));
  CHECK(c_fc.forward_spread.p90_s == Approx(2.8e-3));
  CHECK(c_fc.forward_spread.max_s == 3e-3);
  CHECK((c_fc.backward_spread.min_s == 2e-3 && c_fc.backward_spread.max_s == 2e-3));
  CHECK_FALSE(c_fc.update_spread.has_value());  // no update timed
  // Layer correlation (docs/profiler.md section 5): 44 forwards of sample sd 1 ms, backwards 0;
  // the step's sd is 44 ms. (44^2 - 44) / ((44 x 1)^2 - 44) = 1: every layer moved together.
  CHECK(summary.layer_correlation.value() == Approx(1));
  // Half the layers 1, 2, 3 ms and half 3, 2, 1 ms: the step never varies, (0 - 44) / (44^2 - 44)
  // is negative, clamped to 0.
  Measurement opposed = m;
  int busy = 0;
  for (std::size_t i = 0; i < model.layers.size(); ++i)
    if (model.layers[i].name != "transformer.drop" && busy++ % 2 == 1) opposed.layers[i].forward_s = {3e-3, 2e-3, 1e-3};
  REQUIRE(busy == 44);
  CHECK(summarize_measurement(model, w, opposed).layer_correlation.value() == 0);

  // The check fails a layer above ceiling x kGemmCeilingMargin (1.5). A ceiling of 3.5e8 puts
  // the limit at 5.25e8, just below c_fc's forward 5.26336e8: c_fc is flagged, while mlp.c_proj's
  // forward (512 -> 128: 2 * 8 * 512 * 128 + 8 * 128 = 1,049,600 FLOPs in 2 ms, 5.248e8 FLOP/s) is
  // not (nor any other forward): the four blocks' c_fc alone among the forwards, named first.
  CHECK(kGemmCeilingMargin == 1.5);
  const auto violations = layers_above_ceiling(summary, 3.5e8);
  std::vector<std::string> forwards;
  for (const CeilingViolation& v : violations)
    if (v.pass == "forward") forwards.push_back(v.layer);
  CHECK(forwards == std::vector<std::string>{c_fc.name, "transformer.h.1.mlp.c_fc", "transformer.h.2.mlp.c_fc",
                                             "transformer.h.3.mlp.c_fc"});
  // At a ceiling of 5e8 (the limit 7.5e8), c_fc's 5.26e8 is inside the margin: not flagged.
  for (const CeilingViolation& v : layers_above_ceiling(summary, 5e8)) CHECK(v.pass == "backward");
  CHECK(layers_above_ceiling(summary, 1e30).empty());

  const Json report = measurement_report_json(model, w, "cpu", TimingOptions{}, m, summary);
  CHECK(report["format"] == kProfileReportFormat);
  CHECK(report["layers"].size() == model.layers.size());
  CHECK(report["layers"][2]["forward_cv"].is_null());  // no spread without time
  CHECK(report["gemm_ceiling_flops_per_s"].is_null());
  CHECK(report["step"]["layer_correlation"].get<double>() == Approx(1));
}

TEST_CASE("the cpu backend times tiny-gpt: every busy layer > 0, repeatable", "[measurement][cpu_profile]") {
  const Model model = tiny_gpt();
  TimingOptions options;
  options.warmup_steps = 1;
  options.repeats = 5;
  const auto start = std::chrono::steady_clock::now();
  const Measurement m = measure_cpu(model, workload(2, 32), options);
  const double elapsed_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  REQUIRE(m.layers.size() == model.layers.size());
  CHECK(m.source == "measured:cpu");
  for (std::size_t i = 0; i < model.layers.size(); ++i) {
    INFO(model.layers[i].name);
    REQUIRE(m.layers[i].forward_s.size() == 5);
    const StepWork work = layer_work(model.layers[i], workload(2, 32));
    const bool busy = work.forward.flops() + work.forward.bytes > 0;
    CHECK((median(m.layers[i].forward_s) > 0) == busy);
    CHECK((median(m.layers[i].backward_s) > 0) == busy);
  }
  const MeasurementSummary summary = summarize_measurement(model, workload(2, 32), m);
  std::ostringstream printed;
  print_measurement_summary(printed, summary, m);
  WARN("tiny-gpt, batch 2 x seq 32, fp32, 1 warm-up + 5 repeats in " << elapsed_s << " s: step forward "
       << summary.step_forward_s << " s, backward " << summary.step_backward_s << " s; " << printed.str());
  CHECK(summary.step_cv.has_value());
}

TEST_CASE("the cpu profile's update_s: AdamW's step shared by parameter count, null for the estimate", "[measurement][cpu_profile]") {
  // The cpu backend times the trainer's one AdamW step over the whole arena and gives each layer
  // u x p_i / P (p_i its own parameters, P = 834,304 for tiny-gpt): so update_s > 0 exactly on the
  // layers with parameters of their own (lm_head is tied to wte and has none; dropouts and the
  // activations none), update_s / p_i is one number for every such layer, and the layers' sum
  // is the step u itself.
  ModelProfileRequest request;
  request.spec_path = std::string(SYNCPLAN_DATA_DIR) + "/models/tiny-gpt.json";
  request.gpu_catalog_path = std::string(SYNCPLAN_DATA_DIR) + "/gpus.json";
  request.device = "cpu";
  request.batch = 2;
  request.seq = 16;
  request.warmup = 1;
  request.repeats = 3;
  const Model model = tiny_gpt();
  const Profile profile = make_model_profile(request).profile;
  REQUIRE(profile.layers.size() == model.layers.size());
  double per_parameter_s = 0, total_s = 0;
  int with_parameters = 0;
  for (std::size_t i = 0; i < profile.layers.size(); ++i) {
    INFO(profile.layers[i].name);
    REQUIRE(profile.layers[i].update_s.has_value());
    const double u = *profile.layers[i].update_s;
    total_s += u;
    if (model.layers[i].param_count() == 0) {
      CHECK(u == 0);
      continue;
    }
    ++with_parameters;
    CHECK(u > 0);
    const double share = u / static_cast<double>(model.layers[i].param_count());
    if (per_parameter_s == 0) per_parameter_s = share;
    CHECK(share == Approx(per_parameter_s).epsilon(1e-9));
  }
  CHECK(with_parameters > 10);  // wte, wpe, and per block ln_1, c_attn, c_proj, ln_2, c_fc, mlp c_proj; ln_f
  CHECK(total_s == Approx(per_parameter_s * static_cast<double>(model.param_count())).epsilon(1e-9));
  WARN("tiny-gpt's AdamW step in the cpu profile: " << total_s << " s for " << model.param_count() << " parameters");

  request.device = "estimate";  // no optimizer in the roofline: null, not 0 (SPEC section 3)
  request.gpu = "H100-SXM";
  for (const LayerProfile& layer : make_model_profile(request).profile.layers) CHECK_FALSE(layer.update_s.has_value());
}

TEST_CASE("the cpu backend times a Llama through its layer graph: the rotary table has no backward", "[measurement][cpu_profile]") {
  // A small Llama (grouped-query attention): every layer computes both ways except
  // model.rotary_emb, whose cos/sin tables depend on no parameter (forward only, backward 0 exactly).
  const Json spec = Json::parse(R"({"format": "syncplan.model/v1", "name": "small-llama", "architecture": "llama",
    "vocab_size": 64, "max_position_embeddings": 32, "hidden_size": 32, "num_hidden_layers": 2,
    "num_attention_heads": 4, "num_key_value_heads": 2, "intermediate_size": 48, "tie_word_embeddings": false,
    "norm_eps": 1e-5, "rope_theta": 10000.0})");
  const Model model = expand_model(model_spec_from_json(spec, "small-llama"));
  TimingOptions options;
  options.warmup_steps = 1;
  options.repeats = 3;
  const Measurement m = measure_cpu(model, workload(2, 16), options);
  REQUIRE(m.layers.size() == model.layers.size());
  for (std::size_t i = 0; i < model.layers.size(); ++i) {
    INFO(model.layers[i].name);
    const bool rotary = model.layers[i].name == "model.rotary_emb";
    CHECK(median(m.layers[i].forward_s) > 0);
    CHECK((median(m.layers[i].backward_s) == 0) == rotary);
  }
}

TEST_CASE("the cpu backend refuses bf16 and buffers beyond memory", "[measurement][cpu_profile]") {
  Workload bf16 = workload(1, 8);
  bf16.dtype = Dtype::kBf16;
  CHECK_THROWS_AS(measure_cpu(tiny_gpt(), bf16, TimingOptions{}), InputError);
  CHECK_THROWS_WITH(measure_cpu(tiny_gpt(), bf16, TimingOptions{}), Catch::StartsWith("dtype bf16"));
  // A made-up model whose embedding alone is 2^24 x 2^17 floats (8 TiB): refused before allocating.
  ModelSpec huge;
  huge.name = "huge";
  huge.vocab_size = std::int64_t{1} << 24;
  huge.max_position_embeddings = 8;
  huge.hidden_size = std::int64_t{1} << 17;
  huge.num_hidden_layers = 1;
  huge.num_attention_heads = 1;
  huge.num_key_value_heads = 1;
  huge.intermediate_size = 8;
  huge.norm_eps = 1e-5;
  CHECK_THROWS_WITH(measure_cpu(expand_model(huge), workload(1, 8), TimingOptions{}),
                    Catch::Contains("GiB of buffers") && Catch::Contains("huge"));
}

TEST_CASE("the CPU GEMM ceiling is a positive rate", "[measurement][cpu_profile]") {
  std::string shape;
  const double flops_per_s = gemm_ceiling_cpu(tiny_gpt(), workload(1, 8), shape);
  // Any CPU of this century multiplies faster than 1e8 and slower than 1e13 FLOP/s on one core.
  CHECK(flops_per_s > 1e8);
  CHECK(flops_per_s < 1e13);
  CHECK_THAT(shape, Catch::Contains("fp32"));
  WARN("CPU GEMM ceiling: " << flops_per_s << " FLOP/s (" << shape << ")");
}
