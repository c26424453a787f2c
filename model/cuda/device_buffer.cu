// The CUDA stream and cuBLAS handle pair, and one device allocation.
#include "model/cuda/device_buffer.cuh"

#include "core/errors.hpp"
#include "core/cublas_check.hpp"
#include "core/cuda_check.hpp"

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

}  // namespace syncplan::cuda
