// The CPU backend of profile-link: the communicator's MPI backend on a host buffer.
#include "profiler/link_sweep.hpp"

#include "comm/mpi_communicator.hpp"

#include <algorithm>
#include <vector>

namespace syncplan {

std::vector<SweepPoint> sweep_allreduce_mpi(const MpiSession& mpi, const LinkSweepOptions& options,
                                            const SweepProgress& progress) {
  std::vector<float> host(static_cast<std::size_t>(sweep_sizes(options).back()) / sizeof(float));
  Communicator comm = make_mpi_communicator(mpi);
  SweepBuffer buffer;
  buffer.data = host.data();
  buffer.fill = [&](std::int64_t count, float value) { std::fill_n(host.begin(), count, value); };
  buffer.read = [&](std::int64_t count) { return std::vector<float>(host.begin(), host.begin() + count); };
  return run_sweep(mpi, comm, options, progress, buffer);
}

}  // namespace syncplan
