// Which ranks arrived at a bucket: each rank announces bucket s to every other rank with a tiny
// nonblocking message, so that a rank whose all-reduce timed out can name the ranks that never
// started it ("ranks 1 did not arrive"): MPI's collectives do not say who is late.
#pragma once

#include "comm/mpi_session.hpp"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace syncplan {

/// Arrival messages on their own duplicate of MPI_COMM_WORLD (they never match the buckets' or
/// the session's messages). For bucket sequence number s (0, 1, 2, ... in the order the buckets
/// are started, the same on every rank), arrive(s) posts one MPI_Isend of s to every other rank
/// and one MPI_Irecv from each; progress() tests them (MPI_Testsome) and frees the finished ones,
/// so call it wherever the all-reduces are polled. Nothing ever blocks: no call waits for a
/// message. Every request posted is released: by progress() once it finishes, or by the
/// destructor (receives cancelled and completed, sends freed with MPI_Request_free, which lets a
/// send to a dead rank go without waiting). Not thread-safe; one per process at a time is enough.
class Arrivals {
 public:
  /// Collective (MPI_Comm_dup); throws LibraryError when MPI fails.
  explicit Arrivals(const MpiSession& mpi);
  ~Arrivals();
  Arrivals(const Arrivals&) = delete;
  Arrivals& operator=(const Arrivals&) = delete;

  /// Announces that this rank started bucket `sequence` and listens for the others' announcements
  /// of it. Sequence numbers increase by one per call from 0 (InternalError otherwise). Throws
  /// LibraryError when MPI fails.
  void arrive(std::int64_t sequence);
  /// Tests every request in flight and frees the finished ones.
  void progress();
  /// After progress(): the ranks (ascending, never this one) whose announcement of `sequence` has
  /// not come; empty once all have. `sequence` must have been arrived at (InternalError otherwise).
  std::vector<int> missing(std::int64_t sequence);
  /// Requests posted and not yet released (sends and receives): 0 once every rank has arrived at
  /// every bucket and progress() has seen the sends finish.
  std::size_t requests_in_flight() const;

 private:
  struct State;  // the duplicate communicator and each bucket's requests (keeps mpi.h out of here)
  std::unique_ptr<State> state_;
};

/// For the timeout line: "rank 1 did not arrive", "ranks 1 and 3 did not arrive", "ranks 1, 2
/// and 3 did not arrive" (ascending ranks as missing() gives them); "every rank arrived" for none.
std::string missing_ranks_text(const std::vector<int>& ranks);

}  // namespace syncplan
