// The layer graph on the device: arenas in the workload's dtype, and one CUDA launcher call
// (model/cuda/kernels.cuh) per step and pass, mirroring model/cpu/cpu_graph.cpp step for step.
#include "model/cuda/cuda_graph.cuh"

#include "core/cublas_check.hpp"
#include "core/cuda_check.hpp"
#include "core/errors.hpp"
#include "core/overloaded.hpp"
#include "model/cuda/kernels.cuh"
#include "model/require_elements.hpp"

#include <cuda_bf16.h>

#include <algorithm>
#include <iomanip>
#include <sstream>
#include <utility>

namespace syncplan::cuda {

namespace {

constexpr double kBytesPerGiB = 1024.0 * 1024.0 * 1024.0;
// Device memory left free beyond the graph's buffers: cuBLAS's workspace and the kernels' modules
// as they load lazily (the CUDA profiler keeps the same headroom).
constexpr std::int64_t kHeadroomBytes = std::int64_t{1} << 30;

// Bytes as GiB with one decimal, e.g. "23.4".
std::string gib_text(double bytes) {
  std::ostringstream text;
  text << std::fixed << std::setprecision(1) << bytes / kBytesPerGiB;
  return text.str();
}

// The saved statistics of every step (fp32 on the device): the norms' mean and rstd, the loss's
// per-token losses and lse. They are activation-arena refs in the graph; here they get an arena
// of their own.
std::vector<TensorRef> stat_refs(const LayerGraph& graph) {
  std::vector<TensorRef> refs;
  for (const GraphLayer& layer : graph.layers)
    for (const GraphStep& step : layer.steps)
      std::visit(Overloaded{
                     [&](const LayerNormStep& s) { refs.insert(refs.end(), {s.mean, s.rstd}); },
                     [&](const RmsNormStep& s) { refs.push_back(s.rstd); },
                     [&](const CrossEntropyStep& s) { refs.insert(refs.end(), {s.losses, s.lse}); },
                     [](const auto&) {},
                 },
                 step);
  return refs;
}

bool strided(const StridedRef& ref) { return ref.row_stride != ref.width; }

// Elements of contiguous copies a step's strided attention operands need: q, k, d_q, d_k of the
// scores; v, d_v of the context (the backward takes them all, the forward the first ones).
std::int64_t staging_elements(const GraphStep& step) {
  const auto sum = [](std::initializer_list<const StridedRef*> refs) {
    std::int64_t elements = 0;
    for (const StridedRef* ref : refs)
      if (strided(*ref)) elements += ref->rows * ref->width;
    return elements;
  };
  if (const auto* s = std::get_if<AttentionScoresStep>(&step)) return sum({&s->q, &s->k, &s->d_q, &s->d_k});
  if (const auto* s = std::get_if<AttentionContextStep>(&step)) return sum({&s->v, &s->d_v});
  return 0;
}

// Scratch elements of a step's attention launcher: [B, heads, S, S] for the scores' backward and
// for the context with dropout, else 0.
std::int64_t workspace_elements(const GraphStep& step, const Workload& workload) {
  const auto scores = [&](const AttentionHeads& a) { return workload.batch * a.heads * workload.seq * workload.seq; };
  if (const auto* s = std::get_if<AttentionScoresStep>(&step)) return scores(s->op.shape);
  if (const auto* s = std::get_if<AttentionContextStep>(&step)) return s->op.dropout_p > 0 ? scores(s->op.shape) : 0;
  return 0;
}

struct ScratchSizes {
  std::int64_t workspace = 0, staging = 0;  // elements of the dtype
};

ScratchSizes scratch_sizes(const LayerGraph& graph) {
  ScratchSizes sizes;
  for (const GraphLayer& layer : graph.layers)
    for (const GraphStep& step : layer.steps) {
      sizes.workspace = std::max(sizes.workspace, workspace_elements(step, graph.workload));
      sizes.staging = std::max(sizes.staging, staging_elements(step));
    }
  return sizes;
}

// Consecutive slots of the staging buffer, handed out to one step's strided operands.
template <class Element>
class Slots {
 public:
  explicit Slots(std::span<Element> staging) : rest_(staging) {}
  std::span<Element> take(std::int64_t elements) {
    SYNCPLAN_CHECK(elements <= static_cast<std::int64_t>(rest_.size()));
    const std::span<Element> slot = rest_.first(static_cast<std::size_t>(elements));
    rest_ = rest_.subspan(slot.size());
    return slot;
  }

 private:
  std::span<Element> rest_;
};

// Copies a [rows, width] matrix between row strides (elements), on the device.
template <class Element>
void copy_rows(Element* to, std::int64_t to_stride, const Element* from, std::int64_t from_stride, std::int64_t rows,
               std::int64_t width, cudaStream_t stream) {
  constexpr auto size = sizeof(Element);
  SYNCPLAN_CUDA_CHECK(cudaMemcpy2DAsync(to, static_cast<std::size_t>(to_stride) * size, from,
                                        static_cast<std::size_t>(from_stride) * size,
                                        static_cast<std::size_t>(width) * size, static_cast<std::size_t>(rows),
                                        cudaMemcpyDeviceToDevice, stream));
}

template <class Element>
std::vector<Element> to_dtype(std::span<const float> values) {
  std::vector<Element> result(values.size());
  for (std::size_t i = 0; i < values.size(); ++i) result[i] = static_cast<Element>(values[i]);
  return result;
}

}  // namespace

std::int64_t cuda_graph_bytes(const LayerGraph& graph) {
  const std::int64_t element = dtype_size_bytes(graph.workload.dtype);
  const ScratchSizes scratch = scratch_sizes(graph);
  return graph.total_bytes(element) + static_cast<std::int64_t>(stat_refs(graph).size()) * graph.workload.tokens() *
                                          static_cast<std::int64_t>(sizeof(float)) +
         element * (scratch.workspace + scratch.staging);
}

// ---------------------------------------------------------------------------------------------
// Construction and buffers. The destructor ignores errors: it also runs while an error unwinds.
// ---------------------------------------------------------------------------------------------

namespace {

// The workload, unless its dtype is neither fp32 nor bf16 (checked before the graph is built).
const Workload& require_device_dtype(const Workload& workload) {
  if (workload.dtype != Dtype::kFp32 && workload.dtype != Dtype::kBf16)
    throw InputError(std::string("--dtype ") + dtype_name(workload.dtype) +
                     ": the CUDA layer graph computes in fp32 or bf16; use --dtype fp32 or bf16");
  return workload;
}

}  // namespace

CudaGraph::CudaGraph(const Model& model, const Workload& workload)
    : CudaGraph(build_layer_graph(model, require_device_dtype(workload))) {}

CudaGraph::CudaGraph(LayerGraph graph) : graph_(std::move(graph)) {
  const Workload& workload = require_device_dtype(graph_.workload);
  const std::int64_t needed = cuda_graph_bytes(graph_);
  int device = 0;
  SYNCPLAN_CUDA_CHECK(cudaGetDevice(&device));
  cudaDeviceProp properties{};
  SYNCPLAN_CUDA_CHECK(cudaGetDeviceProperties(&properties, device));
  std::size_t free_bytes = 0, total_bytes = 0;
  SYNCPLAN_CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total_bytes));
  const std::string too_large = "--batch " + std::to_string(workload.batch) + " --seq " +
                                std::to_string(workload.seq) + ": the cuda layer graph of " + graph_.model + " needs " +
                                gib_text(static_cast<double>(needed)) + " GiB of device memory (and " +
                                gib_text(static_cast<double>(kHeadroomBytes)) + " GiB to spare), more than the " +
                                gib_text(static_cast<double>(free_bytes)) + " GiB free on " + properties.name +
                                "; use a smaller batch or sequence";
  if (needed + kHeadroomBytes > static_cast<std::int64_t>(free_bytes)) throw InputError(too_large);

  const auto element = static_cast<std::size_t>(dtype_size_bytes(workload.dtype));
  const std::vector<TensorRef> stats = stat_refs(graph_);
  const ScratchSizes scratch = scratch_sizes(graph_);
  const auto elements = [](std::int64_t count) { return static_cast<std::size_t>(count); };
  const std::size_t T = elements(workload.tokens());
  try {
    const auto allocate = [&](std::size_t bytes) { return buffers_.emplace_back(bytes).data(); };
    buffers_.reserve(10);
    for (const Arena arena : {Arena::kParameters, Arena::kGradients, Arena::kActivations, Arena::kActivationGrads})
      value_arenas_[static_cast<std::size_t>(arena)] = allocate(elements(graph_.arena_elements(arena)) * element);
    parameters_ = value_arenas_[static_cast<std::size_t>(Arena::kParameters)];
    gradients_ = value_arenas_[static_cast<std::size_t>(Arena::kGradients)];
    masks_ = static_cast<std::uint8_t*>(allocate(elements(graph_.mask_elements)));
    stats_ = static_cast<float*>(allocate(stats.size() * T * sizeof(float)));
    ids_ = static_cast<std::int64_t*>(allocate(T * sizeof(std::int64_t)));
    targets_ = static_cast<std::int64_t*>(allocate(T * sizeof(std::int64_t)));
    workspace_ = allocate(elements(scratch.workspace) * element);
    staging_ = allocate(elements(scratch.staging) * element);
  } catch (const DeviceOutOfMemory&) {
    throw InputError(too_large + " (cudaMalloc ran out)");  // the headroom was too small: still bad input
  }
  for (const DeviceBuffer& buffer : buffers_)
    if (buffer.bytes() > 0) SYNCPLAN_CUDA_CHECK(cudaMemset(buffer.data(), 0, buffer.bytes()));
  const std::vector<std::int64_t> ignored(T, -1);  // no target counts until set_batch
  SYNCPLAN_CUDA_CHECK(cudaMemcpy(targets_, ignored.data(), T * sizeof(std::int64_t), cudaMemcpyHostToDevice));
  // The legacy default stream's memsets and copy are not ordered before a non-blocking stream's work.
  SYNCPLAN_CUDA_CHECK(cudaDeviceSynchronize());
  host_targets_ = ignored;
  staging_elements_ = scratch.staging;

  for (std::size_t i = 0; i < stats.size(); ++i) {
    SYNCPLAN_CHECK(stats[i].arena == Arena::kActivations && stats[i].elements == workload.tokens());
    stat_offsets_.emplace_back(stats[i].offset, static_cast<std::int64_t>(i * T));
  }
  std::sort(stat_offsets_.begin(), stat_offsets_.end());
  if (!graph_.layers.empty() && !graph_.layers.back().steps.empty())
    if (const auto* loss = std::get_if<CrossEntropyStep>(&graph_.layers.back().steps.back())) losses_ = loss->losses;
  SYNCPLAN_CUBLAS_CHECK(cublasCreate(&blas_));
}

CudaGraph::~CudaGraph() {
  if (blas_ != nullptr) cublasDestroy(blas_);
}

static_assert(static_cast<std::size_t>(Arena::kActivationGrads) == 3 && static_cast<std::size_t>(Arena::kMasks) == 4,
              "value_arenas_ is indexed by the four value arenas, which come first");

void* CudaGraph::arena_data(Arena arena) const {
  if (arena == Arena::kMasks) throw InternalError("CudaGraph: the mask arena holds bytes, not values");
  return value_arenas_.at(static_cast<std::size_t>(arena));
}

template <class Element>
std::span<Element> CudaGraph::at(const TensorRef& ref) const {
  SYNCPLAN_CHECK(sizeof(Element) == static_cast<std::size_t>(dtype_size_bytes(dtype())));
  SYNCPLAN_CHECK(ref.offset >= 0 && ref.elements >= 0 && ref.offset + ref.elements <= graph_.arena_elements(ref.arena));
  return {static_cast<Element*>(arena_data(ref.arena)) + ref.offset, static_cast<std::size_t>(ref.elements)};
}

const std::pair<std::int64_t, std::int64_t>* CudaGraph::find_stat(const TensorRef& ref) const {
  const auto found = std::lower_bound(stat_offsets_.begin(), stat_offsets_.end(), std::make_pair(ref.offset, std::int64_t{0}));
  if (ref.arena != Arena::kActivations || found == stat_offsets_.end() || found->first != ref.offset) return nullptr;
  return &*found;
}

std::span<float> CudaGraph::stat(const TensorRef& ref) const {
  const auto* found = find_stat(ref);
  SYNCPLAN_CHECK(found != nullptr && ref.elements == graph_.workload.tokens());
  return {stats_ + found->second, static_cast<std::size_t>(ref.elements)};
}

std::span<std::uint8_t> CudaGraph::mask(const TensorRef& ref) const {
  SYNCPLAN_CHECK(ref.arena == Arena::kMasks && ref.offset >= 0 && ref.offset + ref.elements <= graph_.mask_elements);
  return {masks_ + ref.offset, static_cast<std::size_t>(ref.elements)};
}

DeviceSpan CudaGraph::span_of(Arena arena, const TensorRef& ref) const {
  SYNCPLAN_CHECK(ref.offset >= 0 && ref.offset + ref.elements <= graph_.parameter_elements);
  auto* base = static_cast<std::uint8_t*>(arena_data(arena));
  return {base + ref.offset * dtype_size_bytes(dtype()), ref.elements, dtype()};
}

DeviceSpan CudaGraph::parameters() const { return {parameters_, graph_.parameter_elements, dtype()}; }
DeviceSpan CudaGraph::gradients() const { return {gradients_, graph_.parameter_elements, dtype()}; }

std::vector<DeviceSpan> CudaGraph::layer_parameters(std::size_t layer) const {
  std::vector<DeviceSpan> spans;
  for (const GraphParam& param : graph_.layers.at(layer).params) spans.push_back(span_of(Arena::kParameters, param.value));
  return spans;
}

std::vector<DeviceSpan> CudaGraph::layer_gradients(std::size_t layer) const {
  std::vector<DeviceSpan> spans;
  for (const GraphParam& param : graph_.layers.at(layer).params) spans.push_back(span_of(Arena::kGradients, param.value));
  return spans;
}

// ---------------------------------------------------------------------------------------------
// Host transfers
// ---------------------------------------------------------------------------------------------

void CudaGraph::initialize_parameters(std::uint64_t seed, cudaStream_t stream) {
  std::vector<float> values(static_cast<std::size_t>(graph_.parameter_elements));
  syncplan::initialize_parameters(graph_, seed, values);
  set_parameters(values, stream);
}

void CudaGraph::set_parameters(std::span<const float> values, cudaStream_t stream) {
  require_elements(values.size(), graph_.parameter_elements, "parameters");
  set_tensor({Arena::kParameters, 0, graph_.parameter_elements}, values, stream);
}

void CudaGraph::set_batch(std::span<const std::int64_t> ids, std::span<const std::int64_t> targets,
                          cudaStream_t stream) {
  check_token_batch(graph_, ids, targets);
  const std::size_t bytes = ids.size() * sizeof(std::int64_t);
  SYNCPLAN_CUDA_CHECK(cudaMemcpyAsync(ids_, ids.data(), bytes, cudaMemcpyHostToDevice, stream));
  SYNCPLAN_CUDA_CHECK(cudaMemcpyAsync(targets_, targets.data(), bytes, cudaMemcpyHostToDevice, stream));
  SYNCPLAN_CUDA_CHECK(cudaStreamSynchronize(stream));
  host_targets_.assign(targets.begin(), targets.end());
  counted_targets_ = std::count_if(targets.begin(), targets.end(), [](std::int64_t t) { return t >= 0; });
}

CudaGraph::DeviceTensor CudaGraph::device_tensor(const TensorRef& ref) const {
  if (find_stat(ref) != nullptr) {
    const std::span<float> values = stat(ref);
    return {values.data(), values.size_bytes(), true};
  }
  SYNCPLAN_CHECK(ref.offset >= 0 && ref.elements >= 0 && ref.offset + ref.elements <= graph_.arena_elements(ref.arena));
  const std::int64_t element = dtype_size_bytes(dtype());
  return {static_cast<std::uint8_t*>(arena_data(ref.arena)) + ref.offset * element,
          static_cast<std::size_t>(ref.elements * element), dtype() == Dtype::kFp32};
}

std::vector<float> CudaGraph::host_tensor(const TensorRef& ref, cudaStream_t stream) const {
  const DeviceTensor device = device_tensor(ref);
  const auto n = static_cast<std::size_t>(ref.elements);
  std::vector<float> result(n);
  if (device.fp32) {
    SYNCPLAN_CUDA_CHECK(cudaMemcpyAsync(result.data(), device.data, device.bytes, cudaMemcpyDeviceToHost, stream));
    SYNCPLAN_CUDA_CHECK(cudaStreamSynchronize(stream));
    return result;
  }
  std::vector<__nv_bfloat16> raw(n);
  SYNCPLAN_CUDA_CHECK(cudaMemcpyAsync(raw.data(), device.data, device.bytes, cudaMemcpyDeviceToHost, stream));
  SYNCPLAN_CUDA_CHECK(cudaStreamSynchronize(stream));
  for (std::size_t e = 0; e < n; ++e) result[e] = static_cast<float>(raw[e]);
  return result;
}

void CudaGraph::set_tensor(const TensorRef& ref, std::span<const float> values, cudaStream_t stream) {
  require_elements(values.size(), ref.elements, "set_tensor");
  const DeviceTensor device = device_tensor(ref);
  if (device.fp32) {
    SYNCPLAN_CUDA_CHECK(cudaMemcpyAsync(device.data, values.data(), device.bytes, cudaMemcpyHostToDevice, stream));
    SYNCPLAN_CUDA_CHECK(cudaStreamSynchronize(stream));
    return;
  }
  const std::vector<__nv_bfloat16> rounded = to_dtype<__nv_bfloat16>(values);
  SYNCPLAN_CUDA_CHECK(cudaMemcpyAsync(device.data, rounded.data(), device.bytes, cudaMemcpyHostToDevice, stream));
  SYNCPLAN_CUDA_CHECK(cudaStreamSynchronize(stream));
}

std::vector<std::uint8_t> CudaGraph::host_mask(const TensorRef& ref, cudaStream_t stream) const {
  const std::span<std::uint8_t> device = mask(ref);
  std::vector<std::uint8_t> result(device.size());
  SYNCPLAN_CUDA_CHECK(cudaMemcpyAsync(result.data(), device.data(), device.size(), cudaMemcpyDeviceToHost, stream));
  SYNCPLAN_CUDA_CHECK(cudaStreamSynchronize(stream));
  return result;
}

std::vector<float> CudaGraph::host_copy(Arena arena, cudaStream_t stream) const {
  if (arena != Arena::kParameters && arena != Arena::kGradients)
    throw InternalError("CudaGraph::host_copy: only the parameter and gradient arenas");
  return host_tensor({arena, 0, graph_.parameter_elements}, stream);
}

double CudaGraph::loss(cudaStream_t stream) const {
  if (losses_.elements == 0) return 0.0;
  const std::span<float> device = stat(losses_);
  std::vector<float> losses(device.size());
  SYNCPLAN_CUDA_CHECK(
      cudaMemcpyAsync(losses.data(), device.data(), device.size() * sizeof(float), cudaMemcpyDeviceToHost, stream));
  SYNCPLAN_CUDA_CHECK(cudaStreamSynchronize(stream));
  double total = 0;
  for (std::size_t t = 0; t < losses.size(); ++t)
    if (host_targets_[t] >= 0) total += static_cast<double>(losses[t]);
  return counted_targets_ == 0 ? 0.0 : total / static_cast<double>(counted_targets_);
}

// ---------------------------------------------------------------------------------------------
// Passes
// ---------------------------------------------------------------------------------------------

void CudaGraph::zero_gradients(cudaStream_t stream) {
  SYNCPLAN_CUDA_CHECK(cudaMemsetAsync(gradients_, 0, static_cast<std::size_t>(gradients().bytes()), stream));
}

void CudaGraph::run_layer(std::size_t layer, bool forward, cudaStream_t stream) {
  const std::vector<GraphStep>& steps = graph_.layers.at(layer).steps;
  const auto each = [&](auto&& run_step) {
    if (forward)
      for (const GraphStep& step : steps) run_step(step);
    else
      for (auto it = steps.rbegin(); it != steps.rend(); ++it) run_step(*it);
  };
  if (dtype() == Dtype::kBf16) each([&](const GraphStep& step) { run<__nv_bfloat16>(step, forward, stream); });
  else each([&](const GraphStep& step) { run<float>(step, forward, stream); });
}

void CudaGraph::forward(std::size_t layer, cudaStream_t stream) { run_layer(layer, true, stream); }
void CudaGraph::backward(std::size_t layer, cudaStream_t stream) { run_layer(layer, false, stream); }

double CudaGraph::forward_backward(cudaStream_t stream) {
  zero_gradients(stream);
  for (std::size_t i = 0; i < layer_count(); ++i) forward(i, stream);
  for (std::size_t i = layer_count(); i-- > 0;) backward(i, stream);
  return loss(stream);
}

// One step, one pass: the CUDA launcher of cpu_graph.cpp's kernel call, argument for argument.
template <class Element>
void CudaGraph::run(const GraphStep& step, bool forward, cudaStream_t stream) {
  using E = Element;
  const Workload& w = graph_.workload;
  const std::int64_t T = w.tokens(), B = w.batch, S = w.seq;
  const std::span<const std::int64_t> ids(ids_, static_cast<std::size_t>(T)), targets(targets_, static_cast<std::size_t>(T));
  const auto in = [&](const TensorRef& ref) { return std::span<const E>(at<E>(ref)); };
  const auto out = [&](const TensorRef& ref) { return at<E>(ref); };
  const auto workspace = [&](std::int64_t elements) {
    return std::span<E>(static_cast<E*>(workspace_), static_cast<std::size_t>(elements));
  };
  Slots<E> slots(std::span<E>(static_cast<E*>(staging_), static_cast<std::size_t>(staging_elements_)));
  const auto whole = [&](const StridedRef& ref) { return at<E>({ref.arena, ref.offset, ref.span_elements()}); };
  // A strided attention operand as the contiguous tensor the launcher takes: the arena's own
  // elements when row_stride == width, else a slot (copied into when `fill`).
  const auto contiguous = [&](const StridedRef& ref, bool fill) {
    if (!strided(ref)) return whole(ref);
    const std::span<E> slot = slots.take(ref.rows * ref.width);
    if (fill) copy_rows(slot.data(), ref.width, whole(ref).data(), ref.row_stride, ref.rows, ref.width, stream);
    return slot;
  };
  const auto copy_back = [&](const StridedRef& ref, std::span<E> written) {
    if (strided(ref)) copy_rows(whole(ref).data(), ref.row_stride, written.data(), ref.width, ref.rows, ref.width, stream);
  };
  // A norm's or projection's input gradient: written, or added through the scratch.
  const auto input_gradient = [&](bool accumulate, const TensorRef& d_x, const TensorRef& scratch) {
    return accumulate ? out(scratch) : out(d_x);
  };
  const auto finish_input_gradient = [&](bool accumulate, const TensorRef& d_x, const TensorRef& scratch) {
    if (accumulate) residual_add_backward<E>(in(scratch), out(d_x), stream);
  };
  std::visit(
      Overloaded{
          [&](const TokenEmbeddingStep& s) {
            if (forward) token_embedding_forward<E>(s.op, ids, in(s.table), out(s.out), stream);
            else token_embedding_backward<E>(s.op, ids, in(s.d_out), out(s.d_table), stream);
          },
          [&](const PositionEmbeddingStep& s) {
            if (forward) position_embedding_forward<E>(s.op, B, S, in(s.x), in(s.table), out(s.out), stream);
            else position_embedding_backward<E>(s.op, B, S, in(s.d_out), out(s.d_table), stream);
          },
          [&](const LinearStep& s) {
            if (forward)
              return linear_forward<E>(s.op, T, in(s.x), in(s.weight), in(s.bias), out(s.y), blas_, stream, s.layout);
            linear_backward<E>(s.op, T, in(s.d_y), in(s.x), in(s.weight),
                               input_gradient(s.accumulate_d_x, s.d_x, s.d_x_scratch), out(s.d_weight), out(s.d_bias),
                               blas_, stream, s.layout);
            finish_input_gradient(s.accumulate_d_x, s.d_x, s.d_x_scratch);
          },
          [&](const LayerNormStep& s) {
            if (forward)
              return layer_norm_forward<E>(s.op, T, in(s.x), in(s.weight), in(s.bias), out(s.y), stat(s.mean),
                                           stat(s.rstd), stream);
            layer_norm_backward<E>(s.op, T, in(s.d_y), in(s.x), in(s.weight), stat(s.mean), stat(s.rstd),
                                   input_gradient(s.accumulate_d_x, s.d_x, s.d_x_scratch), out(s.d_weight),
                                   out(s.d_bias), stream);
            finish_input_gradient(s.accumulate_d_x, s.d_x, s.d_x_scratch);
          },
          [&](const RmsNormStep& s) {
            if (forward) return rms_norm_forward<E>(s.op, T, in(s.x), in(s.weight), out(s.y), stat(s.rstd), stream);
            rms_norm_backward<E>(s.op, T, in(s.d_y), in(s.x), in(s.weight), stat(s.rstd),
                                 input_gradient(s.accumulate_d_x, s.d_x, s.d_x_scratch), out(s.d_weight), stream);
            finish_input_gradient(s.accumulate_d_x, s.d_x, s.d_x_scratch);
          },
          [&](const ActivationStep& s) {
            const bool gelu = std::holds_alternative<GeluOp>(s.op);
            SYNCPLAN_CHECK(gelu || std::holds_alternative<SiluOp>(s.op));
            if (forward) (gelu ? gelu_forward<E> : silu_forward<E>)(in(s.x), out(s.y), stream);
            else (gelu ? gelu_backward<E> : silu_backward<E>)(in(s.d_y), in(s.x), out(s.d_x), stream);
          },
          [&](const GatedProductStep& s) {
            if (forward) gated_product_forward<E>(in(s.a), in(s.b), out(s.y), stream);
            else gated_product_backward<E>(in(s.d_y), in(s.a), in(s.b), out(s.d_a), out(s.d_b), stream);
          },
          [&](const ResidualAddStep& s) {
            if (forward) return residual_add_forward<E>(in(s.stream), in(s.branch), out(s.y), stream);
            // The stream's gradient starts as the sum's; the norm reading the stream adds its part.
            const std::span<const E> d_y = in(s.d_y);
            const std::span<E> d_stream = out(s.d_stream);
            require_elements(d_stream.size(), static_cast<std::int64_t>(d_y.size()), "d_stream");
            SYNCPLAN_CUDA_CHECK(
                cudaMemcpyAsync(d_stream.data(), d_y.data(), d_y.size_bytes(), cudaMemcpyDeviceToDevice, stream));
          },
          [&](const DropoutStep& s) {
            if (forward)
              dropout_forward<E>(s.op, dropout_seed(dropout_seed_, s.stream), in(s.x), out(s.y), mask(s.mask), stream);
            else dropout_backward<E>(s.op, in(s.d_y), mask(s.mask), out(s.d_x), stream);
          },
          [&](const RotaryTableStep& s) {
            if (forward) rotary_table_forward<E>(s.op, B, S, out(s.cos), out(s.sin), stream);
          },
          [&](const RotaryApplyStep& s) {
            const AttentionHeads& a = s.op.shape;
            if (forward) {
              rotary_forward<E>(a.heads, a.head_dim, T, in(s.cos), in(s.sin), in(s.q), out(s.q_out), stream);
              rotary_forward<E>(a.kv_heads, a.head_dim, T, in(s.cos), in(s.sin), in(s.k), out(s.k_out), stream);
            } else {
              rotary_backward<E>(a.heads, a.head_dim, T, in(s.cos), in(s.sin), in(s.d_q_out), out(s.d_q), stream);
              rotary_backward<E>(a.kv_heads, a.head_dim, T, in(s.cos), in(s.sin), in(s.d_k_out), out(s.d_k), stream);
            }
          },
          [&](const AttentionScoresStep& s) {
            const std::span<const E> q = contiguous(s.q, true), k = contiguous(s.k, true);
            if (forward) return attention_scores_forward<E>(s.op.shape, B, S, q, k, out(s.probs), blas_, stream);
            const std::span<E> d_q = contiguous(s.d_q, false), d_k = contiguous(s.d_k, false);
            attention_scores_backward<E>(s.op.shape, B, S, in(s.d_probs), in(s.probs), q, k, d_q, d_k,
                                         workspace(workspace_elements(step, w)), blas_, stream);
            copy_back(s.d_q, d_q);
            copy_back(s.d_k, d_k);
          },
          [&](const AttentionContextStep& s) {
            const std::span<std::uint8_t> m = s.mask.elements == 0 ? std::span<std::uint8_t>() : mask(s.mask);
            const std::span<const E> v = contiguous(s.v, true);
            const std::span<E> scratch = workspace(workspace_elements(step, w));
            if (forward)
              return attention_context_forward<E>(s.op, B, S, dropout_seed(dropout_seed_, s.stream), in(s.probs), v,
                                                  m, out(s.out), scratch, blas_, stream);
            const std::span<E> d_v = contiguous(s.d_v, false);
            attention_context_backward<E>(s.op, B, S, in(s.d_out), in(s.probs), v, m, out(s.d_probs), d_v, scratch,
                                          blas_, stream);
            copy_back(s.d_v, d_v);
          },
          [&](const CrossEntropyStep& s) {
            if (forward) cross_entropy_forward<E>(s.op, T, in(s.logits), targets, stat(s.losses), stat(s.lse), stream);
            else
              cross_entropy_backward<E>(s.op, T, in(s.logits), targets, stat(s.lse), 1.0f, counted_targets_,
                                        out(s.d_logits), stream);
          },
      },
      step);
}

}  // namespace syncplan::cuda
