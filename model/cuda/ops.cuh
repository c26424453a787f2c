// Device buffers for an op's tensors and the dispatch of one pass to the CUDA kernels: the CUDA
// counterparts of HostTensors and run_op_cpu (model/cpu/host_tensors.hpp), used by the op-by-op
// test that compares the two; and the stream, buffer and out-of-memory types of the CUDA code.
#pragma once

#include "core/library_check.hpp"
#include "model/op_tensors.hpp"

#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace syncplan::cuda {

/// A stream and a cuBLAS handle bound to it, on the current device; destroyed together.
class CudaContext {
 public:
  CudaContext();
  ~CudaContext();
  CudaContext(const CudaContext&) = delete;
  CudaContext& operator=(const CudaContext&) = delete;
  cudaStream_t stream() const { return stream_; }
  cublasHandle_t blas() const { return blas_; }

 private:
  cudaStream_t stream_ = nullptr;
  cublasHandle_t blas_ = nullptr;
};

/// cudaMalloc had too little free device memory: a LibraryError (exit 1 when nothing handles it);
/// the profiler turns it into an InputError that names the workload (docs/profiler.md section 3).
class DeviceOutOfMemory : public LibraryError {
 public:
  using LibraryError::LibraryError;
};

/// One device allocation of `bytes` (cudaMalloc), freed on destruction; movable. Throws
/// DeviceOutOfMemory when the device has too little free memory, LibraryError on other errors.
class DeviceBuffer {
 public:
  explicit DeviceBuffer(std::size_t bytes);
  ~DeviceBuffer();
  DeviceBuffer(DeviceBuffer&& other) noexcept;
  DeviceBuffer& operator=(DeviceBuffer&& other) noexcept;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  void* data() const { return data_; }
  std::size_t bytes() const { return bytes_; }

 private:
  void* data_ = nullptr;
  std::size_t bytes_ = 0;
};

/// Scratch elements the CUDA kernels of `op` need beyond op_tensors: [B, heads, S, S] for the
/// attention scores' backward and for the attention context with dropout, else 0.
std::int64_t op_workspace_elements(const LayerOp& op, const Workload& workload);

/// Device buffers for the tensors of one op (op_tensors), filled on the device with the numbers
/// HostTensors draws from the same seed (value tensors rounded to Element), plus the workspace.
template <class Element>
class DeviceTensors {
 public:
  DeviceTensors(std::vector<OpTensor> tensors, std::int64_t workspace_elements, std::uint64_t seed,
                cudaStream_t stream);

  const std::vector<OpTensor>& tensors() const { return tensors_; }
  /// A value tensor (Element); empty when absent (a linear without bias).
  std::span<Element> values(const std::string& name) const;
  /// An fp32 statistics tensor (mean, rstd, lse, losses).
  std::span<float> stats(const std::string& name) const;
  /// A token-id tensor.
  std::span<std::int64_t> ids(const std::string& name) const;
  /// A mask tensor; empty when absent.
  std::span<std::uint8_t> mask(const std::string& name) const;
  std::span<Element> workspace() const;

  /// Tensor `name` (value or fp32) copied to the host as fp32, after the stream's work so far.
  std::vector<float> host_floats(const std::string& name, cudaStream_t stream) const;
  /// Mask `name` copied to the host.
  std::vector<std::uint8_t> host_mask(const std::string& name, cudaStream_t stream) const;

 private:
  const OpTensor* find(const std::string& name, std::size_t& index) const;
  std::vector<OpTensor> tensors_;
  std::vector<DeviceBuffer> buffers_;  // one per tensor, then the workspace (possibly 0 bytes)
};

/// Runs one pass of `op` on `tensors` with the CUDA kernels on `context`'s stream (asynchronous).
/// The cross-entropy's backward starts from d_loss = 1 over all T targets (the profilers' targets
/// are all valid ids).
template <class Element>
void run_op_cuda(const LayerOp& op, const Workload& workload, Pass pass, const DeviceTensors<Element>& tensors,
                 std::uint64_t seed, const CudaContext& context);

}  // namespace syncplan::cuda
