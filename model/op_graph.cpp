// Each op's one step bound to buffers of its own, in the field order of the GraphStep types.
#include "model/op_graph.hpp"

#include "core/errors.hpp"
#include "core/overloaded.hpp"

#include <type_traits>

namespace syncplan {

namespace {

// Hands out the graph's buffers and records each as an input or an output of the op.
class OpGraphBuilder {
 public:
  OpGraphBuilder(const LayerOp& op, const Workload& workload) {
    SYNCPLAN_CHECK(workload.batch >= 1 && workload.seq >= 1);
    LayerGraph& graph = result_.graph;
    graph.model = std::string("op ") + op_name(op);
    graph.workload = workload;
    graph.vocab_size = 1;
    graph.layers.emplace_back().name = "op";
  }

  std::int64_t tokens() const { return result_.graph.workload.tokens(); }
  const Workload& workload() const { return result_.graph.workload; }
  void set_vocab(std::int64_t vocab) { result_.graph.vocab_size = vocab; }

  // An activation the forward reads, with a gradient the backward writes unless `with_grad` is false.
  OpGraphTensor input(const std::string& name, std::int64_t elements, bool with_grad = true) {
    return result_.inputs.emplace_back(activation(name, elements, with_grad));
  }
  // An activation the forward reads whose gradient is another tensor's (`grad`).
  OpGraphTensor input_sharing(const std::string& name, std::int64_t elements, const TensorRef& grad) {
    OpGraphTensor tensor = activation(name, elements, false);
    tensor.grad = grad;
    return result_.inputs.emplace_back(tensor);
  }
  // A parameter of the layer and its gradient (accumulated by the backward).
  OpGraphTensor parameter(const std::string& name, std::int64_t elements) {
    LayerGraph& graph = result_.graph;
    const TensorRef value = graph.append(Arena::kParameters, elements);
    GraphLayer& layer = graph.layers.front();
    layer.params.push_back({name, value, ParamInit::kNormal, 0.02});
    layer.param_count += elements;
    return result_.inputs.emplace_back(OpGraphTensor{name, value, {Arena::kGradients, value.offset, elements}});
  }
  // An activation the forward writes, with the gradient arriving at it unless `with_grad` is false.
  OpGraphTensor output(const std::string& name, std::int64_t elements, bool with_grad = true) {
    return result_.outputs.emplace_back(activation(name, elements, with_grad));
  }
  TensorRef mask(std::int64_t elements) {
    return result_.masks.emplace_back(result_.graph.append(Arena::kMasks, elements));
  }

  void add(GraphStep step) { result_.graph.layers.front().steps.push_back(std::move(step)); }
  OpGraph take() { return std::move(result_); }

 private:
  OpGraphTensor activation(const std::string& name, std::int64_t elements, bool with_grad) {
    LayerGraph& graph = result_.graph;
    OpGraphTensor tensor{name, graph.append(Arena::kActivations, elements), {}};
    tensor.grad = with_grad ? graph.append(Arena::kActivationGrads, elements)
                            : TensorRef{Arena::kActivationGrads, 0, 0};
    return tensor;
  }

  OpGraph result_;
};

// Binds a tensor and its gradient to a step's two fields.
void bind(const OpGraphTensor& tensor, TensorRef& value, TensorRef& grad) {
  value = tensor.value;
  grad = tensor.grad;
}

StridedRef contiguous(const TensorRef& ref, std::int64_t rows) {
  const std::int64_t width = ref.elements / rows;
  return {ref.arena, ref.offset, rows, width, width};
}

// A norm's input, parameters, output and saved statistics; LayerNorm has a bias and the mean.
template <class Step>
Step norm_step(OpGraphBuilder& b, const decltype(Step::op)& op) {
  Step step;
  step.op = op;
  const std::int64_t T = b.tokens();
  bind(b.input("x", T * op.dim), step.x, step.d_x);
  bind(b.parameter("weight", op.dim), step.weight, step.d_weight);
  if constexpr (std::is_same_v<Step, LayerNormStep>) bind(b.parameter("bias", op.dim), step.bias, step.d_bias);
  bind(b.output("y", T * op.dim), step.y, step.d_y);
  if constexpr (std::is_same_v<Step, LayerNormStep>) step.mean = b.output("mean", T, false).value;
  step.rstd = b.output("rstd", T, false).value;
  return step;
}

ActivationStep activation_step(OpGraphBuilder& b, const LayerOp& op, std::int64_t width) {
  const OpGraphTensor x = b.input("x", b.tokens() * width);
  const OpGraphTensor y = b.output("y", b.tokens() * width);
  return {op, x.value, y.value, x.grad, y.grad};
}

LinearStep linear_step(OpGraphBuilder& b, const LinearOp& op) {
  const std::int64_t T = b.tokens();
  LinearStep step;
  step.op = op;
  bind(b.input("x", T * op.in_features), step.x, step.d_x);
  bind(b.parameter("weight", op.in_features * op.out_features), step.weight, step.d_weight);
  step.bias = {Arena::kParameters, 0, 0};
  step.d_bias = {Arena::kGradients, 0, 0};
  if (op.bias) bind(b.parameter("bias", op.out_features), step.bias, step.d_bias);
  bind(b.output("y", T * op.out_features), step.y, step.d_y);
  return step;
}

RotaryApplyStep rotary_step(OpGraphBuilder& b, const RotaryApplyOp& op) {
  const AttentionHeads& a = op.shape;
  const std::int64_t T = b.tokens();
  RotaryApplyStep step;
  step.op = op;
  step.cos = b.input("cos", T * a.head_dim, false).value;
  step.sin = b.input("sin", T * a.head_dim, false).value;
  bind(b.input("q", T * a.heads * a.head_dim), step.q, step.d_q);
  bind(b.input("k", T * a.kv_heads * a.head_dim), step.k, step.d_k);
  bind(b.output("q_out", T * a.heads * a.head_dim), step.q_out, step.d_q_out);
  bind(b.output("k_out", T * a.kv_heads * a.head_dim), step.k_out, step.d_k_out);
  return step;
}

AttentionScoresStep scores_step(OpGraphBuilder& b, const AttentionScoresOp& op) {
  const AttentionHeads& a = op.shape;
  const Workload& w = b.workload();
  const std::int64_t T = b.tokens();
  const OpGraphTensor q = b.input("q", T * a.heads * a.head_dim);
  const OpGraphTensor k = b.input("k", T * a.kv_heads * a.head_dim);
  const OpGraphTensor probs = b.output("probs", w.batch * a.heads * w.seq * w.seq);
  return {op, contiguous(q.value, T), contiguous(k.value, T), probs.value, contiguous(q.grad, T),
          contiguous(k.grad, T), probs.grad};
}

AttentionContextStep context_step(OpGraphBuilder& b, const AttentionContextOp& op) {
  const AttentionHeads& a = op.shape;
  const Workload& w = b.workload();
  const std::int64_t T = b.tokens(), scores = w.batch * a.heads * w.seq * w.seq;
  AttentionContextStep step;
  step.op = op;
  const OpGraphTensor probs = b.input("probs", scores);
  const OpGraphTensor v = b.input("v", T * a.kv_heads * a.head_dim);
  step.probs = probs.value;
  step.d_probs = probs.grad;
  step.v = contiguous(v.value, T);
  step.d_v = contiguous(v.grad, T);
  step.mask = op.dropout_p > 0 ? b.mask(scores) : TensorRef{Arena::kMasks, 0, 0};
  bind(b.output("out", T * a.heads * a.head_dim), step.out, step.d_out);
  return step;
}

}  // namespace

OpGraph build_op_graph(const LayerOp& op, const Workload& workload) {
  OpGraphBuilder b(op, workload);
  const std::int64_t T = b.tokens();
  std::visit(
      Overloaded{
          [&](const TokenEmbeddingOp& o) {
            b.set_vocab(o.vocab_size);
            const OpGraphTensor table = b.parameter("table", o.vocab_size * o.dim);
            const OpGraphTensor out = b.output("out", T * o.dim);
            b.add(TokenEmbeddingStep{o, table.value, out.value, table.grad, out.grad});
          },
          [&](const PositionEmbeddingOp& o) {
            const OpGraphTensor out = b.output("out", T * o.dim);
            const OpGraphTensor x = b.input_sharing("x", T * o.dim, out.grad);
            const OpGraphTensor table = b.parameter("table", o.positions * o.dim);
            b.add(PositionEmbeddingStep{o, x.value, table.value, out.value, table.grad, out.grad});
          },
          [&](const LinearOp& o) { b.add(linear_step(b, o)); },
          [&](const LayerNormOp& o) { b.add(norm_step<LayerNormStep>(b, o)); },
          [&](const RmsNormOp& o) { b.add(norm_step<RmsNormStep>(b, o)); },
          [&](const GeluOp& o) { b.add(activation_step(b, o, o.width)); },
          [&](const SiluOp& o) { b.add(activation_step(b, o, o.width)); },
          [&](const GatedProductOp& o) {
            const OpGraphTensor a = b.input("a", T * o.width);
            const OpGraphTensor b_in = b.input("b", T * o.width);
            const OpGraphTensor y = b.output("y", T * o.width);
            b.add(GatedProductStep{o, a.value, b_in.value, y.value, a.grad, b_in.grad, y.grad});
          },
          [&](const ResidualAddOp& o) {
            const OpGraphTensor y = b.output("y", T * o.width);
            const OpGraphTensor stream = b.input("stream", T * o.width);
            const OpGraphTensor branch = b.input_sharing("branch", T * o.width, y.grad);
            b.add(ResidualAddStep{o, stream.value, branch.value, y.value, stream.grad, y.grad});
          },
          [&](const DropoutOp& o) {
            if (o.p == 0) return;  // the identity: no step (models.md 3.4)
            const OpGraphTensor x = b.input("x", T * o.width);
            const OpGraphTensor y = b.output("y", T * o.width);
            b.add(DropoutStep{o, 0, x.value, y.value, b.mask(T * o.width), x.grad, y.grad});
          },
          [&](const RotaryTableOp& o) {
            const TensorRef cos = b.output("cos", T * o.head_dim, false).value;
            b.add(RotaryTableStep{o, cos, b.output("sin", T * o.head_dim, false).value});
          },
          [&](const RotaryApplyOp& o) { b.add(rotary_step(b, o)); },
          [&](const AttentionScoresOp& o) { b.add(scores_step(b, o)); },
          [&](const AttentionContextOp& o) { b.add(context_step(b, o)); },
          [&](const CrossEntropyOp& o) {
            b.set_vocab(o.vocab_size);
            const OpGraphTensor logits = b.input("logits", T * o.vocab_size);
            const TensorRef losses = b.output("losses", T, false).value;
            b.add(CrossEntropyStep{o, logits.value, losses, b.output("lse", T, false).value, logits.grad});
          },
      },
      op);
  return b.take();
}

}  // namespace syncplan
