// MPI for one command run (profile-link): initialization and finalization, this rank's place, and
// the few collectives that keep ranks in agreement when one of them fails.
#pragma once

#include <cstdint>

namespace syncplan {

/// MPI_Init on construction, MPI_Finalize on destruction. Under `mpirun -np N` every process is
/// one rank; started without mpirun, Open MPI's singleton initialization gives a world of 1 rank.
/// MPI errors are returned rather than fatal, so each call's check macro can report them.
/// Every method except rank()/size()/local_rank()/local_size()/node_cpus()/abort() is collective: all ranks call it.
class MpiSession {
 public:
  MpiSession();
  ~MpiSession();
  MpiSession(const MpiSession&) = delete;
  MpiSession& operator=(const MpiSession&) = delete;

  int rank() const { return rank_; }
  int size() const { return size_; }
  /// Rank among the processes of this node (0-based): picks the GPU of an NCCL rank.
  int local_rank() const { return local_rank_; }
  /// Ranks of this job on this node (MPI_COMM_TYPE_SHARED), >= 1.
  int local_size() const { return local_size_; }
  /// The CPUs this node's ranks may run on together: the OR of their affinity masks (core/host_cpus.hpp;
  /// `mpirun --bind-to core` gives each rank one CPU of its own, and their union is what they share), >= 1.
  int node_cpus() const { return node_cpus_; }
  bool is_root() const { return rank_ == 0; }

  /// The lowest rank on which `ok` is false, or -1 when it is true on every rank.
  int first_failing_rank(bool ok) const;
  /// The largest `value` over all ranks.
  double max(double value) const;
  /// The sum of `value` over all ranks.
  std::int64_t sum(std::int64_t value) const;
  void barrier() const;
  /// Copies `bytes` bytes at `data` from rank `root` to every rank.
  void broadcast(void* data, int bytes, int root) const;
  /// Ends every rank of the job with `code` (MPI_Abort): after a failure on one rank, the others
  /// may be waiting in a collective that will never complete.
  [[noreturn]] void abort(int code) const;

 private:
  int rank_ = 0;
  int size_ = 1;
  int local_rank_ = 0;
  int local_size_ = 1;
  int node_cpus_ = 1;
};

}  // namespace syncplan
