// The NCCL communicator backend (GPU backend library only): a nonblocking NCCL communicator on a
// high-priority stream; each bucket is ncclAvg of its buffers in one group, ordered after a
// layer's backward by an event and completed by another (docs/comm.md).
#include "comm/nccl_backend.hpp"

#include "comm/nccl_check.hpp"
#include "core/cuda_check.hpp"
#include "core/errors.hpp"

#include <cuda_runtime_api.h>

#include <chrono>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

static_assert(NCCL_UNIQUE_ID_BYTES == syncplan::kNcclUniqueIdBytes);
static_assert(NCCL_VERSION_CODE >= NCCL_VERSION(2, 10, 0), "ncclAvg needs NCCL 2.10 or later");

namespace syncplan {

namespace {

using Clock = std::chrono::steady_clock;

struct NcclBucket {
  cudaEvent_t done = nullptr;  // recorded on the stream once NCCL has enqueued the group
  bool enqueued = false;
};

struct NcclState {
  ncclComm_t comm = nullptr;
  cudaStream_t stream = nullptr;
  int device = 0;
  double deadline_s = 60;
  std::int64_t next_request = 0;
  std::map<std::int64_t, NcclBucket> buckets;
  std::vector<cudaEvent_t> spare_events;  // of completed buckets, reused
};

// The communicator's state: ncclSuccess, ncclInProgress (a nonblocking call still running on
// NCCL's side) or an error, thrown.
ncclResult_t async_state(const NcclState& state) {
  ncclResult_t result = ncclSuccess;
  SYNCPLAN_NCCL_CHECK(ncclCommGetAsyncError(state.comm, &result));
  if (result != ncclSuccess && result != ncclInProgress)
    report_library_error("NCCL", "ncclCommGetAsyncError(comm)", ncclGetErrorString(result), __FILE__, __LINE__);
  return result;
}

// Polls until no nonblocking call is in progress, at most the setup's deadline.
void settle(const NcclState& state, const char* what) {
  const Clock::time_point until =
      Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(state.deadline_s));
  while (async_state(state) == ncclInProgress) {
    if (Clock::now() >= until)
      throw LibraryError(std::string("NCCL: ") + what + " still in progress after " + format_short(state.deadline_s, 3) +
                         " s (a rank missing, or a peer or the link failed)");
    std::this_thread::yield();
  }
}

// Records the bucket's completion event once NCCL has put the group on the stream.
bool try_enqueue(NcclState& state, NcclBucket& bucket) {
  if (!bucket.enqueued && async_state(state) == ncclSuccess) {
    SYNCPLAN_CUDA_CHECK(cudaEventRecord(bucket.done, state.stream));
    bucket.enqueued = true;
  }
  return bucket.enqueued;
}

int nccl_start(void* opaque, const CommBuffer* buffers, std::size_t buffer_count, void* ready_event,
               std::int64_t* request, AbiStatus* status) {
  return abi_call(status, [&] {
    auto& state = *static_cast<NcclState*>(opaque);
    SYNCPLAN_CUDA_CHECK(cudaSetDevice(state.device));
    // NCCL takes no new call while a nonblocking one is in progress: the previous group first.
    for (auto& [id, pending] : state.buckets)
      if (!pending.enqueued) {
        settle(state, "enqueueing the previous bucket");
        try_enqueue(state, pending);
      }
    NcclBucket bucket;
    if (!state.spare_events.empty()) {
      bucket.done = state.spare_events.back();
      state.spare_events.pop_back();
    } else {
      SYNCPLAN_CUDA_CHECK(cudaEventCreateWithFlags(&bucket.done, cudaEventDisableTiming));
    }
    if (ready_event != nullptr)
      SYNCPLAN_CUDA_CHECK(cudaStreamWaitEvent(state.stream, static_cast<cudaEvent_t>(ready_event), 0));
    // ncclInProgress is how a nonblocking communicator accepts a call, not an error.
    const auto accepted = [](ncclResult_t result) { return result == ncclSuccess || result == ncclInProgress; };
    ncclResult_t result = ncclGroupStart();
    for (std::size_t i = 0; i < buffer_count && accepted(result); ++i)
      result = ncclAllReduce(buffers[i].data, buffers[i].data, buffers[i].count, ncclFloat, ncclAvg, state.comm,
                             state.stream);
    const ncclResult_t ended = ncclGroupEnd();
    if (!accepted(result) || !accepted(ended)) {
      state.spare_events.push_back(bucket.done);
      report_library_error("NCCL", "ncclGroupStart/ncclAllReduce(ncclAvg)/ncclGroupEnd",
                           ncclGetErrorString(accepted(result) ? ended : result), __FILE__, __LINE__);
    }
    *request = state.next_request++;
    try_enqueue(state, state.buckets.emplace(*request, bucket).first->second);
  });
}

int nccl_test(void* opaque, std::int64_t request, int* done, AbiStatus* status) {
  return abi_call(status, [&] {
    auto& state = *static_cast<NcclState*>(opaque);
    const auto found = state.buckets.find(request);
    SYNCPLAN_CHECK(found != state.buckets.end());
    *done = 0;
    if (!try_enqueue(state, found->second)) return;
    async_state(state);  // a peer's failure shows here, not in the event
    const cudaError_t queried = cudaEventQuery(found->second.done);
    if (queried == cudaErrorNotReady) return;
    SYNCPLAN_CUDA_CHECK(queried);
    *done = 1;
    state.spare_events.push_back(found->second.done);
    state.buckets.erase(found);
  });
}

void nccl_abort(void* opaque, int /*code: the process goes on; the caller decides its exit*/) {
  auto& state = *static_cast<NcclState*>(opaque);
  if (state.comm != nullptr) ncclCommAbort(state.comm);  // no check: nothing left to report to
  state.comm = nullptr;
  for (auto& [id, bucket] : state.buckets) state.spare_events.push_back(bucket.done);  // destroyed with the state
  state.buckets.clear();
}

void nccl_destroy(void* opaque) {
  std::unique_ptr<NcclState> state(static_cast<NcclState*>(opaque));
  // No check macros: it runs in a destructor. A communicator with work in flight is aborted.
  if (state->comm != nullptr) {
    ncclResult_t result = ncclInProgress;
    if (state->buckets.empty() && ncclCommFinalize(state->comm) != ncclSystemError) {
      const Clock::time_point until =
          Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(state->deadline_s));
      while (ncclCommGetAsyncError(state->comm, &result) == ncclSuccess && result == ncclInProgress &&
             Clock::now() < until)
        std::this_thread::yield();
    }
    if (result == ncclSuccess) ncclCommDestroy(state->comm);
    else ncclCommAbort(state->comm);
  }
  for (auto& [id, bucket] : state->buckets) cudaEventDestroy(bucket.done);
  for (cudaEvent_t event : state->spare_events) cudaEventDestroy(event);
  if (state->stream != nullptr) cudaStreamDestroy(state->stream);
}

int nccl_unique_id(unsigned char* id, AbiStatus* status) {
  return abi_call(status, [&] {
    ncclUniqueId unique{};
    SYNCPLAN_NCCL_CHECK(ncclGetUniqueId(&unique));
    std::memcpy(id, unique.internal, kNcclUniqueIdBytes);
  });
}

int nccl_open(const NcclSetup* setup, CommBackendTable* table, AbiStatus* status) {
  return abi_call(status, [&] {
    auto state = std::make_unique<NcclState>();
    state->device = setup->device;
    state->deadline_s = setup->deadline_s;
    SYNCPLAN_CUDA_CHECK(cudaSetDevice(setup->device));
    int least = 0, greatest = 0;  // CUDA's priorities: lower numbers are higher priorities
    SYNCPLAN_CUDA_CHECK(cudaDeviceGetStreamPriorityRange(&least, &greatest));
    SYNCPLAN_CUDA_CHECK(cudaStreamCreateWithPriority(&state->stream, cudaStreamNonBlocking, greatest));
    ncclUniqueId unique{};
    std::memcpy(unique.internal, setup->unique_id, kNcclUniqueIdBytes);
    ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
    config.blocking = 0;
    const ncclResult_t result = ncclCommInitRankConfig(&state->comm, setup->size, unique, setup->rank, &config);
    if (result != ncclSuccess && result != ncclInProgress) {
      cudaStreamDestroy(state->stream);
      report_library_error("NCCL", "ncclCommInitRankConfig(blocking = 0)", ncclGetErrorString(result), __FILE__,
                           __LINE__);
    }
    try {
      settle(*state, "ncclCommInitRankConfig");
    } catch (...) {
      ncclCommAbort(state->comm);
      cudaStreamDestroy(state->stream);
      throw;
    }
    table->version = kCommTableVersion;
    table->name = "nccl";
    table->buffer_place = "device";
    table->rank = setup->rank;
    table->size = setup->size;
    table->start = nccl_start;
    table->test = nccl_test;
    table->abort = nccl_abort;
    table->destroy = nccl_destroy;
    table->state = state.release();
  });
}

}  // namespace

NcclEntryPoints nccl_entry_points() { return NcclEntryPoints{nccl_unique_id, nccl_open}; }

}  // namespace syncplan
