// The lowest failing rank's message, broadcast from it to every rank, over nonblocking
// collectives tested against a deadline.
#include "runtime/rank_agreement.hpp"

#include "comm/communicator.hpp"
#include "comm/mpi_check.hpp"
#include "core/errors.hpp"

#include <algorithm>
#include <array>

namespace syncplan {

void agree_on_error(const MpiSession& mpi, const std::optional<std::string>& error, const std::string& what,
                    double deadline_s, const WhileWaiting& poll) {
  SYNCPLAN_CHECK(deadline_s > 0);
  int failing = error ? mpi.rank() : mpi.size();
  MPI_Request request = MPI_REQUEST_NULL;
  SYNCPLAN_MPI_CHECK(MPI_Iallreduce(MPI_IN_PLACE, &failing, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD, &request));
  wait_request_within(request, what, deadline_s, poll);
  if (failing == mpi.size()) return;
  std::array<char, kAgreedMessageBytes> text{};
  if (mpi.rank() == failing) std::copy_n(error->data(), std::min(error->size(), text.size() - 1), text.data());
  SYNCPLAN_MPI_CHECK(MPI_Ibcast(text.data(), kAgreedMessageBytes, MPI_CHAR, failing, MPI_COMM_WORLD, &request));
  wait_request_within(request, what, deadline_s, poll);
  text.back() = '\0';
  throw InputError(text.data());
}

void run_agreed(const MpiSession& mpi, const std::string& what, double deadline_s, const std::function<void()>& work,
                const WhileWaiting& poll) {
  std::optional<std::string> error;
  try {
    work();
  } catch (const InputError& failure) {
    error = failure.what();
  }
  agree_on_error(mpi, error, what, deadline_s, poll);
}

std::int64_t broadcast_within(const MpiSession& mpi, std::int64_t value, int root, const std::string& what,
                              double deadline_s, const WhileWaiting& poll) {
  SYNCPLAN_CHECK(deadline_s > 0 && root >= 0 && root < mpi.size());
  MPI_Request request = MPI_REQUEST_NULL;
  SYNCPLAN_MPI_CHECK(MPI_Ibcast(&value, 1, MPI_INT64_T, root, MPI_COMM_WORLD, &request));
  wait_request_within(request, what, deadline_s, poll);
  return value;
}

std::vector<std::int64_t> allgather_within(const MpiSession& mpi, const std::vector<std::int64_t>& mine,
                                           const std::string& what, double deadline_s, const WhileWaiting& poll) {
  SYNCPLAN_CHECK(deadline_s > 0);
  std::vector<std::int64_t> all(mine.size() * static_cast<std::size_t>(mpi.size()));
  MPI_Request request = MPI_REQUEST_NULL;
  SYNCPLAN_MPI_CHECK(MPI_Iallgather(mine.data(), static_cast<int>(mine.size()), MPI_INT64_T, all.data(),
                                    static_cast<int>(mine.size()), MPI_INT64_T, MPI_COMM_WORLD, &request));
  wait_request_within(request, what, deadline_s, poll);
  return all;
}

}  // namespace syncplan
