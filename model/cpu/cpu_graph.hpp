// The CPU backend of the layer graph: its arenas as host fp32 buffers and each layer's forward
// and backward run with the Eigen kernels (model/cpu/kernels.hpp); the CPU profiler times it and
// the CPU runtime trains with it (docs/models.md section 6).
#pragma once

#include "model/layer_graph.hpp"

#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace syncplan::cpu {

/// Refuses, before anything is allocated, a CPU job whose buffers the host cannot hold: the
/// graph's buffers for `workload` in fp32 (LayerGraph::total_bytes: parameters, gradients,
/// activations and their gradients) plus `extra_bytes` (what the job keeps beside them, e.g.
/// AdamW's two moments, 8 bytes per parameter), against available_memory_bytes() (core/host_memory.hpp).
/// `job` names the job in the message ("cpu profile", "cpu run"). Throws FieldError("batch",
/// "batch B x seq S: the cpu run of MODEL needs X GiB of buffers, more than the Y GiB available; ...").
void require_host_memory(const Model& model, const Workload& workload, double extra_bytes, const std::string& job);

/// A model's layer graph with all its buffers allocated once on the host (fp32), as llm.c's
/// train_gpt2.c keeps its parameters, gradients, activations and activation gradients.
///
/// One training step: set_batch, zero_gradients, forward(0..L-1), backward(L-1..0), then an
/// optimizer over parameters() and gradients(). forward(i) needs forward(0..i-1) of the same batch
/// before it, backward(i) needs the full forward and backward(L-1..i+1) (a broken order is a bug of
/// the caller and computes garbage, it is not detected).
class CpuGraph {
 public:
  /// Builds the graph of `model` for `workload` and allocates its buffers (zeros; ids 0, targets
  /// ignored). Throws InputError when workload.dtype is not fp32 ("--dtype bf16: ...") or the
  /// sequence is longer than the model's (check_workload).
  CpuGraph(const Model& model, const Workload& workload);
  /// Allocates the buffers of a graph built elsewhere (a one-op graph, model/op_graph.hpp); the
  /// same errors for its workload's dtype.
  explicit CpuGraph(LayerGraph graph);

  const LayerGraph& graph() const { return graph_; }
  std::size_t layer_count() const { return graph_.layers.size(); }

  /// Sets every parameter as initialize_parameters(graph(), seed) says.
  void initialize_parameters(std::uint64_t seed);

  /// The batch: token ids [T] (t = b S + s) in [0, vocab_size), and targets [T], each the next
  /// token's id or negative to ignore (PyTorch's -100; a sequence's last token has no next one).
  /// Throws InputError naming the position when a length or an id is wrong.
  void set_batch(std::span<const std::int64_t> ids, std::span<const std::int64_t> targets);

  /// The seed dropout masks are drawn from (dropout_seed per dropout op); change it per step for
  /// fresh masks. Default 0.
  void set_dropout_seed(std::uint64_t seed) { dropout_seed_ = seed; }

  /// Runs layer `layer`'s forward: its steps in order. The last layer's computes the loss.
  void forward(std::size_t layer);
  /// Runs layer `layer`'s backward: its steps in reverse, from d_loss = 1 at the last layer. Adds
  /// into the parameter gradients.
  void backward(std::size_t layer);

  /// Zeroes the parameter gradients (once per step: the backward accumulates into them).
  void zero_gradients();
  /// zero_gradients, forward of every layer, backward of every layer; returns loss().
  double forward_backward();

  /// The mean cross-entropy of the last forward over the counted targets, summed in double from
  /// the per-token losses (0 before any forward, and for a graph without a cross-entropy).
  double loss() const;

  /// The whole parameter arena [parameter_elements] and its gradients (same layout).
  std::span<float> parameters() { return parameters_; }
  std::span<float> gradients() { return gradients_; }
  std::span<const float> parameters() const { return parameters_; }
  std::span<const float> gradients() const { return gradients_; }

  /// Layer `layer`'s parameter tensors (its owner's when tied), one span per GraphParam, and their
  /// gradients: a bucket of layers is the concatenation of these lists.
  std::vector<std::span<float>> layer_parameters(std::size_t layer);
  std::vector<std::span<float>> layer_gradients(std::size_t layer);
  /// Parameters layer `layer` owns (0 when tied).
  std::int64_t param_count(std::size_t layer) const { return graph_.layers.at(layer).param_count; }
  /// Whether layer `layer` computes with another layer's parameters (sync those with the owner).
  bool tied(std::size_t layer) const { return graph_.layers.at(layer).tied; }

  /// The elements of tensor `ref` of graph() (any arena but kMasks); InternalError when it lies
  /// outside its arena.
  std::span<float> at(const TensorRef& ref);
  /// The bytes of mask `ref` (kMasks); InternalError when it lies outside the arena.
  std::span<std::uint8_t> mask(const TensorRef& ref);

 private:
  std::span<float> arena(Arena arena);
  std::span<const float> in(const TensorRef& ref) { return at(ref); }
  void run(const GraphStep& step, bool forward);

  LayerGraph graph_;
  std::vector<float> parameters_, gradients_, activations_, activation_grads_;
  std::vector<std::uint8_t> masks_;
  std::vector<std::int64_t> ids_, targets_;
  std::uint64_t dropout_seed_ = 0;
  TensorRef losses_;  // the cross-entropy's per-token losses
};

}  // namespace syncplan::cpu
