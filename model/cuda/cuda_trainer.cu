// The CUDA trainer (model/cuda/cuda_trainer.cuh): AdamW's kernel and one rank's training state.
#include "model/cuda/cuda_trainer.cuh"

#include "core/cuda_check.hpp"
#include "core/errors.hpp"

#include <algorithm>
#include <cmath>
#include <string>

namespace syncplan::cuda {

namespace {

constexpr int kAdamThreads = 256;

// AdamW::step's loop body, element i, without contractions into fused multiply-adds.
__global__ void adamw_kernel(std::int64_t n, float* p, const float* g, float* m, float* v, float lr, float b1,
                             float b2, float eps, float decay, float correction1, float correction2) {
  const std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const float gi = g[i];
  m[i] = __fadd_rn(__fmul_rn(b1, m[i]), __fmul_rn(1.0f - b1, gi));
  v[i] = __fadd_rn(__fmul_rn(b2, v[i]), __fmul_rn(__fmul_rn(1.0f - b2, gi), gi));
  const float m_hat = m[i] / correction1, v_hat = v[i] / correction2;
  p[i] = __fsub_rn(__fmul_rn(p[i], decay), __fmul_rn(lr, m_hat) / __fadd_rn(sqrtf(v_hat), eps));
}

// Delayed averaging's correction, element i: p + (mean - own), IEEE-rounded as the CPU computes it.
__global__ void correction_kernel(std::int64_t n, float* p, const float* own, const float* mean) {
  const std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n) return;
  p[i] = __fadd_rn(p[i], __fsub_rn(mean[i], own[i]));
}

double elapsed_s(cudaEvent_t from, cudaEvent_t to) {
  float ms = 0;
  SYNCPLAN_CUDA_CHECK(cudaEventElapsedTime(&ms, from, to));
  return static_cast<double>(ms) * 1e-3;
}

cudaEvent_t make_event() {
  cudaEvent_t event = nullptr;
  SYNCPLAN_CUDA_CHECK(cudaEventCreate(&event));
  return event;
}

}  // namespace

void adamw_step(std::span<float> parameters, std::span<const float> gradients, std::span<float> first_moment,
                std::span<float> second_moment, const AdamWOptions& options, std::int64_t step, cudaStream_t stream) {
  const std::size_t n = parameters.size();
  if (gradients.size() != n || first_moment.size() != n || second_moment.size() != n || step < 1)
    throw InternalError("cuda::adamw_step: " + std::to_string(n) + " parameters, " + std::to_string(gradients.size()) +
                        " gradients, moments of " + std::to_string(first_moment.size()) + " and " +
                        std::to_string(second_moment.size()) + ", step " + std::to_string(step));
  if (n == 0) return;
  // The scalars as AdamW::step computes them (double, then rounded to float).
  const double t = static_cast<double>(step);
  const auto decay = static_cast<float>(1.0 - options.learning_rate * options.weight_decay);
  const auto correction1 = static_cast<float>(1.0 - std::pow(options.beta1, t));
  const auto correction2 = static_cast<float>(1.0 - std::pow(options.beta2, t));
  const auto blocks = static_cast<unsigned>((static_cast<std::int64_t>(n) + kAdamThreads - 1) / kAdamThreads);
  adamw_kernel<<<blocks, kAdamThreads, 0, stream>>>(
      static_cast<std::int64_t>(n), parameters.data(), gradients.data(), first_moment.data(), second_moment.data(),
      static_cast<float>(options.learning_rate), static_cast<float>(options.beta1), static_cast<float>(options.beta2),
      static_cast<float>(options.eps), decay, correction1, correction2);
  SYNCPLAN_CUDA_CHECK(cudaGetLastError());
}

int CudaTrainer::select(int device) {
  SYNCPLAN_CUDA_CHECK(cudaSetDevice(device));
  return device;
}

CudaTrainer::CudaTrainer(const Model& model, const Workload& workload, const AdamWOptions& adamw, int device)
    : device_(select(device)),
      graph_(model, [&] {
        if (workload.dtype != Dtype::kFp32)
          throw InputError("the GPU trainer trains in fp32 only (the communicator averages fp32 buffers)");
        return workload;
      }()),
      options_(adamw),
      first_moment_(static_cast<std::size_t>(graph_.parameters().bytes())),
      second_moment_(static_cast<std::size_t>(graph_.parameters().bytes())),
      frozen_copy_([&] {
        std::int64_t bytes = 0;
        for (std::size_t l = 0; l < graph_.layer_count(); ++l)
          if (model.layers[l].frozen && !graph_.tied(l))
            for (const DeviceSpan& tensor : graph_.layer_parameters(l)) {
              frozen_.push_back(tensor);
              bytes += tensor.bytes();
            }
        return static_cast<std::size_t>(bytes);
      }()) {
  SYNCPLAN_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
  SYNCPLAN_CUDA_CHECK(cudaMemsetAsync(first_moment_.data(), 0, first_moment_.bytes(), stream_));
  SYNCPLAN_CUDA_CHECK(cudaMemsetAsync(second_moment_.data(), 0, second_moment_.bytes(), stream_));
  origin_ = make_event();
  update_start_ = make_event();
  update_end_ = make_event();
  SYNCPLAN_CUDA_CHECK(cudaEventCreateWithFlags(&snapshot_done_, cudaEventDisableTiming));
  for (std::size_t l = 0; l < graph_.layer_count(); ++l) {
    forward_start_.push_back(make_event());
    forward_end_.push_back(make_event());
    backward_start_.push_back(make_event());
    backward_end_.push_back(make_event());
  }
  SYNCPLAN_CUDA_CHECK(cudaStreamSynchronize(stream_));
}

CudaTrainer::~CudaTrainer() {
  // No checks: a destructor has no one to tell.
  if (stream_ != nullptr) cudaStreamSynchronize(stream_);
  for (const auto* events : {&forward_start_, &forward_end_, &backward_start_, &backward_end_})
    for (cudaEvent_t event : *events) cudaEventDestroy(event);
  for (cudaEvent_t event : {origin_, update_start_, update_end_, snapshot_done_})
    if (event != nullptr) cudaEventDestroy(event);
  if (stream_ != nullptr) cudaStreamDestroy(stream_);
}

void CudaTrainer::initialize(std::uint64_t seed) { graph_.initialize_parameters(seed, stream_); }

void CudaTrainer::set_batch(std::span<const std::int64_t> ids, std::span<const std::int64_t> targets,
                            std::uint64_t dropout_seed) {
  graph_.set_batch(ids, targets, stream_);
  graph_.set_dropout_seed(dropout_seed);
}

void CudaTrainer::begin() {
  SYNCPLAN_CUDA_CHECK(cudaEventRecord(origin_, stream_));
  graph_.zero_gradients(stream_);
}

void CudaTrainer::forward(std::size_t layer) {
  SYNCPLAN_CUDA_CHECK(cudaEventRecord(forward_start_.at(layer), stream_));
  graph_.forward(layer, stream_);
  SYNCPLAN_CUDA_CHECK(cudaEventRecord(forward_end_[layer], stream_));
}

cudaEvent_t CudaTrainer::backward(std::size_t layer) {
  SYNCPLAN_CUDA_CHECK(cudaEventRecord(backward_start_.at(layer), stream_));
  graph_.backward(layer, stream_);
  SYNCPLAN_CUDA_CHECK(cudaEventRecord(backward_end_[layer], stream_));
  return backward_end_[layer];
}

void CudaTrainer::step() {
  SYNCPLAN_CUDA_CHECK(cudaEventRecord(update_start_, stream_));
  auto* copy = static_cast<unsigned char*>(frozen_copy_.data());
  for (const DeviceSpan& tensor : frozen_) {
    SYNCPLAN_CUDA_CHECK(cudaMemcpyAsync(copy, tensor.data, static_cast<std::size_t>(tensor.bytes()),
                                        cudaMemcpyDeviceToDevice, stream_));
    copy += tensor.bytes();
  }
  const auto n = static_cast<std::size_t>(parameter_count());
  ++adam_step_;
  adamw_step({parameters(), n}, {static_cast<const float*>(graph_.gradients().data), n},
             {static_cast<float*>(first_moment_.data()), n}, {static_cast<float*>(second_moment_.data()), n}, options_,
             adam_step_, stream_);
  copy = static_cast<unsigned char*>(frozen_copy_.data());
  for (const DeviceSpan& tensor : frozen_) {
    SYNCPLAN_CUDA_CHECK(cudaMemcpyAsync(tensor.data, copy, static_cast<std::size_t>(tensor.bytes()),
                                        cudaMemcpyDeviceToDevice, stream_));
    copy += tensor.bytes();
  }
  SYNCPLAN_CUDA_CHECK(cudaEventRecord(update_end_, stream_));
}

double CudaTrainer::finish(std::span<LayerTimes> times, LayerTimes& update) {
  if (times.size() != layer_count())
    throw InternalError("CudaTrainer::finish: times for " + std::to_string(times.size()) + " layers, the graph has " +
                        std::to_string(layer_count()));
  SYNCPLAN_CUDA_CHECK(cudaStreamSynchronize(stream_));
  for (std::size_t l = 0; l < times.size(); ++l) {
    times[l].forward_start_s = elapsed_s(origin_, forward_start_[l]);
    times[l].forward_s = elapsed_s(forward_start_[l], forward_end_[l]);
    times[l].backward_start_s = elapsed_s(origin_, backward_start_[l]);
    times[l].backward_s = elapsed_s(backward_start_[l], backward_end_[l]);
  }
  update = {elapsed_s(origin_, update_start_), elapsed_s(update_start_, update_end_), 0, 0};
  return graph_.loss(stream_);
}

std::vector<DeviceSpan> CudaTrainer::layer_buffers(std::size_t layer, bool gradients) const {
  return gradients ? graph_.layer_gradients(layer) : graph_.layer_parameters(layer);
}

void CudaTrainer::get_state(float* parameters, float* first_moment, float* second_moment,
                            std::int64_t& adam_step) const {
  const auto bytes = static_cast<std::size_t>(graph_.parameters().bytes());
  SYNCPLAN_CUDA_CHECK(cudaMemcpyAsync(parameters, this->parameters(), bytes, cudaMemcpyDeviceToHost, stream_));
  SYNCPLAN_CUDA_CHECK(cudaMemcpyAsync(first_moment, first_moment_.data(), bytes, cudaMemcpyDeviceToHost, stream_));
  SYNCPLAN_CUDA_CHECK(cudaMemcpyAsync(second_moment, second_moment_.data(), bytes, cudaMemcpyDeviceToHost, stream_));
  SYNCPLAN_CUDA_CHECK(cudaStreamSynchronize(stream_));
  adam_step = adam_step_;
}

void CudaTrainer::set_state(const float* parameters, const float* first_moment, const float* second_moment,
                            std::int64_t adam_step) {
  const auto bytes = static_cast<std::size_t>(graph_.parameters().bytes());
  SYNCPLAN_CUDA_CHECK(cudaMemcpyAsync(this->parameters(), parameters, bytes, cudaMemcpyHostToDevice, stream_));
  SYNCPLAN_CUDA_CHECK(cudaMemcpyAsync(first_moment_.data(), first_moment, bytes, cudaMemcpyHostToDevice, stream_));
  SYNCPLAN_CUDA_CHECK(cudaMemcpyAsync(second_moment_.data(), second_moment, bytes, cudaMemcpyHostToDevice, stream_));
  SYNCPLAN_CUDA_CHECK(cudaStreamSynchronize(stream_));
  adam_step_ = adam_step;
}

float* CudaTrainer::snapshot_buffer(std::size_t floats) {
  snapshots_.emplace_back(std::max<std::size_t>(floats, 1) * sizeof(float));
  return static_cast<float*>(snapshots_.back().data());
}

cudaEvent_t CudaTrainer::snapshot(std::span<const DeviceSpan> tensors, float* own, float* mean) {
  for (const DeviceSpan& tensor : tensors) {
    if (tensor.dtype != Dtype::kFp32) throw InternalError("CudaTrainer::snapshot: a tensor not in fp32");
    const auto bytes = static_cast<std::size_t>(tensor.bytes());
    SYNCPLAN_CUDA_CHECK(cudaMemcpyAsync(own, tensor.data, bytes, cudaMemcpyDeviceToDevice, stream_));
    SYNCPLAN_CUDA_CHECK(cudaMemcpyAsync(mean, tensor.data, bytes, cudaMemcpyDeviceToDevice, stream_));
    own += tensor.elements;
    mean += tensor.elements;
  }
  SYNCPLAN_CUDA_CHECK(cudaEventRecord(snapshot_done_, stream_));
  return snapshot_done_;
}

void CudaTrainer::correct(std::span<const DeviceSpan> tensors, const float* own, const float* mean) {
  for (const DeviceSpan& tensor : tensors) {
    if (tensor.dtype != Dtype::kFp32) throw InternalError("CudaTrainer::correct: a tensor not in fp32");
    if (tensor.elements > 0) {
      const auto blocks = static_cast<unsigned>((tensor.elements + kAdamThreads - 1) / kAdamThreads);
      correction_kernel<<<blocks, kAdamThreads, 0, stream_>>>(tensor.elements, static_cast<float*>(tensor.data), own,
                                                              mean);
      SYNCPLAN_CUDA_CHECK(cudaGetLastError());
    }
    own += tensor.elements;
    mean += tensor.elements;
  }
}

}  // namespace syncplan::cuda
