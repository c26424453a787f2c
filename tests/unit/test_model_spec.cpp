// Model specs, their expansion into layers, the FLOP and byte accounting of every op kind and the
// roofline arithmetic, each against figures derived by hand in the comments (docs/models.md).
#include <catch2/catch.hpp>

#include "core/errors.hpp"
#include "model/model_spec.hpp"
#include "profiler/roofline.hpp"

#include <filesystem>
#include <map>
#include <string>

namespace syncplan {
namespace {

const std::filesystem::path kModelsDir = std::filesystem::path(SYNCPLAN_DATA_DIR) / "models";

Model shipped_model(const std::string& name) {
  return expand_model(read_model_spec_file((kModelsDir / (name + ".json")).string()));
}

Workload workload(std::int64_t batch, std::int64_t seq, Dtype dtype = Dtype::kFp32) {
  Workload w;
  w.batch = batch;
  w.seq = seq;
  w.dtype = dtype;
  return w;
}

void require_pass(const PassWork& pass, double matmul, double vector, double bytes) {
  CHECK(pass.matmul_flops == matmul);
  CHECK(pass.vector_flops == vector);
  CHECK(pass.bytes == bytes);
}

// op_work(op, w) must be exactly `forward` and `backward` ({matmul FLOPs, vector FLOPs, bytes}).
void require_work(const LayerOp& op, const PassWork& forward, const PassWork& backward,
                  const Workload& w = workload(2, 3)) {
  INFO(op_name(op));
  const StepWork work = op_work(op, w);
  require_pass(work.forward, forward.matmul_flops, forward.vector_flops, forward.bytes);
  require_pass(work.backward, backward.matmul_flops, backward.vector_flops, backward.bytes);
}

// ---------------------------------------------------------------------------------------------
// Op accounting on tiny shapes: B = 2, S = 3, so T = 6 tokens; fp32 (e = 4 bytes) unless said.
// ---------------------------------------------------------------------------------------------

TEST_CASE("linear: 2 T k n forward, twice that backward, bias and bytes by hand", "[model][ops]") {
  // k = 4, n = 5, bias. Forward: 2 * 6 * 4 * 5 = 240 matmul FLOPs, bias add 6 * 5 = 30;
  // bytes 4 (X 6*4 + W 4*5 + Y 6*5 + b 5) = 4 * 79 = 316.
  // Backward: dX and dW, 480; db 30; bytes 4 (2*24 + 2*30 + 2*20 + 5) = 4 * 153 = 612.
  require_work(LinearOp{4, 5, true}, {240, 30, 316}, {480, 30, 612});
  // No bias, bf16 (e = 2): bytes 2 (24 + 20 + 30) = 148 and 2 (48 + 60 + 40) = 296.
  require_work(LinearOp{4, 5, false}, {240, 0, 148}, {480, 0, 296}, workload(2, 3, Dtype::kBf16));
}

TEST_CASE("embeddings: token gather and scatter-add, position lookup and add", "[model][ops]") {
  // Token, V = 10, d = 4: forward reads 6 ids (8 B) and 6 rows, writes 6 rows: 48 + 4 * 48 = 240.
  // Backward adds 6 * 4 = 24 values into a dense 10 x 4 gradient: 48 + 4 (24 + 40) = 304.
  require_work(TokenEmbeddingOp{10, 4}, {0, 0, 240}, {0, 24, 304});
  // Position, P = 5, d = 4: forward adds 24 values; reads 3 position ids (24 B), 3 rows (12) and the
  // token embeddings (24), writes 24: 24 + 4 * 60 = 264. Backward sums 24 values into a dense
  // 5 x 4 gradient: 24 + 4 (24 + 20) = 200.
  require_work(PositionEmbeddingOp{5, 4}, {0, 24, 264}, {0, 24, 200});
}

TEST_CASE("norms: FLOPs per element and weight traffic by hand", "[model][ops]") {
  // LayerNorm d = 4, 24 elements: 7 * 24 = 168 and 13 * 24 = 312 FLOPs;
  // bytes 4 (2 * 24 + 2 * 4) = 224 and 4 (3 * 24 + 3 * 4) = 336.
  require_work(LayerNormOp{4, 1e-5}, {0, 168, 224}, {0, 312, 336});
  // RMSNorm d = 4: 4 * 24 = 96 and 9 * 24 = 216; bytes 4 (48 + 4) = 208 and 4 (72 + 8) = 320.
  require_work(RmsNormOp{4, 1e-5}, {0, 96, 208}, {0, 216, 320});
}

TEST_CASE("elementwise ops: GELU, SiLU, gated product, residual add, dropout", "[model][ops]") {
  // width 8: 48 elements; a tensor is 4 * 48 = 192 bytes.
  require_work(GeluOp{8}, {0, 432, 384}, {0, 864, 576});           // 9 and 18 per element; 2 and 3 tensors
  require_work(SiluOp{8}, {0, 192, 384}, {0, 384, 576});           // 4 and 8 per element
  require_work(GatedProductOp{8}, {0, 48, 576}, {0, 96, 960});     // 1 and 2; 3 and 5 tensors
  // width 4: 24 elements, 96 bytes a tensor.
  require_work(ResidualAddOp{4}, {0, 24, 288}, {0, 24, 288});      // 1 and 1; 3 and 3 tensors
  // Dropout p = 0.1: 2 FLOPs per element each way, 2 tensors plus a 1-byte mask per element:
  // 2 * 96 + 24 = 216. p = 0 is the identity: nothing.
  require_work(DropoutOp{0.1, 4}, {0, 48, 216}, {0, 48, 216});
  require_work(DropoutOp{0.0, 4}, {0, 0, 0}, {0, 0, 0});
}

TEST_CASE("rotary embeddings: table and rotation by hand", "[model][ops]") {
  // Rotation, 2 query heads, 1 key/value head, head_dim 4: E = 6 (2 + 1) 4 = 72 rotated values,
  // 3 FLOPs each = 216; bytes 4 (read and write 72, read cos and sin 2 * 6 * 4 = 48) = 768. The
  // backward rotates back: the same.
  require_work(RotaryApplyOp{{2, 1, 4}}, {0, 216, 768}, {0, 216, 768});
  // Table, head_dim 4: 6 * 4 / 2 = 12 products, cos and sin 48, scaling 48 = 108 FLOPs; reads 6
  // position ids (48 B), writes cos and sin: 4 * 48 = 192; 240 bytes. No backward.
  require_work(RotaryTableOp{4, 10000.0}, {0, 108, 240}, {0, 0, 0});
}

TEST_CASE("attention: scores and context by hand, grouped key/value heads", "[model][ops]") {
  // 2 query heads, 1 key/value head, head_dim 4: N = B h S^2 = 2 * 2 * 9 = 36 scores.
  // Scores forward: Q K^T 2 * 36 * 4 = 288; scale, mask, softmax (5) = 7 * 36 = 252;
  // bytes 4 (Q 6*2*4 = 48, K 6*1*4 = 24, P 36) = 432.
  // Backward: dQ and dK 576; softmax backward 4 and scale 1 per score: 180;
  // bytes 4 (dP and P 72, Q and K read and their gradients written 2 * 72) = 864.
  require_work(AttentionScoresOp{{2, 1, 4}}, {288, 252, 432}, {576, 180, 864});
  // Context with dropout 0.1: P V 288; dropout 2 * 36 = 72; bytes 4 (P 36, V 24, O 48) + mask 36 = 468.
  // Backward: dP and dV 576; dropout 72; bytes 4 (dP and P 72, dO 48, V and dV 48) + mask 36 = 708.
  require_work(AttentionContextOp{{2, 1, 4}, 0.1}, {288, 72, 468}, {576, 72, 708});
  // Without dropout: no mask, no dropout FLOPs: 4 * 108 = 432 and 4 * 168 = 672 bytes.
  require_work(AttentionContextOp{{2, 1, 4}, 0.0}, {288, 0, 432}, {576, 0, 672});
}

TEST_CASE("cross-entropy by hand", "[model][ops]") {
  // V = 10: 60 logits. Forward 4 per logit = 240; reads logits (240 B) and 6 labels (48 B) = 288.
  // Backward 3 per logit = 180; reads logits, writes their gradient (480 B) and the labels: 528.
  require_work(CrossEntropyOp{10}, {0, 240, 288}, {0, 180, 528});
}

TEST_CASE("op names and module kinds print as documented", "[model][ops]") {
  CHECK(std::string(op_name(LinearOp{})) == "linear");
  CHECK(std::string(op_name(AttentionScoresOp{})) == "attention_scores");
  CHECK(std::string(module_kind_name(ModuleKind::kConv1D)) == "Conv1D");
  CHECK(std::string(module_kind_name(ModuleKind::kRmsNorm)) == "LlamaRMSNorm");
  CHECK(std::string(dtype_name(Dtype::kBf16)) == "bf16");
  CHECK(dtype_size_bytes(Dtype::kFp32) == 4);
  CHECK(dtype_size_bytes(Dtype::kBf16) == 2);
}

// ---------------------------------------------------------------------------------------------
// Shipped specs: published parameter totals
// ---------------------------------------------------------------------------------------------

TEST_CASE("shipped specs add up to the published parameter counts", "[model][specs]") {
  // GPT-2 (tied lm_head counted once): per block ln_1 and ln_2 2 * 2d, c_attn 3d^2 + 3d, c_proj
  // d^2 + d, c_fc 4d^2 + 4d, mlp.c_proj 4d^2 + d: 12 d^2 + 13 d; plus wte V d, wpe P d, ln_f 2d.
  //   small  d  768, L 12: 12 * 7,087,872 + 38,597,376 + 786,432 + 1,536       =   124,439,808
  //   medium d 1024, L 24: 24 * 12,596,224 + 51,463,168 + 1,048,576 + 2,048    =   354,823,168
  //   large  d 1280, L 36: 36 * 19,677,440 + 64,328,960 + 1,310,720 + 2,560    =   774,030,080
  //   xl     d 1600, L 48: 48 * 30,740,800 + 80,411,200 + 1,638,400 + 3,200    = 1,557,611,200
  // Llama (untied): per block q, k, v, o 4 d^2, gate, up, down 3 d I, two RMSNorms 2d; plus
  // embed_tokens and lm_head 2 V d, norm d.
  //   Llama-2-7B  d 4096, I 11008, L 32, V 32000:
  //     32 * (67,108,864 + 135,266,304 + 8,192) + 262,144,000 + 4,096        = 6,738,415,616
  //   DreamDDP's 8 layers, d 512, I 11008, V 32000:
  //     8 * (1,048,576 + 16,908,288 + 1,024) + 32,768,000 + 512              =   176,431,616
  //   tiny-gpt d 128, L 4, V 256, P 64 (GPT-2 form):
  //     4 * (196,608 + 1,664) + 32,768 + 8,192 + 256                         =       834,304
  const std::map<std::string, std::int64_t> published = {
      {"gpt2", 124'439'808},          {"gpt2-medium", 354'823'168},    {"gpt2-large", 774'030'080},
      {"gpt2-xl", 1'557'611'200},     {"llama-2-7b", 6'738'415'616},   {"dreamddp-llama-8l", 176'431'616},
      {"tiny-gpt", 834'304}};
  for (const auto& [name, count] : published) {
    INFO("model " << name);
    CHECK(shipped_model(name).param_count() == count);
  }
  CHECK(known_model_names(kModelsDir).size() == published.size());
}

TEST_CASE("the closed forms agree with the layer-by-layer sums on odd shapes", "[model][specs]") {
  // An independent count: the formulas above for shapes no shipped spec has (GQA: k and v are
  // d x g dh; untied GPT-2 adds V d).
  const auto spec_json = [](const std::string& architecture, bool tied) {
    Json spec = {{"format", "syncplan.model/v1"}, {"name", "odd"}, {"architecture", architecture},
                 {"vocab_size", 37}, {"max_position_embeddings", 11}, {"hidden_size", 24},
                 {"num_hidden_layers", 3}, {"num_attention_heads", 6}, {"intermediate_size", 40},
                 {"tie_word_embeddings", tied}, {"norm_eps", 1e-6}};
    if (architecture == "llama") {
      spec["num_key_value_heads"] = 2;
      spec["rope_theta"] = 500000.0;
    } else {
      spec["embd_pdrop"] = spec["attn_pdrop"] = spec["resid_pdrop"] = 0.0;
    }
    return spec;
  };
  const std::int64_t d = 24, L = 3, V = 37, P = 11, I = 40, g_dh = 2 * 4;
  // GPT-2 with I != 4d: blocks 4d + (3d^2 + 3d) + (d^2 + d) + (d I + I) + (I d + d).
  const std::int64_t gpt2_block = 4 * d + 3 * d * d + 3 * d + d * d + d + d * I + I + I * d + d;
  CHECK(expand_model(model_spec_from_json(spec_json("gpt2", true), "odd.json")).param_count() ==
        L * gpt2_block + V * d + P * d + 2 * d);
  CHECK(expand_model(model_spec_from_json(spec_json("gpt2", false), "odd.json")).param_count() ==
        L * gpt2_block + 2 * V * d + P * d + 2 * d);
  const std::int64_t llama_block = 2 * d * d + 2 * d * g_dh + 3 * d * I + 2 * d;
  CHECK(expand_model(model_spec_from_json(spec_json("llama", false), "odd.json")).param_count() ==
        L * llama_block + 2 * V * d + d);
  CHECK(expand_model(model_spec_from_json(spec_json("llama", true), "odd.json")).param_count() ==
        L * llama_block + V * d + d);
}

// ---------------------------------------------------------------------------------------------
// Layer lists
// ---------------------------------------------------------------------------------------------

TEST_CASE("GPT-2 expands into HF's 125 leaf modules with tied lm_head", "[model][layers]") {
  const Model model = shipped_model("gpt2");
  // wte, wpe, drop, 12 blocks of 10 modules, ln_f, lm_head.
  REQUIRE(model.layers.size() == 3 + 12 * 10 + 2);
  // Forward call order (GPT2Block.forward): attn_dropout runs before c_proj, mlp.act before
  // mlp.c_proj, although HF registers them the other way round.
  const char* block0[] = {"transformer.h.0.ln_1",          "transformer.h.0.attn.c_attn",
                          "transformer.h.0.attn.attn_dropout", "transformer.h.0.attn.c_proj",
                          "transformer.h.0.attn.resid_dropout", "transformer.h.0.ln_2",
                          "transformer.h.0.mlp.c_fc",      "transformer.h.0.mlp.act",
                          "transformer.h.0.mlp.c_proj",    "transformer.h.0.mlp.dropout"};
  CHECK(model.layers[0].name == "transformer.wte");
  CHECK(model.layers[1].name == "transformer.wpe");
  CHECK(model.layers[2].name == "transformer.drop");
  for (std::size_t i = 0; i < 10; ++i) CHECK(model.layers[3 + i].name == block0[i]);
  CHECK(model.layers[123].name == "transformer.ln_f");
  const ModelLayer& head = model.layers[124];
  CHECK(head.name == "lm_head");
  CHECK(head.tied_to == std::optional<std::string>("transformer.wte"));
  CHECK(head.param_count() == 0);
  REQUIRE(head.params.size() == 1);
  CHECK(head.params[0].shape == std::vector<std::int64_t>{50257, 768});  // nn.Linear: [out, in]
  const ModelLayer& c_attn = model.layers[4];
  CHECK(c_attn.module == ModuleKind::kConv1D);
  REQUIRE(c_attn.params.size() == 2);
  CHECK(c_attn.params[0].shape == std::vector<std::int64_t>{768, 2304});  // Conv1D: [in, out]
  CHECK(c_attn.params[1].shape == std::vector<std::int64_t>{2304});
  // c_attn carries the scores, attn_dropout the dropout and P V.
  REQUIRE(c_attn.ops.size() == 2);
  CHECK(std::holds_alternative<AttentionScoresOp>(c_attn.ops[1]));
  REQUIRE(model.layers[5].ops.size() == 1);
  CHECK(std::holds_alternative<AttentionContextOp>(model.layers[5].ops[0]));
  CHECK(std::get<AttentionContextOp>(model.layers[5].ops[0]).dropout_p == 0.1);
}

TEST_CASE("Llama-2-7B expands in forward order with an untied lm_head", "[model][layers]") {
  const Model model = shipped_model("llama-2-7b");
  // embed_tokens, rotary_emb, 32 blocks of 10 modules, norm, lm_head.
  REQUIRE(model.layers.size() == 2 + 32 * 10 + 2);
  const char* names[] = {"model.embed_tokens",
                         "model.rotary_emb",
                         "model.layers.0.input_layernorm",
                         "model.layers.0.self_attn.q_proj",
                         "model.layers.0.self_attn.k_proj",
                         "model.layers.0.self_attn.v_proj",
                         "model.layers.0.self_attn.o_proj",
                         "model.layers.0.post_attention_layernorm",
                         "model.layers.0.mlp.gate_proj",
                         "model.layers.0.mlp.act_fn",
                         "model.layers.0.mlp.up_proj",
                         "model.layers.0.mlp.down_proj",
                         "model.layers.1.input_layernorm"};
  for (std::size_t i = 0; i < std::size(names); ++i) CHECK(model.layers[i].name == names[i]);
  CHECK(model.layers[model.layers.size() - 2].name == "model.norm");
  const ModelLayer& head = model.layers.back();
  CHECK(head.name == "lm_head");
  CHECK_FALSE(head.tied_to.has_value());
  CHECK(head.param_count() == 32000 * 4096);
  CHECK(model.layers[3].params[0].shape == std::vector<std::int64_t>{4096, 4096});
  CHECK(model.layers[8].params[0].shape == std::vector<std::int64_t>{11008, 4096});  // gate_proj [out, in]
  CHECK(model.layers[1].param_count() == 0);  // inv_freq is a buffer, not a parameter
  // v_proj carries rotary, scores and P V; up_proj the SwiGLU product.
  CHECK(model.layers[5].ops.size() == 4);
  CHECK(std::holds_alternative<GatedProductOp>(model.layers[10].ops[1]));
}

TEST_CASE("every GEMM's backward is twice its forward; GPT-2's matmul FLOPs by closed form", "[model][layers]") {
  // Independent count: forward matmul FLOPs = 2 T (weights of every linear) + attention's
  // Q K^T and P V, 2 * 2 B S^2 d per block. GPT-2 small, B = 2, S = 128 (T = 256):
  // linear weights 12 * 12 d^2 + V d (lm_head).
  const Model model = shipped_model("gpt2");
  const Workload w = workload(2, 128);
  double forward = 0, backward = 0;
  for (const ModelLayer& layer : model.layers) {
    const StepWork work = layer_work(layer, w);
    forward += work.forward.matmul_flops;
    backward += work.backward.matmul_flops;
  }
  const double d = 768, T = 256, B = 2, S = 128, V = 50257;
  CHECK(forward == 2 * T * (12 * 12 * d * d + V * d) + 12 * 4 * B * S * S * d);
  CHECK(backward == 2 * forward);
}

// ---------------------------------------------------------------------------------------------
// Profile skeleton and roofline
// ---------------------------------------------------------------------------------------------

TEST_CASE("profile skeleton: names, owned parameters, bytes per dtype, ties", "[model][profile]") {
  const Model model = shipped_model("tiny-gpt");
  const Profile fp32 = model_profile_skeleton(model, Dtype::kFp32, "estimated:test");
  const Profile bf16 = model_profile_skeleton(model, Dtype::kBf16, "estimated:test");
  REQUIRE(fp32.layers.size() == 4 * 10 + 5);
  CHECK(fp32.model == std::optional<std::string>("tiny-gpt"));
  CHECK(fp32.source == "estimated:test");
  CHECK_FALSE(fp32.workers.has_value());
  std::int64_t count = 0;
  for (std::size_t i = 0; i < fp32.layers.size(); ++i) {
    count += *fp32.layers[i].param_count;
    CHECK(*fp32.layers[i].param_bytes == 4 * *fp32.layers[i].param_count);
    CHECK(*bf16.layers[i].param_bytes == 2 * *bf16.layers[i].param_count);
    CHECK_FALSE(fp32.layers[i].sync_s.has_value());
  }
  CHECK(count == 834'304);
  CHECK(fp32.layers[0].param_count == 256 * 128);  // wte owns the shared weight
  CHECK(fp32.layers.back().tied_to == std::optional<std::string>("transformer.wte"));
  CHECK(fp32.layers.back().param_bytes == 0);
  validate_profile(fp32, "skeleton");  // ties and names pass the profile's own checks
}

// A catalog with round numbers: matmul (bf16) 100 TFLOP/s, vector (fp32) 10 TFLOP/s, 1 TB/s,
// compute efficiency 0.5, memory efficiency 0.8.
GpuCatalog round_catalog() {
  return gpu_catalog_from_json(
      parse_json_text(R"({"format": "syncplan.gpus/v1", "compute_efficiency": 0.5, "memory_efficiency": 0.8,
          "gpus": [{"name": "round", "datasheet": "test", "fp32_TFLOPS": 10, "bf16_TFLOPS": 100,
                    "memory_bandwidth_GBps": 1000},
                   {"name": "old", "datasheet": "test", "fp32_TFLOPS": 10, "bf16_TFLOPS": null,
                    "memory_bandwidth_GBps": 500}]})",
                      "round.json"),
      "round.json");
}

TEST_CASE("roofline: compute-bound linear, memory-bound norm, a layer sums its ops", "[model][roofline]") {
  const GpuCatalog catalog = round_catalog();
  const RooflineMachine machine = roofline_machine(catalog, catalog.find("round"), Dtype::kBf16);
  const Workload w = workload(1, 1024, Dtype::kBf16);  // T = 1024, e = 2
  // Linear 1024 -> 1024 with bias: 2 * 1024^3 = 2,147,483,648 matmul FLOPs, 1,048,576 vector;
  // compute (2.147483648e9 / 1e14 + 1.048576e6 / 1e13) / 0.5 = 4.315938816e-5 s;
  // bytes 2 (3 * 1,048,576 + 1024) = 6,293,504 -> 6,293,504 / 8e11 = 7.86688e-6 s. Compute-bound.
  const StepWork linear = op_work(LinearOp{1024, 1024, true}, w);
  CHECK(roofline_time_s(linear.forward, machine) == Approx(4.315938816e-5).epsilon(1e-12));
  // LayerNorm 1024: 7 * 1,048,576 = 7,340,032 FLOPs -> 7.340032e6 / 1e13 / 0.5 = 1.4680064e-6 s;
  // bytes 2 (2 * 1,048,576 + 2 * 1024) = 4,198,400 -> 5.248e-6 s. Memory-bound.
  const StepWork norm = op_work(LayerNormOp{1024, 1e-5}, w);
  CHECK(roofline_time_s(norm.forward, machine) == Approx(5.248e-6).epsilon(1e-12));
  // One layer with both ops: each op is a kernel, so 4.315938816e-5 + 5.248e-6 = 4.8407388160e-5 s
  // (the roofline of the summed work would give 4.46273946e-5 s instead).
  ModelLayer layer;
  layer.name = "both";
  layer.ops = {LinearOp{1024, 1024, true}, LayerNormOp{1024, 1e-5}};
  CHECK(roofline_layer_times(layer, w, machine).forward_s == Approx(4.840738816e-5).epsilon(1e-12));
  // fp32 runs matrix products at the FP32 rate: 2.147483648e9 / 1e13 = 2.147483648e-4, plus the
  // bias 1.048576e6 / 1e13 = 1.048576e-7, over 0.5: 4.297064448e-4 s.
  const RooflineMachine fp32 = roofline_machine(catalog, catalog.find("round"), Dtype::kFp32);
  CHECK(roofline_time_s(op_work(LinearOp{1024, 1024, true}, workload(1, 1024)).forward, fp32) ==
        Approx(4.297064448e-4).epsilon(1e-12));
}

TEST_CASE("the shipped GPU catalog reads and every GPU has its datasheet", "[model][roofline]") {
  const GpuCatalog catalog = read_gpu_catalog_file((std::filesystem::path(SYNCPLAN_DATA_DIR) / "gpus.json").string());
  CHECK(catalog.gpus.size() >= 6);
  for (const char* name : {"H200-SXM", "H100-SXM", "A100-SXM-80GB", "V100-SXM2", "L40S", "RTX-4090"}) {
    INFO(name);
    const GpuSpec& gpu = catalog.find(name);
    CHECK_FALSE(gpu.datasheet.empty());
    CHECK(gpu.memory_bandwidth_Bps > 1e11);
  }
  CHECK(catalog.find("H100-SXM").bf16_flops_per_s == std::optional<double>(989.5e12));
  CHECK_FALSE(catalog.find("V100-SXM2").bf16_flops_per_s.has_value());
}

// ---------------------------------------------------------------------------------------------
// Bad input: one InputError naming the file and the field
// ---------------------------------------------------------------------------------------------

void require_spec_error(const Json& spec, const std::string& field, const std::string& detail) {
  try {
    model_spec_from_json(spec, "bad.json");
    FAIL("no error for " << spec.dump());
  } catch (const InputError& e) {
    const std::string message = e.what();
    INFO(message);
    CHECK(message.find("bad.json") != std::string::npos);
    CHECK(message.find(field) != std::string::npos);
    CHECK(message.find(detail) != std::string::npos);
  }
}

TEST_CASE("bad model specs name the file and the field", "[model][errors]") {
  // Each row: a shipped spec, one key set to a bad value (null: the key removed), and the text the
  // message must hold beside the file and the key.
  struct Defect {
    const char* spec;
    const char* key;
    Json value;
    const char* detail;
  };
  const Defect defects[] = {
      {"tiny-gpt", "comment", "x", "unknown key"},
      {"tiny-gpt", "num_key_value_heads", 4, "unknown key"},  // a Llama field in a GPT-2 spec
      {"tiny-gpt", "hidden_size", 0, ">= 1"},
      {"tiny-gpt", "num_hidden_layers", -2, ">= 1"},
      {"tiny-gpt", "num_attention_heads", 3, "do not divide hidden_size 128"},
      {"tiny-gpt", "vocab_size", 2.5, "whole number"},
      {"tiny-gpt", "hidden_size", 1 << 20, "at most"},
      {"tiny-gpt", "attn_pdrop", 1.0, "[0, 1)"},
      {"tiny-gpt", "norm_eps", 0, "> 0"},
      {"tiny-gpt", "tie_word_embeddings", "yes", "true or false"},
      {"tiny-gpt", "architecture", "bert", "bert"},
      {"tiny-gpt", "intermediate_size", nullptr, "missing"},
      {"tiny-gpt", "format", "syncplan.model/v2", "syncplan.model/v2"},
      {"dreamddp-llama-8l", "num_key_value_heads", 3, "do not divide num_attention_heads 8"},
      {"dreamddp-llama-8l", "rope_theta", -1.0, "negative"},
      {"dreamddp-llama-8l", "resid_pdrop", 0.1, "unknown key"},  // a GPT-2 field in a Llama spec
  };
  for (const Defect& defect : defects) {
    Json spec = read_json_file((kModelsDir / (std::string(defect.spec) + ".json")).string());
    if (defect.value.is_null()) spec.erase(defect.key);
    else spec[defect.key] = defect.value;
    require_spec_error(spec, "'" + std::string(defect.key) + "'", defect.detail);
  }
  // 8 heads of 5: an odd head size cannot be rotated in pairs.
  Json llama = read_json_file((kModelsDir / "dreamddp-llama-8l.json").string());
  llama["hidden_size"] = 40;
  require_spec_error(llama, "'num_attention_heads'", "even");
}

TEST_CASE("bad names, dtypes, GPUs and sequence lengths", "[model][errors]") {
  REQUIRE_THROWS_WITH(resolve_model_spec("gpt3", kModelsDir),
                      Catch::Contains("model 'gpt3'") && Catch::Contains("tiny-gpt"));
  CHECK(resolve_model_spec("gpt2", kModelsDir) == kModelsDir / "gpt2.json");
  CHECK(resolve_model_spec("specs/mine.json", kModelsDir) == std::filesystem::path("specs/mine.json"));
  CHECK(resolve_model_spec("mine.json", kModelsDir) == std::filesystem::path("mine.json"));
  REQUIRE_THROWS_WITH(parse_dtype("fp16", "dtype"), Catch::StartsWith("dtype:") && Catch::Contains("'fp16'"));
  const GpuCatalog catalog = round_catalog();
  REQUIRE_THROWS_WITH(catalog.find("B200"), Catch::StartsWith("gpu 'B200'") && Catch::Contains("round, old"));
  REQUIRE_THROWS_WITH(roofline_machine(catalog, catalog.find("old"), Dtype::kBf16),
                      Catch::Contains("'old'") && Catch::Contains("bf16"));
  REQUIRE_THROWS_WITH(check_workload(shipped_model("tiny-gpt"), workload(1, 65)),
                      Catch::StartsWith("seq 65") && Catch::Contains("max_position_embeddings 64"));
  CHECK_NOTHROW(check_workload(shipped_model("tiny-gpt"), workload(1, 64)));
}

TEST_CASE("bad GPU catalogs name the file and the field", "[model][errors]") {
  const auto catalog_with = [](const std::string& gpus, const std::string& efficiency) {
    return R"({"format": "syncplan.gpus/v1", "compute_efficiency": )" + efficiency +
           R"(, "memory_efficiency": 0.8, "gpus": [)" + gpus + "]}";
  };
  const std::string good = R"({"name": "g", "datasheet": "d", "fp32_TFLOPS": 1, "memory_bandwidth_GBps": 1})";
  CHECK_NOTHROW(gpu_catalog_from_json(parse_json_text(catalog_with(good, "0.7"), "g.json"), "g.json"));
  REQUIRE_THROWS_WITH(gpu_catalog_from_json(parse_json_text(catalog_with(good, "1.5"), "g.json"), "g.json"),
                      Catch::Contains("g.json") && Catch::Contains("'compute_efficiency'"));
  const std::string twice = catalog_with(good + ", " + good, "0.7");
  REQUIRE_THROWS_WITH(gpu_catalog_from_json(parse_json_text(twice, "g.json"), "g.json"),
                      Catch::Contains("gpu 'g'") && Catch::Contains("duplicate"));
  const std::string zero = R"({"name": "z", "datasheet": "d", "fp32_TFLOPS": 0, "memory_bandwidth_GBps": 1})";
  REQUIRE_THROWS_WITH(gpu_catalog_from_json(parse_json_text(catalog_with(zero, "0.7"), "g.json"), "g.json"),
                      Catch::Contains("gpu 'z'") && Catch::Contains("'fp32_TFLOPS'"));
  const std::string extra =
      R"({"name": "x", "datasheet": "d", "fp32_TFLOPS": 1, "memory_bandwidth_GBps": 1, "tf32": 2})";
  REQUIRE_THROWS_WITH(gpu_catalog_from_json(parse_json_text(catalog_with(extra, "0.7"), "g.json"), "g.json"),
                      Catch::Contains("gpu 'x'") && Catch::Contains("'tf32'"));
}

}  // namespace
}  // namespace syncplan
