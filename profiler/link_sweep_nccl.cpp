// The GPU backend of profile-link: ncclAllReduce bootstrapped over MPI, timed with CUDA events.
#include "profiler/link_sweep_nccl.hpp"

#include "core/errors.hpp"
#include "core/units.hpp"
#include "core/cuda_check.hpp"
#include "comm/nccl_check.hpp"

#include <cstring>
#include <vector>

namespace syncplan {

namespace {

// Device buffers, stream, events and communicator of one sweep, released in reverse order. The
// destructor ignores errors: it also runs while a LibraryError unwinds, with nothing to report to.
struct NcclResources {
  float* send = nullptr;
  float* receive = nullptr;
  cudaStream_t stream = nullptr;
  cudaEvent_t start = nullptr;
  cudaEvent_t stop = nullptr;
  ncclComm_t comm = nullptr;

  NcclResources() = default;
  NcclResources(const NcclResources&) = delete;
  NcclResources& operator=(const NcclResources&) = delete;
  ~NcclResources() {
    if (comm) ncclCommDestroy(comm);
    if (stop) cudaEventDestroy(stop);
    if (start) cudaEventDestroy(start);
    if (stream) cudaStreamDestroy(stream);
    if (receive) cudaFree(receive);
    if (send) cudaFree(send);
  }
};

}  // namespace

int visible_cuda_devices(std::string& why) {
  int count = 0;
  // Not through the check macro: no driver or no device is an answer here, not a failure.
  const cudaError_t error = cudaGetDeviceCount(&count);
  if (error != cudaSuccess) {
    why = cudaGetErrorString(error);
    return 0;
  }
  if (count == 0) why = "cudaGetDeviceCount found 0 devices";
  return count;
}

// Every rank needs a GPU of its own; when one has none, all ranks learn which and why, and throw
// the same InputError (a lone rank throwing would leave the others waiting in a collective).
void require_cuda_device_per_rank(const MpiSession& mpi) {
  std::string why;
  const int devices = visible_cuda_devices(why);
  if (devices > 0 && mpi.local_rank() >= devices)
    why = "local rank " + std::to_string(mpi.local_rank()) + " but only " + std::to_string(devices) +
          " CUDA devices on its node; start at most one rank per GPU";
  const int failing = mpi.first_failing_rank(devices > mpi.local_rank());
  if (failing < 0) return;
  char reason[256] = {};
  std::strncpy(reason, why.c_str(), sizeof reason - 1);
  mpi.broadcast(reason, sizeof reason, failing);
  throw InputError("--backend nccl: rank " + std::to_string(failing) + " has no visible CUDA device (" + reason + ")");
}

std::vector<SweepPoint> sweep_allreduce_nccl(const MpiSession& mpi, const LinkSweepOptions& options,
                                             const SweepProgress& progress) {
  require_cuda_device_per_rank(mpi);
  SYNCPLAN_CUDA_CHECK(cudaSetDevice(mpi.local_rank()));
  ncclUniqueId id;
  if (mpi.is_root()) SYNCPLAN_NCCL_CHECK(ncclGetUniqueId(&id));
  mpi.broadcast(&id, sizeof id, 0);

  const std::size_t max_count = static_cast<std::size_t>(sweep_sizes(options).back()) / sizeof(float);
  NcclResources gpu;
  SYNCPLAN_NCCL_CHECK(ncclCommInitRank(&gpu.comm, mpi.size(), id, mpi.rank()));
  SYNCPLAN_CUDA_CHECK(cudaStreamCreate(&gpu.stream));
  SYNCPLAN_CUDA_CHECK(cudaEventCreate(&gpu.start));
  SYNCPLAN_CUDA_CHECK(cudaEventCreate(&gpu.stop));
  SYNCPLAN_CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&gpu.send), max_count * sizeof(float)));
  SYNCPLAN_CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&gpu.receive), max_count * sizeof(float)));
  std::vector<float> host(max_count, static_cast<float>(mpi.rank() + 1));
  SYNCPLAN_CUDA_CHECK(cudaMemcpy(gpu.send, host.data(), max_count * sizeof(float), cudaMemcpyHostToDevice));
  const float expected = expected_allreduce_sum(mpi.size());

  return run_sweep(mpi, options, progress, [&](std::int64_t count) {
    const std::size_t elements = static_cast<std::size_t>(count);
    const auto all_reduce = [&] {
      SYNCPLAN_NCCL_CHECK(ncclAllReduce(gpu.send, gpu.receive, elements, ncclFloat, ncclSum, gpu.comm, gpu.stream));
    };
    for (int i = 0; i < options.warmup_iters; ++i) all_reduce();
    SYNCPLAN_CUDA_CHECK(cudaStreamSynchronize(gpu.stream));
    mpi.barrier();
    SYNCPLAN_CUDA_CHECK(cudaEventRecord(gpu.start, gpu.stream));
    for (int i = 0; i < options.iters; ++i) all_reduce();
    SYNCPLAN_CUDA_CHECK(cudaEventRecord(gpu.stop, gpu.stream));
    SYNCPLAN_CUDA_CHECK(cudaEventSynchronize(gpu.stop));
    float elapsed_ms = 0;
    SYNCPLAN_CUDA_CHECK(cudaEventElapsedTime(&elapsed_ms, gpu.start, gpu.stop));
    SYNCPLAN_CUDA_CHECK(cudaMemcpy(host.data(), gpu.receive, elements * sizeof(float), cudaMemcpyDeviceToHost));
    return RankMeasurement{elapsed_ms / units::kMillisecondsPerSecond / options.iters, count_wrong(host, count, expected)};
  });
}

}  // namespace syncplan
