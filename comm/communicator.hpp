// The communicator (docs/comm.md): averages a list of float buffers across ranks as one bucket,
// started, tested and waited for with a deadline, or aborted. One function table per backend
// (MPI on host buffers here, NCCL on device buffers in the GPU backend library), wrapped by one
// class that turns the table's status codes into exceptions (STYLE item 18: one interface level).
#pragma once

#include "comm/abi_status.hpp"

#include <cstddef>
#include <cstdint>
#include <span>
#include <stdexcept>
#include <string>
#include <unordered_map>

namespace syncplan {

extern "C" {

/// One buffer of a bucket: `count` float32 elements at `data` (host memory for MPI, device
/// memory for NCCL), averaged in place.
struct CommBuffer {
  float* data = nullptr;
  std::size_t count = 0;
};

inline constexpr int kCommTableVersion = 1;

/// A backend: its state and the functions on it. A backend's functions never throw (AbiStatus).
/// start: issues the average of the buffers as one bucket; `ready_event` (NCCL: a cudaEvent_t,
///   the layer's backward done; MPI: must be null) orders it after the computation; writes the
///   request id. test: progresses the request (MPI has no asynchronous progress here: test must
///   be called) and sets *done to 1 when the averages are in the buffers; a done request is
///   released. abort: abandons every request (MPI_Abort ends the job; ncclCommAbort the
///   communicator). destroy: releases the state.
struct CommBackendTable {
  int version = kCommTableVersion;
  const char* name = nullptr;          ///< "mpi" or "nccl"
  const char* buffer_place = nullptr;  ///< "host" or "device": where CommBuffer::data must point
  void* state = nullptr;
  int rank = 0;                        ///< this rank, 0 .. size - 1
  int size = 1;                        ///< ranks in the communicator
  int (*start)(void* state, const CommBuffer* buffers, std::size_t buffer_count, void* ready_event,
               std::int64_t* request, AbiStatus* status) = nullptr;
  int (*test)(void* state, std::int64_t request, int* done, AbiStatus* status) = nullptr;
  void (*abort)(void* state, int code) = nullptr;
  void (*destroy)(void* state) = nullptr;
};

}  // extern "C"

/// A bucket did not complete within its deadline (a rank never started it, a peer died, or the
/// link is down). The request stays in flight: abort the communicator (exit code 1).
class CommTimeout : public std::runtime_error {
 public:
  CommTimeout(const std::string& bucket, double deadline_s);
  /// A collective step that is not a bucket (making a communicator, an agreement among the
  /// ranks) did not complete within its deadline: the message names `step` as such.
  static CommTimeout step(const std::string& step, double deadline_s);
  const std::string& bucket() const { return bucket_; }
  double deadline_s() const { return deadline_s_; }

 private:
  CommTimeout(const std::string& message, const std::string& bucket, double deadline_s);

  std::string bucket_;
  double deadline_s_;
};

/// A started bucket, returned by Communicator::start.
struct BucketRequest {
  std::int64_t id = -1;
};

/// One communicator over a backend table; owns the table's state (destroyed with it). Not
/// thread-safe: one thread issues, tests and waits. start is collective in order: every rank
/// starts the same buckets, with the same element counts, in the same order.
class Communicator {
 public:
  /// Takes `table` (version kCommTableVersion, every function set; InternalError otherwise).
  explicit Communicator(const CommBackendTable& table);
  ~Communicator();
  Communicator(Communicator&& other) noexcept;
  Communicator& operator=(Communicator&& other) = delete;
  Communicator(const Communicator&) = delete;
  Communicator& operator=(const Communicator&) = delete;

  const char* backend() const { return table_.name; }
  const char* buffer_place() const { return table_.buffer_place; }
  int rank() const { return table_.rank; }
  int size() const { return table_.size; }

  /// Starts averaging `buffers` (float32, in place) across the ranks as one bucket named `bucket`
  /// (the name is for messages). `ready_event`: see CommBackendTable. Throws InputError when the
  /// bucket cannot be sent (e.g. more than 2^31 - 1 elements with MPI), LibraryError when the
  /// library call fails.
  BucketRequest start(const std::string& bucket, std::span<const std::span<float>> buffers,
                      void* ready_event = nullptr);
  /// True when the bucket's averages are in its buffers (the request is then released). Also
  /// progresses it. Throws LibraryError.
  bool test(BucketRequest request);
  /// Tests the request until it is done or `deadline_s` seconds (> 0, finite) have passed since
  /// the call, then throws CommTimeout naming the bucket and the deadline. Throws InputError for
  /// a deadline that is not a positive finite number of seconds.
  void wait(BucketRequest request, double deadline_s);
  /// start then wait.
  void average(const std::string& bucket, std::span<const std::span<float>> buffers, double deadline_s);
  /// Abandons every bucket in flight: MPI ends every rank of the job with `code` (MPI_Abort, does
  /// not return); NCCL aborts the communicator (ncclCommAbort), which cannot be used afterwards.
  void abort(int code);
  /// Buckets started and not yet completed.
  std::size_t in_flight() const { return buckets_.size(); }

 private:
  const std::string& bucket_name(BucketRequest request) const;

  CommBackendTable table_;
  std::unordered_map<std::int64_t, std::string> buckets_;  // in-flight request id -> bucket name
};

}  // namespace syncplan
