// Device buffers per op and the dispatch of each op's pass to its CUDA launcher.
#include "model/cuda/ops.cuh"

#include "core/errors.hpp"
#include "core/cublas_check.hpp"
#include "core/cuda_check.hpp"
#include "model/cuda/kernels.cuh"
#include "core/overloaded.hpp"

#include <string>
#include <utility>

namespace syncplan::cuda {

// ---------------------------------------------------------------------------------------------
// Context and buffers. Destructors ignore errors: they also run while a LibraryError unwinds.
// ---------------------------------------------------------------------------------------------

CudaContext::CudaContext() {
  SYNCPLAN_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
  try {
    SYNCPLAN_CUBLAS_CHECK(cublasCreate(&blas_));
    SYNCPLAN_CUBLAS_CHECK(cublasSetStream(blas_, stream_));
  } catch (...) {
    if (blas_ != nullptr) cublasDestroy(blas_);
    cudaStreamDestroy(stream_);
    throw;
  }
}

CudaContext::~CudaContext() {
  cublasDestroy(blas_);
  cudaStreamDestroy(stream_);
}

DeviceBuffer::DeviceBuffer(std::size_t bytes) : bytes_(bytes) {
  if (bytes == 0) return;
  const cudaError_t error = cudaMalloc(&data_, bytes);
  if (error == cudaErrorMemoryAllocation) {
    cudaGetLastError();  // not a sticky error: clear it, or the next launch check would report it
    data_ = nullptr;
    throw DeviceOutOfMemory("CUDA: cudaMalloc of " + std::to_string(bytes) + " bytes failed: out of memory");
  }
  if (error != cudaSuccess)
    report_library_error("CUDA", "cudaMalloc(&data_, bytes)", cudaGetErrorString(error), __FILE__, __LINE__);
}

DeviceBuffer::~DeviceBuffer() {
  if (data_ != nullptr) cudaFree(data_);
}

DeviceBuffer::DeviceBuffer(DeviceBuffer&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)), bytes_(std::exchange(other.bytes_, 0)) {}

DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& other) noexcept {
  if (this != &other) {
    if (data_ != nullptr) cudaFree(data_);
    data_ = std::exchange(other.data_, nullptr);
    bytes_ = std::exchange(other.bytes_, 0);
  }
  return *this;
}

std::int64_t op_workspace_elements(const LayerOp& op, const Workload& workload) {
  const auto scores = [&](const AttentionHeads& a) { return workload.batch * a.heads * workload.seq * workload.seq; };
  if (const auto* o = std::get_if<AttentionScoresOp>(&op)) return scores(o->shape);
  if (const auto* o = std::get_if<AttentionContextOp>(&op)) return o->dropout_p > 0 ? scores(o->shape) : 0;
  return 0;
}

// ---------------------------------------------------------------------------------------------
// Device tensors
// ---------------------------------------------------------------------------------------------

namespace {

template <class Element>
std::int64_t element_bytes(TensorKind kind) {
  return tensor_element_bytes(kind, sizeof(Element) == 2 ? Dtype::kBf16 : Dtype::kFp32);
}

template <class Element>
std::span<Element> typed(const DeviceBuffer& buffer) {
  return {static_cast<Element*>(buffer.data()), buffer.bytes() / sizeof(Element)};
}

}  // namespace

template <class Element>
DeviceTensors<Element>::DeviceTensors(std::vector<OpTensor> tensors, std::int64_t workspace_elements,
                                      std::uint64_t seed, cudaStream_t stream)
    : tensors_(std::move(tensors)) {
  buffers_.reserve(tensors_.size() + 1);
  for (std::size_t i = 0; i < tensors_.size(); ++i) {
    const OpTensor& tensor = tensors_[i];
    const DeviceBuffer& buffer =
        buffers_.emplace_back(static_cast<std::size_t>(tensor.elements * element_bytes<Element>(tensor.kind)));
    const bool random = tensor.role == TensorRole::kInput || tensor.role == TensorRole::kGradInput;
    const std::uint64_t fill_stream = tensor_fill_stream(seed, i);
    if (random && tensor.kind == TensorKind::kValue) fill_uniform(fill_stream, typed<Element>(buffer), stream);
    else if (random && tensor.kind == TensorKind::kFloat32) fill_uniform(fill_stream, typed<float>(buffer), stream);
    else if (tensor.kind == TensorKind::kTokenId)
      fill_ids(fill_stream, tensor.id_bound, typed<std::int64_t>(buffer), stream);
    else SYNCPLAN_CUDA_CHECK(cudaMemsetAsync(buffer.data(), 0, buffer.bytes(), stream));
  }
  buffers_.emplace_back(static_cast<std::size_t>(workspace_elements) * sizeof(Element));
}

template <class Element>
const OpTensor* DeviceTensors<Element>::find(const std::string& name, std::size_t& index) const {
  for (index = 0; index < tensors_.size(); ++index)
    if (tensors_[index].name == name) return &tensors_[index];
  return nullptr;
}

template <class Element>
std::span<Element> DeviceTensors<Element>::values(const std::string& name) const {
  std::size_t i = 0;
  const OpTensor* tensor = find(name, i);
  if (tensor == nullptr) return {};
  SYNCPLAN_CHECK(tensor->kind == TensorKind::kValue);
  return typed<Element>(buffers_[i]);
}

template <class Element>
std::span<float> DeviceTensors<Element>::stats(const std::string& name) const {
  std::size_t i = 0;
  const OpTensor* tensor = find(name, i);
  if (tensor == nullptr) throw InternalError("DeviceTensors: no fp32 tensor '" + name + "'");
  SYNCPLAN_CHECK(tensor->kind == TensorKind::kFloat32);
  return typed<float>(buffers_[i]);
}

template <class Element>
std::span<std::int64_t> DeviceTensors<Element>::ids(const std::string& name) const {
  std::size_t i = 0;
  const OpTensor* tensor = find(name, i);
  if (tensor == nullptr) throw InternalError("DeviceTensors: no token-id tensor '" + name + "'");
  SYNCPLAN_CHECK(tensor->kind == TensorKind::kTokenId);
  return typed<std::int64_t>(buffers_[i]);
}

template <class Element>
std::span<std::uint8_t> DeviceTensors<Element>::mask(const std::string& name) const {
  std::size_t i = 0;
  const OpTensor* tensor = find(name, i);
  if (tensor == nullptr) return {};
  SYNCPLAN_CHECK(tensor->kind == TensorKind::kMask);
  return typed<std::uint8_t>(buffers_[i]);
}

template <class Element>
std::span<Element> DeviceTensors<Element>::workspace() const {
  return typed<Element>(buffers_.back());
}

template <class Element>
std::vector<float> DeviceTensors<Element>::host_floats(const std::string& name, cudaStream_t stream) const {
  std::size_t i = 0;
  const OpTensor* tensor = find(name, i);
  if (tensor == nullptr) throw InternalError("DeviceTensors: no tensor '" + name + "'");
  const auto n = static_cast<std::size_t>(tensor->elements);
  std::vector<float> result(n);
  if (tensor->kind == TensorKind::kFloat32 || std::is_same_v<Element, float>) {
    SYNCPLAN_CHECK(tensor->kind != TensorKind::kTokenId && tensor->kind != TensorKind::kMask);
    SYNCPLAN_CUDA_CHECK(cudaMemcpyAsync(result.data(), buffers_[i].data(), n * sizeof(float), cudaMemcpyDeviceToHost,
                                        stream));
    SYNCPLAN_CUDA_CHECK(cudaStreamSynchronize(stream));
    return result;
  }
  SYNCPLAN_CHECK(tensor->kind == TensorKind::kValue);
  std::vector<Element> raw(n);
  SYNCPLAN_CUDA_CHECK(
      cudaMemcpyAsync(raw.data(), buffers_[i].data(), n * sizeof(Element), cudaMemcpyDeviceToHost, stream));
  SYNCPLAN_CUDA_CHECK(cudaStreamSynchronize(stream));
  for (std::size_t e = 0; e < n; ++e) result[e] = static_cast<float>(raw[e]);
  return result;
}

template <class Element>
std::vector<std::uint8_t> DeviceTensors<Element>::host_mask(const std::string& name, cudaStream_t stream) const {
  const std::span<std::uint8_t> device = mask(name);
  std::vector<std::uint8_t> result(device.size());
  SYNCPLAN_CUDA_CHECK(cudaMemcpyAsync(result.data(), device.data(), device.size(), cudaMemcpyDeviceToHost, stream));
  SYNCPLAN_CUDA_CHECK(cudaStreamSynchronize(stream));
  return result;
}

// ---------------------------------------------------------------------------------------------
// One pass of one op (mirrors run_op_cpu)
// ---------------------------------------------------------------------------------------------

template <class Element>
void run_op_cuda(const LayerOp& op, const Workload& workload, Pass pass, const DeviceTensors<Element>& t,
                 std::uint64_t seed, const CudaContext& context) {
  const std::int64_t T = workload.tokens(), B = workload.batch, S = workload.seq;
  const bool forward = pass == Pass::kForward;
  const cudaStream_t stream = context.stream();
  const cublasHandle_t blas = context.blas();
  const auto in = [&t](const char* name) { return std::span<const Element>(t.values(name)); };
  const auto out = [&t](const char* name) { return t.values(name); };
  const auto stat = [&t](const char* name) { return std::span<const float>(t.stats(name)); };
  const auto ids = [&t](const char* name) { return std::span<const std::int64_t>(t.ids(name)); };
  std::visit(
      Overloaded{
          [&](const TokenEmbeddingOp& o) {
            if (forward) token_embedding_forward(o, ids("ids"), in("table"), out("out"), stream);
            else token_embedding_backward(o, ids("ids"), in("d_out"), out("d_table"), stream);
          },
          [&](const PositionEmbeddingOp& o) {
            if (forward) position_embedding_forward(o, B, S, in("x"), in("table"), out("out"), stream);
            else position_embedding_backward(o, B, S, in("d_out"), out("d_table"), stream);
          },
          [&](const LinearOp& o) {
            if (forward) linear_forward(o, T, in("x"), in("weight"), in("bias"), out("y"), blas, stream);
            else
              linear_backward(o, T, in("d_y"), in("x"), in("weight"), out("d_x"), out("d_weight"), out("d_bias"), blas,
                              stream);
          },
          [&](const LayerNormOp& o) {
            if (forward)
              layer_norm_forward(o, T, in("x"), in("weight"), in("bias"), out("y"), t.stats("mean"), t.stats("rstd"),
                                 stream);
            else
              layer_norm_backward(o, T, in("d_y"), in("x"), in("weight"), stat("mean"), stat("rstd"), out("d_x"),
                                  out("d_weight"), out("d_bias"), stream);
          },
          [&](const RmsNormOp& o) {
            if (forward) rms_norm_forward(o, T, in("x"), in("weight"), out("y"), t.stats("rstd"), stream);
            else
              rms_norm_backward(o, T, in("d_y"), in("x"), in("weight"), stat("rstd"), out("d_x"), out("d_weight"),
                                stream);
          },
          [&](const GeluOp&) {
            if (forward) gelu_forward(in("x"), out("y"), stream);
            else gelu_backward(in("d_y"), in("x"), out("d_x"), stream);
          },
          [&](const SiluOp&) {
            if (forward) silu_forward(in("x"), out("y"), stream);
            else silu_backward(in("d_y"), in("x"), out("d_x"), stream);
          },
          [&](const GatedProductOp&) {
            if (forward) gated_product_forward(in("a"), in("b"), out("y"), stream);
            else gated_product_backward(in("d_y"), in("a"), in("b"), out("d_a"), out("d_b"), stream);
          },
          [&](const ResidualAddOp&) {
            if (forward) residual_add_forward(in("a"), in("b"), out("y"), stream);
            else residual_add_backward(in("d_branch"), out("d_stream"), stream);
          },
          [&](const DropoutOp& o) {
            if (o.p == 0) return;  // the identity: no kernel (op_tensors lists nothing)
            if (forward) dropout_forward(o, seed, in("x"), out("y"), t.mask("mask"), stream);
            else dropout_backward(o, in("d_y"), std::span<const std::uint8_t>(t.mask("mask")), out("d_x"), stream);
          },
          [&](const RotaryApplyOp& o) {
            const AttentionHeads& a = o.shape;
            if (forward) {
              rotary_forward(a.heads, a.head_dim, T, in("cos"), in("sin"), in("q"), out("q_out"), stream);
              rotary_forward(a.kv_heads, a.head_dim, T, in("cos"), in("sin"), in("k"), out("k_out"), stream);
            } else {
              rotary_backward(a.heads, a.head_dim, T, in("cos"), in("sin"), in("d_q_out"), out("d_q"), stream);
              rotary_backward(a.kv_heads, a.head_dim, T, in("cos"), in("sin"), in("d_k_out"), out("d_k"), stream);
            }
          },
          [&](const RotaryTableOp& o) {
            if (forward) rotary_table_forward(o, B, S, out("cos"), out("sin"), stream);
          },
          [&](const AttentionScoresOp& o) {
            if (forward) attention_scores_forward(o.shape, B, S, in("q"), in("k"), out("probs"), blas, stream);
            else
              attention_scores_backward(o.shape, B, S, in("d_probs"), in("probs"), in("q"), in("k"), out("d_q"),
                                        out("d_k"), t.workspace(), blas, stream);
          },
          [&](const AttentionContextOp& o) {
            if (forward)
              attention_context_forward(o, B, S, seed, in("probs"), in("v"), t.mask("mask"), out("out"), t.workspace(),
                                        blas, stream);
            else
              attention_context_backward(o, B, S, in("d_out"), in("probs"), in("v"),
                                         std::span<const std::uint8_t>(t.mask("mask")), out("d_probs"), out("d_v"),
                                         t.workspace(), blas, stream);
          },
          [&](const CrossEntropyOp& o) {
            if (forward) cross_entropy_forward(o, T, in("logits"), ids("targets"), t.stats("losses"), t.stats("lse"), stream);
            else
              cross_entropy_backward(o, T, in("logits"), ids("targets"), stat("lse"), 1.0f, T, out("d_logits"), stream);
          },
      },
      op);
}

template class DeviceTensors<float>;
template class DeviceTensors<__nv_bfloat16>;
template void run_op_cuda<float>(const LayerOp&, const Workload&, Pass, const DeviceTensors<float>&, std::uint64_t,
                                 const CudaContext&);
template void run_op_cuda<__nv_bfloat16>(const LayerOp&, const Workload&, Pass, const DeviceTensors<__nv_bfloat16>&,
                                         std::uint64_t, const CudaContext&);

}  // namespace syncplan::cuda
