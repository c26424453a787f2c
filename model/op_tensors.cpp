// The tensor lists of every op, following the kernel signatures of model/cpu/kernels.hpp.
#include "model/op_tensors.hpp"

#include "core/errors.hpp"
#include "core/overloaded.hpp"

namespace syncplan {

namespace {

using Kind = TensorKind;
using Role = TensorRole;

// The builder every list below uses: value tensors unless said otherwise.
class TensorList {
 public:
  TensorList& add(std::string name, std::int64_t elements, Role role, Kind kind = Kind::kValue,
                  std::int64_t id_bound = 0) {
    SYNCPLAN_CHECK(elements >= 1);
    tensors_.push_back({std::move(name), elements, kind, role, id_bound});
    return *this;
  }
  // A tensor x and its gradient d_x of the same size: x read by the forward, d_x written by the backward.
  TensorList& input_and_grad(const std::string& name, std::int64_t elements) {
    return add(name, elements, Role::kInput).add("d_" + name, elements, Role::kGradOutput);
  }
  // A parameter and its accumulated gradient.
  TensorList& param_and_grad(const std::string& name, std::int64_t elements) {
    return add(name, elements, Role::kInput).add("d_" + name, elements, Role::kGradAccumulate);
  }
  // An output y and the gradient d_y arriving at it.
  TensorList& output_and_grad(const std::string& name, std::int64_t elements) {
    return add(name, elements, Role::kOutput).add("d_" + name, elements, Role::kGradInput);
  }
  std::vector<OpTensor> take() { return std::move(tensors_); }

 private:
  std::vector<OpTensor> tensors_;
};

std::vector<OpTensor> elementwise_unary(std::int64_t elements) {
  return TensorList().input_and_grad("x", elements).output_and_grad("y", elements).take();
}

}  // namespace

std::vector<OpTensor> op_tensors(const LayerOp& op, const Workload& workload) {
  const std::int64_t T = workload.tokens(), B = workload.batch, S = workload.seq;
  return std::visit(
      Overloaded{
          [&](const TokenEmbeddingOp& o) {
            return TensorList()
                .add("ids", T, Role::kInput, Kind::kTokenId, o.vocab_size)
                .param_and_grad("table", o.vocab_size * o.dim)
                .output_and_grad("out", T * o.dim)
                .take();
          },
          [&](const PositionEmbeddingOp& o) {
            return TensorList()
                .add("x", T * o.dim, Role::kInput)
                .param_and_grad("table", o.positions * o.dim)
                .output_and_grad("out", T * o.dim)
                .take();
          },
          [&](const LinearOp& o) {
            TensorList list;
            list.input_and_grad("x", T * o.in_features).param_and_grad("weight", o.in_features * o.out_features);
            if (o.bias) list.param_and_grad("bias", o.out_features);
            return list.output_and_grad("y", T * o.out_features).take();
          },
          [&](const LayerNormOp& o) {
            return TensorList()
                .input_and_grad("x", T * o.dim)
                .param_and_grad("weight", o.dim)
                .param_and_grad("bias", o.dim)
                .output_and_grad("y", T * o.dim)
                .add("mean", T, Role::kOutput, Kind::kFloat32)
                .add("rstd", T, Role::kOutput, Kind::kFloat32)
                .take();
          },
          [&](const RmsNormOp& o) {
            return TensorList()
                .input_and_grad("x", T * o.dim)
                .param_and_grad("weight", o.dim)
                .output_and_grad("y", T * o.dim)
                .add("rstd", T, Role::kOutput, Kind::kFloat32)
                .take();
          },
          [&](const GeluOp& o) { return elementwise_unary(T * o.width); },
          [&](const SiluOp& o) { return elementwise_unary(T * o.width); },
          [&](const GatedProductOp& o) {
            return TensorList()
                .input_and_grad("a", T * o.width)
                .input_and_grad("b", T * o.width)
                .output_and_grad("y", T * o.width)
                .take();
          },
          [&](const ResidualAddOp& o) {
            // The backward adds the branch's gradient into the residual stream's (model/cpu/kernels.hpp).
            return TensorList()
                .add("a", T * o.width, Role::kInput)
                .add("b", T * o.width, Role::kInput)
                .add("y", T * o.width, Role::kOutput)
                .add("d_branch", T * o.width, Role::kGradInput)
                .add("d_stream", T * o.width, Role::kGradAccumulate)
                .take();
          },
          [&](const DropoutOp& o) {
            if (o.p == 0) return std::vector<OpTensor>{};
            return TensorList()
                .input_and_grad("x", T * o.width)
                .output_and_grad("y", T * o.width)
                .add("mask", T * o.width, Role::kOutput, Kind::kMask)
                .take();
          },
          [&](const RotaryApplyOp& o) {
            const AttentionHeads& a = o.shape;
            return TensorList()
                .add("cos", T * a.head_dim, Role::kInput)
                .add("sin", T * a.head_dim, Role::kInput)
                .input_and_grad("q", T * a.heads * a.head_dim)
                .input_and_grad("k", T * a.kv_heads * a.head_dim)
                .output_and_grad("q_out", T * a.heads * a.head_dim)
                .output_and_grad("k_out", T * a.kv_heads * a.head_dim)
                .take();
          },
          [&](const RotaryTableOp& o) {
            return TensorList()
                .add("cos", T * o.head_dim, Role::kOutput)
                .add("sin", T * o.head_dim, Role::kOutput)
                .take();
          },
          [&](const AttentionScoresOp& o) {
            const AttentionHeads& a = o.shape;
            return TensorList()
                .input_and_grad("q", T * a.heads * a.head_dim)
                .input_and_grad("k", T * a.kv_heads * a.head_dim)
                .output_and_grad("probs", B * a.heads * S * S)
                .take();
          },
          [&](const AttentionContextOp& o) {
            const AttentionHeads& a = o.shape;
            TensorList list;
            list.input_and_grad("probs", B * a.heads * S * S)
                .input_and_grad("v", T * a.kv_heads * a.head_dim)
                .output_and_grad("out", T * a.heads * a.head_dim);
            if (o.dropout_p > 0) list.add("mask", B * a.heads * S * S, Role::kOutput, Kind::kMask);
            return list.take();
          },
          [&](const CrossEntropyOp& o) {
            return TensorList()
                .input_and_grad("logits", T * o.vocab_size)
                .add("targets", T, Role::kInput, Kind::kTokenId, o.vocab_size)
                .add("losses", T, Role::kOutput, Kind::kFloat32)
                .add("lse", T, Role::kOutput, Kind::kFloat32)
                .take();
          },
      },
      op);
}

bool op_has_backward(const LayerOp& op) { return !std::holds_alternative<RotaryTableOp>(op); }

std::int64_t tensor_element_bytes(TensorKind kind, Dtype dtype) {
  switch (kind) {
    case TensorKind::kValue: return dtype_size_bytes(dtype);
    case TensorKind::kFloat32: return 4;
    case TensorKind::kTokenId: return kTokenIdBytes;
    case TensorKind::kMask: return 1;
  }
  SYNCPLAN_CHECK(false);
  return 0;
}

std::int64_t op_tensor_bytes(const std::vector<OpTensor>& tensors, Dtype dtype) {
  std::int64_t total = 0;
  for (const OpTensor& tensor : tensors) total += tensor.elements * tensor_element_bytes(tensor.kind, dtype);
  return total;
}

void require_elements(std::size_t actual, std::int64_t expected, const char* name) {
  if (expected < 0 || actual != static_cast<std::size_t>(expected))
    throw InternalError(std::string("kernel tensor '") + name + "' has " + std::to_string(actual) +
                        " elements, expected " + std::to_string(expected));
}

}  // namespace syncplan
