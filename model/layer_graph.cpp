// The wiring of GPT-2 and Llama layers to buffers, block by block as their forward passes run
// (docs/models.md section 6), and the initial parameters.
#include "model/layer_graph.hpp"

#include "core/counter_random.hpp"
#include "core/errors.hpp"
#include "core/field_error.hpp"
#include "model/require_elements.hpp"

#include <cmath>
#include <map>
#include <numbers>

namespace syncplan {

bool GraphLayer::has_backward() const {
  for (const GraphStep& step : steps)
    if (!std::holds_alternative<RotaryTableStep>(step)) return true;
  return false;
}

std::int64_t LayerGraph::arena_elements(Arena arena) const {
  switch (arena) {
    case Arena::kParameters:
    case Arena::kGradients: return parameter_elements;
    case Arena::kActivations: return activation_elements;
    case Arena::kActivationGrads: return activation_grad_elements;
    case Arena::kMasks: return mask_elements;
  }
  SYNCPLAN_CHECK(false);
  return 0;
}

TensorRef LayerGraph::append(Arena arena, std::int64_t elements) {
  SYNCPLAN_CHECK(elements >= 0 && arena != Arena::kGradients);
  std::int64_t& size = arena == Arena::kParameters        ? parameter_elements
                       : arena == Arena::kActivations     ? activation_elements
                       : arena == Arena::kActivationGrads ? activation_grad_elements
                                                          : mask_elements;
  const TensorRef ref{arena, size, elements};
  size += elements;
  return ref;
}

std::int64_t LayerGraph::total_bytes(std::int64_t element_bytes) const {
  return element_bytes * (2 * parameter_elements + activation_elements + activation_grad_elements) + mask_elements +
         2 * kTokenIdBytes * workload.tokens();
}

void check_token_batch(const LayerGraph& graph, std::span<const std::int64_t> ids,
                       std::span<const std::int64_t> targets) {
  const std::int64_t T = graph.workload.tokens();
  const auto check = [&](std::span<const std::int64_t> values, const char* what, bool negative_allowed) {
    if (static_cast<std::int64_t>(values.size()) != T)
      throw InputError(std::string("batch ") + what + ": " + std::to_string(values.size()) + " tokens, expected " +
                       std::to_string(T) + " (batch " + std::to_string(graph.workload.batch) + " x seq " +
                       std::to_string(graph.workload.seq) + ")");
    for (std::size_t t = 0; t < values.size(); ++t)
      if (values[t] >= graph.vocab_size || (values[t] < 0 && !negative_allowed))
        throw InputError(std::string("batch ") + what + " at token " + std::to_string(t) + ": id " +
                         std::to_string(values[t]) + " outside [0, " + std::to_string(graph.vocab_size) +
                         ") of model " + graph.model);
  };
  check(ids, "ids", false);
  check(targets, "targets", true);
}

TokenBatch random_token_batch(const LayerGraph& graph, std::uint64_t seed) {
  const std::int64_t T = graph.workload.tokens();
  TokenBatch batch;
  batch.ids.resize(static_cast<std::size_t>(T));
  batch.targets.resize(static_cast<std::size_t>(T));
  const std::uint64_t id_stream = splitmix64(seed), target_stream = splitmix64(seed + 1);
  for (std::int64_t t = 0; t < T; ++t) {
    batch.ids[static_cast<std::size_t>(t)] = counter_index(id_stream, static_cast<std::uint64_t>(t), graph.vocab_size);
    batch.targets[static_cast<std::size_t>(t)] =
        counter_index(target_stream, static_cast<std::uint64_t>(t), graph.vocab_size);
  }
  return batch;
}

std::uint64_t dropout_seed(std::uint64_t seed, std::uint64_t stream) {
  return splitmix64(seed ^ splitmix64(stream + 0xD0D0D0D0ull));
}

namespace {

// An activation and its gradient. Two activations may share a gradient buffer where the math
// says their gradients are equal: a residual addition's output and its branch, the position
// embedding's output and its input.
struct Act {
  TensorRef value, grad;
};

StridedRef columns(const TensorRef& tensor, std::int64_t rows, std::int64_t first, std::int64_t width,
                   std::int64_t row_stride) {
  return {tensor.arena, tensor.offset + first, rows, width, row_stride};
}

TensorRef gradient_of(const TensorRef& parameter) { return {Arena::kGradients, parameter.offset, parameter.elements}; }

// Walks the model's layers in order, allocating buffers as the forward pass produces them.
class Builder {
 public:
  Builder(const Model& model, const Workload& workload) : model_(model) {
    graph_.model = model.name;
    graph_.workload = workload;
    T_ = workload.tokens();
  }

  LayerGraph take() { return std::move(graph_); }
  std::int64_t tokens() const { return T_; }
  const Workload& workload() const { return graph_.workload; }
  void set_vocab(std::int64_t vocab) { graph_.vocab_size = vocab; }

  // The shared scratch of accumulated input gradients: the first `elements` of kActivationGrads.
  void reserve_scratch(std::int64_t elements) {
    SYNCPLAN_CHECK(graph_.activation_grad_elements == 0);
    scratch_ = {Arena::kActivationGrads, 0, elements};
    graph_.activation_grad_elements = elements;
  }
  TensorRef scratch(std::int64_t elements) const {
    SYNCPLAN_CHECK(elements <= scratch_.elements);
    return {Arena::kActivationGrads, 0, elements};
  }

  TensorRef activation(std::int64_t elements) { return graph_.append(Arena::kActivations, elements); }
  TensorRef activation_grad(std::int64_t elements) {
    return graph_.append(Arena::kActivationGrads, elements);
  }
  TensorRef mask(std::int64_t elements) { return graph_.append(Arena::kMasks, elements); }
  Act act(std::int64_t elements) { return {activation(elements), activation_grad(elements)}; }
  std::uint64_t next_dropout_stream() { return dropout_streams_++; }

  // The next model layer, which must be named `suffix` at the end; its parameters are allocated
  // (or, when tied, looked up in the owner).
  GraphLayer& layer(const std::string& suffix) {
    SYNCPLAN_CHECK(cursor_ < model_.layers.size());
    const ModelLayer& source = model_.layers[cursor_++];
    const std::string& name = source.name;
    if (name.size() < suffix.size() || name.compare(name.size() - suffix.size(), suffix.size(), suffix) != 0)
      throw InternalError("layer graph: expected a layer named *" + suffix + ", got " + name);
    current_ = &source;
    GraphLayer& layer = graph_.layers.emplace_back();
    layer.name = name;
    layer.param_count = source.param_count();
    layer.frozen = source.frozen;
    if (source.tied_to) {
      const auto owner = owner_params_.find(*source.tied_to);
      if (owner == owner_params_.end())
        throw InternalError("layer graph: " + name + " is tied to " + *source.tied_to + ", which comes later");
      layer.tied = true;
      layer.params = owner->second;
    } else {
      for (const ParamTensor& tensor : source.params) {
        GraphParam param;
        param.name = tensor.name;
        param.value = graph_.append(Arena::kParameters, tensor.count());
        param.init = initial_value(source, tensor);
        param.init_std = param.init == ParamInit::kNormal ? normal_std(source) : 0.0;
        layer.params.push_back(param);
      }
      owner_params_[name] = layer.params;
    }
    return layer;
  }

  // Op number `index` of the current layer, which must be an Op.
  template <class Op>
  const Op& op(std::size_t index) const {
    SYNCPLAN_CHECK(current_ != nullptr && index < current_->ops.size());
    const Op* op = std::get_if<Op>(&current_->ops[index]);
    if (op == nullptr)
      throw InternalError("layer graph: op " + std::to_string(index) + " of " + current_->name + " is " +
                          op_name(current_->ops[index]));
    return *op;
  }
  std::size_t op_count() const { return current_->ops.size(); }

  void finish() const { SYNCPLAN_CHECK(cursor_ == model_.layers.size()); }

 private:
  static ParamInit initial_value(const ModelLayer& layer, const ParamTensor& tensor) {
    if (layer.module == ModuleKind::kLayerNorm || layer.module == ModuleKind::kRmsNorm)
      return tensor.name == "bias" ? ParamInit::kZeros : ParamInit::kOnes;
    return tensor.name == "bias" ? ParamInit::kZeros : ParamInit::kNormal;
  }

  // Hugging Face's initializer_range, scaled for GPT-2's residual projections (names *.c_proj).
  double normal_std(const ModelLayer& layer) const {
    constexpr double kInitializerRange = 0.02;
    const std::string suffix = ".c_proj";
    const bool residual_projection =
        model_.architecture == Architecture::kGpt2 && layer.name.size() > suffix.size() &&
        layer.name.compare(layer.name.size() - suffix.size(), suffix.size(), suffix) == 0;
    if (!residual_projection) return kInitializerRange;
    return kInitializerRange / std::sqrt(2.0 * static_cast<double>(model_.num_hidden_layers));
  }

  const Model& model_;
  LayerGraph graph_;
  std::int64_t T_ = 0;
  std::size_t cursor_ = 0;
  const ModelLayer* current_ = nullptr;
  std::map<std::string, std::vector<GraphParam>> owner_params_;
  TensorRef scratch_;
  std::uint64_t dropout_streams_ = 0;
};

// --- steps shared by both architectures -------------------------------------------------------

// A projection of `in`. With accumulate_d_x its input gradient is added (another reader of `in`
// wrote it first).
Act linear(Builder& b, GraphLayer& layer, const LinearOp& op, WeightLayout layout, const Act& in,
           bool accumulate_d_x = false) {
  const Act out = b.act(b.tokens() * op.out_features);
  LinearStep step;
  step.op = op;
  step.layout = layout;
  step.x = in.value;
  step.d_x = in.grad;
  step.weight = layer.params.at(0).value;
  step.d_weight = gradient_of(step.weight);
  if (op.bias) {
    step.bias = layer.params.at(1).value;
    step.d_bias = gradient_of(step.bias);
  } else {
    step.bias = step.d_bias = TensorRef{Arena::kParameters, 0, 0};
    step.d_bias.arena = Arena::kGradients;
  }
  step.y = out.value;
  step.d_y = out.grad;
  step.accumulate_d_x = accumulate_d_x;
  if (accumulate_d_x) step.d_x_scratch = b.scratch(in.grad.elements);
  layer.steps.emplace_back(step);
  return out;
}

// The fields LayerNormStep and RmsNormStep share: input, weight, output, rstd, accumulation.
template <class NormStep>
Act bind_norm(Builder& b, GraphLayer& layer, NormStep& step, const Act& in, bool accumulate_d_x) {
  const std::int64_t T = b.tokens();
  const Act out = b.act(T * step.op.dim);
  step.x = in.value;
  step.d_x = in.grad;
  step.weight = layer.params.at(0).value;
  step.d_weight = gradient_of(step.weight);
  step.y = out.value;
  step.d_y = out.grad;
  step.rstd = b.activation(T);
  step.accumulate_d_x = accumulate_d_x;
  if (accumulate_d_x) step.d_x_scratch = b.scratch(in.grad.elements);
  return out;
}

Act layer_norm(Builder& b, GraphLayer& layer, const Act& in, bool accumulate_d_x) {
  LayerNormStep step;
  step.op = b.op<LayerNormOp>(0);
  const Act out = bind_norm(b, layer, step, in, accumulate_d_x);
  step.bias = layer.params.at(1).value;
  step.d_bias = gradient_of(step.bias);
  step.mean = b.activation(b.tokens());
  layer.steps.emplace_back(step);
  return out;
}

Act rms_norm(Builder& b, GraphLayer& layer, const Act& in, bool accumulate_d_x) {
  RmsNormStep step;
  step.op = b.op<RmsNormOp>(0);
  const Act out = bind_norm(b, layer, step, in, accumulate_d_x);
  layer.steps.emplace_back(step);
  return out;
}

// Dropout p > 0 as a step; p = 0 is the identity (PyTorch returns its input).
Act dropout(Builder& b, GraphLayer& layer, const DropoutOp& op, const Act& in) {
  if (op.p == 0) return in;
  const Act out = b.act(in.value.elements);
  DropoutStep step;
  step.op = op;
  step.stream = b.next_dropout_stream();
  step.x = in.value;
  step.d_x = in.grad;
  step.y = out.value;
  step.d_y = out.grad;
  step.mask = b.mask(in.value.elements);
  layer.steps.emplace_back(step);
  return out;
}

// stream + branch; the sum's gradient buffer is the branch's (their gradients are equal).
Act residual_add(Builder& b, GraphLayer& layer, const ResidualAddOp& op, const Act& stream, const Act& branch) {
  const Act out{b.activation(stream.value.elements), branch.grad};
  ResidualAddStep step;
  step.op = op;
  step.stream = stream.value;
  step.branch = branch.value;
  step.y = out.value;
  step.d_stream = stream.grad;
  step.d_y = out.grad;
  layer.steps.emplace_back(step);
  return out;
}

Act attention_scores(Builder& b, GraphLayer& layer, const AttentionScoresOp& op, StridedRef q, StridedRef k,
                     StridedRef d_q, StridedRef d_k) {
  const Workload& w = b.workload();
  const Act probs = b.act(w.batch * op.shape.heads * w.seq * w.seq);
  AttentionScoresStep step{op, q, k, probs.value, d_q, d_k, probs.grad};
  layer.steps.emplace_back(step);
  return probs;
}

Act attention_context(Builder& b, GraphLayer& layer, const AttentionContextOp& op, const Act& probs, StridedRef v,
                      StridedRef d_v) {
  const Act out = b.act(b.tokens() * op.shape.heads * op.shape.head_dim);
  AttentionContextStep step;
  step.op = op;
  step.probs = probs.value;
  step.d_probs = probs.grad;
  step.v = v;
  step.d_v = d_v;
  if (op.dropout_p > 0) {
    step.stream = b.next_dropout_stream();
    step.mask = b.mask(probs.value.elements);
  } else {
    step.mask = TensorRef{Arena::kMasks, 0, 0};
  }
  step.out = out.value;
  step.d_out = out.grad;
  layer.steps.emplace_back(step);
  return out;
}

StridedRef whole(const TensorRef& tensor, std::int64_t rows, std::int64_t width) {
  return columns(tensor, rows, 0, width, width);
}

// lm_head: the projection to the vocabulary and the loss.
void lm_head(Builder& b, const Act& in) {
  GraphLayer& head = b.layer("lm_head");
  const Act logits = linear(b, head, b.op<LinearOp>(0), WeightLayout::kOutIn, in);
  const CrossEntropyOp& loss = b.op<CrossEntropyOp>(1);
  head.steps.emplace_back(
      CrossEntropyStep{loss, logits.value, b.activation(b.tokens()), b.activation(b.tokens()), logits.grad});
  b.set_vocab(loss.vocab_size);
}

Act token_embedding(Builder& b, const std::string& name) {
  GraphLayer& wte = b.layer(name);
  const TokenEmbeddingOp& op = b.op<TokenEmbeddingOp>(0);
  b.reserve_scratch(b.tokens() * op.dim);  // every accumulated input gradient is [T, d]
  const Act out = b.act(b.tokens() * op.dim);
  const TensorRef table = wte.params.at(0).value;
  wte.steps.emplace_back(TokenEmbeddingStep{op, table, out.value, gradient_of(table), out.grad});
  return out;
}

// --- GPT-2 (GPT2LMHeadModel.forward) ----------------------------------------------------------

void build_gpt2(Builder& b, std::int64_t blocks) {
  const std::int64_t T = b.tokens();
  const Act tokens = token_embedding(b, "transformer.wte");
  GraphLayer& wpe = b.layer("transformer.wpe");
  const PositionEmbeddingOp& position = b.op<PositionEmbeddingOp>(0);
  // out = x + table: the gradient of x is the gradient of out, so they share a buffer.
  const Act embedded{b.activation(T * position.dim), tokens.grad};
  wpe.steps.emplace_back(PositionEmbeddingStep{position, tokens.value, wpe.params.at(0).value, embedded.value,
                                               gradient_of(wpe.params.at(0).value), embedded.grad});
  GraphLayer& drop = b.layer("transformer.drop");
  Act stream = dropout(b, drop, b.op<DropoutOp>(0), embedded);

  for (std::int64_t i = 0; i < blocks; ++i) {
    const std::string block = "transformer.h." + std::to_string(i) + ".";
    // attention: ln_1, c_attn (+ scores), attn_dropout (+ P V), c_proj, resid_dropout (+ residual)
    const Act normed = layer_norm(b, b.layer(block + "ln_1"), stream, true);
    GraphLayer& c_attn = b.layer(block + "attn.c_attn");
    const Act qkv = linear(b, c_attn, b.op<LinearOp>(0), WeightLayout::kInOut, normed);
    const AttentionScoresOp& scores = b.op<AttentionScoresOp>(1);
    const std::int64_t d = scores.shape.heads * scores.shape.head_dim;
    // q, k, v are the three d-wide column blocks of c_attn's [T, 3d] output (HF's split).
    const auto third = [&](const TensorRef& t, std::int64_t n) { return columns(t, T, n * d, d, 3 * d); };
    const Act probs = attention_scores(b, c_attn, scores, third(qkv.value, 0), third(qkv.value, 1),
                                       third(qkv.grad, 0), third(qkv.grad, 1));
    GraphLayer& attn_dropout = b.layer(block + "attn.attn_dropout");
    const Act context = attention_context(b, attn_dropout, b.op<AttentionContextOp>(0), probs, third(qkv.value, 2),
                                          third(qkv.grad, 2));
    GraphLayer& c_proj = b.layer(block + "attn.c_proj");
    const Act projected = linear(b, c_proj, b.op<LinearOp>(0), WeightLayout::kInOut, context);
    GraphLayer& resid_dropout = b.layer(block + "attn.resid_dropout");
    const Act branch = dropout(b, resid_dropout, b.op<DropoutOp>(0), projected);
    stream = residual_add(b, resid_dropout, b.op<ResidualAddOp>(1), stream, branch);

    // MLP: ln_2, c_fc, act, c_proj, dropout (+ residual)
    const Act normed2 = layer_norm(b, b.layer(block + "ln_2"), stream, true);
    GraphLayer& c_fc = b.layer(block + "mlp.c_fc");
    const Act hidden = linear(b, c_fc, b.op<LinearOp>(0), WeightLayout::kInOut, normed2);
    GraphLayer& act = b.layer(block + "mlp.act");
    const Act activated = b.act(hidden.value.elements);
    act.steps.emplace_back(ActivationStep{b.op<GeluOp>(0), hidden.value, activated.value, hidden.grad, activated.grad});
    GraphLayer& mlp_proj = b.layer(block + "mlp.c_proj");
    const Act mlp_out = linear(b, mlp_proj, b.op<LinearOp>(0), WeightLayout::kInOut, activated);
    GraphLayer& mlp_dropout = b.layer(block + "mlp.dropout");
    const Act mlp_branch = dropout(b, mlp_dropout, b.op<DropoutOp>(0), mlp_out);
    stream = residual_add(b, mlp_dropout, b.op<ResidualAddOp>(1), stream, mlp_branch);
  }
  // ln_f is the final stream's only reader: it writes its input gradient.
  const Act final_norm = layer_norm(b, b.layer("transformer.ln_f"), stream, false);
  lm_head(b, final_norm);
}

// --- Llama (LlamaForCausalLM.forward) ---------------------------------------------------------

void build_llama(Builder& b, std::int64_t blocks) {
  const std::int64_t T = b.tokens();
  Act stream = token_embedding(b, "model.embed_tokens");
  GraphLayer& rotary = b.layer("model.rotary_emb");
  const RotaryTableOp& table = b.op<RotaryTableOp>(0);
  const TensorRef cos = b.activation(T * table.head_dim), sin = b.activation(T * table.head_dim);
  rotary.steps.emplace_back(RotaryTableStep{table, cos, sin});

  for (std::int64_t i = 0; i < blocks; ++i) {
    const std::string block = "model.layers." + std::to_string(i) + ".";
    const Act normed = rms_norm(b, b.layer(block + "input_layernorm"), stream, true);
    // q, k and v all read the norm's output; v_proj's backward runs first and writes its
    // gradient, k_proj's and q_proj's add theirs.
    GraphLayer& q_proj = b.layer(block + "self_attn.q_proj");
    const Act q = linear(b, q_proj, b.op<LinearOp>(0), WeightLayout::kOutIn, normed, true);
    GraphLayer& k_proj = b.layer(block + "self_attn.k_proj");
    const Act k = linear(b, k_proj, b.op<LinearOp>(0), WeightLayout::kOutIn, normed, true);
    GraphLayer& v_proj = b.layer(block + "self_attn.v_proj");
    const Act v = linear(b, v_proj, b.op<LinearOp>(0), WeightLayout::kOutIn, normed);
    const RotaryApplyOp& rope = b.op<RotaryApplyOp>(1);
    const Act q_rot = b.act(q.value.elements), k_rot = b.act(k.value.elements);
    v_proj.steps.emplace_back(RotaryApplyStep{rope, cos, sin, q.value, k.value, q_rot.value, k_rot.value, q.grad,
                                              k.grad, q_rot.grad, k_rot.grad});
    const AttentionHeads& heads = rope.shape;
    const std::int64_t q_width = heads.heads * heads.head_dim, kv_width = heads.kv_heads * heads.head_dim;
    const Act probs = attention_scores(b, v_proj, b.op<AttentionScoresOp>(2), whole(q_rot.value, T, q_width),
                                       whole(k_rot.value, T, kv_width), whole(q_rot.grad, T, q_width),
                                       whole(k_rot.grad, T, kv_width));
    const Act context = attention_context(b, v_proj, b.op<AttentionContextOp>(3), probs, whole(v.value, T, kv_width),
                                          whole(v.grad, T, kv_width));
    GraphLayer& o_proj = b.layer(block + "self_attn.o_proj");
    const Act attn_out = linear(b, o_proj, b.op<LinearOp>(0), WeightLayout::kOutIn, context);
    stream = residual_add(b, o_proj, b.op<ResidualAddOp>(1), stream, attn_out);

    // SwiGLU: down_proj(act_fn(gate_proj(x)) * up_proj(x)); up_proj's backward runs before gate_proj's.
    const Act normed2 = rms_norm(b, b.layer(block + "post_attention_layernorm"), stream, true);
    GraphLayer& gate_proj = b.layer(block + "mlp.gate_proj");
    const Act gate = linear(b, gate_proj, b.op<LinearOp>(0), WeightLayout::kOutIn, normed2, true);
    GraphLayer& act_fn = b.layer(block + "mlp.act_fn");
    const Act activated = b.act(gate.value.elements);
    act_fn.steps.emplace_back(ActivationStep{b.op<SiluOp>(0), gate.value, activated.value, gate.grad, activated.grad});
    GraphLayer& up_proj = b.layer(block + "mlp.up_proj");
    const Act up = linear(b, up_proj, b.op<LinearOp>(0), WeightLayout::kOutIn, normed2);
    const Act product = b.act(up.value.elements);
    up_proj.steps.emplace_back(GatedProductStep{b.op<GatedProductOp>(1), activated.value, up.value, product.value,
                                                activated.grad, up.grad, product.grad});
    GraphLayer& down_proj = b.layer(block + "mlp.down_proj");
    const Act mlp_out = linear(b, down_proj, b.op<LinearOp>(0), WeightLayout::kOutIn, product);
    stream = residual_add(b, down_proj, b.op<ResidualAddOp>(1), stream, mlp_out);
  }
  const Act final_norm = rms_norm(b, b.layer("model.norm"), stream, false);
  lm_head(b, final_norm);
}

// A standard normal draw for element `index` of `stream` (Box-Muller on two 24-bit uniforms;
// 1 - u keeps the logarithm's argument in (0, 1]).
double standard_normal(std::uint64_t stream, std::uint64_t index) {
  const double u1 = 1.0 - static_cast<double>(counter_uniform(stream, 2 * index));
  const double u2 = static_cast<double>(counter_uniform(stream, 2 * index + 1));
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * std::numbers::pi * u2);
}

}  // namespace

LayerGraph build_layer_graph(const Model& model, const Workload& workload) {
  check_workload(model, workload);
  SYNCPLAN_CHECK(workload.batch >= 1 && workload.seq >= 1);
  // The graph counts its buffers in int64 elements (and total_bytes in bytes): sized first in
  // double from the ops' work (docs/models.md section 3; every buffer is read or written by some
  // pass, so the bytes moved bound the bytes held), and refused past 2^60 bytes (1 EiB), long
  // before a product of batch, heads and seq^2 could wrap (an overflow check found that a spec with a
  // 2^24 context at batch 32768 failed an internal check, at 4096 passed the memory check with a
  // negative size and ended in std::bad_alloc).
  double moved_bytes = 0;
  for (const ModelLayer& layer : model.layers) {
    const StepWork work = layer_work(layer, workload);
    moved_bytes += work.forward.bytes + work.backward.bytes;
  }
  constexpr double kLargestGraph_bytes = 1152921504606846976.0;  // 2^60
  if (!(moved_bytes <= kLargestGraph_bytes))
    throw FieldError("batch", "batch " + std::to_string(workload.batch) + " x seq " + std::to_string(workload.seq) +
                                  ": the layer graph of " + model.name + " would hold about " +
                                  format_short(moved_bytes, 0) +
                                  " bytes of buffers, beyond any host (more than 2^60); use a smaller batch or sequence");
  Builder builder(model, workload);
  if (model.architecture == Architecture::kGpt2) build_gpt2(builder, model.num_hidden_layers);
  else build_llama(builder, model.num_hidden_layers);
  builder.finish();
  LayerGraph graph = builder.take();
  SYNCPLAN_CHECK(graph.parameter_elements == model.param_count());
  return graph;
}

void initialize_parameters(const LayerGraph& graph, std::uint64_t seed, std::span<float> out) {
  require_elements(out.size(), graph.parameter_elements, "parameters");
  std::uint64_t tensor_index = 0;
  for (const GraphLayer& layer : graph.layers) {
    if (layer.tied) continue;  // the owner initialized them
    for (const GraphParam& param : layer.params) {
      const std::uint64_t stream = splitmix64(seed * 0x100000001B3ull + tensor_index++);
      float* values = out.data() + param.value.offset;
      for (std::int64_t e = 0; e < param.value.elements; ++e) {
        switch (param.init) {
          case ParamInit::kOnes: values[e] = 1.0f; break;
          case ParamInit::kZeros: values[e] = 0.0f; break;
          case ParamInit::kNormal:
            values[e] = static_cast<float>(param.init_std * standard_normal(stream, static_cast<std::uint64_t>(e)));
            break;
        }
      }
    }
  }
}

}  // namespace syncplan
