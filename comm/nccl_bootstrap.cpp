// Joining an NCCL communicator over MPI: the unique id from rank 0, broadcast, then open.
#include "comm/nccl_backend.hpp"

#include "core/errors.hpp"
#include "core/library_check.hpp"

namespace syncplan {

Communicator make_nccl_communicator(const MpiSession& mpi, const NcclEntryPoints& nccl, int device,
                                    double deadline_s) {
  SYNCPLAN_CHECK(nccl.unique_id != nullptr && nccl.open != nullptr);
  NcclSetup setup;
  setup.rank = mpi.rank();
  setup.size = mpi.size();
  setup.device = device;
  setup.deadline_s = deadline_s;
  AbiStatus status;
  if (mpi.is_root()) nccl.unique_id(setup.unique_id, &status);
  // Every rank learns whether rank 0 has an id before waiting for it.
  if (mpi.first_failing_rank(status.code == kAbiOk) == 0) {
    if (mpi.is_root()) throw_abi_status(status, "NCCL backend");
    throw LibraryError("NCCL: rank 0 could not make the unique id");
  }
  mpi.broadcast(setup.unique_id, static_cast<int>(kNcclUniqueIdBytes), 0);
  CommBackendTable table;
  nccl.open(&setup, &table, &status);
  throw_abi_status(status, "NCCL backend");
  return Communicator(table);
}

}  // namespace syncplan
