// Arrival messages (per bucket one MPI_Isend to and one MPI_Irecv from every other rank) and
// heartbeats (one standing MPI_Irecv per other rank), tested without blocking and released
// whatever becomes of the peers.
#include "comm/arrivals.hpp"

#include "comm/communicator.hpp"
#include "comm/mpi_check.hpp"
#include "core/errors.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <deque>
#include <map>
#include <thread>

namespace syncplan {

namespace {

using Clock = std::chrono::steady_clock;

// One bucket's arrival messages. The buffers live in the map's node, whose address never changes
// while the requests that read or fill them are in flight.
struct ArrivalBucket {
  std::int64_t sent = 0;                   // the payload every send reads: the sequence number
  std::vector<std::int64_t> received;      // one receive buffer per other rank
  std::vector<bool> arrived;               // per other rank: its message has come
  std::vector<MPI_Request> requests;       // receives (index = peer slot), then sends
  std::vector<int> finished;               // MPI_Testsome's output indices
};

// What this rank has heard from one other rank.
struct Peer {
  int rank = 0;
  std::int64_t latest_arrival = -1;        // the largest sequence whose arrival message came
  std::int64_t heartbeat_sequence = -1;    // the sequence of its latest heartbeat
  Clock::time_point heartbeat_at{};        // when that heartbeat came
  std::int64_t heartbeat_buffer = 0;       // the standing heartbeat receive's buffer
  MPI_Request heartbeat = MPI_REQUEST_NULL;
};

// A heartbeat sent: its payload must live until the send is done.
struct HeartbeatSend {
  std::int64_t payload = 0;
  std::vector<MPI_Request> requests;
};

std::size_t active(const std::vector<MPI_Request>& requests) {
  std::size_t count = 0;
  for (MPI_Request request : requests) count += request != MPI_REQUEST_NULL;
  return count;
}

// Tests `requests` without blocking; returns the indices that finished.
std::vector<int> test_some(std::vector<MPI_Request>& requests, std::vector<int>& finished) {
  finished.resize(requests.size());
  int count = 0;
  SYNCPLAN_MPI_CHECK(MPI_Testsome(static_cast<int>(requests.size()), requests.data(), &count, finished.data(),
                                  MPI_STATUSES_IGNORE));
  if (count == MPI_UNDEFINED) count = 0;  // no active request left
  return {finished.begin(), finished.begin() + count};
}

// Releases a request that may never finish: a receive is cancelled and completed (both local),
// a send freed (MPI delivers or drops it on its own). No check macro: destructors do not throw.
void release(MPI_Request& request, bool receive) {
  if (request == MPI_REQUEST_NULL) return;
  if (receive) {
    MPI_Cancel(&request);
    MPI_Wait(&request, MPI_STATUS_IGNORE);
  } else {
    MPI_Request_free(&request);
  }
}

}  // namespace

struct Arrivals::State {
  MPI_Comm arrivals = MPI_COMM_NULL, heartbeats = MPI_COMM_NULL;
  int rank = 0, size = 1;
  int tag_bound = 32767;  // MPI_TAG_UB: arrival tags are the sequence number modulo tag_bound + 1
  std::int64_t next = 0;  // the sequence number the next arrive() must have
  std::vector<Peer> peers;                         // every other rank, ascending
  std::map<std::int64_t, ArrivalBucket> buckets;   // sequences with arrival requests in flight
  std::deque<HeartbeatSend> heartbeats_sent;       // heartbeats with sends in flight
  Clock::time_point last_heartbeat{};              // when this rank last sent one
  bool heartbeat_sent = false;
  std::vector<int> finished;                       // scratch for MPI_Testsome

  void listen(Peer& peer) {
    SYNCPLAN_MPI_CHECK(MPI_Irecv(&peer.heartbeat_buffer, 1, MPI_INT64_T, peer.rank, 0, heartbeats, &peer.heartbeat));
  }
};

Arrivals::Arrivals(const MpiSession& mpi, double deadline_s) : state_(std::make_unique<State>()) {
  SYNCPLAN_CHECK(deadline_s > 0);
  State& state = *state_;
  const auto start = Clock::now();
  for (MPI_Comm* comm : {&state.arrivals, &state.heartbeats}) {
    // Nonblocking and tested: MPI_Comm_dup would wait forever for a stopped rank.
    duplicate_world_within(comm, std::max(1e-6, deadline_s - std::chrono::duration<double>(Clock::now() - start).count()),
                           "the arrival messages' communicators");
  }
  state.rank = mpi.rank();
  state.size = mpi.size();
  int* bound = nullptr;
  int found = 0;
  SYNCPLAN_MPI_CHECK(MPI_Comm_get_attr(state.arrivals, MPI_TAG_UB, &bound, &found));
  if (found && bound != nullptr && *bound > 0) state.tag_bound = *bound;
  for (int peer = 0; peer < state.size; ++peer)
    if (peer != state.rank) state.peers.push_back(Peer{peer});
  for (Peer& peer : state.peers) state.listen(peer);
}

Arrivals::~Arrivals() {
  State& state = *state_;
  int finalized = 0;
  // After MPI_Finalize nothing can be released.
  if (MPI_Finalized(&finalized) != MPI_SUCCESS || finalized) return;
  for (auto& [sequence, bucket] : state.buckets)
    for (std::size_t i = 0; i < bucket.requests.size(); ++i) release(bucket.requests[i], i < state.peers.size());
  for (HeartbeatSend& sent : state.heartbeats_sent)
    for (MPI_Request& request : sent.requests) release(request, false);
  for (Peer& peer : state.peers) release(peer.heartbeat, true);
  MPI_Comm_free(&state.arrivals);
  MPI_Comm_free(&state.heartbeats);
}

void Arrivals::arrive(std::int64_t sequence) {
  State& state = *state_;
  SYNCPLAN_CHECK(sequence == state.next);
  ++state.next;
  if (state.peers.empty()) return;
  const int tag = static_cast<int>(sequence % (static_cast<std::int64_t>(state.tag_bound) + 1));
  ArrivalBucket& bucket = state.buckets[sequence];
  bucket.sent = sequence;
  const std::size_t others = state.peers.size();
  bucket.received.assign(others, -1);
  bucket.arrived.assign(others, false);
  bucket.requests.assign(2 * others, MPI_REQUEST_NULL);
  for (std::size_t i = 0; i < others; ++i)
    SYNCPLAN_MPI_CHECK(MPI_Irecv(&bucket.received[i], 1, MPI_INT64_T, state.peers[i].rank, tag, state.arrivals,
                                 &bucket.requests[i]));
  for (std::size_t i = 0; i < others; ++i)
    SYNCPLAN_MPI_CHECK(MPI_Isend(&bucket.sent, 1, MPI_INT64_T, state.peers[i].rank, tag, state.arrivals,
                                 &bucket.requests[others + i]));
}

void Arrivals::heartbeat(std::int64_t sequence) {
  State& state = *state_;
  SYNCPLAN_CHECK(sequence >= 0 && sequence < state.next);
  const Clock::time_point now = Clock::now();
  if (state.peers.empty() ||
      (state.heartbeat_sent && std::chrono::duration<double>(now - state.last_heartbeat).count() < kHeartbeatInterval_s))
    return;
  HeartbeatSend& sent = state.heartbeats_sent.emplace_back();
  sent.payload = sequence;
  sent.requests.assign(state.peers.size(), MPI_REQUEST_NULL);
  for (std::size_t i = 0; i < state.peers.size(); ++i)
    SYNCPLAN_MPI_CHECK(MPI_Isend(&sent.payload, 1, MPI_INT64_T, state.peers[i].rank, 0, state.heartbeats, &sent.requests[i]));
  state.last_heartbeat = now;
  state.heartbeat_sent = true;
}

void Arrivals::progress() {
  State& state = *state_;
  for (auto it = state.buckets.begin(); it != state.buckets.end();) {
    ArrivalBucket& bucket = it->second;
    for (const int index : test_some(bucket.requests, state.finished)) {
      const auto slot = static_cast<std::size_t>(index);
      if (slot >= state.peers.size()) continue;  // a send
      // Tags repeat only after tag_bound + 1 buckets; the payload says which bucket it was.
      SYNCPLAN_CHECK(bucket.received[slot] == it->first);
      bucket.arrived[slot] = true;
      state.peers[slot].latest_arrival = std::max(state.peers[slot].latest_arrival, it->first);
    }
    it = active(bucket.requests) == 0 ? state.buckets.erase(it) : std::next(it);
  }
  // Heartbeats received: note them and listen for the next (the newest sequence wins).
  for (Peer& peer : state.peers) {
    int done = 1;
    while (done) {
      SYNCPLAN_MPI_CHECK(MPI_Test(&peer.heartbeat, &done, MPI_STATUS_IGNORE));
      if (!done) break;
      peer.heartbeat_sequence = std::max(peer.heartbeat_sequence, peer.heartbeat_buffer);
      peer.heartbeat_at = Clock::now();
      state.listen(peer);
    }
  }
  while (!state.heartbeats_sent.empty()) {
    HeartbeatSend& oldest = state.heartbeats_sent.front();
    test_some(oldest.requests, state.finished);
    if (active(oldest.requests) != 0) break;
    state.heartbeats_sent.pop_front();
  }
}

std::vector<int> Arrivals::missing(std::int64_t sequence) {
  State& state = *state_;
  SYNCPLAN_CHECK(sequence >= 0 && sequence < state.next);
  const auto found = state.buckets.find(sequence);
  std::vector<int> ranks;
  if (found == state.buckets.end()) return ranks;  // every message of it came (or one rank)
  for (std::size_t i = 0; i < state.peers.size(); ++i)
    if (!found->second.arrived[i]) ranks.push_back(state.peers[i].rank);
  return ranks;
}

std::vector<int> Arrivals::silent(std::int64_t sequence, double quiet_s) {
  SYNCPLAN_CHECK(quiet_s > kHeartbeatInterval_s);
  const std::vector<int> absent = missing(sequence);
  const Clock::time_point now = Clock::now();
  std::vector<int> ranks;
  for (const Peer& peer : state_->peers) {
    if (std::find(absent.begin(), absent.end(), peer.rank) != absent.end()) continue;
    if (peer.latest_arrival > sequence) continue;  // it went on to a later bucket
    const bool recent = peer.heartbeat_sequence >= sequence &&
                        std::chrono::duration<double>(now - peer.heartbeat_at).count() <= quiet_s;
    if (!recent) ranks.push_back(peer.rank);
  }
  return ranks;
}

LateRanks Arrivals::late(std::int64_t sequence, double quiet_s) {
  LateRanks late;
  late.silent = silent(sequence, quiet_s);
  const Clock::time_point now = Clock::now();
  for (const int rank : missing(sequence)) {
    const auto peer = std::find_if(state_->peers.begin(), state_->peers.end(), [&](const Peer& p) { return p.rank == rank; });
    const bool alive = peer->heartbeat_sequence >= 0 &&
                       std::chrono::duration<double>(now - peer->heartbeat_at).count() <= quiet_s;
    (alive ? late.behind : late.absent).push_back(rank);
  }
  return late;
}

std::size_t Arrivals::requests_in_flight() const {
  std::size_t count = 0;
  for (const auto& [sequence, bucket] : state_->buckets) count += active(bucket.requests);
  for (const HeartbeatSend& sent : state_->heartbeats_sent) count += active(sent.requests);
  return count;
}

namespace {

// "rank 1", "ranks 1 and 3", "ranks 1, 2 and 3".
std::string rank_list(const std::vector<int>& ranks) {
  std::string text = ranks.size() == 1 ? "rank " : "ranks ";
  for (std::size_t i = 0; i < ranks.size(); ++i)
    text += (i == 0 ? "" : i + 1 == ranks.size() ? " and " : ", ") + std::to_string(ranks[i]);
  return text;
}

}  // namespace

std::string missing_ranks_text(const std::vector<int>& ranks) {
  return ranks.empty() ? "every rank arrived" : rank_list(ranks) + " did not arrive";
}

std::string late_ranks_text(const LateRanks& late, double quiet_s) {
  std::vector<std::string> parts;
  if (!late.absent.empty()) parts.push_back(missing_ranks_text(late.absent));
  if (!late.behind.empty())
    parts.push_back(rank_list(late.behind) + " did not arrive but " + (late.behind.size() == 1 ? "is" : "are") +
                    " alive, waiting at an earlier bucket");
  if (!late.silent.empty()) {
    char seconds[32];
    std::snprintf(seconds, sizeof seconds, "%g", quiet_s);
    parts.push_back(rank_list(late.silent) + (late.silent.size() == 1 ? " arrived but has" : " arrived but have") +
                    " given no sign of life for " + seconds + " s");
  }
  if (parts.empty()) return "every rank arrived and is alive";
  std::string text = parts.front();
  for (std::size_t i = 1; i < parts.size(); ++i) text += "; " + parts[i];
  return text;
}

}  // namespace syncplan
