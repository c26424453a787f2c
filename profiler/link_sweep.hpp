// All-reduce sweeps over message sizes (`syncplan profile-link`, docs/link.md): the options, the
// sizes, one measuring function per backend (MPI on CPUs, NCCL on GPUs), and the fit of the result.
#pragma once

#include "core/link.hpp"
#include "profiler/alpha_beta_fit.hpp"
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
  int warmup_iters = 5;                ///< untimed all-reduces per size, >= 0
  int iters = 20;                      ///< timed all-reduces per size, >= 1
};

/// One measured size.
struct SweepPoint {
  std::int64_t size_bytes = 0;      ///< bytes per rank
  std::int64_t count = 0;           ///< float elements per rank (size_bytes / 4)
  double time_s = 0;                ///< max over ranks of the mean time of one all-reduce, seconds
  std::int64_t wrong_elements = 0;  ///< elements, summed over ranks, that were not the expected sum
};

/// Called on every rank after each size is measured (rank 0 prints the row).
using SweepProgress = std::function<void(const SweepPoint&)>;

/// Throws InputError naming the option ("--min-bytes", ...) when `options` cannot be swept:
/// min < 4 or > max, step factor < 2, warmup < 0, iters < 1, or more than `max_count` elements.
void check_sweep_options(const LinkSweepOptions& options, std::int64_t max_count);

/// The sizes of the sweep: min, min f, min f^2, ... up to max, each rounded down to a multiple of
/// 4 bytes (one float), without repeats.
std::vector<std::int64_t> sweep_sizes(const LinkSweepOptions& options);

/// What a backend measured for one size on this rank.
struct RankMeasurement {
  double mean_s = 0;                ///< mean time of one all-reduce on this rank, seconds
  std::int64_t wrong_elements = 0;  ///< elements of this rank's result that are not the expected sum
};

/// Measures `count` float elements on this rank (warm-up, barrier, timed calls, result check).
using MeasureSize = std::function<RankMeasurement(std::int64_t count)>;

/// The sweep every backend runs: for each size of sweep_sizes(options), `measure` on every rank,
/// then the largest mean over ranks and the wrong elements summed over ranks; `progress` after each.
/// Collective.
std::vector<SweepPoint> run_sweep(const MpiSession& mpi, const LinkSweepOptions& options,
                                  const SweepProgress& progress, const MeasureSize& measure);

/// The value each backend's all-reduce must produce: rank r contributes r + 1 to every element, so
/// the sum is 1 + 2 + ... + ranks (exact in float up to thousands of ranks).
float expected_allreduce_sum(int ranks);

/// Elements among the first `count` of `values` that are not `expected`.
std::int64_t count_wrong(const std::vector<float>& values, std::int64_t count, float expected);

/// Measures MPI_Allreduce (MPI_FLOAT, MPI_SUM) on MPI_COMM_WORLD at every size: warm-up, barrier,
/// `iters` timed calls with MPI_Wtime, the mean per call, its maximum over ranks; then checks the
/// result (every element must be 1 + 2 + ... + ranks). Collective; throws LibraryError.
std::vector<SweepPoint> sweep_allreduce_mpi(const MpiSession& mpi, const LinkSweepOptions& options,
                                            const SweepProgress& progress);

/// The samples of a sweep across `workers` ranks: size, time, algbw and busbw (core/link.hpp).
std::vector<LinkSample> sweep_samples(const std::vector<SweepPoint>& points, int workers);

}  // namespace syncplan
