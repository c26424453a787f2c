// The CUDA kernels and their launchers: simple kernels (a grid-stride loop per element, a warp
// per row, a 32 x 32 block per 32 columns) and cuBLAS GEMMs, in the order of kernels.cuh.
#include "model/cuda/kernels.cuh"

#include "core/errors.hpp"
#include "core/counter_random.hpp"
#include "core/cublas_check.hpp"
#include "core/cuda_check.hpp"
#include "model/gemm_plan.hpp"
#include "model/require_elements.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

namespace syncplan::cuda {

namespace {

// ---------------------------------------------------------------------------------------------
// Element conversions: storage in Element, arithmetic in fp32
// ---------------------------------------------------------------------------------------------

__device__ __forceinline__ float to_float(float value) { return value; }
__device__ __forceinline__ float to_float(__nv_bfloat16 value) { return __bfloat162float(value); }

template <class Element>
__device__ __forceinline__ Element from_float(float value);
template <>
__device__ __forceinline__ float from_float<float>(float value) {
  return value;
}
template <>
__device__ __forceinline__ __nv_bfloat16 from_float<__nv_bfloat16>(float value) {
  return __float2bfloat16(value);
}

__device__ __forceinline__ void atomic_add(float* address, float value) { atomicAdd(address, value); }
__device__ __forceinline__ void atomic_add(__nv_bfloat16* address, float value) {
  atomicAdd(address, __float2bfloat16(value));
}

__device__ __forceinline__ float warp_sum(float value) {
  for (int offset = 16; offset > 0; offset >>= 1) value += __shfl_xor_sync(0xffffffffu, value, offset);
  return value;
}

__device__ __forceinline__ float warp_max(float value) {
  for (int offset = 16; offset > 0; offset >>= 1) value = fmaxf(value, __shfl_xor_sync(0xffffffffu, value, offset));
  return value;
}

// ---------------------------------------------------------------------------------------------
// Launch patterns. Each takes a functor (a struct with a __device__ operator()) so that every
// kernel below is one small struct; each launch is checked (STYLE item 10).
// ---------------------------------------------------------------------------------------------

constexpr int kThreads = 256;
constexpr int kWarpSize = 32;
constexpr int kWarpsPerBlock = kThreads / kWarpSize;
constexpr std::int64_t kMaxBlocks = std::int64_t{1} << 20;  // grid-stride loops cover the rest

void check_launch() { SYNCPLAN_CUDA_CHECK(cudaGetLastError()); }

template <class Function>
__global__ void __launch_bounds__(kThreads) for_each_kernel(std::int64_t count, Function f) {
  const std::int64_t step = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count; i += step) f(i);
}

// f(i) for i in [0, count): one thread per element.
template <class Function>
void for_each(std::int64_t count, Function f, cudaStream_t stream) {
  if (count == 0) return;
  const auto blocks = static_cast<unsigned>(std::min((count + kThreads - 1) / kThreads, kMaxBlocks));
  for_each_kernel<<<blocks, kThreads, 0, stream>>>(count, f);
  check_launch();
}

template <class Function>
__global__ void __launch_bounds__(kThreads) rows_kernel(std::int64_t rows, Function f) {
  const std::int64_t row = static_cast<std::int64_t>(blockIdx.x) * kWarpsPerBlock + threadIdx.x / kWarpSize;
  if (row < rows) f(row, static_cast<int>(threadIdx.x % kWarpSize));  // a whole warp per row, or none
}

// f(row, lane) for every row: one warp per row, so f may reduce across the warp.
template <class Function>
void for_each_row(std::int64_t rows, Function f, cudaStream_t stream) {
  if (rows == 0) return;
  const std::int64_t blocks = (rows + kWarpsPerBlock - 1) / kWarpsPerBlock;
  SYNCPLAN_CHECK(blocks <= INT32_MAX);
  rows_kernel<<<static_cast<unsigned>(blocks), kThreads, 0, stream>>>(rows, f);
  check_launch();
}

// The bound makes the compiler keep to 64 registers a thread: a 1024-thread block gets no more
// (65536 per multiprocessor), and a kernel over the limit fails at launch ("too many resources
// requested"); NormParamGradient<float> needed 62 without it.
template <class Function>
__global__ void __launch_bounds__(kWarpSize * kWarpSize)
    column_sums_kernel(std::int64_t rows, std::int64_t cols, Function f) {
  __shared__ float2 partial[kWarpSize][kWarpSize + 1];
  const std::int64_t col = static_cast<std::int64_t>(blockIdx.x) * kWarpSize + threadIdx.x;
  float2 sum = make_float2(0.0f, 0.0f);
  if (col < cols)
    for (std::int64_t row = threadIdx.y; row < rows; row += kWarpSize) {
      const float2 value = f(row, col);
      sum.x += value.x;
      sum.y += value.y;
    }
  partial[threadIdx.y][threadIdx.x] = sum;
  __syncthreads();
  if (threadIdx.y != 0 || col >= cols) return;
  for (int y = 1; y < kWarpSize; ++y) {
    sum.x += partial[y][threadIdx.x].x;
    sum.y += partial[y][threadIdx.x].y;
  }
  f.finish(col, sum);
}

// Two sums per column of a [rows, cols] matrix of f(row, col) values, handed to f.finish(col,
// sums): parameter gradients, which sum over tokens. Deterministic (no atomics): one block of
// 32 x 32 threads per 32 columns.
template <class Function>
void column_sums(std::int64_t rows, std::int64_t cols, Function f, cudaStream_t stream) {
  if (cols == 0) return;
  const std::int64_t blocks = (cols + kWarpSize - 1) / kWarpSize;
  column_sums_kernel<<<static_cast<unsigned>(blocks), dim3(kWarpSize, kWarpSize), 0, stream>>>(rows, cols, f);
  check_launch();
}

// ---------------------------------------------------------------------------------------------
// GEMM: the calls of model/gemm_plan.hpp, whose index arithmetic the CPU build tests
// ---------------------------------------------------------------------------------------------

template <class Element>
cudaDataType_t data_type() {
  return std::is_same_v<Element, float> ? CUDA_R_32F : CUDA_R_16BF;
}

// One strided-batched GEMM with fp32 accumulation (no TF32 for fp32; tensor cores for bf16). The
// call's arguments are checked on the host first: cuBLAS's rules, and every matrix inside its tensor.
template <class Element>
void run_gemm(cublasHandle_t blas, cudaStream_t stream, const StridedGemm& row_major, std::span<const Element> a,
              std::span<const Element> b, std::span<Element> c) {
  const StridedGemm g = column_major(row_major);
  SYNCPLAN_CHECK(g.m > 0 && g.n > 0 && g.k > 0 && g.batch > 0);
  if (const std::string error = cublas_argument_error(g); !error.empty())
    throw InternalError("GEMM call breaks cuBLAS's rules: " + error);
  // column_major() swaps the operands: the call's A is the row-major B, its B the row-major A.
  const GemmExtents reach = column_major_extents(g);
  const auto size = [](auto tensor) { return static_cast<std::int64_t>(tensor.size()); };
  if (reach.a > size(b) || reach.b > size(a) || reach.c > size(c))
    throw InternalError("GEMM call reaches past its tensors: " + std::to_string(reach.b) + ", " +
                        std::to_string(reach.a) + ", " + std::to_string(reach.c) + " elements of A, B, C holding " +
                        std::to_string(a.size()) + ", " + std::to_string(b.size()) + ", " + std::to_string(c.size()));
  SYNCPLAN_CUBLAS_CHECK(cublasSetStream(blas, stream));
  SYNCPLAN_CUBLAS_CHECK(cublasGemmStridedBatchedEx_64(
      blas, g.transpose_a ? CUBLAS_OP_T : CUBLAS_OP_N, g.transpose_b ? CUBLAS_OP_T : CUBLAS_OP_N, g.m, g.n, g.k,
      &g.alpha, b.data() + g.a_offset, data_type<Element>(), g.lda, g.stride_a, a.data() + g.b_offset,
      data_type<Element>(), g.ldb, g.stride_b, &g.beta, c.data() + g.c_offset, data_type<Element>(), g.ldc,
      g.stride_c, g.batch, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
}

template <class Element>
void run_gemms(cublasHandle_t blas, cudaStream_t stream, const std::vector<StridedGemm>& gemms,
               std::span<const Element> a, std::span<const Element> b, std::span<Element> c) {
  for (const StridedGemm& gemm : gemms) run_gemm<Element>(blas, stream, gemm, a, b, c);
}

// ---------------------------------------------------------------------------------------------
// Shapes
// ---------------------------------------------------------------------------------------------

template <class Span>
void require(const Span& tensor, std::int64_t elements, const char* name) {
  require_elements(tensor.size(), elements, name);
}

// The attention sizes every launcher checks.
struct AttentionDims {
  std::int64_t batch, seq, heads, kv_heads, head_dim;
  AttentionDims(const AttentionHeads& a, std::int64_t batch_, std::int64_t seq_)
      : batch(batch_), seq(seq_), heads(a.heads), kv_heads(a.kv_heads), head_dim(a.head_dim) {
    SYNCPLAN_CHECK(batch > 0 && seq > 0 && heads > 0 && kv_heads > 0 && head_dim > 0 && heads % kv_heads == 0);
  }
  std::int64_t tokens() const { return batch * seq; }
  std::int64_t scores() const { return batch * heads * seq * seq; }
  float scale() const { return 1.0f / std::sqrt(static_cast<float>(head_dim)); }
};

// ---------------------------------------------------------------------------------------------
// Kernels as functors
// ---------------------------------------------------------------------------------------------

template <class Element>
struct EmbeddingGather {  // out[t, c] = table[ids[t], c]
  const std::int64_t* ids;
  const Element* table;
  Element* out;
  std::int64_t dim;
  __device__ void operator()(std::int64_t i) const { out[i] = table[ids[i / dim] * dim + i % dim]; }
};

template <class Element>
struct EmbeddingScatterAdd {  // d_table[ids[t], c] += d_out[t, c]
  const std::int64_t* ids;
  const Element* d_out;
  Element* d_table;
  std::int64_t dim;
  __device__ void operator()(std::int64_t i) const {
    atomic_add(d_table + ids[i / dim] * dim + i % dim, to_float(d_out[i]));
  }
};

template <class Element>
struct AddPositions {  // out[b, s, c] = x[b, s, c] + table[s, c]
  const Element* x;
  const Element* table;
  Element* out;
  std::int64_t seq, dim;
  __device__ void operator()(std::int64_t i) const {
    const std::int64_t position = (i / dim) % seq;
    out[i] = from_float<Element>(to_float(x[i]) + to_float(table[position * dim + i % dim]));
  }
};

template <class Element>
struct PositionGradient {  // d_table[s, c] += sum over b of d_out[b, s, c]; i = s dim + c
  const Element* d_out;
  Element* d_table;
  std::int64_t batch, seq, dim;
  __device__ void operator()(std::int64_t i) const {
    float sum = 0.0f;
    for (std::int64_t b = 0; b < batch; ++b) sum += to_float(d_out[b * seq * dim + i]);
    d_table[i] = from_float<Element>(to_float(d_table[i]) + sum);
  }
};

template <class Element>
struct AddBias {  // y[t, c] += bias[c]
  const Element* bias;
  Element* y;
  std::int64_t width;
  __device__ void operator()(std::int64_t i) const {
    y[i] = from_float<Element>(to_float(y[i]) + to_float(bias[i % width]));
  }
};

template <class Element>
struct BiasGradient {  // d_bias[c] += sum over t of d_y[t, c]
  const Element* d_y;
  Element* d_bias;
  std::int64_t width;
  __device__ float2 operator()(std::int64_t row, std::int64_t col) const {
    return make_float2(to_float(d_y[row * width + col]), 0.0f);
  }
  __device__ void finish(std::int64_t col, float2 sum) const {
    d_bias[col] = from_float<Element>(to_float(d_bias[col]) + sum.x);
  }
};

template <class Element>
struct LayerNormForward {
  const Element* x;
  const Element* weight;
  const Element* bias;
  Element* y;
  float* mean;
  float* rstd;
  std::int64_t dim;
  float eps;
  __device__ void operator()(std::int64_t row, int lane) const {
    const Element* x_row = x + row * dim;
    float sum = 0.0f;
    for (std::int64_t j = lane; j < dim; j += kWarpSize) sum += to_float(x_row[j]);
    const float m = warp_sum(sum) / static_cast<float>(dim);
    float squares = 0.0f;
    for (std::int64_t j = lane; j < dim; j += kWarpSize) {
      const float centered = to_float(x_row[j]) - m;
      squares += centered * centered;
    }
    const float r = 1.0f / sqrtf(warp_sum(squares) / static_cast<float>(dim) + eps);
    for (std::int64_t j = lane; j < dim; j += kWarpSize)
      y[row * dim + j] = from_float<Element>((to_float(x_row[j]) - m) * r * to_float(weight[j]) + to_float(bias[j]));
    if (lane == 0) {
      mean[row] = m;
      rstd[row] = r;
    }
  }
};

// d_x = rstd (g - mean(g) - x̂ mean(g x̂)), g = d_y weight; for RMS norm (mean null) x̂ = x rstd and
// there is no mean(g) term.
template <class Element>
struct NormInputGradient {
  const Element* d_y;
  const Element* x;
  const Element* weight;
  const float* mean;  // null for RMS norm
  const float* rstd;
  Element* d_x;
  std::int64_t dim;
  __device__ void operator()(std::int64_t row, int lane) const {
    const float m = mean != nullptr ? mean[row] : 0.0f, r = rstd[row];
    float sum_g = 0.0f, sum_gx = 0.0f;
    for (std::int64_t j = lane; j < dim; j += kWarpSize) {
      const float g = to_float(d_y[row * dim + j]) * to_float(weight[j]);
      sum_g += g;
      sum_gx += g * (to_float(x[row * dim + j]) - m) * r;
    }
    const float mean_g = mean != nullptr ? warp_sum(sum_g) / static_cast<float>(dim) : 0.0f;
    const float mean_gx = warp_sum(sum_gx) / static_cast<float>(dim);
    for (std::int64_t j = lane; j < dim; j += kWarpSize) {
      const float g = to_float(d_y[row * dim + j]) * to_float(weight[j]);
      const float xhat = (to_float(x[row * dim + j]) - m) * r;
      d_x[row * dim + j] = from_float<Element>(r * (g - mean_g - xhat * mean_gx));
    }
  }
};

// d_weight += sum_t d_y x̂, d_bias += sum_t d_y (d_bias null for RMS norm).
template <class Element>
struct NormParamGradient {
  const Element* d_y;
  const Element* x;
  const float* mean;  // null for RMS norm
  const float* rstd;
  Element* d_weight;
  Element* d_bias;    // null for RMS norm
  std::int64_t dim;
  __device__ float2 operator()(std::int64_t row, std::int64_t col) const {
    const float dy = to_float(d_y[row * dim + col]);
    const float xhat = (to_float(x[row * dim + col]) - (mean != nullptr ? mean[row] : 0.0f)) * rstd[row];
    return make_float2(dy * xhat, dy);
  }
  __device__ void finish(std::int64_t col, float2 sum) const {
    d_weight[col] = from_float<Element>(to_float(d_weight[col]) + sum.x);
    if (d_bias != nullptr) d_bias[col] = from_float<Element>(to_float(d_bias[col]) + sum.y);
  }
};

template <class Element>
struct RmsNormForward {
  const Element* x;
  const Element* weight;
  Element* y;
  float* rstd;
  std::int64_t dim;
  float eps;
  __device__ void operator()(std::int64_t row, int lane) const {
    const Element* x_row = x + row * dim;
    float squares = 0.0f;
    for (std::int64_t j = lane; j < dim; j += kWarpSize) squares += to_float(x_row[j]) * to_float(x_row[j]);
    const float r = 1.0f / sqrtf(warp_sum(squares) / static_cast<float>(dim) + eps);
    for (std::int64_t j = lane; j < dim; j += kWarpSize)
      y[row * dim + j] = from_float<Element>(to_float(x_row[j]) * r * to_float(weight[j]));
    if (lane == 0) rstd[row] = r;
  }
};

constexpr float kGeluCubic = 0.044715f;
constexpr float kSqrtTwoOverPi = 0.7978845608028654f;  // sqrt(2 / pi)

template <class Element>
struct GeluForward {
  const Element* x;
  Element* y;
  __device__ void operator()(std::int64_t i) const {
    const float v = to_float(x[i]);
    y[i] = from_float<Element>(0.5f * v * (1.0f + tanhf(kSqrtTwoOverPi * (v + kGeluCubic * v * v * v))));
  }
};

template <class Element>
struct GeluBackward {
  const Element* d_y;
  const Element* x;
  Element* d_x;
  __device__ void operator()(std::int64_t i) const {
    const float v = to_float(x[i]);
    const float t = tanhf(kSqrtTwoOverPi * (v + kGeluCubic * v * v * v));
    const float inner_derivative = kSqrtTwoOverPi * (1.0f + 3.0f * kGeluCubic * v * v);
    d_x[i] = from_float<Element>(to_float(d_y[i]) * (0.5f * (1.0f + t) + 0.5f * v * (1.0f - t * t) * inner_derivative));
  }
};

template <class Element>
struct SiluForward {
  const Element* x;
  Element* y;
  __device__ void operator()(std::int64_t i) const {
    const float v = to_float(x[i]);
    y[i] = from_float<Element>(v / (1.0f + expf(-v)));
  }
};

template <class Element>
struct SiluBackward {
  const Element* d_y;
  const Element* x;
  Element* d_x;
  __device__ void operator()(std::int64_t i) const {
    const float v = to_float(x[i]);
    const float sigmoid = 1.0f / (1.0f + expf(-v));
    d_x[i] = from_float<Element>(to_float(d_y[i]) * sigmoid * (1.0f + v * (1.0f - sigmoid)));
  }
};

template <class Element>
struct Multiply {  // y = a b
  const Element* a;
  const Element* b;
  Element* y;
  __device__ void operator()(std::int64_t i) const { y[i] = from_float<Element>(to_float(a[i]) * to_float(b[i])); }
};

template <class Element>
struct Add {  // y = a + b (y may be a or b)
  const Element* a;
  const Element* b;
  Element* y;
  __device__ void operator()(std::int64_t i) const { y[i] = from_float<Element>(to_float(a[i]) + to_float(b[i])); }
};

// y = x mask / (1 - p) with the mask drawn (draw = true, written to `mask`) or read.
template <class Element>
struct Dropout {
  const Element* x;
  Element* y;
  std::uint8_t* mask;
  std::uint64_t seed;
  float p, keep_scale;
  bool draw;
  __device__ void operator()(std::int64_t i) const {
    if (draw) mask[i] = dropout_keeps(seed, static_cast<std::uint64_t>(i), p) ? 1 : 0;
    y[i] = from_float<Element>(mask[i] ? to_float(x[i]) * keep_scale : 0.0f);
  }
};

template <class Element>
struct RotaryTable {  // i = t half + j
  Element* cos;
  Element* sin;
  std::int64_t seq, head_dim;
  double theta;
  __device__ void operator()(std::int64_t i) const {
    const std::int64_t half = head_dim / 2, t = i / half, j = i % half;
    const double angle = static_cast<double>(t % seq) *
                         pow(theta, -2.0 * static_cast<double>(j) / static_cast<double>(head_dim));
    const Element c = from_float<Element>(static_cast<float>(::cos(angle)));
    const Element s = from_float<Element>(static_cast<float>(::sin(angle)));
    cos[t * head_dim + j] = cos[t * head_dim + half + j] = c;
    sin[t * head_dim + j] = sin[t * head_dim + half + j] = s;
  }
};

// Forward: y1 = x1 c1 - x2 s1, y2 = x2 c2 + x1 s2; transposed: y1 = x1 c1 + x2 s2, y2 = x2 c2 - x1 s1.
template <class Element>
struct Rotate {  // i = (t heads + h) half + j
  const Element* cos;
  const Element* sin;
  const Element* x;
  Element* y;
  std::int64_t heads, head_dim;
  bool transpose;
  __device__ void operator()(std::int64_t i) const {
    const std::int64_t half = head_dim / 2, j = i % half, t = i / (half * heads);
    const std::int64_t first = (i / half) * head_dim + j, second = first + half;  // (t heads + h) head_dim + j
    const float c1 = to_float(cos[t * head_dim + j]), c2 = to_float(cos[t * head_dim + half + j]);
    const float s1 = to_float(sin[t * head_dim + j]), s2 = to_float(sin[t * head_dim + half + j]);
    const float x1 = to_float(x[first]), x2 = to_float(x[second]);
    y[first] = from_float<Element>(transpose ? x1 * c1 + x2 * s2 : x1 * c1 - x2 * s1);
    y[second] = from_float<Element>(transpose ? x2 * c2 - x1 * s1 : x2 * c2 + x1 * s2);
  }
};

// Softmax of row `row` of the scaled scores over keys 0..s (s = the query's position), 0 after.
template <class Element>
struct CausalSoftmax {
  Element* probs;
  std::int64_t seq;
  __device__ void operator()(std::int64_t row, int lane) const {
    Element* p = probs + row * seq;
    const std::int64_t last = row % seq;
    float m = -INFINITY;
    for (std::int64_t j = lane; j <= last; j += kWarpSize) m = fmaxf(m, to_float(p[j]));
    m = warp_max(m);
    float sum = 0.0f;
    for (std::int64_t j = lane; j <= last; j += kWarpSize) sum += expf(to_float(p[j]) - m);
    const float inverse = 1.0f / warp_sum(sum);
    for (std::int64_t j = lane; j < seq; j += kWarpSize)
      p[j] = from_float<Element>(j <= last ? expf(to_float(p[j]) - m) * inverse : 0.0f);
  }
};

// dS = P (dP - rowsum(dP P)) scale, one row.
template <class Element>
struct SoftmaxBackward {
  const Element* probs;
  const Element* d_probs;
  Element* d_scores;
  std::int64_t seq;
  float scale;
  __device__ void operator()(std::int64_t row, int lane) const {
    const std::int64_t base = row * seq;
    float dot = 0.0f;
    for (std::int64_t j = lane; j < seq; j += kWarpSize) dot += to_float(probs[base + j]) * to_float(d_probs[base + j]);
    dot = warp_sum(dot);
    for (std::int64_t j = lane; j < seq; j += kWarpSize)
      d_scores[base + j] = from_float<Element>(to_float(probs[base + j]) * (to_float(d_probs[base + j]) - dot) * scale);
  }
};

template <class Element>
struct CrossEntropyForward {
  const Element* logits;
  const std::int64_t* targets;
  float* losses;
  float* lse;
  std::int64_t vocab;
  __device__ void operator()(std::int64_t row, int lane) const {
    const Element* z = logits + row * vocab;
    float m = -INFINITY;
    for (std::int64_t j = lane; j < vocab; j += kWarpSize) m = fmaxf(m, to_float(z[j]));
    m = warp_max(m);
    float sum = 0.0f;
    for (std::int64_t j = lane; j < vocab; j += kWarpSize) sum += expf(to_float(z[j]) - m);
    const float log_sum = m + logf(warp_sum(sum));
    if (lane != 0) return;
    lse[row] = log_sum;
    losses[row] = targets[row] < 0 ? 0.0f : log_sum - to_float(z[targets[row]]);
  }
};

template <class Element>
struct CrossEntropyBackward {  // i = t vocab + v
  const Element* logits;
  const std::int64_t* targets;
  const float* lse;
  Element* d_logits;
  std::int64_t vocab;
  float scale;  // d_loss / counted tokens
  __device__ void operator()(std::int64_t i) const {
    const std::int64_t t = i / vocab, target = targets[t];
    if (target < 0) {
      d_logits[i] = from_float<Element>(0.0f);
      return;
    }
    const float softmax = expf(to_float(logits[i]) - lse[t]);
    d_logits[i] = from_float<Element>((softmax - (i % vocab == target ? 1.0f : 0.0f)) * scale);
  }
};

template <class Element>
struct FillUniform {
  Element* values;
  std::uint64_t seed;
  __device__ void operator()(std::int64_t i) const {
    values[i] = from_float<Element>(counter_signed_uniform(seed, static_cast<std::uint64_t>(i)));
  }
};

struct FillIds {
  std::int64_t* ids;
  std::uint64_t seed;
  std::int64_t bound;
  __device__ void operator()(std::int64_t i) const { ids[i] = counter_index(seed, static_cast<std::uint64_t>(i), bound); }
};

template <class Element>
std::int64_t length(std::span<Element> tensor) {
  return static_cast<std::int64_t>(tensor.size());
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Launchers
// ---------------------------------------------------------------------------------------------

template <class Element>
void token_embedding_forward(const TokenEmbeddingOp& op, std::span<const std::int64_t> ids,
                             std::span<const Element> table, std::span<Element> out, cudaStream_t stream) {
  require(table, op.vocab_size * op.dim, "table");
  require(out, length(ids) * op.dim, "out");
  for_each(length(out), EmbeddingGather<Element>{ids.data(), table.data(), out.data(), op.dim}, stream);
}

template <class Element>
void token_embedding_backward(const TokenEmbeddingOp& op, std::span<const std::int64_t> ids,
                              std::span<const Element> d_out, std::span<Element> d_table, cudaStream_t stream) {
  require(d_table, op.vocab_size * op.dim, "d_table");
  require(d_out, length(ids) * op.dim, "d_out");
  for_each(length(d_out), EmbeddingScatterAdd<Element>{ids.data(), d_out.data(), d_table.data(), op.dim}, stream);
}

template <class Element>
void position_embedding_forward(const PositionEmbeddingOp& op, std::int64_t batch, std::int64_t seq,
                                std::span<const Element> x, std::span<const Element> table, std::span<Element> out,
                                cudaStream_t stream) {
  SYNCPLAN_CHECK(seq <= op.positions);
  require(x, batch * seq * op.dim, "x");
  require(table, op.positions * op.dim, "table");
  require(out, batch * seq * op.dim, "out");
  for_each(length(out), AddPositions<Element>{x.data(), table.data(), out.data(), seq, op.dim}, stream);
}

template <class Element>
void position_embedding_backward(const PositionEmbeddingOp& op, std::int64_t batch, std::int64_t seq,
                                 std::span<const Element> d_out, std::span<Element> d_table, cudaStream_t stream) {
  SYNCPLAN_CHECK(seq <= op.positions);
  require(d_out, batch * seq * op.dim, "d_out");
  require(d_table, op.positions * op.dim, "d_table");
  for_each(seq * op.dim, PositionGradient<Element>{d_out.data(), d_table.data(), batch, seq, op.dim}, stream);
}

template <class Element>
void linear_forward(const LinearOp& op, std::int64_t tokens, std::span<const Element> x,
                    std::span<const Element> weight, std::span<const Element> bias, std::span<Element> y,
                    cublasHandle_t blas, cudaStream_t stream, WeightLayout layout) {
  const std::int64_t k = op.in_features, n = op.out_features;
  require(x, tokens * k, "x");
  require(weight, k * n, "weight");
  require(bias, op.bias ? n : 0, "bias");
  require(y, tokens * n, "y");
  run_gemm<Element>(blas, stream, linear_gemm(LinearProduct::kForward, op, tokens, layout), x, weight, y);
  if (op.bias) for_each(tokens * n, AddBias<Element>{bias.data(), y.data(), n}, stream);
}

template <class Element>
void linear_backward(const LinearOp& op, std::int64_t tokens, std::span<const Element> d_y, std::span<const Element> x,
                     std::span<const Element> weight, std::span<Element> d_x, std::span<Element> d_weight,
                     std::span<Element> d_bias, cublasHandle_t blas, cudaStream_t stream, WeightLayout layout) {
  const std::int64_t k = op.in_features, n = op.out_features;
  require(d_y, tokens * n, "d_y");
  require(x, tokens * k, "x");
  require(weight, k * n, "weight");
  require(d_x, tokens * k, "d_x");
  require(d_weight, k * n, "d_weight");
  require(d_bias, op.bias ? n : 0, "d_bias");
  run_gemm<Element>(blas, stream, linear_gemm(LinearProduct::kInputGradient, op, tokens, layout), d_y, weight, d_x);
  const StridedGemm weight_gradient = linear_gemm(LinearProduct::kWeightGradient, op, tokens, layout);
  if (layout == WeightLayout::kOutIn) run_gemm<Element>(blas, stream, weight_gradient, d_y, x, d_weight);
  else run_gemm<Element>(blas, stream, weight_gradient, x, d_y, d_weight);
  if (op.bias) column_sums(tokens, n, BiasGradient<Element>{d_y.data(), d_bias.data(), n}, stream);
}

template <class Element>
void layer_norm_forward(const LayerNormOp& op, std::int64_t tokens, std::span<const Element> x,
                        std::span<const Element> weight, std::span<const Element> bias, std::span<Element> y,
                        std::span<float> mean, std::span<float> rstd, cudaStream_t stream) {
  const std::int64_t d = op.dim;
  require(x, tokens * d, "x");
  require(weight, d, "weight");
  require(bias, d, "bias");
  require(y, tokens * d, "y");
  require(mean, tokens, "mean");
  require(rstd, tokens, "rstd");
  for_each_row(tokens,
               LayerNormForward<Element>{x.data(), weight.data(), bias.data(), y.data(), mean.data(), rstd.data(), d,
                                         static_cast<float>(op.eps)},
               stream);
}

template <class Element>
void layer_norm_backward(const LayerNormOp& op, std::int64_t tokens, std::span<const Element> d_y,
                         std::span<const Element> x, std::span<const Element> weight, std::span<const float> mean,
                         std::span<const float> rstd, std::span<Element> d_x, std::span<Element> d_weight,
                         std::span<Element> d_bias, cudaStream_t stream) {
  const std::int64_t d = op.dim;
  require(d_y, tokens * d, "d_y");
  require(x, tokens * d, "x");
  require(weight, d, "weight");
  require(mean, tokens, "mean");
  require(rstd, tokens, "rstd");
  require(d_x, tokens * d, "d_x");
  require(d_weight, d, "d_weight");
  require(d_bias, d, "d_bias");
  for_each_row(tokens,
               NormInputGradient<Element>{d_y.data(), x.data(), weight.data(), mean.data(), rstd.data(), d_x.data(), d},
               stream);
  column_sums(tokens, d,
              NormParamGradient<Element>{d_y.data(), x.data(), mean.data(), rstd.data(), d_weight.data(), d_bias.data(),
                                         d},
              stream);
}

template <class Element>
void rms_norm_forward(const RmsNormOp& op, std::int64_t tokens, std::span<const Element> x,
                      std::span<const Element> weight, std::span<Element> y, std::span<float> rstd,
                      cudaStream_t stream) {
  const std::int64_t d = op.dim;
  require(x, tokens * d, "x");
  require(weight, d, "weight");
  require(y, tokens * d, "y");
  require(rstd, tokens, "rstd");
  for_each_row(tokens,
               RmsNormForward<Element>{x.data(), weight.data(), y.data(), rstd.data(), d, static_cast<float>(op.eps)},
               stream);
}

template <class Element>
void rms_norm_backward(const RmsNormOp& op, std::int64_t tokens, std::span<const Element> d_y,
                       std::span<const Element> x, std::span<const Element> weight, std::span<const float> rstd,
                       std::span<Element> d_x, std::span<Element> d_weight, cudaStream_t stream) {
  const std::int64_t d = op.dim;
  require(d_y, tokens * d, "d_y");
  require(x, tokens * d, "x");
  require(weight, d, "weight");
  require(rstd, tokens, "rstd");
  require(d_x, tokens * d, "d_x");
  require(d_weight, d, "d_weight");
  for_each_row(tokens,
               NormInputGradient<Element>{d_y.data(), x.data(), weight.data(), nullptr, rstd.data(), d_x.data(), d},
               stream);
  column_sums(tokens, d,
              NormParamGradient<Element>{d_y.data(), x.data(), nullptr, rstd.data(), d_weight.data(), nullptr, d},
              stream);
}

template <class Element>
void gelu_forward(std::span<const Element> x, std::span<Element> y, cudaStream_t stream) {
  require(y, length(x), "y");
  for_each(length(y), GeluForward<Element>{x.data(), y.data()}, stream);
}

template <class Element>
void gelu_backward(std::span<const Element> d_y, std::span<const Element> x, std::span<Element> d_x,
                   cudaStream_t stream) {
  require(d_y, length(x), "d_y");
  require(d_x, length(x), "d_x");
  for_each(length(d_x), GeluBackward<Element>{d_y.data(), x.data(), d_x.data()}, stream);
}

template <class Element>
void silu_forward(std::span<const Element> x, std::span<Element> y, cudaStream_t stream) {
  require(y, length(x), "y");
  for_each(length(y), SiluForward<Element>{x.data(), y.data()}, stream);
}

template <class Element>
void silu_backward(std::span<const Element> d_y, std::span<const Element> x, std::span<Element> d_x,
                   cudaStream_t stream) {
  require(d_y, length(x), "d_y");
  require(d_x, length(x), "d_x");
  for_each(length(d_x), SiluBackward<Element>{d_y.data(), x.data(), d_x.data()}, stream);
}

template <class Element>
void gated_product_forward(std::span<const Element> a, std::span<const Element> b, std::span<Element> y,
                           cudaStream_t stream) {
  require(b, length(a), "b");
  require(y, length(a), "y");
  for_each(length(y), Multiply<Element>{a.data(), b.data(), y.data()}, stream);
}

template <class Element>
void gated_product_backward(std::span<const Element> d_y, std::span<const Element> a, std::span<const Element> b,
                            std::span<Element> d_a, std::span<Element> d_b, cudaStream_t stream) {
  require(a, length(d_y), "a");
  require(b, length(d_y), "b");
  require(d_a, length(d_y), "d_a");
  require(d_b, length(d_y), "d_b");
  for_each(length(d_a), Multiply<Element>{d_y.data(), b.data(), d_a.data()}, stream);
  for_each(length(d_b), Multiply<Element>{d_y.data(), a.data(), d_b.data()}, stream);
}

template <class Element>
void residual_add_forward(std::span<const Element> a, std::span<const Element> b, std::span<Element> y,
                          cudaStream_t stream) {
  require(b, length(a), "b");
  require(y, length(a), "y");
  for_each(length(y), Add<Element>{a.data(), b.data(), y.data()}, stream);
}

template <class Element>
void residual_add_backward(std::span<const Element> d_branch, std::span<Element> d_stream, cudaStream_t stream) {
  require(d_stream, length(d_branch), "d_stream");
  for_each(length(d_stream), Add<Element>{d_stream.data(), d_branch.data(), d_stream.data()}, stream);
}

template <class Element>
void dropout_forward(const DropoutOp& op, std::uint64_t seed, std::span<const Element> x, std::span<Element> y,
                     std::span<std::uint8_t> mask, cudaStream_t stream) {
  require(y, length(x), "y");
  require(mask, length(x), "mask");
  const auto keep_scale = static_cast<float>(1.0 / (1.0 - op.p));
  for_each(length(y), Dropout<Element>{x.data(), y.data(), mask.data(), seed, static_cast<float>(op.p), keep_scale, true},
           stream);
}

template <class Element>
void dropout_backward(const DropoutOp& op, std::span<const Element> d_y, std::span<const std::uint8_t> mask,
                      std::span<Element> d_x, cudaStream_t stream) {
  require(mask, length(d_y), "mask");
  require(d_x, length(d_y), "d_x");
  const auto keep_scale = static_cast<float>(1.0 / (1.0 - op.p));
  // The mask is only read (draw = false); the kernel's pointer is non-const for the forward's sake.
  for_each(length(d_x),
           Dropout<Element>{d_y.data(), d_x.data(), const_cast<std::uint8_t*>(mask.data()), 0,
                            static_cast<float>(op.p), keep_scale, false},
           stream);
}

template <class Element>
void rotary_table_forward(const RotaryTableOp& op, std::int64_t batch, std::int64_t seq, std::span<Element> cos,
                          std::span<Element> sin, cudaStream_t stream) {
  SYNCPLAN_CHECK(op.head_dim % 2 == 0);
  require(cos, batch * seq * op.head_dim, "cos");
  require(sin, batch * seq * op.head_dim, "sin");
  for_each(batch * seq * op.head_dim / 2, RotaryTable<Element>{cos.data(), sin.data(), seq, op.head_dim, op.theta},
           stream);
}

namespace {

template <class Element>
void rotate(std::int64_t heads, std::int64_t head_dim, std::int64_t tokens, std::span<const Element> cos,
            std::span<const Element> sin, std::span<const Element> x, std::span<Element> y, bool transpose,
            cudaStream_t stream) {
  SYNCPLAN_CHECK(head_dim % 2 == 0);
  require(cos, tokens * head_dim, "cos");
  require(sin, tokens * head_dim, "sin");
  require(x, tokens * heads * head_dim, "x");
  require(y, tokens * heads * head_dim, "y");
  for_each(tokens * heads * head_dim / 2,
           Rotate<Element>{cos.data(), sin.data(), x.data(), y.data(), heads, head_dim, transpose}, stream);
}

}  // namespace

template <class Element>
void rotary_forward(std::int64_t heads, std::int64_t head_dim, std::int64_t tokens, std::span<const Element> cos,
                    std::span<const Element> sin, std::span<const Element> x, std::span<Element> y,
                    cudaStream_t stream) {
  rotate(heads, head_dim, tokens, cos, sin, x, y, false, stream);
}

template <class Element>
void rotary_backward(std::int64_t heads, std::int64_t head_dim, std::int64_t tokens, std::span<const Element> cos,
                     std::span<const Element> sin, std::span<const Element> d_y, std::span<Element> d_x,
                     cudaStream_t stream) {
  rotate(heads, head_dim, tokens, cos, sin, d_y, d_x, true, stream);
}

template <class Element>
void attention_scores_forward(const AttentionHeads& heads, std::int64_t batch, std::int64_t seq,
                              std::span<const Element> q, std::span<const Element> k, std::span<Element> probs,
                              cublasHandle_t blas, cudaStream_t stream) {
  const AttentionDims a(heads, batch, seq);
  require(q, a.tokens() * a.heads * a.head_dim, "q");
  require(k, a.tokens() * a.kv_heads * a.head_dim, "k");
  require(probs, a.scores(), "probs");
  // P_i = scale Q_i K_j^T, then the causal softmax of each row.
  run_gemms<Element>(blas, stream, attention_gemms(AttentionProduct::kScores, heads, batch, seq), q, k, probs);
  for_each_row(a.batch * a.heads * seq, CausalSoftmax<Element>{probs.data(), seq}, stream);
}

template <class Element>
void attention_scores_backward(const AttentionHeads& heads, std::int64_t batch, std::int64_t seq,
                               std::span<const Element> d_probs, std::span<const Element> probs,
                               std::span<const Element> q, std::span<const Element> k, std::span<Element> d_q,
                               std::span<Element> d_k, std::span<Element> workspace, cublasHandle_t blas,
                               cudaStream_t stream) {
  const AttentionDims a(heads, batch, seq);
  require(d_probs, a.scores(), "d_probs");
  require(probs, a.scores(), "probs");
  require(q, a.tokens() * a.heads * a.head_dim, "q");
  require(k, a.tokens() * a.kv_heads * a.head_dim, "k");
  require(d_q, a.tokens() * a.heads * a.head_dim, "d_q");
  require(d_k, a.tokens() * a.kv_heads * a.head_dim, "d_k");
  require(workspace, a.scores(), "workspace");
  for_each_row(a.batch * a.heads * seq,
               SoftmaxBackward<Element>{probs.data(), d_probs.data(), workspace.data(), seq, a.scale()}, stream);
  // d_Q_i = dS_i K_j; d_K_j = sum over the group's i of dS_i^T Q_i.
  const std::span<const Element> d_scores = workspace;
  run_gemms<Element>(blas, stream, attention_gemms(AttentionProduct::kQueryGradient, heads, batch, seq), d_scores, k,
                     d_q);
  run_gemms<Element>(blas, stream, attention_gemms(AttentionProduct::kKeyGradient, heads, batch, seq), d_scores, q,
                     d_k);
}

template <class Element>
void attention_context_forward(const AttentionContextOp& op, std::int64_t batch, std::int64_t seq,
                               std::uint64_t seed, std::span<const Element> probs, std::span<const Element> v,
                               std::span<std::uint8_t> mask, std::span<Element> out, std::span<Element> workspace,
                               cublasHandle_t blas, cudaStream_t stream) {
  const AttentionDims a(op.shape, batch, seq);
  const bool dropout = op.dropout_p > 0;
  require(probs, a.scores(), "probs");
  require(v, a.tokens() * a.kv_heads * a.head_dim, "v");
  require(mask, dropout ? a.scores() : 0, "mask");
  require(out, a.tokens() * a.heads * a.head_dim, "out");
  require(workspace, dropout ? a.scores() : 0, "workspace");
  std::span<const Element> p = probs;
  if (dropout) {
    const auto keep_scale = static_cast<float>(1.0 / (1.0 - op.dropout_p));
    for_each(a.scores(),
             Dropout<Element>{probs.data(), workspace.data(), mask.data(), seed, static_cast<float>(op.dropout_p),
                              keep_scale, true},
             stream);
    p = workspace;
  }
  // O_i = dropout(P_i) V_j, written into head i's columns of out.
  run_gemms<Element>(blas, stream, attention_gemms(AttentionProduct::kContext, op.shape, batch, seq), p, v, out);
}

template <class Element>
void attention_context_backward(const AttentionContextOp& op, std::int64_t batch, std::int64_t seq,
                                std::span<const Element> d_out, std::span<const Element> probs,
                                std::span<const Element> v, std::span<const std::uint8_t> mask,
                                std::span<Element> d_probs, std::span<Element> d_v, std::span<Element> workspace,
                                cublasHandle_t blas, cudaStream_t stream) {
  const AttentionDims a(op.shape, batch, seq);
  const bool dropout = op.dropout_p > 0;
  require(d_out, a.tokens() * a.heads * a.head_dim, "d_out");
  require(probs, a.scores(), "probs");
  require(v, a.tokens() * a.kv_heads * a.head_dim, "v");
  require(mask, dropout ? a.scores() : 0, "mask");
  require(d_probs, a.scores(), "d_probs");
  require(d_v, a.tokens() * a.kv_heads * a.head_dim, "d_v");
  require(workspace, dropout ? a.scores() : 0, "workspace");
  // dP_i = d_O_i V_j^T, then through the dropout.
  run_gemms<Element>(blas, stream, attention_gemms(AttentionProduct::kProbsGradient, op.shape, batch, seq), d_out, v,
                     d_probs);
  std::span<const Element> p = probs;
  if (dropout) {
    const auto keep_scale = static_cast<float>(1.0 / (1.0 - op.dropout_p));
    std::uint8_t* kept = const_cast<std::uint8_t*>(mask.data());  // read only (draw = false)
    for_each(a.scores(), Dropout<Element>{d_probs.data(), d_probs.data(), kept, 0, 0.0f, keep_scale, false}, stream);
    for_each(a.scores(), Dropout<Element>{probs.data(), workspace.data(), kept, 0, 0.0f, keep_scale, false}, stream);
    p = workspace;
  }
  // d_V_j = sum over the group's i of dropout(P_i)^T d_O_i.
  run_gemms<Element>(blas, stream, attention_gemms(AttentionProduct::kValueGradient, op.shape, batch, seq), p, d_out,
                     d_v);
}

template <class Element>
void cross_entropy_forward(const CrossEntropyOp& op, std::int64_t tokens, std::span<const Element> logits,
                           std::span<const std::int64_t> targets, std::span<float> losses, std::span<float> lse,
                           cudaStream_t stream) {
  require(logits, tokens * op.vocab_size, "logits");
  require(targets, tokens, "targets");
  require(losses, tokens, "losses");
  require(lse, tokens, "lse");
  for_each_row(tokens,
               CrossEntropyForward<Element>{logits.data(), targets.data(), losses.data(), lse.data(), op.vocab_size},
               stream);
}

template <class Element>
void cross_entropy_backward(const CrossEntropyOp& op, std::int64_t tokens, std::span<const Element> logits,
                            std::span<const std::int64_t> targets, std::span<const float> lse, float d_loss,
                            std::int64_t counted_tokens, std::span<Element> d_logits, cudaStream_t stream) {
  require(logits, tokens * op.vocab_size, "logits");
  require(targets, tokens, "targets");
  require(lse, tokens, "lse");
  require(d_logits, tokens * op.vocab_size, "d_logits");
  SYNCPLAN_CHECK(counted_tokens >= 0 && counted_tokens <= tokens);
  const float scale = counted_tokens == 0 ? 0.0f : d_loss / static_cast<float>(counted_tokens);
  for_each(length(d_logits),
           CrossEntropyBackward<Element>{logits.data(), targets.data(), lse.data(), d_logits.data(), op.vocab_size,
                                         scale},
           stream);
}

template <class Element>
void square_gemm(std::int64_t n, std::span<const Element> a, std::span<const Element> b, std::span<Element> c,
                 cublasHandle_t blas, cudaStream_t stream) {
  require(a, n * n, "a");
  require(b, n * n, "b");
  require(c, n * n, "c");
  StridedGemm gemm;
  gemm.m = gemm.n = gemm.k = n;
  gemm.lda = gemm.ldb = gemm.ldc = n;
  run_gemm<Element>(blas, stream, gemm, a, b, c);
}

template <class Element>
void fill_uniform(std::uint64_t stream_seed, std::span<Element> values, cudaStream_t stream) {
  for_each(length(values), FillUniform<Element>{values.data(), stream_seed}, stream);
}

void fill_ids(std::uint64_t stream_seed, std::int64_t bound, std::span<std::int64_t> ids, cudaStream_t stream) {
  SYNCPLAN_CHECK(bound >= 1);
  for_each(length(ids), FillIds{ids.data(), stream_seed, bound}, stream);
}

// ---------------------------------------------------------------------------------------------
// Instantiations: fp32 and bf16
// ---------------------------------------------------------------------------------------------

#define SYNCPLAN_CUDA_KERNELS_FOR(E)                                                                                   \
  template void token_embedding_forward<E>(const TokenEmbeddingOp&, std::span<const std::int64_t>, std::span<const E>, \
                                           std::span<E>, cudaStream_t);                                                \
  template void token_embedding_backward<E>(const TokenEmbeddingOp&, std::span<const std::int64_t>,                     \
                                            std::span<const E>, std::span<E>, cudaStream_t);                           \
  template void position_embedding_forward<E>(const PositionEmbeddingOp&, std::int64_t, std::int64_t,                  \
                                              std::span<const E>, std::span<const E>, std::span<E>, cudaStream_t);     \
  template void position_embedding_backward<E>(const PositionEmbeddingOp&, std::int64_t, std::int64_t,                 \
                                               std::span<const E>, std::span<E>, cudaStream_t);                        \
  template void linear_forward<E>(const LinearOp&, std::int64_t, std::span<const E>, std::span<const E>,               \
                                  std::span<const E>, std::span<E>, cublasHandle_t, cudaStream_t, WeightLayout);       \
  template void linear_backward<E>(const LinearOp&, std::int64_t, std::span<const E>, std::span<const E>,              \
                                   std::span<const E>, std::span<E>, std::span<E>, std::span<E>, cublasHandle_t,       \
                                   cudaStream_t, WeightLayout);                                                        \
  template void layer_norm_forward<E>(const LayerNormOp&, std::int64_t, std::span<const E>, std::span<const E>,        \
                                      std::span<const E>, std::span<E>, std::span<float>, std::span<float>,            \
                                      cudaStream_t);                                                                   \
  template void layer_norm_backward<E>(const LayerNormOp&, std::int64_t, std::span<const E>, std::span<const E>,       \
                                       std::span<const E>, std::span<const float>, std::span<const float>,             \
                                       std::span<E>, std::span<E>, std::span<E>, cudaStream_t);                        \
  template void rms_norm_forward<E>(const RmsNormOp&, std::int64_t, std::span<const E>, std::span<const E>,            \
                                    std::span<E>, std::span<float>, cudaStream_t);                                     \
  template void rms_norm_backward<E>(const RmsNormOp&, std::int64_t, std::span<const E>, std::span<const E>,           \
                                     std::span<const E>, std::span<const float>, std::span<E>, std::span<E>,           \
                                     cudaStream_t);                                                                    \
  template void gelu_forward<E>(std::span<const E>, std::span<E>, cudaStream_t);                                      \
  template void gelu_backward<E>(std::span<const E>, std::span<const E>, std::span<E>, cudaStream_t);                  \
  template void silu_forward<E>(std::span<const E>, std::span<E>, cudaStream_t);                                      \
  template void silu_backward<E>(std::span<const E>, std::span<const E>, std::span<E>, cudaStream_t);                  \
  template void gated_product_forward<E>(std::span<const E>, std::span<const E>, std::span<E>, cudaStream_t);          \
  template void gated_product_backward<E>(std::span<const E>, std::span<const E>, std::span<const E>, std::span<E>,    \
                                          std::span<E>, cudaStream_t);                                                 \
  template void residual_add_forward<E>(std::span<const E>, std::span<const E>, std::span<E>, cudaStream_t);           \
  template void residual_add_backward<E>(std::span<const E>, std::span<E>, cudaStream_t);                              \
  template void dropout_forward<E>(const DropoutOp&, std::uint64_t, std::span<const E>, std::span<E>,                  \
                                   std::span<std::uint8_t>, cudaStream_t);                                             \
  template void dropout_backward<E>(const DropoutOp&, std::span<const E>, std::span<const std::uint8_t>, std::span<E>, \
                                    cudaStream_t);                                                                     \
  template void rotary_table_forward<E>(const RotaryTableOp&, std::int64_t, std::int64_t, std::span<E>, std::span<E>,  \
                                        cudaStream_t);                                                                 \
  template void rotary_forward<E>(std::int64_t, std::int64_t, std::int64_t, std::span<const E>, std::span<const E>,    \
                                  std::span<const E>, std::span<E>, cudaStream_t);                                     \
  template void rotary_backward<E>(std::int64_t, std::int64_t, std::int64_t, std::span<const E>, std::span<const E>,   \
                                   std::span<const E>, std::span<E>, cudaStream_t);                                    \
  template void attention_scores_forward<E>(const AttentionHeads&, std::int64_t, std::int64_t, std::span<const E>,    \
                                            std::span<const E>, std::span<E>, cublasHandle_t, cudaStream_t);           \
  template void attention_scores_backward<E>(const AttentionHeads&, std::int64_t, std::int64_t, std::span<const E>,   \
                                             std::span<const E>, std::span<const E>, std::span<const E>, std::span<E>, \
                                             std::span<E>, std::span<E>, cublasHandle_t, cudaStream_t);                \
  template void attention_context_forward<E>(const AttentionContextOp&, std::int64_t, std::int64_t, std::uint64_t,     \
                                             std::span<const E>, std::span<const E>, std::span<std::uint8_t>,          \
                                             std::span<E>, std::span<E>, cublasHandle_t, cudaStream_t);                \
  template void attention_context_backward<E>(const AttentionContextOp&, std::int64_t, std::int64_t,                   \
                                              std::span<const E>, std::span<const E>, std::span<const E>,              \
                                              std::span<const std::uint8_t>, std::span<E>, std::span<E>, std::span<E>, \
                                              cublasHandle_t, cudaStream_t);                                           \
  template void cross_entropy_forward<E>(const CrossEntropyOp&, std::int64_t, std::span<const E>,                      \
                                         std::span<const std::int64_t>, std::span<float>, std::span<float>,            \
                                         cudaStream_t);                                                                \
  template void cross_entropy_backward<E>(const CrossEntropyOp&, std::int64_t, std::span<const E>,                     \
                                          std::span<const std::int64_t>, std::span<const float>, float, std::int64_t,  \
                                          std::span<E>, cudaStream_t);                                                 \
  template void square_gemm<E>(std::int64_t, std::span<const E>, std::span<const E>, std::span<E>, cublasHandle_t,     \
                               cudaStream_t);                                                                          \
  template void fill_uniform<E>(std::uint64_t, std::span<E>, cudaStream_t);

SYNCPLAN_CUDA_KERNELS_FOR(float)
SYNCPLAN_CUDA_KERNELS_FOR(__nv_bfloat16)
#undef SYNCPLAN_CUDA_KERNELS_FOR

}  // namespace syncplan::cuda
