// Arrival messages: per bucket one MPI_Isend to and one MPI_Irecv from every other rank, tested
// without blocking and released whatever becomes of the peers.
#include "comm/arrivals.hpp"

#include "comm/mpi_check.hpp"
#include "core/errors.hpp"

#include <map>

namespace syncplan {

// One bucket's messages. The buffers live in the map's node, whose address never changes while
// the requests that read or fill them are in flight.
struct ArrivalBucket {
  std::int64_t sent = 0;                   // the payload every send reads: the sequence number
  std::vector<std::int64_t> received;      // one receive buffer per other rank
  std::vector<int> sources;                // the rank each receive listens to
  std::vector<bool> arrived;               // per receive: its message has come
  std::vector<MPI_Request> requests;       // receives (same index as sources), then sends
  std::vector<int> finished;               // MPI_Testsome's output indices
};

struct Arrivals::State {
  MPI_Comm comm = MPI_COMM_NULL;
  int rank = 0, size = 1;
  int tag_bound = 32767;  // MPI_TAG_UB: tags are the sequence number modulo tag_bound + 1
  std::int64_t next = 0;  // the sequence number the next arrive() must have
  std::map<std::int64_t, ArrivalBucket> buckets;  // sequences with requests still in flight
};

namespace {

std::size_t active(const ArrivalBucket& bucket) {
  std::size_t count = 0;
  for (MPI_Request request : bucket.requests) count += request != MPI_REQUEST_NULL;
  return count;
}

}  // namespace

Arrivals::Arrivals(const MpiSession& mpi) : state_(std::make_unique<State>()) {
  SYNCPLAN_MPI_CHECK(MPI_Comm_dup(MPI_COMM_WORLD, &state_->comm));
  SYNCPLAN_MPI_CHECK(MPI_Comm_set_errhandler(state_->comm, MPI_ERRORS_RETURN));
  state_->rank = mpi.rank();
  state_->size = mpi.size();
  int* bound = nullptr;
  int found = 0;
  SYNCPLAN_MPI_CHECK(MPI_Comm_get_attr(state_->comm, MPI_TAG_UB, &bound, &found));
  if (found && bound != nullptr && *bound > 0) state_->tag_bound = *bound;
}

Arrivals::~Arrivals() {
  int finalized = 0;
  // No check macro: a destructor must not throw. After MPI_Finalize nothing can be released.
  if (MPI_Finalized(&finalized) != MPI_SUCCESS || finalized) return;
  for (auto& [sequence, bucket] : state_->buckets) {
    for (std::size_t i = 0; i < bucket.requests.size(); ++i) {
      MPI_Request& request = bucket.requests[i];
      if (request == MPI_REQUEST_NULL) continue;
      if (i < bucket.sources.size()) {
        // A receive: cancelling it is local, and its completion (cancelled or matched) is too.
        MPI_Cancel(&request);
        MPI_Wait(&request, MPI_STATUS_IGNORE);
      } else {
        // A send to a rank that may never receive it: freed, MPI finishes or drops it alone.
        MPI_Request_free(&request);
      }
    }
  }
  MPI_Comm_free(&state_->comm);
}

void Arrivals::arrive(std::int64_t sequence) {
  State& state = *state_;
  SYNCPLAN_CHECK(sequence == state.next);
  ++state.next;
  if (state.size == 1) return;
  const int tag = static_cast<int>(sequence % (static_cast<std::int64_t>(state.tag_bound) + 1));
  ArrivalBucket& bucket = state.buckets[sequence];
  bucket.sent = sequence;
  const auto others = static_cast<std::size_t>(state.size - 1);
  bucket.received.assign(others, -1);
  bucket.arrived.assign(others, false);
  bucket.requests.assign(2 * others, MPI_REQUEST_NULL);
  bucket.finished.resize(2 * others);
  for (int peer = 0; peer < state.size; ++peer)
    if (peer != state.rank) bucket.sources.push_back(peer);
  for (std::size_t i = 0; i < others; ++i)
    SYNCPLAN_MPI_CHECK(MPI_Irecv(&bucket.received[i], 1, MPI_INT64_T, bucket.sources[i], tag, state.comm,
                                 &bucket.requests[i]));
  for (std::size_t i = 0; i < others; ++i)
    SYNCPLAN_MPI_CHECK(MPI_Isend(&bucket.sent, 1, MPI_INT64_T, bucket.sources[i], tag, state.comm,
                                 &bucket.requests[others + i]));
}

void Arrivals::progress() {
  State& state = *state_;
  for (auto it = state.buckets.begin(); it != state.buckets.end();) {
    ArrivalBucket& bucket = it->second;
    int count = 0;
    SYNCPLAN_MPI_CHECK(MPI_Testsome(static_cast<int>(bucket.requests.size()), bucket.requests.data(), &count,
                                    bucket.finished.data(), MPI_STATUSES_IGNORE));
    if (count == MPI_UNDEFINED) count = 0;  // no active request left
    for (int k = 0; k < count; ++k) {
      const auto index = static_cast<std::size_t>(bucket.finished[static_cast<std::size_t>(k)]);
      if (index < bucket.sources.size()) {
        // Tags repeat only after tag_bound + 1 buckets; the payload says which bucket it was.
        SYNCPLAN_CHECK(bucket.received[index] == it->first);
        bucket.arrived[index] = true;
      }
    }
    it = active(bucket) == 0 ? state.buckets.erase(it) : std::next(it);
  }
}

std::vector<int> Arrivals::missing(std::int64_t sequence) {
  State& state = *state_;
  SYNCPLAN_CHECK(sequence >= 0 && sequence < state.next);
  const auto found = state.buckets.find(sequence);
  std::vector<int> ranks;
  if (found == state.buckets.end()) return ranks;  // every message of it came (or one rank)
  for (std::size_t i = 0; i < found->second.sources.size(); ++i)
    if (!found->second.arrived[i]) ranks.push_back(found->second.sources[i]);
  return ranks;
}

std::size_t Arrivals::requests_in_flight() const {
  std::size_t count = 0;
  for (const auto& [sequence, bucket] : state_->buckets) count += active(bucket);
  return count;
}

std::string missing_ranks_text(const std::vector<int>& ranks) {
  if (ranks.empty()) return "every rank arrived";
  std::string text = ranks.size() == 1 ? "rank " : "ranks ";
  for (std::size_t i = 0; i < ranks.size(); ++i)
    text += (i == 0 ? "" : i + 1 == ranks.size() ? " and " : ", ") + std::to_string(ranks[i]);
  return text + " did not arrive";
}

}  // namespace syncplan
