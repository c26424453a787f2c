// The link-profiling job: backend choice, sweep, checks and fit (docs/link.md).
#include "profiler/link_profile.hpp"

#include "core/errors.hpp"
#include "core/field_error.hpp"
#include "core/units.hpp"
#include "core/host_memory.hpp"
#include "profiler/link_sweep_nccl.hpp"

#include <array>
#include <climits>
#include <cmath>

namespace syncplan {

namespace {

// The backends, registered in one table (STYLE item 1).
struct Backend {
  const char* name;
  const char* source;            // the link file's "source"
  std::int64_t default_max_bytes;
  std::int64_t max_count;        // elements per all-reduce the backend can take
};

// Elements per NCCL all-reduce: 2^34 floats (64 GiB), beyond any GPU's memory today; MPI counts
// are C ints.
const Backend kMpiBackend{"mpi", "measured:mpi", kMpiDefaultMaxBytes, INT_MAX};
const Backend kNcclBackend{"nccl", "measured:nccl", kNcclDefaultMaxBytes, std::int64_t{1} << 34};

LinkBackendChoice make_choice(const Backend& backend, std::optional<GpuBackend> gpu, std::string why,
                              const LinkProfileRequest& request) {
  LinkBackendChoice choice;
  choice.name = backend.name;
  choice.source = backend.source;
  choice.why = std::move(why);
  choice.gpu = std::move(gpu);
  choice.sweep.min_bytes = request.min_bytes;
  choice.sweep.max_bytes = request.max_bytes.value_or(backend.default_max_bytes);
  choice.sweep.step_factor = request.step_factor;
  choice.sweep.warmup_iters = request.warmup_iters;
  choice.sweep.iters = request.iters;
  check_sweep_options(choice.sweep, backend.max_count);
  return choice;
}

// Ranks started with different options would sweep different sizes and wait in a collective
// forever: every rank compares its request with rank 0's before anything else.
void require_same_request_as_root(const MpiSession& mpi, const LinkProfileRequest& request) {
  const auto backend_code = [](const std::string& name) -> std::int64_t {
    return name == "auto" ? 0 : name == "mpi" ? 1 : name == "nccl" ? 2 : 3;
  };
  const std::array<std::int64_t, 7> mine = {backend_code(request.backend), request.min_bytes,
                                            request.max_bytes.value_or(-1), request.step_factor,
                                            request.warmup_iters, request.iters,
                                            static_cast<std::int64_t>(request.fit_errors)};
  std::array<std::int64_t, 7> root = mine;
  mpi.broadcast(root.data(), static_cast<int>(sizeof root), 0);
  const int differing = mpi.first_failing_rank(root == mine);
  if (differing >= 0)
    throw InputError("profile-link: rank " + std::to_string(differing) +
                     " was started with other options than rank 0 (backend, sizes, warmup, iters and fit must be "
                     "the same on every rank)");
}

// Host buffers per MPI rank for the largest size: the sweep's buffer, its read-back copy, and as
// much again for Open MPI's nonblocking all-reduce of a large message.
constexpr double kMpiBuffersPerRank = 3;

// The MPI sweep's buffers fit in the memory of each rank's node (the ranks of one node share it),
// checked on every rank and agreed on before anything is allocated: too large a --max-bytes is a
// one-line error, not std::bad_alloc on each rank.
void check_host_memory(const MpiSession& mpi, const LinkBackendChoice& choice) {
  const double ranks_per_node = mpi.max(static_cast<double>(mpi.local_rank() + 1));  // at most this many share a node
  const double needed_bytes = kMpiBuffersPerRank * static_cast<double>(choice.sweep.max_bytes) * ranks_per_node;
  const double available_bytes = available_memory_bytes();
  const int short_rank = mpi.first_failing_rank(needed_bytes <= available_bytes);
  const double least_available_bytes = -mpi.max(-available_bytes);  // collective: every rank calls it
  if (short_rank >= 0)
    throw FieldError("max_bytes", "max_bytes " + std::to_string(choice.sweep.max_bytes) + ": the MPI sweep needs about " +
                                      std::to_string(std::llround(needed_bytes)) + " bytes (" +
                                      format_short(needed_bytes / units::kBytesPerGiB, 2) + " GiB) of host memory per node (" +
                                      format_short(kMpiBuffersPerRank, 0) + " buffers of that size per rank, up to " +
                                      format_short(ranks_per_node, 0) + " rank(s) per node), more than rank " +
                                      std::to_string(short_rank) + "'s node has available (the least of any rank: " +
                                      format_short(least_available_bytes / units::kBytesPerGiB, 2) +
                                      " GiB); sweep smaller sizes");
}

// The backend "auto", "mpi" or "nccl" means on these ranks (collective).
LinkBackendChoice backend_for(const MpiSession& mpi, const LinkProfileRequest& request) {
  if (request.backend != "auto" && request.backend != "mpi" && request.backend != "nccl")
    throw FieldError("backend", "backend: unknown '" + request.backend + "' (auto, mpi or nccl)");
  if (request.backend == "mpi") return make_choice(kMpiBackend, std::nullopt, "", request);
  std::string why;
  std::optional<GpuBackend> gpu = GpuBackend::load(why);
  if (gpu && gpu->nccl().open == nullptr) {
    why = std::string("the GPU backend (") + gpu->description() + ") was built without NCCL";
    gpu.reset();
  }
  const int unloaded = mpi.first_failing_rank(gpu.has_value());
  if (request.backend == "nccl") {
    if (unloaded >= 0)
      throw FieldError("backend", "backend nccl: " + (unloaded == mpi.rank()
                                                          ? why
                                                          : "rank " + std::to_string(unloaded) + " has no GPU backend"));
    require_cuda_device_per_rank(mpi, *gpu);
    return make_choice(kNcclBackend, std::move(gpu), "", request);
  }
  if (unloaded >= 0)
    return make_choice(kMpiBackend, std::nullopt, "auto: no GPU backend on rank " + std::to_string(unloaded), request);
  std::string reason;
  const int failing = first_rank_without_device(mpi, *gpu, reason);
  if (failing >= 0)
    return make_choice(kMpiBackend, std::nullopt, "auto: no CUDA device for rank " + std::to_string(failing), request);
  return make_choice(kNcclBackend, std::move(gpu), "auto: a CUDA device per rank", request);
}

}  // namespace

LinkBackendChoice choose_link_backend(const MpiSession& mpi, const LinkProfileRequest& request) {
  require_same_request_as_root(mpi, request);
  LinkBackendChoice choice = backend_for(mpi, request);
  if (!choice.gpu) check_host_memory(mpi, choice);  // NCCL's buffers are on the device
  return choice;
}

LinkProfile run_link_profile(const MpiSession& mpi, const LinkBackendChoice& choice, FitErrors fit_errors,
                             const SweepProgress& progress) {
  LinkProfile result;
  result.points = choice.gpu ? sweep_allreduce_nccl(mpi, *choice.gpu, choice.sweep, progress)
                             : sweep_allreduce_mpi(mpi, choice.sweep, progress);
  for (const SweepPoint& point : result.points) result.wrong_sizes += point.wrong_elements > 0;
  if (result.wrong_sizes > 0) return result;
  // Every rank holds the same points (times are maxima over ranks), so a failing fit fails alike.
  std::vector<LinkSample> samples = sweep_samples(result.points, mpi.size());
  result.fit = fit_alpha_beta(samples, fit_errors, "profile-link");
  result.poor_fit = poor_fit_warning(*result.fit, samples, "profile-link");
  result.link = fitted_link(std::move(samples), mpi.size(), choice.source, *result.fit);
  return result;
}

}  // namespace syncplan
