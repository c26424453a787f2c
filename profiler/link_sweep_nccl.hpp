// The GPU backend of profile-link (built only with CUDA and NCCL: target syncplan_profiler_nccl).
#pragma once

#include "profiler/link_sweep.hpp"

#include <string>

namespace syncplan {

/// CUDA devices this process can use; 0, with the reason in `why`, when there is no driver or
/// no device (cudaGetDeviceCount's error text).
int visible_cuda_devices(std::string& why);

/// Throws InputError on every rank when some rank has no CUDA device of its own, naming that rank
/// and CUDA's reason ("--backend nccl: rank R has no visible CUDA device (...)"). Collective.
void require_cuda_device_per_rank(const MpiSession& mpi);

/// Measures ncclAllReduce (ncclFloat, ncclSum) across the MPI world at every size: one GPU per
/// rank (the rank's node-local index), the NCCL unique id made on rank 0 and sent with MPI_Bcast,
/// ncclCommInitRank, then per size warm-up, barrier, `iters` calls on one stream timed with CUDA
/// events, the mean per call and its maximum over ranks, and a check of the result.
/// Collective. Throws as require_cuda_device_per_rank, and LibraryError when a CUDA or NCCL call fails.
std::vector<SweepPoint> sweep_allreduce_nccl(const MpiSession& mpi, const LinkSweepOptions& options,
                                             const SweepProgress& progress);

}  // namespace syncplan
