// Waiting for one MPI request with a deadline (comm/mpi_check.hpp's wait_request_within): MPI_Test
// polled, so that a stopped rank cannot hold the others forever.
#include "comm/mpi_check.hpp"

#include "comm/communicator.hpp"
#include "core/errors.hpp"

#include <chrono>
#include <thread>

namespace syncplan {

void wait_request_within(MPI_Request& request, const std::string& what, double deadline_s,
                         const std::function<void()>& between, int sleep_us) {
  SYNCPLAN_CHECK(deadline_s > 0 && sleep_us >= 0);
  const auto start = std::chrono::steady_clock::now();
  for (int done = 0;;) {
    SYNCPLAN_MPI_CHECK(MPI_Test(&request, &done, MPI_STATUS_IGNORE));
    if (done) return;
    if (std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() > deadline_s)
      throw CommTimeout::step(what, deadline_s);
    if (between) between();
    std::this_thread::sleep_for(std::chrono::microseconds(sleep_us));
  }
}

}  // namespace syncplan
