// The MPI communicator backend: a table of functions over MPI_Iallreduce requests.
#include "comm/mpi_communicator.hpp"

#include "comm/mpi_check.hpp"
#include "core/errors.hpp"

#include <algorithm>
#include <chrono>
#include <climits>
#include <cstdlib>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

namespace syncplan {

namespace {

// One bucket in flight: the request, the caller's buffers and, for several, the packed copy.
struct MpiBucket {
  MPI_Request request = MPI_REQUEST_NULL;
  std::vector<CommBuffer> buffers;
  std::vector<float> packed;  // empty when the bucket is one buffer, reduced in place
};

struct MpiState {
  MPI_Comm comm = MPI_COMM_NULL;
  int size = 1;
  std::int64_t next_request = 0;
  std::map<std::int64_t, MpiBucket> buckets;
};

// The sum in `values` into the average, then back into the caller's buffers when packed.
void finish(MpiBucket& bucket, int size) {
  const float ranks = static_cast<float>(size);
  if (bucket.packed.empty()) {
    for (float& value : std::span<float>(bucket.buffers.front().data, bucket.buffers.front().count)) value /= ranks;
    return;
  }
  const float* from = bucket.packed.data();
  for (const CommBuffer& buffer : bucket.buffers) {
    std::transform(from, from + buffer.count, buffer.data, [ranks](float sum) { return sum / ranks; });
    from += buffer.count;
  }
}

int mpi_start(void* opaque, const CommBuffer* buffers, std::size_t buffer_count, void* ready_event,
              std::int64_t* request, AbiStatus* status) {
  return abi_call(status, [&] {
    auto& state = *static_cast<MpiState*>(opaque);
    SYNCPLAN_CHECK(ready_event == nullptr);  // host buffers: the computation is done when start is called
    MpiBucket bucket;
    bucket.buffers.assign(buffers, buffers + buffer_count);
    std::size_t total = 0;
    for (const CommBuffer& buffer : bucket.buffers) total += buffer.count;
    if (total > static_cast<std::size_t>(INT_MAX))
      throw InputError(std::to_string(total) + " float elements: more than MPI's int count allows (" +
                       std::to_string(INT_MAX) + "); split the bucket");
    float* data = nullptr;
    if (bucket.buffers.size() == 1) {
      data = bucket.buffers.front().data;
    } else {
      bucket.packed.resize(total);
      float* into = bucket.packed.data();
      for (const CommBuffer& buffer : bucket.buffers) into = std::copy(buffer.data, buffer.data + buffer.count, into);
      data = bucket.packed.data();
    }
    SYNCPLAN_MPI_CHECK(MPI_Iallreduce(MPI_IN_PLACE, data, static_cast<int>(total), MPI_FLOAT, MPI_SUM, state.comm,
                                      &bucket.request));
    *request = state.next_request++;
    state.buckets.emplace(*request, std::move(bucket));
  });
}

int mpi_test(void* opaque, std::int64_t request, int* done, AbiStatus* status) {
  return abi_call(status, [&] {
    auto& state = *static_cast<MpiState*>(opaque);
    const auto found = state.buckets.find(request);
    SYNCPLAN_CHECK(found != state.buckets.end());
    int flag = 0;
    SYNCPLAN_MPI_CHECK(MPI_Test(&found->second.request, &flag, MPI_STATUS_IGNORE));
    *done = flag;
    if (!flag) return;
    finish(found->second, state.size);
    state.buckets.erase(found);
  });
}

void mpi_abort(void* opaque, int code) {
  MPI_Abort(static_cast<MpiState*>(opaque)->comm, code);  // ends every rank; no check: no one to tell
  std::abort();
}

void mpi_destroy(void* opaque) {
  std::unique_ptr<MpiState> state(static_cast<MpiState*>(opaque));
  int finalized = 0;
  // No check macro: it runs in a destructor. Requests still in flight (after a timeout) are left.
  if (state->buckets.empty() && MPI_Finalized(&finalized) == MPI_SUCCESS && !finalized) MPI_Comm_free(&state->comm);
}

}  // namespace

void duplicate_world_within(MPI_Comm* comm, double deadline_s, const std::string& what) {
  MPI_Request request = MPI_REQUEST_NULL;
  SYNCPLAN_MPI_CHECK(MPI_Comm_idup(MPI_COMM_WORLD, comm, &request));
  wait_request_within(request, what, deadline_s);
  SYNCPLAN_MPI_CHECK(MPI_Comm_set_errhandler(*comm, MPI_ERRORS_RETURN));
}

Communicator make_mpi_communicator(const MpiSession& mpi, double deadline_s) {
  return Communicator(make_mpi_backend_table(mpi.rank(), mpi.size(), deadline_s));
}

CommBackendTable make_mpi_backend_table(int rank, int size, double deadline_s) {
  auto state = std::make_unique<MpiState>();
  duplicate_world_within(&state->comm, deadline_s, "the all-reduces' communicator");
  state->size = size;
  CommBackendTable table;
  table.name = "mpi";
  table.buffer_place = "host";
  table.rank = rank;
  table.size = size;
  table.start = mpi_start;
  table.test = mpi_test;
  table.abort = mpi_abort;
  table.destroy = mpi_destroy;
  table.state = state.release();
  return table;
}

}  // namespace syncplan
