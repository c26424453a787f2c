// The Communicator wrapper: status codes into exceptions, bucket names, and the deadline of wait.
#include "comm/communicator.hpp"

#include "core/errors.hpp"

#include <chrono>
#include <cmath>
#include <thread>
#include <utility>
#include <vector>

namespace syncplan {

CommTimeout::CommTimeout(const std::string& bucket, double deadline_s)
    : CommTimeout("bucket '" + bucket + "': the average across ranks did not complete within its deadline of " +
                      format_short(deadline_s, 3) + " s (a rank never started it, or a peer or the link failed)",
                  bucket, deadline_s) {}

CommTimeout CommTimeout::step(const std::string& step, double deadline_s) {
  return CommTimeout(step + " did not complete within its deadline of " + format_short(deadline_s, 3) +
                         " s (a rank never reached it, or a peer or the link failed)",
                     step, deadline_s);
}

CommTimeout::CommTimeout(const std::string& message, const std::string& bucket, double deadline_s)
    : std::runtime_error(message), bucket_(bucket), deadline_s_(deadline_s) {}

Communicator::Communicator(const CommBackendTable& table) : table_(table) {
  SYNCPLAN_CHECK(table.version == kCommTableVersion && table.name != nullptr && table.buffer_place != nullptr &&
                 table.start != nullptr && table.test != nullptr && table.abort != nullptr &&
                 table.destroy != nullptr && table.size >= 1 && table.rank >= 0 && table.rank < table.size);
}

Communicator::~Communicator() {
  if (table_.destroy != nullptr) table_.destroy(table_.state);
}

Communicator::Communicator(Communicator&& other) noexcept
    : table_(std::exchange(other.table_, CommBackendTable{})), buckets_(std::move(other.buckets_)) {}

BucketRequest Communicator::start(const std::string& bucket, std::span<const std::span<float>> buffers,
                                  void* ready_event) {
  std::vector<CommBuffer> parts;
  parts.reserve(buffers.size());
  for (const std::span<float> buffer : buffers) parts.push_back(CommBuffer{buffer.data(), buffer.size()});
  AbiStatus status;
  BucketRequest request;
  table_.start(table_.state, parts.data(), parts.size(), ready_event, &request.id, &status);
  throw_abi_status(status, table_.name, "bucket '" + bucket + "': ");
  buckets_.emplace(request.id, bucket);
  return request;
}

const std::string& Communicator::bucket_name(BucketRequest request) const {
  const auto found = buckets_.find(request.id);
  SYNCPLAN_CHECK(found != buckets_.end());  // a request of this communicator, not yet done
  return found->second;
}

bool Communicator::test(BucketRequest request) {
  bucket_name(request);
  AbiStatus status;
  int done = 0;
  table_.test(table_.state, request.id, &done, &status);
  throw_abi_status(status, table_.name);
  if (done) buckets_.erase(request.id);
  return done != 0;
}

void Communicator::wait(BucketRequest request, double deadline_s) {
  if (!(deadline_s > 0) || !std::isfinite(deadline_s))
    throw InputError("deadline_s: must be a positive finite number of seconds, got " + format_shortest(deadline_s));
  const std::string bucket = bucket_name(request);
  using Clock = std::chrono::steady_clock;
  const Clock::time_point until =
      Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(deadline_s));
  // Polling is the progress: Open MPI 4.1 has no progress thread, and a CUDA event is queried.
  while (!test(request)) {
    if (Clock::now() >= until) throw CommTimeout(bucket, deadline_s);
    std::this_thread::yield();  // other ranks may share this core (mpirun --oversubscribe)
  }
}

void Communicator::average(const std::string& bucket, std::span<const std::span<float>> buffers,
                           double deadline_s) {
  wait(start(bucket, buffers), deadline_s);
}

void Communicator::abort(int code) {
  buckets_.clear();
  table_.abort(table_.state, code);
}

}  // namespace syncplan
