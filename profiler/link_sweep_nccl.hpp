// The GPU backend of profile-link: the communicator's NCCL backend on one GPU per rank, reached
// through the GPU backend library (profiler/gpu_backend.hpp); this side needs no CUDA or NCCL.
#pragma once

#include "profiler/gpu_backend.hpp"
#include "profiler/link_sweep.hpp"

#include <string>

namespace syncplan {

/// Throws InputError on every rank when some rank has no CUDA device of its own, naming that rank
/// and CUDA's reason ("--backend nccl: rank R has no visible CUDA device (...)"). Collective.
void require_cuda_device_per_rank(const MpiSession& mpi, const GpuBackend& gpu);

/// The lowest rank without a CUDA device of its own (-1: every rank has one), with this rank's
/// reason in `why`. Collective.
int first_rank_without_device(const MpiSession& mpi, const GpuBackend& gpu, std::string& why);

/// Measures ncclAllReduce (ncclFloat, ncclAvg) across the MPI world at every size through the
/// NCCL communicator (comm/nccl_backend.hpp: rank 0's unique id sent with MPI_Bcast, one GPU per
/// rank, its node-local index), with run_sweep's timed loop and check. Collective. Throws as
/// require_cuda_device_per_rank, and LibraryError when a CUDA or NCCL call fails.
std::vector<SweepPoint> sweep_allreduce_nccl(const MpiSession& mpi, const GpuBackend& gpu,
                                             const LinkSweepOptions& options, const SweepProgress& progress);

}  // namespace syncplan
