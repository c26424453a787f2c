// The MPI backend of the communicator (docs/comm.md): host buffers, MPI_Iallreduce (MPI_SUM) then
// a division by the world size, progressed by MPI_Test polling.
#pragma once

#include "comm/communicator.hpp"
#include "comm/mpi_session.hpp"

#include <limits>

namespace syncplan {

/// A communicator over a duplicate of MPI_COMM_WORLD (so that buckets never match the session's
/// own collectives). A bucket of one buffer is reduced in place; several are packed into one
/// contiguous buffer first and unpacked when done. Averages are the float sum divided by the
/// world size. A bucket of more than 2^31 - 1 elements is an InputError (MPI 3 counts are int).
/// abort(code) is MPI_Abort. Collective (the duplicate is MPI_Comm_idup, tested until done or
/// `deadline_s` seconds (> 0) have passed: a stopped rank cannot hold the others forever; the
/// default waits as long as it takes). Throws CommTimeout at the deadline, LibraryError when an MPI
/// call fails.
Communicator make_mpi_communicator(const MpiSession& mpi,
                                   double deadline_s = std::numeric_limits<double>::infinity());

/// The backend table make_mpi_communicator wraps, for rank `rank` of a world of `size` ranks
/// (MPI_COMM_WORLD's): for a backend library that averages host memory through MPI (the test
/// suite's stand-in for the GPU backend, tests/kernels/fake_gpu_backend.cpp). The caller owns the
/// table's state (its destroy). Collective, with make_mpi_communicator's deadline and errors.
CommBackendTable make_mpi_backend_table(int rank, int size, double deadline_s);

}  // namespace syncplan
