// The layers of a model as computations: each leaf module's parameter shapes and the operations
// (ops) charged to it, with their forward and backward FLOPs and bytes moved (docs/models.md).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <variant>
#include <vector>

namespace syncplan {

// ---------------------------------------------------------------------------------------------
// Workload: what one training step computes on one worker
// ---------------------------------------------------------------------------------------------

/// Element type of parameters, activations and gradients (the model runs wholly in it).
enum class Dtype {
  kFp32,  ///< IEEE single precision, 4 bytes
  kBf16,  ///< bfloat16, 2 bytes
};

/// Bytes per element: 4 for fp32, 2 for bf16.
std::int64_t dtype_size_bytes(Dtype dtype);
/// "fp32" or "bf16".
const char* dtype_name(Dtype dtype);
/// Parses "fp32" or "bf16"; throws FieldError(where) "WHERE: unknown dtype 'X' (known: fp32, bf16)"
/// (`where` is the request field, e.g. "dtype"; the command line names its flag).
Dtype parse_dtype(const std::string& text, const std::string& where);

/// Bytes of one token id (PyTorch's int64 `input_ids`, `labels` and `position_ids`).
inline constexpr std::int64_t kTokenIdBytes = 8;

/// One worker's training step: `batch` sequences of `seq` tokens, in `dtype`.
struct Workload {
  std::int64_t batch = 1;       ///< sequences per step (B), >= 1
  std::int64_t seq = 1;         ///< tokens per sequence (S), >= 1
  Dtype dtype = Dtype::kFp32;   ///< element type of parameters and activations
  std::int64_t tokens() const { return batch * seq; }  ///< T = B S
};

// ---------------------------------------------------------------------------------------------
// Ops: the computations a layer performs. Sizes are the architecture's; the batch and sequence
// come from a Workload. Activations are [B, S, width] ("T x width", T = B S) unless said otherwise;
// every formula is in docs/models.md section 3, and the kernels of the profiler implement these.
// ---------------------------------------------------------------------------------------------

/// Token embedding lookup: ids [B, S] -> rows of a [vocab_size, dim] table.
struct TokenEmbeddingOp {
  std::int64_t vocab_size = 0;
  std::int64_t dim = 0;
};

/// Learned position embedding: rows 0..S-1 of a [positions, dim] table, added to the token
/// embeddings (GPT-2's `wte(ids) + wpe(positions)`; the addition is charged here).
struct PositionEmbeddingOp {
  std::int64_t positions = 0;
  std::int64_t dim = 0;
};

/// y = x W (+ b): x [T, in_features] -> y [T, out_features]. nn.Linear and HF's Conv1D alike
/// (they differ only in how the weight is stored, see ParamTensor).
struct LinearOp {
  std::int64_t in_features = 0;
  std::int64_t out_features = 0;
  bool bias = false;
};

/// Layer norm over the last dimension with weight and bias: [T, dim] -> [T, dim].
struct LayerNormOp {
  std::int64_t dim = 0;
  double eps = 0;
};

/// RMS norm (Llama) with weight, no bias: [T, dim] -> [T, dim].
struct RmsNormOp {
  std::int64_t dim = 0;
  double eps = 0;
};

/// GELU, tanh approximation (GPT-2's "gelu_new"), elementwise on [T, width].
struct GeluOp {
  std::int64_t width = 0;
};

/// SiLU x sigmoid(x), elementwise on [T, width] (Llama's act_fn).
struct SiluOp {
  std::int64_t width = 0;
};

/// Elementwise product of two [T, width] tensors (SwiGLU's act_fn(gate) * up).
struct GatedProductOp {
  std::int64_t width = 0;
};

/// Residual addition of two [T, width] tensors.
struct ResidualAddOp {
  std::int64_t width = 0;
};

/// Dropout with probability p on [T, width]; p = 0 is the identity and costs nothing (PyTorch
/// returns its input unchanged).
struct DropoutOp {
  double p = 0;
  std::int64_t width = 0;
};

/// The head layout of one attention: `heads` query heads and `kv_heads` key/value heads (fewer
/// in grouped-query attention), each of `head_dim` elements.
struct AttentionHeads {
  std::int64_t heads = 0;
  std::int64_t kv_heads = 0;
  std::int64_t head_dim = 0;
};

/// Rotary position embedding applied to the queries [T, heads * head_dim] and keys
/// [T, kv_heads * head_dim], with cos/sin tables [B, S, head_dim].
struct RotaryApplyOp {
  AttentionHeads shape;
};

/// The cos/sin tables of rotary embeddings for positions 0..S-1: [B, S, head_dim] each
/// (Llama's model.rotary_emb). No gradient.
struct RotaryTableOp {
  std::int64_t head_dim = 0;
  double theta = 0;
};

/// Causal attention scores: P = softmax(mask(Q K^T / sqrt(head_dim))) per head, Q [T, heads *
/// head_dim], K [T, kv_heads * head_dim] -> P [B, heads, S, S]. The full S x S matrix is
/// computed, as Hugging Face's eager attention does.
struct AttentionScoresOp {
  AttentionHeads shape;
};

/// Attention output: O = dropout_p(P) V with P [B, heads, S, S], V [T, kv_heads * head_dim],
/// merged to O [T, heads * head_dim].
struct AttentionContextOp {
  AttentionHeads shape;
  double dropout_p = 0;
};

/// Mean cross-entropy of logits [T, vocab_size] against the next-token labels (the loss of
/// GPT2LMHeadModel / LlamaForCausalLM).
struct CrossEntropyOp {
  std::int64_t vocab_size = 0;
};

/// One computation charged to a layer.
using LayerOp = std::variant<TokenEmbeddingOp, PositionEmbeddingOp, LinearOp, LayerNormOp, RmsNormOp, GeluOp,
                             SiluOp, GatedProductOp, ResidualAddOp, DropoutOp, RotaryApplyOp, RotaryTableOp,
                             AttentionScoresOp, AttentionContextOp, CrossEntropyOp>;

/// The op's name in docs/models.md: "token_embedding", "linear", "attention_scores", ...
const char* op_name(const LayerOp& op);

// ---------------------------------------------------------------------------------------------
// Layers
// ---------------------------------------------------------------------------------------------

/// The PyTorch/Hugging Face class of a leaf module.
enum class ModuleKind {
  kEmbedding,         ///< torch.nn.Embedding
  kLinear,            ///< torch.nn.Linear (weight [out, in])
  kConv1D,            ///< transformers' Conv1D (GPT-2; weight [in, out])
  kLayerNorm,         ///< torch.nn.LayerNorm
  kRmsNorm,           ///< LlamaRMSNorm
  kGelu,              ///< NewGELUActivation (GPT-2's "gelu_new")
  kSilu,              ///< torch.nn.SiLU (Llama's act_fn)
  kDropout,           ///< torch.nn.Dropout
  kRotaryEmbedding,   ///< LlamaRotaryEmbedding
};

/// The class name as PyTorch prints it: "Embedding", "Conv1D", "LlamaRMSNorm", ...
const char* module_kind_name(ModuleKind kind);

/// How a projection stores its weight matrix: HF Conv1D as [in, out] (y = x W), nn.Linear as
/// [out, in] (y = x W^T).
enum class WeightLayout {
  kInOut,  ///< [in_features, out_features]: transformers' Conv1D (GPT-2)
  kOutIn,  ///< [out_features, in_features]: torch.nn.Linear (Llama, lm_head)
};

/// The layout of `kind`'s weight: kOutIn for kLinear, kInOut otherwise.
WeightLayout weight_layout(ModuleKind kind);

/// One parameter tensor of a module, with PyTorch's name and shape (e.g. Conv1D's "weight"
/// [in, out], nn.Linear's "weight" [out, in]).
struct ParamTensor {
  std::string name;                 ///< "weight" or "bias"
  std::vector<std::int64_t> shape;  ///< dimensions, outermost first
  std::int64_t count() const;       ///< product of `shape` (elements)
};

/// One leaf module of the model, in the profile's layer order (docs/models.md section 2).
struct ModelLayer {
  std::string name;                    ///< Hugging Face module name, e.g. "transformer.h.0.attn.c_attn"
  ModuleKind module = ModuleKind::kLinear;
  std::vector<ParamTensor> params;     ///< tensors the module computes with (a tied module's belong to its owner)
  std::optional<std::string> tied_to;  ///< the layer owning `params` (GPT-2's lm_head -> transformer.wte)
  bool frozen = false;                 ///< parameters not trained (the spec's `frozen`): never synced
  std::vector<LayerOp> ops;            ///< computations charged to this layer, in forward execution order

  /// Parameters this layer owns (count): the sum over `params`, or 0 when tied_to is set, so that
  /// a model's layers add up to its parameter count with shared tensors counted once.
  std::int64_t param_count() const;
};

// ---------------------------------------------------------------------------------------------
// Work: FLOPs and bytes moved (docs/models.md section 3)
// ---------------------------------------------------------------------------------------------

/// FLOPs and bytes of one pass (forward or backward) of an op or layer.
struct PassWork {
  double matmul_flops = 0;  ///< FLOPs in matrix products, 2 m n k per product (tensor cores in bf16)
  double vector_flops = 0;  ///< elementwise and reduction FLOPs (one per add, multiply, exp, ...)
  double bytes = 0;         ///< bytes read plus bytes written, each tensor once (a fused kernel)
  double flops() const { return matmul_flops + vector_flops; }
  PassWork& operator+=(const PassWork& other);
};

/// Forward and backward work of an op or a layer for one training step.
struct StepWork {
  PassWork forward;
  PassWork backward;  ///< gradients of inputs and parameters
  StepWork& operator+=(const StepWork& other);
};

/// The work of `op` for `workload` (docs/models.md section 3 gives each formula).
StepWork op_work(const LayerOp& op, const Workload& workload);

/// The sum of op_work over the layer's ops.
StepWork layer_work(const ModelLayer& layer, const Workload& workload);

}  // namespace syncplan
