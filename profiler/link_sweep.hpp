// All-reduce sweeps over message sizes (`syncplan profile-link`, docs/link.md): the options, the
// sizes, the sweep through a communicator (MPI on CPUs, NCCL on GPUs), and the samples to fit.
#pragma once

#include "core/link.hpp"
#include "profiler/alpha_beta_fit.hpp"
#include "comm/communicator.hpp"
#include "comm/mpi_session.hpp"

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace syncplan {

/// What to sweep, as nccl-tests' -b/-e/-f/-w/-n.
struct LinkSweepOptions {
  std::int64_t min_bytes = 8;          ///< first size, bytes (rounded down to whole float elements, >= 4)
  std::int64_t max_bytes = 16 << 20;   ///< last size at most this, bytes
  int step_factor = 2;                 ///< each size is the previous one times this, >= 2
  int warmup_iters = 5;                ///< untimed all-reduces per size, 0 .. 1000
  int iters = 20;                      ///< timed all-reduces per size, 1 .. 10000
};

/// One measured size.
struct SweepPoint {
  std::int64_t size_bytes = 0;      ///< bytes per rank
  std::int64_t count = 0;           ///< float elements per rank (size_bytes / 4)
  double time_s = 0;                ///< max over ranks of the mean time of one all-reduce, seconds
  std::int64_t wrong_elements = 0;  ///< elements, summed over ranks, that were not the expected average
};

/// Called on every rank after each size is measured (rank 0 prints the row).
using SweepProgress = std::function<void(const SweepPoint&)>;

/// Throws InputError naming the option ("--min-bytes", ...) when `options` cannot be swept:
/// min < 4 or > max, step factor < 2, warmup < 0, iters < 1, or more than `max_count` elements.
void check_sweep_options(const LinkSweepOptions& options, std::int64_t max_count);

/// The sizes of the sweep: min, min f, min f^2, ... up to max, each rounded down to a multiple of
/// 4 bytes (one float), without repeats.
std::vector<std::int64_t> sweep_sizes(const LinkSweepOptions& options);

/// The buffer a sweep averages: `data` holds the largest size's floats where the communicator
/// wants them (host memory for MPI, device memory for NCCL); `fill` sets the first `count` to a
/// value, `read` copies the first `count` to the host.
struct SweepBuffer {
  float* data = nullptr;
  std::function<void(std::int64_t count, float value)> fill;
  std::function<std::vector<float>(std::int64_t count)> read;
};

/// Seconds a sweep's average may take before the communicator gives up (CommTimeout).
inline constexpr double kSweepDeadline_s = 60;

/// The sweep every backend runs, through `comm` (comm/communicator.hpp): for each size of
/// sweep_sizes(options), rank r fills the buffer with r + 1, runs `warmup_iters` averages, meets
/// the others at a barrier, times `iters` averages (each start then wait, on the host's steady
/// clock: launch and polling included), then checks the result; the point holds the largest mean
/// over ranks and the wrong elements summed over ranks; `progress` after each. Collective; throws
/// LibraryError, and CommTimeout when an average exceeds kSweepDeadline_s.
std::vector<SweepPoint> run_sweep(const MpiSession& mpi, Communicator& comm, const LinkSweepOptions& options,
                                  const SweepProgress& progress, const SweepBuffer& buffer);

/// The value each average must produce: rank r contributes r + 1, so the mean is (ranks + 1) / 2,
/// a multiple of 1/2 (exact in float).
float expected_allreduce_average(int ranks);

/// Elements among the first `count` of `values` that differ from `expected` by more than 1e-6 of
/// it (NCCL's ncclAvg may premultiply by 1/ranks in float: a rounding or two, 1.2e-7 each).
std::int64_t count_wrong(const std::vector<float>& values, std::int64_t count, float expected);

/// The MPI sweep: the communicator's MPI backend (MPI_Iallreduce, MPI_SUM, then / ranks) on a host
/// buffer. Collective; throws LibraryError.
std::vector<SweepPoint> sweep_allreduce_mpi(const MpiSession& mpi, const LinkSweepOptions& options,
                                            const SweepProgress& progress);

/// The samples of a sweep across `workers` ranks: size, time, algbw and busbw (core/link.hpp).
std::vector<LinkSample> sweep_samples(const std::vector<SweepPoint>& points, int workers);

}  // namespace syncplan
