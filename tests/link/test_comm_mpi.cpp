// The communicator's MPI backend under mpirun (comm/mpi_communicator.hpp, docs/comm.md): averages
// of several buckets, progress by test() while computing, and a deadline that expires, in a bucket's
// wait and in making the communicator. Each case
// prints "ok: ..." lines with its evidence and exits 0; a wrong value exits 1 with the first
// mismatches. Run by comm_cases.sh, which checks the timeout case's output and duration.
//
// usage: test_comm_mpi average|overlap|timeout|setup_timeout
#include "comm/communicator.hpp"
#include "comm/mpi_communicator.hpp"
#include "comm/mpi_session.hpp"
#include "core/errors.hpp"

#include <mpi.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <span>
#include <string>
#include <thread>
#include <vector>

using namespace syncplan;

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

// Compares `values` with `expected(i)`; prints the first mismatches; returns how many differ.
template <class Expected>
int mismatches(const std::string& what, const std::vector<float>& values, Expected expected, int rank) {
  int wrong = 0;
  for (std::size_t i = 0; i < values.size(); ++i) {
    if (values[i] == expected(i)) continue;
    if (++wrong <= 3)
      std::printf("FAIL: rank %d: %s[%zu] = %.9g, expected %.9g\n", rank, what.c_str(), i, values[i], expected(i));
  }
  return wrong;
}

// Three buckets in flight at once, waited for in reverse order: "one" (1 element), "thousand"
// (one buffer of 1000) and "packed" (buffers of 3, 257 and 65536 elements: the packed path).
// Rank r puts (r + 1)(b + 1) + (i mod 5) + k in element i of buffer k of bucket b. The mean over
// ranks 0..n-1 is (b + 1)(n + 1)/2 + (i mod 5) + k: the float sum n(n + 1)/2 (b + 1) + n (i mod 5
// + k) is an exact integer, and its quotient by n is a multiple of 1/2, exact in float, so the
// check is equality. E.g. n = 3, bucket 1, buffer 0, element 7: (2 + 4 + 6 + 3 x 2) / 3 = 6 = 2 x 2 + 2.
int average_case(const MpiSession& mpi) {
  Communicator comm = make_mpi_communicator(mpi);
  const int n = comm.size();
  const std::vector<std::vector<std::size_t>> lengths = {{1}, {1000}, {3, 257, 65536}};
  const std::vector<std::string> names = {"one", "thousand", "packed"};
  std::vector<std::vector<std::vector<float>>> data(lengths.size());
  std::vector<BucketRequest> requests;
  for (std::size_t b = 0; b < lengths.size(); ++b) {
    std::vector<std::span<float>> buffers;
    for (std::size_t k = 0; k < lengths[b].size(); ++k) {
      std::vector<float>& buffer = data[b].emplace_back(lengths[b][k]);
      for (std::size_t i = 0; i < buffer.size(); ++i)
        buffer[i] = static_cast<float>((comm.rank() + 1) * (b + 1) + i % 5 + k);
    }
    for (std::vector<float>& buffer : data[b]) buffers.emplace_back(buffer);
    requests.push_back(comm.start(names[b], buffers));
  }
  if (comm.in_flight() != 3) {
    std::printf("FAIL: %zu buckets in flight, expected 3\n", comm.in_flight());
    return 1;
  }
  for (std::size_t b = lengths.size(); b-- > 0;) comm.wait(requests[b], 30);
  int wrong = 0;
  for (std::size_t b = 0; b < lengths.size(); ++b)
    for (std::size_t k = 0; k < lengths[b].size(); ++k)
      wrong += mismatches(names[b] + "[" + std::to_string(k) + "]", data[b][k], [&](std::size_t i) {
        return static_cast<float>((b + 1) * (n + 1)) / 2 + static_cast<float>(i % 5 + k);
      }, comm.rank());
  // A deadline that is not a positive number of seconds is bad input, not a wait forever.
  std::vector<float> one(1, static_cast<float>(comm.rank()));
  const std::span<float> buffers[] = {one};
  const BucketRequest request = comm.start("zero deadline", buffers);
  bool refused = false;
  try {
    comm.wait(request, 0);
  } catch (const InputError& e) {
    refused = std::string(e.what()).find("deadline_s") != std::string::npos;
  }
  if (!refused) {
    std::printf("FAIL: rank %d: wait with deadline 0 was not refused as InputError\n", comm.rank());
    ++wrong;
  }
  comm.wait(request, 30);  // still in flight after the refusal: mean of 0 .. n-1 = (n - 1)/2
  wrong += mismatches("zero deadline", one, [&](std::size_t) { return static_cast<float>(n - 1) / 2; }, comm.rank());
  if (wrong == 0)
    std::printf("ok: rank %d of %d: buckets of 1, 1000 and 3+257+65536 elements averaged exactly\n", comm.rank(), n);
  return wrong == 0 ? 0 : 1;
}

// One bucket of 2^20 floats (4 MiB) started, then a computation in chunks with test() between
// them, never wait(): the bucket completes through test() alone while the computation goes on.
// Rank r sends r + 1: the mean is (n + 1)/2 exactly (a multiple of 1/2). The computation sums
// 1 + 2 + ... + 2^16 per chunk in doubles: 2^16 (2^16 + 1)/2 = 2,147,516,416 per chunk, exact.
int overlap_case(const MpiSession& mpi) {
  Communicator comm = make_mpi_communicator(mpi);
  std::vector<float> gradient(std::size_t{1} << 20, static_cast<float>(comm.rank() + 1));
  const std::span<float> buffers[] = {gradient};
  const BucketRequest request = comm.start("gradient", buffers);
  const Clock::time_point start = Clock::now();
  int chunks = 0, tests = 0;
  double computed = 0;
  bool done = false;
  while (!done && seconds_since(start) < 30) {
    double chunk = 0;
    for (int i = 1; i <= 1 << 16; ++i) chunk += i;
    computed += chunk;
    ++chunks;
    ++tests;
    done = comm.test(request);
  }
  const double expected_computed = 2147516416.0 * chunks;
  const float mean = static_cast<float>(comm.size() + 1) / 2;
  int wrong = done ? 0 : 1;
  if (!done) std::printf("FAIL: rank %d: the bucket did not complete through test() in 30 s\n", comm.rank());
  if (computed != expected_computed) {
    std::printf("FAIL: rank %d: computed %.17g, expected %.17g\n", comm.rank(), computed, expected_computed);
    ++wrong;
  }
  wrong += mismatches("gradient", gradient, [&](std::size_t) { return mean; }, comm.rank());
  if (wrong == 0)
    std::printf("ok: rank %d: 4 MiB bucket completed by test() after %d compute chunks (%d tests), mean %.1f\n",
                comm.rank(), chunks, tests, mean);
  return wrong == 0 ? 0 : 1;
}

// The last rank never starts bucket "stuck"; every other rank waits for it with a 2 s deadline,
// must get CommTimeout naming the bucket and the deadline after 2 s and before 3 s, then aborts
// the job (MPI_Abort with code 3), which also ends the last rank; with code 1 when a rank's
// timeout was wrong.
constexpr double kDeadline_s = 2;
constexpr int kAbortCode = 3;

int timeout_case(const MpiSession& mpi) {
  Communicator comm = make_mpi_communicator(mpi);
  // The waiting ranks meet once all have their verdict, before one of them aborts the job (which
  // would end a slower one before it printed): a communicator of their own, without the last rank.
  const bool stuck = comm.rank() == comm.size() - 1;
  MPI_Comm waiting = MPI_COMM_NULL;
  MPI_Comm_split(MPI_COMM_WORLD, stuck ? 1 : 0, comm.rank(), &waiting);
  std::fflush(stdout);
  if (stuck) {
    std::this_thread::sleep_for(std::chrono::seconds(60));  // ended by the others' MPI_Abort
    std::printf("FAIL: rank %d was not ended by MPI_Abort\n", comm.rank());
    return 1;
  }
  std::vector<float> values(1024, 1.0f);
  const std::span<float> buffers[] = {values};
  const BucketRequest request = comm.start("stuck", buffers);
  const Clock::time_point start = Clock::now();
  try {
    comm.wait(request, kDeadline_s);
    std::printf("FAIL: rank %d: wait returned without the last rank\n", comm.rank());
    std::fflush(stdout);
    comm.abort(1);
  } catch (const CommTimeout& e) {
    const double waited_s = seconds_since(start);
    const bool right = e.bucket() == "stuck" && e.deadline_s() == kDeadline_s && waited_s >= kDeadline_s &&
                       waited_s < kDeadline_s + 1 && std::string(e.what()).find("'stuck'") != std::string::npos;
    std::printf("%s: rank %d: CommTimeout after %.3f s: %s\n", right ? "ok" : "FAIL", comm.rank(), waited_s, e.what());
    std::fflush(stdout);
    MPI_Barrier(waiting);
    comm.abort(right ? kAbortCode : 1);
  }
  return 1;  // not reached: MPI_Abort does not return
}

// The last rank never makes its communicator; every other rank's make_mpi_communicator (an
// MPI_Comm_idup under a 2 s deadline) must throw CommTimeout naming the communicator and the
// deadline after 2 s and before 3 s, then the job is aborted as in timeout_case. Blocking
// MPI_Comm_dup would have held them forever.
int setup_timeout_case(const MpiSession& mpi) {
  const bool stuck = mpi.rank() == mpi.size() - 1;
  MPI_Comm waiting = MPI_COMM_NULL;
  MPI_Comm_split(MPI_COMM_WORLD, stuck ? 1 : 0, mpi.rank(), &waiting);
  std::fflush(stdout);
  if (stuck) {
    std::this_thread::sleep_for(std::chrono::seconds(60));  // ended by the others' MPI_Abort
    std::printf("FAIL: rank %d was not ended by MPI_Abort\n", mpi.rank());
    return 1;
  }
  const Clock::time_point start = Clock::now();
  try {
    Communicator comm = make_mpi_communicator(mpi, kDeadline_s);
    std::printf("FAIL: rank %d: the communicator was made without the last rank\n", mpi.rank());
    std::fflush(stdout);
    mpi.abort(1);
  } catch (const CommTimeout& e) {
    const double waited_s = seconds_since(start);
    const bool right = e.bucket() == "the all-reduces' communicator" && e.deadline_s() == kDeadline_s &&
                       waited_s >= kDeadline_s && waited_s < kDeadline_s + 1;
    std::printf("%s: rank %d: CommTimeout after %.3f s: %s\n", right ? "ok" : "FAIL", mpi.rank(), waited_s, e.what());
    std::fflush(stdout);
    MPI_Barrier(waiting);
    mpi.abort(right ? kAbortCode : 1);
  }
  return 1;  // not reached: MPI_Abort does not return
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc == 2 ? argv[1] : "";
  if (mode != "average" && mode != "overlap" && mode != "timeout" && mode != "setup_timeout") {
    std::fprintf(stderr, "usage: test_comm_mpi average|overlap|timeout|setup_timeout\n");
    return 2;
  }
  try {
    const MpiSession mpi;
    const int status = mode == "average"   ? average_case(mpi)
                       : mode == "overlap" ? overlap_case(mpi)
                       : mode == "timeout" ? timeout_case(mpi)
                                           : setup_timeout_case(mpi);
    std::fflush(stdout);
    // A failing rank ends the job: the others may wait for it in MPI_Finalize.
    if (mpi.first_failing_rank(status == 0) >= 0) mpi.abort(1);
    return 0;
  } catch (const std::exception& e) {
    std::printf("FAIL: %s\n", e.what());
    std::fflush(stdout);
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
}
