// The stream, buffer and out-of-memory types of the CUDA code: what the layer graph, the trainer
// and the profiler allocate and launch with.
#pragma once

#include "core/library_check.hpp"

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <string>

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

}  // namespace syncplan::cuda
