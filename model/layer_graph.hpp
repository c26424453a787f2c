// The model as a trainable layer graph: every layer's ops bound to typed, persistent parameter,
// gradient and activation buffers, in forward call order (docs/models.md section 6). Device-
// independent: a backend (model/cpu/cpu_graph.hpp) allocates the arenas and runs the steps.
#pragma once

#include "model/model_spec.hpp"

#include <cstdint>
#include <span>
#include <string>
#include <variant>
#include <vector>

namespace syncplan {

// ---------------------------------------------------------------------------------------------
// Buffers. A graph has five arenas, each one flat allocation of a backend:
//  * parameters and their gradients share one layout (a layer's tensors are contiguous, in layer
//    order; a tied layer uses its owner's), so a bucket of layers is a list of spans;
//  * activations hold each op's outputs and what its backward reads (saved for the backward, as
//    llm.c's ActivationTensors); activation gradients mirror them, plus one shared scratch;
//  * masks hold dropout's one-byte masks.
// Elements are fp32 on the CPU (a device backend may store another dtype, same element counts).
// ---------------------------------------------------------------------------------------------

/// Which flat allocation a tensor lives in.
enum class Arena {
  kParameters,       ///< the model's parameters (param_count elements)
  kGradients,        ///< their gradients, same layout; accumulated (+=) by the backward, zeroed per step
  kActivations,      ///< every op's outputs and saved statistics, alive from forward to backward
  kActivationGrads,  ///< gradients of the activations, and the scratch of accumulated input gradients
  kMasks,            ///< dropout masks, one byte per element (1 = kept)
};

/// `elements` consecutive elements from `offset` in `arena`.
struct TensorRef {
  Arena arena = Arena::kActivations;
  std::int64_t offset = 0;    ///< first element (elements, not bytes)
  std::int64_t elements = 0;  ///< count; 0 for an absent tensor (a linear without bias)
};

/// A [rows, width] matrix whose row r starts at offset + r * row_stride: a column slice of a
/// wider tensor (GPT-2's query third of c_attn's [T, 3d] output has row_stride 3d).
struct StridedRef {
  Arena arena = Arena::kActivations;
  std::int64_t offset = 0;      ///< first element of row 0
  std::int64_t rows = 0;
  std::int64_t width = 0;
  std::int64_t row_stride = 0;  ///< >= width
  /// Elements from offset to the end of the last row: (rows - 1) row_stride + width.
  std::int64_t span_elements() const { return rows == 0 ? 0 : (rows - 1) * row_stride + width; }
};

// ---------------------------------------------------------------------------------------------
// Steps: one op of a layer with its tensors. Forward reads the inputs and writes the outputs;
// backward reads d_<output> and the saved tensors, writes d_<input> (=) and adds into parameter
// gradients (+=), as model/cpu/kernels.hpp states. Where an input feeds two ops (the residual
// stream into a norm and a residual addition; Llama's norm output into q, k and v), the op whose
// backward runs second has accumulate_d_x set: it writes its input gradient to `d_x_scratch` and
// adds that into d_x. Token ids and targets are the graph's [T] id buffers, not arena tensors.
// ---------------------------------------------------------------------------------------------

/// transformer.wte / model.embed_tokens: out = table[ids].
struct TokenEmbeddingStep {
  TokenEmbeddingOp op;
  TensorRef table, out;      // table [V, d] (kParameters), out [T, d]
  TensorRef d_table, d_out;  // d_table (kGradients), d_out [T, d]
};

/// transformer.wpe: out = x + table[0..S). The gradient of x is d_out itself (same buffer).
struct PositionEmbeddingStep {
  PositionEmbeddingOp op;
  TensorRef x, table, out;
  TensorRef d_table, d_out;
};

/// y = x W + b, with W stored as the module stores it (`layout`).
struct LinearStep {
  LinearOp op;
  WeightLayout layout = WeightLayout::kInOut;
  TensorRef x, weight, bias, y;          // bias empty when !op.bias
  TensorRef d_x, d_weight, d_bias, d_y;
  bool accumulate_d_x = false;           ///< add the input gradient into d_x (via d_x_scratch)
  TensorRef d_x_scratch;                 ///< T x in_features of the shared scratch, when accumulating
};

/// LayerNorm; saves mean and rstd [T].
struct LayerNormStep {
  LayerNormOp op;
  TensorRef x, weight, bias, y, mean, rstd;
  TensorRef d_x, d_weight, d_bias, d_y;
  bool accumulate_d_x = false;
  TensorRef d_x_scratch;
};

/// LlamaRMSNorm; saves rstd [T].
struct RmsNormStep {
  RmsNormOp op;
  TensorRef x, weight, y, rstd;
  TensorRef d_x, d_weight, d_y;
  bool accumulate_d_x = false;
  TensorRef d_x_scratch;
};

/// GELU (tanh) or SiLU elementwise: y = f(x), the backward recomputes from x.
struct ActivationStep {
  LayerOp op;  ///< GeluOp or SiluOp
  TensorRef x, y, d_x, d_y;
};

/// SwiGLU's product y = a b.
struct GatedProductStep {
  GatedProductOp op;
  TensorRef a, b, y, d_a, d_b, d_y;
};

/// y = stream + branch. Backward: d_stream = d_y (copied; the norm that also reads the stream adds
/// its part later); the branch's gradient is d_y itself (the builder aliases them).
struct ResidualAddStep {
  ResidualAddOp op;
  TensorRef stream, branch, y;
  TensorRef d_stream, d_y;
};

/// Dropout p > 0 (p = 0 is the identity: no step; its output aliases its input).
struct DropoutStep {
  DropoutOp op;
  std::uint64_t stream = 0;  ///< which dropout of the model: its mask is drawn from seed(stream)
  TensorRef x, y, mask;      // mask in kMasks
  TensorRef d_x, d_y;
};

/// model.rotary_emb: the cos/sin tables [T, head_dim]. No backward.
struct RotaryTableStep {
  RotaryTableOp op;
  TensorRef cos, sin;
};

/// Rotary application to q [T, h h_d] and k [T, g h_d].
struct RotaryApplyStep {
  RotaryApplyOp op;
  TensorRef cos, sin, q, k, q_out, k_out;
  TensorRef d_q, d_k, d_q_out, d_k_out;
};

/// P = softmax(mask(Q K^T / sqrt(h_d))), saved [B, h, S, S].
struct AttentionScoresStep {
  AttentionScoresOp op;
  StridedRef q, k;
  TensorRef probs;
  StridedRef d_q, d_k;
  TensorRef d_probs;
};

/// O = dropout(P) V, merged to [T, h h_d].
struct AttentionContextStep {
  AttentionContextOp op;
  std::uint64_t stream = 0;  ///< dropout stream when op.dropout_p > 0
  TensorRef probs;
  StridedRef v;
  TensorRef mask, out;       // mask empty when dropout_p = 0
  TensorRef d_probs;
  StridedRef d_v;
  TensorRef d_out;
};

/// Mean cross-entropy of logits [T, V] against the targets; saves per-token losses and lse [T].
/// Its backward starts from d_loss = 1.
struct CrossEntropyStep {
  CrossEntropyOp op;
  TensorRef logits, losses, lse, d_logits;
};

/// One op of a layer bound to its buffers.
using GraphStep = std::variant<TokenEmbeddingStep, PositionEmbeddingStep, LinearStep, LayerNormStep, RmsNormStep,
                               ActivationStep, GatedProductStep, ResidualAddStep, DropoutStep, RotaryTableStep,
                               RotaryApplyStep, AttentionScoresStep, AttentionContextStep, CrossEntropyStep>;

/// How a parameter tensor starts (initialize_parameters).
enum class ParamInit {
  kNormal,  ///< normal(0, init_std): embeddings and projection weights
  kOnes,    ///< norm weights
  kZeros,   ///< biases
};

/// One parameter tensor of a layer: where it lives (kParameters; its gradient at the same offset
/// in kGradients) and how it is initialized.
struct GraphParam {
  std::string name;     ///< "weight", "bias"
  TensorRef value;      ///< in kParameters (a tied layer's is its owner's)
  ParamInit init = ParamInit::kNormal;
  double init_std = 0;  ///< kNormal: 0.02, or 0.02 / sqrt(2 n_layer) for GPT-2's residual projections (c_proj)
};

/// One layer of the graph: the model's layer, its parameters and its steps in forward order.
struct GraphLayer {
  std::string name;
  std::vector<GraphParam> params;  ///< what it computes with; a tied layer's are its owner's
  bool tied = false;               ///< shares the owner's parameters (sync with the owner, not again)
  bool frozen = false;             ///< not trained (the spec's `frozen`): its gradients are never synced
  std::int64_t param_count = 0;    ///< parameters it owns (0 when tied), = ModelLayer::param_count()
  std::vector<GraphStep> steps;    ///< forward order; the backward runs them in reverse
  bool has_forward() const { return !steps.empty(); }
  /// Whether any step has a backward (not so for an empty layer or the rotary table alone).
  bool has_backward() const;
};

/// The layer graph of a model at a workload: shapes, buffers and wiring, no storage.
struct LayerGraph {
  std::string model;                      ///< the model's name
  Workload workload;                      ///< batch and sequence length the buffers are sized for
  std::int64_t vocab_size = 0;            ///< token ids and targets must be below it
  std::vector<GraphLayer> layers;         ///< the model's layers, same order and names
  std::int64_t parameter_elements = 0;    ///< size of kParameters and kGradients (= Model::param_count())
  std::int64_t activation_elements = 0;   ///< size of kActivations
  std::int64_t activation_grad_elements = 0;  ///< size of kActivationGrads (scratch included)
  std::int64_t mask_elements = 0;         ///< size of kMasks (bytes)

  /// Elements of `arena`.
  std::int64_t arena_elements(Arena arena) const;
  /// A new tensor of `elements` (>= 0) at the end of `arena`, which grows by that much (kGradients
  /// shares kParameters' layout: append parameters, their gradients sit at the same offsets).
  /// InternalError for kGradients or a negative count.
  TensorRef append(Arena arena, std::int64_t elements);
  /// Bytes of all arenas and the id buffers with `element_bytes` per value (4 for fp32).
  std::int64_t total_bytes(std::int64_t element_bytes) const;
};

/// Binds `model`'s layers to buffers for `workload` (docs/models.md section 6): GPT-2 and Llama.
/// Throws InputError from check_workload when seq exceeds max_position_embeddings.
LayerGraph build_layer_graph(const Model& model, const Workload& workload);

/// The initial parameters of `graph` (kParameters layout) from `seed`: each tensor as its
/// ParamInit says, the normal draws by Box-Muller from core/counter_random.hpp (a pure function
/// of seed, tensor index and element, so every backend starts from the same numbers). The
/// scheme is Hugging Face's _init_weights (GPT2PreTrainedModel, LlamaPreTrainedModel:
/// initializer_range 0.02, LayerNorm/RMSNorm weight 1 and bias 0, biases 0) with GPT-2's scaling
/// of the residual projections' weights by 1/sqrt(2 n_layer) (Radford et al. 2019, section 2.3).
/// `out` must have graph.parameter_elements elements (InternalError otherwise).
void initialize_parameters(const LayerGraph& graph, std::uint64_t seed, std::span<float> out);

/// Checks a batch for `graph` (every backend's set_batch): token ids [T] (t = b S + s) in
/// [0, vocab_size) and targets [T] below vocab_size, negative to ignore. Throws InputError naming
/// the position when a length or an id is wrong.
void check_token_batch(const LayerGraph& graph, std::span<const std::int64_t> ids,
                       std::span<const std::int64_t> targets);

/// A batch of token ids and targets, [T] each.
struct TokenBatch {
  std::vector<std::int64_t> ids, targets;
};

/// The profilers' batch: ids and targets uniform in [0, vocab_size) from `seed` (counter_index of
/// splitmix64(seed) and splitmix64(seed + 1)); the numbers change the time of no kernel but the
/// embedding's scatter.
TokenBatch random_token_batch(const LayerGraph& graph, std::uint64_t seed);

/// The seed of dropout stream `stream` in a step drawn with `seed` (DropoutStep::stream).
std::uint64_t dropout_seed(std::uint64_t seed, std::uint64_t stream);

}  // namespace syncplan
