// The CUDA backend of the layer graph: its arenas as device buffers in the workload's dtype and
// each layer's forward and backward run with the CUDA launchers (model/cuda/kernels.cuh); the CUDA
// profiler times it and the GPU runtime trains with it (docs/models.md section 6).
#pragma once

#include "model/layer_graph.hpp"
#include "model/cuda/device_buffer.cuh"

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <utility>
#include <vector>

namespace syncplan::cuda {

/// `elements` values of `dtype` at `data` in device memory: one tensor of a CudaGraph arena, as a
/// communicator's bucket takes it.
struct DeviceSpan {
  void* data = nullptr;
  std::int64_t elements = 0;
  Dtype dtype = Dtype::kFp32;
  std::int64_t bytes() const { return elements * dtype_size_bytes(dtype); }
};

/// Bytes of device memory a CudaGraph of `graph` allocates: the five arenas (parameters,
/// gradients, activations and activation gradients in graph.workload.dtype, masks one byte each),
/// the fp32 statistics, the token ids and targets, and the attention scratch
/// ([B, heads, S, S], plus contiguous copies of strided q, k, v and their gradients).
std::int64_t cuda_graph_bytes(const LayerGraph& graph);

/// A model's layer graph with all its buffers allocated once on CUDA device 0 (the current
/// device): the same LayerGraph as cpu::CpuGraph, stored in the workload's dtype (fp32 or bf16),
/// with the saved statistics (norms' mean and rstd, the loss's per-token losses and lse) in fp32,
/// as the kernels take them.
///
/// One training step, as on the CPU: set_batch, zero_gradients, forward(0..L-1), backward(L-1..0),
/// then an optimizer over the parameter and gradient spans. Every method that takes a stream only
/// enqueues work on it (asynchronous) unless it says it synchronizes; forward(i) needs forward
/// (0..i-1) of the same batch before it on the same stream, backward(i) the full forward and
/// backward(L-1..i+1) (a broken order computes garbage and is not detected). One graph runs on one
/// stream at a time: its attention scratch is shared by every layer.
///
/// GPT-2's q, k and v are column slices of c_attn's [T, 3d] output, while the attention launchers
/// take contiguous [T, heads head_dim] tensors: a strided operand is copied into the scratch
/// (cudaMemcpy2DAsync) before the launch, and a strided gradient copied back after it. The
/// profiler's attention layers include these copies, as training does.
class CudaGraph {
 public:
  /// Builds the graph of `model` for `workload` and allocates its device buffers (zeros; ids 0,
  /// targets ignored). Throws InputError when workload.dtype is neither fp32 nor bf16, when the
  /// sequence is longer than the model's (check_workload), or when the buffers and 1 GiB of
  /// headroom exceed the device's free memory ("--batch B --seq S: the cuda layer graph of MODEL
  /// needs X GiB ..."); LibraryError when a CUDA or cuBLAS call fails.
  CudaGraph(const Model& model, const Workload& workload);
  /// Allocates the buffers of a graph built elsewhere (a one-op graph, model/op_graph.hpp); the
  /// same errors for its workload's dtype and size.
  explicit CudaGraph(LayerGraph graph);
  ~CudaGraph();
  CudaGraph(const CudaGraph&) = delete;
  CudaGraph& operator=(const CudaGraph&) = delete;

  const LayerGraph& graph() const { return graph_; }
  std::size_t layer_count() const { return graph_.layers.size(); }
  Dtype dtype() const { return graph_.workload.dtype; }

  /// Sets every parameter as initialize_parameters(graph(), seed) says: drawn in fp32 on the host
  /// (the CPU's numbers), rounded to the dtype, copied. Synchronizes `stream`.
  void initialize_parameters(std::uint64_t seed, cudaStream_t stream);
  /// Copies `values` [parameter_elements] (fp32, the kParameters layout) into the parameters,
  /// rounded to the dtype. Synchronizes `stream`. InternalError on a wrong length.
  void set_parameters(std::span<const float> values, cudaStream_t stream);

  /// The batch: token ids [T] (t = b S + s) in [0, vocab_size), and targets [T], each the next
  /// token's id or negative to ignore. Throws InputError naming the position when a length or an
  /// id is wrong (check_token_batch). Copies to the device and synchronizes `stream`.
  void set_batch(std::span<const std::int64_t> ids, std::span<const std::int64_t> targets, cudaStream_t stream);

  /// The seed dropout masks are drawn from (dropout_seed per dropout op, the CPU's masks); change
  /// it per step for fresh masks. Default 0.
  void set_dropout_seed(std::uint64_t seed) { dropout_seed_ = seed; }

  /// Enqueues layer `layer`'s forward: its steps in order. The last layer's computes the
  /// per-token losses.
  void forward(std::size_t layer, cudaStream_t stream);
  /// Enqueues layer `layer`'s backward: its steps in reverse, from d_loss = 1 at the last layer
  /// (the mean over the counted targets). Adds into the parameter gradients.
  void backward(std::size_t layer, cudaStream_t stream);

  /// Enqueues the zeroing of the parameter gradients (once per step: the backward adds into them).
  void zero_gradients(cudaStream_t stream);
  /// zero_gradients, forward of every layer, backward of every layer; returns loss(stream).
  double forward_backward(cudaStream_t stream);

  /// The mean cross-entropy of the last forward over the counted targets, summed in double from
  /// the fp32 per-token losses (0 before any forward, and for a graph without a cross-entropy).
  /// Synchronizes `stream`.
  double loss(cudaStream_t stream) const;

  /// The whole parameter arena [parameter_elements] and its gradients (same layout), on the device.
  DeviceSpan parameters() const;
  DeviceSpan gradients() const;
  /// Layer `layer`'s parameter tensors (its owner's when tied), one span per GraphParam, and their
  /// gradients: a bucket of layers is the concatenation of these lists.
  std::vector<DeviceSpan> layer_parameters(std::size_t layer) const;
  std::vector<DeviceSpan> layer_gradients(std::size_t layer) const;
  /// Parameters layer `layer` owns (0 when tied).
  std::int64_t param_count(std::size_t layer) const { return graph_.layers.at(layer).param_count; }
  /// Whether layer `layer` computes with another layer's parameters (sync those with the owner).
  bool tied(std::size_t layer) const { return graph_.layers.at(layer).tied; }

  /// The parameter (kParameters) or gradient (kGradients) arena copied to the host as fp32, after
  /// the stream's work so far. Synchronizes `stream`. InternalError for another arena.
  std::vector<float> host_copy(Arena arena, cudaStream_t stream) const;

  /// Tensor `ref` of graph() (any arena but kMasks; a saved statistic from its fp32 store) copied
  /// to the host as fp32, after the stream's work so far. Synchronizes `stream`. InternalError
  /// when it lies outside its arena.
  std::vector<float> host_tensor(const TensorRef& ref, cudaStream_t stream) const;
  /// Copies `values` [ref.elements] (fp32) into tensor `ref`, rounded to the dtype (statistics stay
  /// fp32). Synchronizes `stream`. InternalError on a wrong length.
  void set_tensor(const TensorRef& ref, std::span<const float> values, cudaStream_t stream);
  /// Mask `ref` (kMasks) copied to the host. Synchronizes `stream`.
  std::vector<std::uint8_t> host_mask(const TensorRef& ref, cudaStream_t stream) const;

 private:
  template <class Element>
  void run(const GraphStep& step, bool forward, cudaStream_t stream);
  void run_layer(std::size_t layer, bool forward, cudaStream_t stream);
  void* arena_data(Arena arena) const;
  template <class Element>
  std::span<Element> at(const TensorRef& ref) const;
  std::span<float> stat(const TensorRef& ref) const;
  std::span<std::uint8_t> mask(const TensorRef& ref) const;
  DeviceSpan span_of(Arena arena, const TensorRef& ref) const;
  // The saved statistic at `ref` ((activation offset, stats offset)), or nullptr for another tensor.
  const std::pair<std::int64_t, std::int64_t>* find_stat(const TensorRef& ref) const;
  // A tensor's device memory: a statistic's fp32 store, else its arena's elements in the dtype.
  struct DeviceTensor {
    void* data = nullptr;
    std::size_t bytes = 0;
    bool fp32 = false;  // stored as fp32 (a statistic, or an fp32 graph)
  };
  DeviceTensor device_tensor(const TensorRef& ref) const;

  LayerGraph graph_;
  cublasHandle_t blas_ = nullptr;
  std::vector<DeviceBuffer> buffers_;  // the arenas, statistics, ids, targets and scratch
  // The four value arenas in the order of Arena (kParameters .. kActivationGrads), in the dtype.
  std::array<void*, 4> value_arenas_{};
  void* parameters_ = nullptr;        // value_arenas_[kParameters]
  void* gradients_ = nullptr;         // value_arenas_[kGradients]
  std::uint8_t* masks_ = nullptr;
  float* stats_ = nullptr;            // the fp32 statistics, compacted (stat_offsets_)
  std::int64_t* ids_ = nullptr;
  std::int64_t* targets_ = nullptr;
  void* workspace_ = nullptr;         // the attention kernels' [B, heads, S, S] scratch
  void* staging_ = nullptr;           // contiguous copies of strided attention operands
  std::int64_t staging_elements_ = 0;
  std::vector<std::pair<std::int64_t, std::int64_t>> stat_offsets_;  // (activation offset, stats offset), sorted
  std::vector<std::int64_t> host_targets_;
  std::int64_t counted_targets_ = 0;  // targets >= 0 of the batch
  std::uint64_t dropout_seed_ = 0;
  TensorRef losses_;                  // the cross-entropy's per-token losses
};

}  // namespace syncplan::cuda
