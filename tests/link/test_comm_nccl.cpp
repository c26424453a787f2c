// The communicator's NCCL backend on a GPU, through the GPU backend library (comm/nccl_backend.hpp,
// profiler/gpu_backend.hpp): buckets of device buffers averaged, several in flight, a deadline, and
// abort. Without the library or a GPU it prints "skipped: ..." and exits 77 (CTest: skipped).
// Run as one rank (a singleton or mpirun -np 1); with N ranks, one GPU each, the means change as
// derived below.
#include "comm/communicator.hpp"
#include "comm/mpi_session.hpp"
#include "comm/nccl_backend.hpp"
#include "profiler/gpu_backend.hpp"

#include <cmath>
#include <cstdio>
#include <exception>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

using namespace syncplan;

namespace {

// Rank r puts (r + 1)(b + 1) + (i mod 5) + k in element i of buffer k of bucket b; the mean over n
// ranks is (b + 1)(n + 1)/2 + (i mod 5) + k (a multiple of 1/2; ncclAvg may round it by an ulp
// or two when it premultiplies by 1/n, so the check allows 1e-6 of the value). With n = 1 that
// is the rank's own value: the bucket must come back unchanged.
int run(const MpiSession& mpi, const GpuBackend& gpu) {
  const int device = mpi.local_rank();
  Communicator comm = make_nccl_communicator(mpi, gpu.nccl(), device, 60);
  const int n = comm.size();
  const std::vector<std::vector<std::size_t>> lengths = {{1}, {1000}, {3, 257, 1 << 20}};
  std::vector<std::vector<float*>> device_buffers(lengths.size());
  const auto release = [&gpu](float* pointer) { gpu.device_free(pointer); };
  std::vector<std::unique_ptr<float, decltype(release)>> owned;
  std::vector<BucketRequest> requests;
  for (std::size_t b = 0; b < lengths.size(); ++b) {
    std::vector<std::span<float>> buffers;
    for (std::size_t k = 0; k < lengths[b].size(); ++k) {
      std::vector<float> host(lengths[b][k]);
      for (std::size_t i = 0; i < host.size(); ++i)
        host[i] = static_cast<float>((comm.rank() + 1) * (b + 1) + i % 5 + k);
      owned.emplace_back(gpu.device_floats(device, host.size(), 0), release);
      gpu.copy_floats(device, owned.back().get(), host.data(), host.size());
      device_buffers[b].push_back(owned.back().get());
      buffers.emplace_back(owned.back().get(), host.size());
    }
    requests.push_back(comm.start("bucket " + std::to_string(b), buffers));
  }
  for (std::size_t b = lengths.size(); b-- > 0;) comm.wait(requests[b], 30);
  int wrong = 0;
  for (std::size_t b = 0; b < lengths.size(); ++b)
    for (std::size_t k = 0; k < lengths[b].size(); ++k) {
      std::vector<float> host(lengths[b][k]);
      gpu.copy_floats(device, host.data(), device_buffers[b][k], host.size());
      for (std::size_t i = 0; i < host.size(); ++i) {
        const float expected = static_cast<float>((b + 1) * (n + 1)) / 2 + static_cast<float>(i % 5 + k);
        if (std::abs(host[i] - expected) <= 1e-6f * expected) continue;
        if (++wrong <= 3) std::printf("FAIL: bucket %zu buffer %zu [%zu] = %.9g, expected %.9g\n", b, k, i, host[i], expected);
      }
    }
  // abort: ncclCommAbort; the communicator is not used afterwards, and its destruction is safe.
  const std::span<float> one[] = {std::span<float>(device_buffers[0][0], 1)};
  comm.start("abandoned", one);
  comm.abort(1);
  if (wrong == 0)
    std::printf("PASS: rank %d of %d (%s): buckets of 1, 1000 and 3+257+2^20 floats averaged with ncclAvg; abort ok\n",
                comm.rank(), n, gpu.description());
  return wrong == 0 ? 0 : 1;
}

}  // namespace

int main() {
  try {
    std::string why;
    const std::optional<GpuBackend> gpu = GpuBackend::load(why);
    if (!gpu || gpu->nccl().open == nullptr) {
      std::printf("skipped: %s\n", gpu ? "the GPU backend has no NCCL" : why.c_str());
      return 77;
    }
    if (gpu->device_count(why) == 0) {
      std::printf("skipped: no CUDA device (%s)\n", why.c_str());
      return 77;
    }
    const MpiSession mpi;
    return run(mpi, *gpu);
  } catch (const std::exception& e) {
    std::printf("FAIL: %s\n", e.what());
    return 1;
  }
}
