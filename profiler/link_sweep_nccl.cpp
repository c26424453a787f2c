// The GPU backend of profile-link: a device buffer and the NCCL communicator from the GPU backend.
#include "profiler/link_sweep_nccl.hpp"
#include "core/field_error.hpp"

#include "core/errors.hpp"

#include <cstring>
#include <memory>
#include <vector>

namespace syncplan {

int first_rank_without_device(const MpiSession& mpi, const GpuBackend& gpu, std::string& why) {
  const int devices = gpu.device_count(why);
  if (devices > 0 && mpi.local_rank() >= devices)
    why = "local rank " + std::to_string(mpi.local_rank()) + " but only " + std::to_string(devices) +
          " CUDA devices on its node; start at most one rank per GPU";
  return mpi.first_failing_rank(devices > mpi.local_rank());
}

// Every rank needs a GPU of its own; when one has none, all ranks learn which and why, and throw
// the same InputError (a lone rank throwing would leave the others waiting in a collective).
void require_cuda_device_per_rank(const MpiSession& mpi, const GpuBackend& gpu) {
  std::string why;
  const int failing = first_rank_without_device(mpi, gpu, why);
  if (failing < 0) return;
  char reason[256] = {};
  std::strncpy(reason, why.c_str(), sizeof reason - 1);
  mpi.broadcast(reason, sizeof reason, failing);
  throw FieldError("backend", "backend nccl: rank " + std::to_string(failing) + " has no visible CUDA device (" + reason + ")");
}

std::vector<SweepPoint> sweep_allreduce_nccl(const MpiSession& mpi, const GpuBackend& gpu,
                                             const LinkSweepOptions& options, const SweepProgress& progress) {
  require_cuda_device_per_rank(mpi, gpu);
  const int device = mpi.local_rank();
  const std::size_t max_count = static_cast<std::size_t>(sweep_sizes(options).back()) / sizeof(float);
  const auto release = [&gpu](float* pointer) { gpu.device_free(pointer); };
  const std::unique_ptr<float, decltype(release)> data(gpu.device_floats(device, max_count, 0), release);
  Communicator comm = make_nccl_communicator(mpi, gpu.nccl(), device, kSweepDeadline_s);
  SweepBuffer buffer;
  buffer.data = data.get();
  buffer.fill = [&](std::int64_t count, float value) {
    const std::vector<float> host(static_cast<std::size_t>(count), value);
    gpu.copy_floats(device, data.get(), host.data(), host.size());
  };
  buffer.read = [&](std::int64_t count) {
    std::vector<float> host(static_cast<std::size_t>(count));
    gpu.copy_floats(device, host.data(), data.get(), host.size());
    return host;
  };
  return run_sweep(mpi, comm, options, progress, buffer);
}

}  // namespace syncplan
