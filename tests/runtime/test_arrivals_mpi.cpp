// The runtime's collective fault pieces under mpirun: arrival messages (comm/arrivals.hpp), the
// checkpoint save and resume (runtime/checkpoint.hpp), the fingerprint check
// (runtime/fingerprint.hpp) and the fatal-signal line when mpirun ends a rank whose peer died
// (comm/fatal_signal.hpp). Each case prints "ok: rank R: ..." lines with its evidence, or
// "FAIL: ..." and exits 1; test_arrivals_cases.sh checks the lines across ranks and the timing.
//
// Mode `stall` is a rank that joins MPI and then does nothing for 60 s (as a rank stopped during
// the setup would), the partner of one `syncplan run` rank in fault_cases.sh's setup_stall case.
//
// usage: test_arrivals_mpi arrive|missing|checkpoint|fingerprint|signal|stall [WORKDIR]
#include "comm/arrivals.hpp"
#include "comm/fatal_signal.hpp"
#include "comm/mpi_session.hpp"
#include "core/errors.hpp"
#include "runtime/checkpoint.hpp"
#include "runtime/fingerprint.hpp"

#include <mpi.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <exception>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

using namespace syncplan;
namespace fs = std::filesystem;

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

int fail(int rank, const std::string& what) {
  std::printf("FAIL: rank %d: %s\n", rank, what.c_str());
  return 1;
}

// Polls `arrivals` until no request is in flight or `limit_s` seconds have passed.
void drain(Arrivals& arrivals, double limit_s) {
  const auto start = Clock::now();
  while (arrivals.requests_in_flight() > 0 && seconds_since(start) < limit_s) {
    arrivals.progress();
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

// Every rank arrives at buckets 0..99; no arrive() takes a second (it never waits for a peer: the
// missing case below shows that a rank that never arrives holds nobody up; the bound only catches a
// wait, since 4 ranks on 2 busy cores are descheduled for tens of milliseconds at a time: 50 ms
// failed once beside two busy loops), and after polling every rank has every other's message and
// no request is left.
int arrive_case(const MpiSession& mpi) {
  Arrivals arrivals(mpi);
  double slowest_s = 0;
  for (std::int64_t s = 0; s < 100; ++s) {
    const auto start = Clock::now();
    arrivals.arrive(s);
    arrivals.progress();
    slowest_s = std::max(slowest_s, seconds_since(start));
  }
  drain(arrivals, 10);
  for (std::int64_t s = 0; s < 100; ++s)
    if (!arrivals.missing(s).empty()) return fail(mpi.rank(), "bucket " + std::to_string(s) + ": " + missing_ranks_text(arrivals.missing(s)));
  if (arrivals.requests_in_flight() != 0)
    return fail(mpi.rank(), std::to_string(arrivals.requests_in_flight()) + " requests left in flight");
  if (slowest_s > 1.0) return fail(mpi.rank(), "an arrive() took " + std::to_string(slowest_s) + " s");
  std::printf("ok: rank %d: 100 buckets, every rank arrived, 0 requests in flight, slowest arrive %.6f s\n", mpi.rank(),
              slowest_s);
  return 0;
}

// The last rank arrives at buckets 0..2 and never at 3 (it sleeps, as a stopped rank would);
// every other rank arrives at 0..3, polls for 1.5 s with heartbeats, and must find the last rank
// missing at 3 only, and silent at 2 (arrived, then no sign of life for 1 s), while the others
// are alive. Every rank then releases its requests (the destructor) in well under a second.
int missing_case(const MpiSession& mpi) {
  const int last = mpi.size() - 1;
  auto arrivals = std::make_unique<Arrivals>(mpi);
  const std::int64_t buckets = mpi.rank() == last ? 3 : 4;
  for (std::int64_t s = 0; s < buckets; ++s) arrivals->arrive(s);
  if (mpi.rank() == last) {
    drain(*arrivals, 3);
    std::this_thread::sleep_for(std::chrono::milliseconds(2000));
  } else {
    const auto start = Clock::now();
    while (seconds_since(start) < 1.5) {
      arrivals->progress();
      arrivals->heartbeat(3);
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    for (std::int64_t s = 0; s < 3; ++s)
      if (!arrivals->missing(s).empty()) return fail(mpi.rank(), "bucket " + std::to_string(s) + ": " + missing_ranks_text(arrivals->missing(s)));
    if (arrivals->missing(3) != std::vector<int>{last})
      return fail(mpi.rank(), "bucket 3: " + missing_ranks_text(arrivals->missing(3)) + ", expected rank " + std::to_string(last));
    // The last rank arrived at 2 and then gave no heartbeat: silent at 2 (it is missing at 3).
    if (arrivals->silent(2, 1.0) != std::vector<int>{last} || !arrivals->silent(3, 1.0).empty())
      return fail(mpi.rank(), "bucket 2: the last rank not silent, or bucket 3: a missing rank counted as silent");
    // At 3 the last rank is absent (no heartbeat at all), the others alive; at 2 it is silent.
    const LateRanks at3 = arrivals->late(3, 1.0), at2 = arrivals->late(2, 1.0);
    if (at3.absent != std::vector<int>{last} || !at3.behind.empty() || !at3.silent.empty() ||
        !at2.absent.empty() || at2.silent != std::vector<int>{last})
      return fail(mpi.rank(), "late(3): " + late_ranks_text(at3, 1.0) + "; late(2): " + late_ranks_text(at2, 1.0));
    std::printf("ok: rank %d: bucket 3: %s; %zu requests in flight\n", mpi.rank(), missing_ranks_text(arrivals->missing(3)).c_str(),
                arrivals->requests_in_flight());
  }
  const auto start = Clock::now();
  arrivals.reset();
  const double release_s = seconds_since(start);
  if (release_s > 0.5) return fail(mpi.rank(), "releasing the requests took " + std::to_string(release_s) + " s");
  std::printf("ok: rank %d: released in %.6f s\n", mpi.rank(), release_s);
  mpi.barrier();
  return 0;
}

// A rank's state at `step`: parameters that depend on the rank and step, exact in float.
TrainingState state_at(int rank, std::int64_t step) {
  TrainingState state;
  state.step = step;
  state.period_position = step % 4;
  state.data_cursor = 64 * step + rank;
  state.rng_seed = 1;
  state.rng_counter = static_cast<std::uint64_t>(step);
  state.adam_step = step;
  for (int i = 0; i < 1000; ++i) {
    state.parameters.push_back(static_cast<float>(rank) + static_cast<float>(i) / 1024.0f + static_cast<float>(step));
    state.adam_m.push_back(static_cast<float>(i) / 4096.0f);
    state.adam_v.push_back(static_cast<float>(step) / 8.0f);
  }
  return state;
}

// A refusal that every rank must throw alike: prints "ok: rank R: refused: MESSAGE".
template <class Work>
bool refused(const MpiSession& mpi, const char* what, Work work) {
  try {
    work();
  } catch (const InputError& error) {
    std::printf("ok: rank %d: refused %s: %s\n", mpi.rank(), what, error.what());
    return true;
  }
  std::printf("FAIL: rank %d: %s was not refused\n", mpi.rank(), what);
  return false;
}

// Saves steps 10, 20 and 30 (keep 2), resumes step 30 bit for bit, then checks that every rank
// refuses alike: one rank's corrupt file, another plan, a missing folder, and a save that fails
// on one rank only (its temporary file's name taken by a folder), which leaves no manifest.
int checkpoint_case(const MpiSession& mpi, const fs::path& dir) {
  const int last = mpi.size() - 1;
  const CheckpointIdentity me{RunFingerprint{0xa, 0xb, 0xc}, mpi.rank(), mpi.size()};
  if (mpi.is_root()) {
    fs::remove_all(dir);
    fs::create_directories(dir);
  }
  mpi.barrier();
  for (std::int64_t step : {10, 20, 30}) save_checkpoint(mpi, dir, state_at(mpi.rank(), step), me, 30, 2);
  mpi.barrier();  // each rank removes its own old file: the folder is gone once all have
  if (fs::exists(checkpoint_step_folder(dir, 10))) return fail(mpi.rank(), "step 10 kept beyond keep = 2");
  if (!fs::exists(checkpoint_manifest_file(dir, 20)) || !fs::exists(checkpoint_manifest_file(dir, 30)))
    return fail(mpi.rank(), "steps 20 and 30 are not both complete");
  const TrainingState back = load_checkpoint(mpi, dir, me, 1000, 30);
  const TrainingState expected = state_at(mpi.rank(), 30);
  if (back.step != 30 || back.data_cursor != expected.data_cursor ||
      std::memcmp(back.parameters.data(), expected.parameters.data(), 1000 * sizeof(float)) != 0)
    return fail(mpi.rank(), "the resumed state is not step 30's");
  std::printf("ok: rank %d: resumed step 30 bit for bit (cursor %lld)\n", mpi.rank(), static_cast<long long>(back.data_cursor));

  bool ok = refused(mpi, "another plan", [&] {
    CheckpointIdentity other = me;
    other.fingerprint.schedule = 0xd;
    load_checkpoint(mpi, dir, other, 1000, 30);
  });
  ok &= refused(mpi, "a missing folder", [&] { load_checkpoint(mpi, dir / "absent", me, 1000, 30); });
  mpi.barrier();
  if (mpi.is_root()) {
    std::fstream file(checkpoint_rank_file(dir, 30, last), std::ios::in | std::ios::out | std::ios::binary);
    file.seekp(-20, std::ios::end);
    file.put('\x7f');
  }
  mpi.barrier();
  ok &= refused(mpi, "a corrupt file", [&] { load_checkpoint(mpi, dir, me, 1000, 30); });
  if (mpi.rank() == last) fs::create_directories(checkpoint_rank_file(dir, 40, last).string() + ".tmp");
  mpi.barrier();
  ok &= refused(mpi, "a failed save", [&] { save_checkpoint(mpi, dir, state_at(mpi.rank(), 40), me, 30, 2); });
  if (fs::exists(checkpoint_manifest_file(dir, 40))) return fail(mpi.rank(), "a manifest for the failed step 40");
  return ok ? 0 : 1;
}

// Rank 1 (and rank 3 on 4 ranks) runs another plan, rank 3 also another model: after a check
// that passes, every rank must throw the same message naming them.
int fingerprint_case(const MpiSession& mpi) {
  ModelSpec spec;
  spec.name = "tiny-gpt";
  spec.hidden_size = 128;
  const RunFingerprint same = fingerprint_run(schedule_identity("wfbp", 1), spec, 2, 32, mpi.size());
  require_same_run(mpi, same);
  std::printf("ok: rank %d: the same run passes\n", mpi.rank());
  const bool odd = mpi.rank() % 2 == 1;
  if (mpi.rank() == 3) spec.hidden_size = 256;
  const RunFingerprint mine = fingerprint_run(schedule_identity(odd ? "ssgd" : "wfbp", 1), spec, 2, 32, mpi.size());
  return refused(mpi, "different runs", [&] { require_same_run(mpi, mine); }) ? 0 : 1;
}

// Rank 1 dies (SIGKILL) after a second; mpirun then sends SIGTERM to rank 0, which must print
// its line and exit 1 instead of spinning for 30 s.
int signal_case(const MpiSession& mpi) {
  if (mpi.rank() == 1) {
    std::this_thread::sleep_for(std::chrono::seconds(1));
    raise(SIGKILL);
  }
  FatalSignalLine line("test_arrivals_mpi: rank " + std::to_string(mpi.rank()));
  line.set_place(5, "lm_head");
  const auto start = Clock::now();
  while (seconds_since(start) < 30) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  return fail(mpi.rank(), "not ended by a signal within 30 s");
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "";
  try {
    MpiSession mpi;
    int rc = 2;
    if (mode == "arrive") rc = arrive_case(mpi);
    else if (mode == "missing") rc = missing_case(mpi);
    else if (mode == "checkpoint" && argc > 2) rc = checkpoint_case(mpi, argv[2]);
    else if (mode == "fingerprint") rc = fingerprint_case(mpi);
    else if (mode == "signal") rc = signal_case(mpi);
    else if (mode == "stall") {
      std::this_thread::sleep_for(std::chrono::seconds(60));
      rc = 0;
    }
    else std::fprintf(stderr, "usage: test_arrivals_mpi arrive|missing|checkpoint|fingerprint|signal|stall [WORKDIR]\n");
    std::fflush(stdout);
    // A rank that failed alone would leave the others in a collective: end them all.
    if (rc == 1) mpi.abort(1);
    return rc;
  } catch (const std::exception& error) {
    std::printf("FAIL: %s\n", error.what());
    std::fflush(stdout);
    int initialized = 0;
    if (MPI_Initialized(&initialized) == MPI_SUCCESS && initialized) MPI_Abort(MPI_COMM_WORLD, 1);
    return 1;
  }
}
