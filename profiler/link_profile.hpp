// The link-profiling job (`syncplan profile-link` without its command line): choose the all-reduce
// backend (MPI, or NCCL from the GPU backend library), sweep the sizes, check the averages and fit
// the alpha-beta model (SPEC section 7, docs/link.md). Collective: every rank calls it alike.
#pragma once

#include "core/link.hpp"
#include "comm/mpi_session.hpp"
#include "profiler/alpha_beta_fit.hpp"
#include "profiler/gpu_backend.hpp"
#include "profiler/link_sweep.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace syncplan {

/// What to measure. Errors name these fields (FieldError: "backend", "min_bytes", "max_bytes",
/// "step_factor", "warmup_iters", "iters").
struct LinkProfileRequest {
  std::string backend = "auto";          ///< mpi, nccl, or auto (nccl when every rank has the GPU library and a GPU)
  std::int64_t min_bytes = 8;            ///< first size (bytes, >= 4)
  std::optional<std::int64_t> max_bytes; ///< last size at most (bytes); unset: the backend's default
  int step_factor = 2;                   ///< size multiplier per step, >= 2
  int warmup_iters = 5;                  ///< untimed all-reduces per size, >= 0
  int iters = 20;                        ///< timed all-reduces per size, >= 1
  FitErrors fit_errors = FitErrors::kRelative;  ///< least squares on relative or absolute errors
};

/// The backend chosen and the sizes it sweeps.
struct LinkBackendChoice {
  std::string name;                ///< "mpi" or "nccl"
  std::string source;              ///< the link file's source: "measured:mpi" or "measured:nccl"
  std::string why;                 ///< how "auto" decided (empty for an explicit backend)
  std::optional<GpuBackend> gpu;   ///< the loaded GPU backend library, for nccl
  LinkSweepOptions sweep;          ///< the request's sizes, with the backend's default last size
};

/// The default last size of a sweep: nccl-tests' 128 MiB on GPUs, 16 MiB on CPUs (where 128 MiB
/// all-reduces take seconds).
inline constexpr std::int64_t kNcclDefaultMaxBytes = std::int64_t{128} << 20;
inline constexpr std::int64_t kMpiDefaultMaxBytes = std::int64_t{16} << 20;

/// Chooses the backend (collective: every rank agrees) and checks the sweep options. Throws
/// InputError on every rank when a rank's request differs from rank 0's (ranks started with
/// different options would otherwise wait in a collective forever), FieldError "backend nccl: ..." when nccl was asked for and a rank has no GPU backend library or
/// no GPU, FieldError for a bad size or count (check_sweep_options), and FieldError "max_bytes"
/// when the MPI sweep's host buffers would not fit in a node's available memory.
LinkBackendChoice choose_link_backend(const MpiSession& mpi, const LinkProfileRequest& request);

/// What the sweep measured.
struct LinkProfile {
  std::vector<SweepPoint> points;  ///< every size, in sweep order (times are maxima over ranks)
  std::int64_t wrong_sizes = 0;    ///< sizes whose averages came back wrong (then no fit is made)
  std::optional<AlphaBetaFit> fit; ///< set when wrong_sizes is 0
  std::optional<LinkFit> link;     ///< the syncplan.link/v1 document, with its samples, when fitted
  std::optional<std::string> poor_fit;  ///< poor_fit_warning of the fit (R^2 < 0.9), for stderr
};

/// Runs the sweep with `choice`, calling `progress` after each size on every rank, and fits the
/// alpha-beta model unless an average came back wrong. Throws InputError when the fit is
/// impossible (fit_alpha_beta) and LibraryError when an MPI, CUDA or NCCL call fails.
LinkProfile run_link_profile(const MpiSession& mpi, const LinkBackendChoice& choice, FitErrors fit_errors,
                             const SweepProgress& progress);

}  // namespace syncplan
