// The Communicator wrapper over a backend table (comm/communicator.hpp), on a scripted backend
// without MPI: buffers handed over, requests released, the deadline of wait, and each status code
// of the C ABI thrown again as its error type (comm/abi_status.hpp).
#include "comm/abi_status.hpp"
#include "comm/communicator.hpp"
#include "core/errors.hpp"
#include "core/library_check.hpp"

#include <catch2/catch.hpp>

#include <chrono>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

using namespace syncplan;

namespace {

// A backend that completes a request after `polls_to_done` tests (never, when negative), and
// fails start or test with a given code when told to.
struct ScriptedBackend {
  int polls_to_done = 0;
  int start_code = kAbiOk;
  int test_code = kAbiOk;
  std::vector<CommBuffer> started;  // the buffers of the last start
  int polls = 0;
  bool destroyed = false;
};

CommBackendTable scripted_table(ScriptedBackend& backend) {
  CommBackendTable table;
  table.name = "scripted";
  table.buffer_place = "host";
  table.state = &backend;
  table.rank = 1;
  table.size = 4;
  table.start = [](void* state, const CommBuffer* buffers, std::size_t count, void*, std::int64_t* request,
                   AbiStatus* status) {
    auto& self = *static_cast<ScriptedBackend*>(state);
    self.started.assign(buffers, buffers + count);
    *request = 7;
    return abi_call(status, [&] {
      if (self.start_code == kAbiInputError) throw InputError("more than MPI's int count");
    });
  };
  table.test = [](void* state, std::int64_t, int* done, AbiStatus* status) {
    auto& self = *static_cast<ScriptedBackend*>(state);
    ++self.polls;
    *done = self.polls_to_done >= 0 && self.polls > self.polls_to_done;
    return abi_call(status, [&] {
      if (self.test_code == kAbiLibraryError) throw LibraryError("MPI: MPI_Test failed");
      if (self.test_code == kAbiInternalError) throw std::runtime_error("something else");
    });
  };
  table.abort = [](void*, int) {};
  table.destroy = [](void* state) { static_cast<ScriptedBackend*>(state)->destroyed = true; };
  return table;
}

}  // namespace

TEST_CASE("Communicator hands the bucket's buffers to the backend and releases a done request", "[comm]") {
  ScriptedBackend backend;
  backend.polls_to_done = 2;  // done at the third test
  {
    Communicator comm(scripted_table(backend));
    CHECK(comm.rank() == 1);
    CHECK(comm.size() == 4);
    std::vector<float> a(3), b(5);
    const std::span<float> buffers[] = {a, b};
    const BucketRequest request = comm.start("layer.0", buffers);
    REQUIRE(backend.started.size() == 2);
    CHECK(backend.started[0].data == a.data());
    CHECK(backend.started[0].count == 3);
    CHECK(backend.started[1].data == b.data());
    CHECK(backend.started[1].count == 5);
    CHECK(comm.in_flight() == 1);
    CHECK_FALSE(comm.test(request));
    CHECK_FALSE(comm.test(request));
    CHECK(comm.test(request));
    CHECK(comm.in_flight() == 0);
    CHECK_THROWS_AS(comm.test(request), InternalError);  // released: no longer a request
  }
  CHECK(backend.destroyed);
}

TEST_CASE("wait throws CommTimeout naming the bucket and the deadline once it has passed", "[comm]") {
  ScriptedBackend backend;
  backend.polls_to_done = -1;  // never done: a rank that never started the bucket
  Communicator comm(scripted_table(backend));
  std::vector<float> values(4);
  const std::span<float> buffers[] = {values};
  const BucketRequest request = comm.start("stuck", buffers);
  const auto start = std::chrono::steady_clock::now();
  try {
    comm.wait(request, 0.2);
    FAIL("wait returned");
  } catch (const CommTimeout& e) {
    const double waited_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    CHECK(e.bucket() == "stuck");
    CHECK(e.deadline_s() == 0.2);
    CHECK(std::string(e.what()).find("bucket 'stuck'") != std::string::npos);
    CHECK(std::string(e.what()).find("0.200 s") != std::string::npos);
    CHECK(waited_s >= 0.2);
    CHECK(waited_s < 1.2);  // the deadline plus a second
  }
  CHECK(comm.in_flight() == 1);  // still in flight: the caller aborts
  CHECK(backend.polls > 1);      // polled, not slept through
  CHECK_THROWS_AS(comm.wait(request, -1), InputError);
  CHECK_THROWS_AS(comm.wait(request, std::numeric_limits<double>::infinity()), InputError);
}

TEST_CASE("A backend's status codes come back as their error types", "[comm]") {
  ScriptedBackend backend;
  Communicator comm(scripted_table(backend));
  std::vector<float> values(4);
  const std::span<float> buffers[] = {values};
  backend.start_code = kAbiInputError;
  try {
    comm.start("huge", buffers);
    FAIL("start returned");
  } catch (const InputError& e) {
    CHECK(std::string(e.what()) == "bucket 'huge': more than MPI's int count");
  }
  CHECK(comm.in_flight() == 0);
  backend.start_code = kAbiOk;
  const BucketRequest request = comm.start("b", buffers);
  backend.test_code = kAbiLibraryError;
  CHECK_THROWS_WITH(comm.test(request), "MPI: MPI_Test failed");
  CHECK_THROWS_AS(comm.test(request), LibraryError);
  backend.test_code = kAbiInternalError;
  CHECK_THROWS_AS(comm.test(request), InternalError);
  CHECK_THROWS_WITH(comm.test(request), "scripted: something else");
}

TEST_CASE("abi_call keeps a message too long for the status as its first 1023 characters", "[comm]") {
  AbiStatus status;
  const std::string longer(2000, 'x');
  CHECK(abi_call(&status, [&] { throw InputError(longer); }) == kAbiInputError);
  CHECK(std::string(status.message) == longer.substr(0, kAbiMessageBytes - 1));
  CHECK(abi_call(&status, [] {}) == kAbiOk);
  CHECK(status.message[0] == '\0');
  CHECK(abi_call(&status, [] { throw 42; }) == kAbiInternalError);
  CHECK(std::string(status.message) == "an exception of unknown type");
}
