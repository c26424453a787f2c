// Bad input found on some ranks only (one rank's checkpoint file is corrupt, one rank cannot
// write) turned into the same one-line InputError on every rank, so that no rank goes on into a
// collective the others have left; and the small collectives of it, each with a deadline, so
// that a rank that hangs meanwhile (SIGSTOP) cannot keep the others waiting forever.
#pragma once

#include "comm/mpi_session.hpp"

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace syncplan {

/// Longest message carried from the failing rank to the others (bytes); longer ones are cut.
inline constexpr int kAgreedMessageBytes = 1024;

/// Called between two tests of a collective in flight (e.g. Arrivals::progress and heartbeat, so
/// that the other ranks see this one alive); may be empty.
using WhileWaiting = std::function<void()>;

/// Collective: when `error` is set on some rank, every rank throws InputError with the message
/// of the lowest such rank (cut to kAgreedMessageBytes - 1 bytes); otherwise returns. The
/// collectives are nonblocking (MPI_Iallreduce, MPI_Ibcast) and tested, calling `poll` between
/// tests, until `deadline_s` seconds (> 0) have passed, then CommTimeout naming `what` is thrown
/// (a rank died or hangs: end the job). Throws LibraryError when an MPI call fails.
void agree_on_error(const MpiSession& mpi, const std::optional<std::string>& error, const std::string& what,
                    double deadline_s, const WhileWaiting& poll = {});

/// Runs `work` on this rank, catching its InputError, then agree_on_error: the work's bad input
/// on any rank becomes the same InputError on every rank. Other exceptions propagate (bugs and
/// library failures end the job as they are).
void run_agreed(const MpiSession& mpi, const std::string& what, double deadline_s, const std::function<void()>& work,
                const WhileWaiting& poll = {});

/// Collective: rank `root`'s `value` on every rank (MPI_Ibcast, tested as above), within `deadline_s`
/// seconds or CommTimeout naming `what`. Throws LibraryError when an MPI call fails.
std::int64_t broadcast_within(const MpiSession& mpi, std::int64_t value, int root, const std::string& what,
                              double deadline_s, const WhileWaiting& poll = {});

/// Collective: every rank's `mine` (the same length on every rank) on every rank, rank r's at
/// [r n, (r + 1) n) (MPI_Iallgather, tested as above), within `deadline_s` seconds or CommTimeout
/// naming `what`. Throws LibraryError when an MPI call fails.
std::vector<std::int64_t> allgather_within(const MpiSession& mpi, const std::vector<std::int64_t>& mine,
                                           const std::string& what, double deadline_s, const WhileWaiting& poll = {});

}  // namespace syncplan
