// Which ranks arrived at a bucket, and which are still alive in it: each rank announces bucket s
// to every other rank with a tiny nonblocking message, and sends a heartbeat while it waits, so
// that a rank whose all-reduce timed out can name the ranks that never started the bucket ("rank
// 1 did not arrive") or that started it and then went silent (a rank stopped inside it): MPI's
// collectives do not say who is late.
#pragma once

#include "comm/mpi_session.hpp"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace syncplan {

/// Who is late at a bucket, for the timeout line (Arrivals::late).
struct LateRanks {
  std::vector<int> absent;  ///< did not arrive, and no sign of life within quiet_s (dead or stopped)
  std::vector<int> behind;  ///< did not arrive, but heartbeats within quiet_s: alive, stuck at an earlier bucket
  std::vector<int> silent;  ///< arrived, then no sign of life within quiet_s (stopped inside the all-reduce)
};

/// Arrival messages and heartbeats, each on its own duplicate of MPI_COMM_WORLD (they never match
/// the buckets' or the session's messages, nor each other). For bucket sequence number s (0, 1,
/// 2, ... in the order the buckets are started, the same on every rank), arrive(s) posts one
/// MPI_Isend of s to every other rank and one MPI_Irecv from each. heartbeat(s), called wherever
/// the all-reduces are polled, sends "still waiting at s" to every other rank at most once per
/// kHeartbeatInterval_s. progress() tests every request (MPI_Testsome) and frees the finished
/// ones; call it with the all-reduces' polling too. Nothing ever blocks: no call waits for a
/// message. Every request posted is released: by progress() once it finishes, or by the
/// destructor (receives cancelled and completed, sends freed with MPI_Request_free, which lets a
/// send to a dead rank go without waiting). Not thread-safe; one per process at a time is enough.
class Arrivals {
 public:
  /// Seconds between two heartbeats of one rank.
  static constexpr double kHeartbeatInterval_s = 0.25;

  /// Collective: two duplicates of MPI_COMM_WORLD (MPI_Comm_idup, tested until `deadline_s`
  /// seconds (> 0) have passed, so that a rank stopped meanwhile cannot hold the others forever).
  /// Throws CommTimeout "bucket 'the arrival messages' communicators': ..." at the deadline,
  /// LibraryError when MPI fails.
  explicit Arrivals(const MpiSession& mpi, double deadline_s = 60);
  ~Arrivals();
  Arrivals(const Arrivals&) = delete;
  Arrivals& operator=(const Arrivals&) = delete;

  /// Announces that this rank started bucket `sequence` and listens for the others' announcements
  /// of it. Sequence numbers increase by one per call from 0 (InternalError otherwise). Throws
  /// LibraryError when MPI fails.
  void arrive(std::int64_t sequence);
  /// Tells the other ranks that this rank is alive and waiting at bucket `sequence` (arrived at;
  /// InternalError otherwise): sends a heartbeat unless one went less than kHeartbeatInterval_s
  /// ago. Throws LibraryError when MPI fails.
  void heartbeat(std::int64_t sequence);
  /// Tests every request in flight, frees the finished ones, and listens for the next heartbeats.
  void progress();
  /// After progress(): the ranks (ascending, never this one) whose announcement of `sequence` has
  /// not come; empty once all have. `sequence` must have been arrived at (InternalError otherwise).
  std::vector<int> missing(std::int64_t sequence);
  /// After progress(): the ranks (ascending) that arrived at `sequence` but have given no sign of
  /// life since: no arrival at a later bucket and no heartbeat at `sequence` or later within the
  /// last `quiet_s` seconds (> kHeartbeatInterval_s; a rank stopped inside the all-reduce).
  std::vector<int> silent(std::int64_t sequence, double quiet_s);
  /// After progress(): the ranks late at `sequence`, sorted into the three kinds of LateRanks
  /// (`quiet_s` as for silent()).
  LateRanks late(std::int64_t sequence, double quiet_s);
  /// Requests posted and not yet released (arrivals and heartbeats sent; arrival receives): 0
  /// once every rank has arrived at every bucket and the sends have finished. The one standing
  /// heartbeat receive per other rank is not counted.
  std::size_t requests_in_flight() const;

 private:
  struct State;  // the duplicate communicators and the requests (keeps mpi.h out of here)
  std::unique_ptr<State> state_;
};

/// For the timeout line: "rank 1 did not arrive", "ranks 1 and 3 did not arrive", "ranks 1, 2 and
/// 3 did not arrive" (ascending ranks as missing() gives them); "every rank arrived" for none.
std::string missing_ranks_text(const std::vector<int>& ranks);

/// The parts of `late` that are not empty, joined with "; ": "rank 1 did not arrive" (absent),
/// "ranks 0 and 3 did not arrive but are alive, waiting at an earlier bucket" (behind), "rank 2
/// arrived but has given no sign of life for Q s" (silent; Q = `quiet_s`); "every rank arrived
/// and is alive" when all are empty.
std::string late_ranks_text(const LateRanks& late, double quiet_s);

}  // namespace syncplan
