// The NCCL backend of the communicator (docs/comm.md): its C-ABI entry points, which the GPU
// backend library provides (nccl_communicator.cpp, built only with CUDA and NCCL), and the
// bootstrap that joins the ranks: rank 0 makes the NCCL unique id and MPI broadcasts it, as
// nccl-tests and llm.c do. This header needs neither CUDA nor NCCL.
#pragma once

#include "comm/communicator.hpp"
#include "comm/mpi_session.hpp"

#include <cstddef>

namespace syncplan {

extern "C" {

inline constexpr std::size_t kNcclUniqueIdBytes = 128;  // NCCL_UNIQUE_ID_BYTES

/// What one rank needs to join an NCCL communicator.
struct NcclSetup {
  int rank = 0;
  int size = 1;
  int device = 0;                                   ///< the CUDA device of this rank
  unsigned char unique_id[kNcclUniqueIdBytes] = {}; ///< rank 0's ncclGetUniqueId, the same on every rank
  double deadline_s = 60;                           ///< bound on joining and on enqueueing, seconds
};

/// The NCCL functions of the GPU backend library. unique_id: ncclGetUniqueId into `id`
/// (kNcclUniqueIdBytes). open: cudaSetDevice, a nonblocking communicator
/// (ncclConfig_t.blocking = 0, so that ncclCommAbort is safe) joined within setup->deadline_s, a
/// stream of the highest priority; fills `table` (buffers in device memory, ncclAvg per buffer in
/// one ncclGroupStart/End, ready_event a cudaEvent_t to wait for, done by cudaEventQuery, errors
/// by ncclCommGetAsyncError, abort by ncclCommAbort).
struct NcclEntryPoints {
  int (*unique_id)(unsigned char* id, AbiStatus* status) = nullptr;
  int (*open)(const NcclSetup* setup, CommBackendTable* table, AbiStatus* status) = nullptr;
};

}  // extern "C"

/// An NCCL communicator across the MPI world: rank 0's unique id broadcast, then every rank opens
/// its communicator on CUDA device `device` within `deadline_s` seconds. Collective. Throws
/// LibraryError (and InputError) as the backend reports them; every rank learns of a rank 0
/// failure to make the id (the others would wait forever in the broadcast).
Communicator make_nccl_communicator(const MpiSession& mpi, const NcclEntryPoints& nccl, int device, double deadline_s);

#if SYNCPLAN_NCCL_BACKEND
/// The entry points, in the GPU backend library only (comm/nccl_communicator.cpp).
NcclEntryPoints nccl_entry_points();
#endif

}  // namespace syncplan
