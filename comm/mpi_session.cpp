// MpiSession on Open MPI (or any MPI-3 library): initialization, node-local rank, agreement.
#include "comm/mpi_session.hpp"

#include "comm/mpi_check.hpp"
#include "core/host_cpus.hpp"

#include <cstdlib>
#include <string>

namespace syncplan {

namespace detail {
void mpi_failed(int code, const char* expression, const char* file, int line) {
  char text[MPI_MAX_ERROR_STRING] = {};
  int length = 0;
  if (MPI_Error_string(code, text, &length) != MPI_SUCCESS) length = 0;
  report_library_error("MPI", expression, length > 0 ? std::string(text, static_cast<std::size_t>(length))
                                                     : "error code " + std::to_string(code),
                       file, line);
}
}  // namespace detail

MpiSession::MpiSession() {
  int initialized = 0;
  SYNCPLAN_MPI_CHECK(MPI_Initialized(&initialized));
  if (!initialized) SYNCPLAN_MPI_CHECK(MPI_Init(nullptr, nullptr));
  SYNCPLAN_MPI_CHECK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
  SYNCPLAN_MPI_CHECK(MPI_Comm_rank(MPI_COMM_WORLD, &rank_));
  SYNCPLAN_MPI_CHECK(MPI_Comm_size(MPI_COMM_WORLD, &size_));
  MPI_Comm node = MPI_COMM_NULL;
  SYNCPLAN_MPI_CHECK(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank_, MPI_INFO_NULL, &node));
  SYNCPLAN_MPI_CHECK(MPI_Comm_rank(node, &local_rank_));
  SYNCPLAN_MPI_CHECK(MPI_Comm_size(node, &local_size_));
  // The CPUs this node's ranks may run on: the OR of their affinity masks, agreed here, where the
  // ranks meet anyway (a collective later would be one more place for a stopped peer to hang).
  std::vector<unsigned char> mask = affinity_mask_bytes();
  SYNCPLAN_MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, mask.data(), static_cast<int>(mask.size()), MPI_UNSIGNED_CHAR, MPI_BOR, node));
  node_cpus_ = count_cpus(mask);
  SYNCPLAN_MPI_CHECK(MPI_Comm_free(&node));
}

MpiSession::~MpiSession() {
  int finalized = 0;
  // No check macro: a destructor must not throw, and there is nothing left to report to.
  if (MPI_Finalized(&finalized) == MPI_SUCCESS && !finalized) MPI_Finalize();
}

int MpiSession::first_failing_rank(bool ok) const {
  int candidate = ok ? size_ : rank_;
  SYNCPLAN_MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, &candidate, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD));
  return candidate == size_ ? -1 : candidate;
}

double MpiSession::max(double value) const {
  SYNCPLAN_MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, &value, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD));
  return value;
}

std::int64_t MpiSession::sum(std::int64_t value) const {
  SYNCPLAN_MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, &value, 1, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD));
  return value;
}

void MpiSession::barrier() const { SYNCPLAN_MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD)); }

void MpiSession::broadcast(void* data, int bytes, int root) const {
  SYNCPLAN_MPI_CHECK(MPI_Bcast(data, bytes, MPI_BYTE, root, MPI_COMM_WORLD));
}

void MpiSession::abort(int code) const {
  MPI_Abort(MPI_COMM_WORLD, code);  // does not return; no check: there is no one left to tell
  std::abort();
}

}  // namespace syncplan
