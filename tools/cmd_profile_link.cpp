// `syncplan profile-link`: an all-reduce sweep under mpirun, printed like nccl-tests and fitted to
// an alpha-beta link (SPEC section 7, docs/link.md).
#include "core/errors.hpp"
#include "core/limits.hpp"
#include "core/units.hpp"
#include "profiler/link_profile.hpp"
#include "profiler/link_sweep.hpp"
#include "tools/cli_common.hpp"

#include <cstdio>
#include <limits>
#include <exception>
#include <charconv>
#include <functional>
#include <iostream>
#include <memory>

namespace syncplan::cli {

namespace {

struct ProfileLinkOptions {
  std::string backend = "auto";
  std::string min_bytes = "8";
  std::string max_bytes;  // empty: the backend's default
  int step_factor = 2;
  int warmup_iters = 5;
  int iters = 20;
  std::string fit = "relative";
  std::string output_path;
};

// "8", "64K", "128M", "1G": bytes, with nccl-tests' binary suffixes (K = 1024).
std::int64_t parse_size_bytes(const std::string& text, const std::string& option) {
  std::size_t digits = 0;
  while (digits < text.size() && text[digits] >= '0' && text[digits] <= '9') ++digits;
  const std::string suffix = text.substr(digits);
  int shift = -1;
  if (suffix.empty()) shift = 0;
  else if (suffix == "K" || suffix == "k") shift = 10;
  else if (suffix == "M" || suffix == "m") shift = 20;
  else if (suffix == "G" || suffix == "g") shift = 30;
  if (digits == 0 || shift < 0)
    throw InputError(option + ": expected bytes as a whole number with an optional K, M or G (x1024), got '" + text +
                     "'");
  // Any number of digits is a number (13 or more were called "not a whole number"); past int64
  // it is too many bytes, as a value that overflows with its suffix is.
  std::int64_t value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + digits, value);
  if (error != std::errc() || end != text.data() + digits || value > (std::numeric_limits<std::int64_t>::max() >> shift))
    throw InputError(option + ": '" + text + "' is more bytes than a 64-bit count holds");
  const std::int64_t bytes = value << shift;
  if (bytes > limits::kMaxSizeBytes)
    throw InputError(option + ": '" + text + "' is " + std::to_string(bytes) + " bytes, more than the limit of " +
                     std::to_string(limits::kMaxSizeBytes) + " (1 PiB; docs/formats.md, limits)");
  return bytes;
}

// Runs `check` on rank 0 only (e.g. the output path, which only rank 0 writes); when it fails,
// every rank throws, rank 0 with the check's message (the only one printed).
void check_on_root(const MpiSession& mpi, const std::function<void()>& check) {
  std::exception_ptr failure;
  if (mpi.is_root()) {
    try {
      check();
    } catch (const InputError&) {
      failure = std::current_exception();
    }
  }
  if (mpi.first_failing_rank(!failure) < 0) return;
  if (failure) std::rethrow_exception(failure);
  throw InputError("rank 0 refused the options");
}

void print_header(const MpiSession& mpi, const LinkBackendChoice& choice) {
  const LinkSweepOptions& sweep = choice.sweep;
  std::printf("# syncplan profile-link: all-reduce of float32 (avg) across %d rank%s, backend %s%s\n", mpi.size(),
              mpi.size() == 1 ? "" : "s", choice.name.c_str(), choice.why.empty() ? "" : (" (" + choice.why + ")").c_str());
  std::printf("# sizes %lld..%lld B x%d, warmup %d, iters %d; time: max over ranks of the mean per all-reduce\n",
              static_cast<long long>(sweep.min_bytes), static_cast<long long>(sweep.max_bytes), sweep.step_factor,
              sweep.warmup_iters, sweep.iters);
  std::printf("#\n# %10s  %12s  %8s  %6s  %10s  %9s  %9s  %6s\n", "size", "count", "type", "redop", "time", "algbw",
              "busbw", "#wrong");
  std::printf("# %10s  %12s  %8s  %6s  %10s  %9s  %9s  %6s\n", "(B)", "(elements)", "", "", "(us)", "(GB/s)", "(GB/s)",
              "");
  std::fflush(stdout);
}

void print_row(const SweepPoint& point, int workers) {
  const LinkSample sample = allreduce_sample(point.size_bytes, point.time_s, workers);
  std::printf("%12lld  %12lld  %8s  %6s  %10.2f  %9.3f  %9.3f  %6lld\n", static_cast<long long>(point.size_bytes),
              static_cast<long long>(point.count), "float", "avg", units::seconds_to_us(point.time_s),
              sample.algbw_GBps, sample.busbw_GBps, static_cast<long long>(point.wrong_elements));
  std::fflush(stdout);
}

int profile_link(const MpiSession& mpi, const ProfileLinkOptions& options) {
  LinkProfileRequest request;
  request.backend = options.backend;
  request.min_bytes = parse_size_bytes(options.min_bytes, "--min-bytes");
  if (!options.max_bytes.empty()) request.max_bytes = parse_size_bytes(options.max_bytes, "--max-bytes");
  request.step_factor = options.step_factor;
  request.warmup_iters = options.warmup_iters;
  request.iters = options.iters;
  request.fit_errors = options.fit == "absolute" ? FitErrors::kAbsolute : FitErrors::kRelative;
  const LinkBackendChoice choice =
      with_flags({{"backend", "--backend"}, {"min_bytes", "--min-bytes"}, {"max_bytes", "--max-bytes"},
                  {"step_factor", "--step-factor"}, {"warmup_iters", "-w/--warmup"}, {"iters", "-n/--iters"}},
                 [&] { return choose_link_backend(mpi, request); });
  check_on_root(mpi, [&] { check_output_paths({{"-o", options.output_path}}, {}); });

  if (mpi.is_root()) print_header(mpi, choice);
  const SweepProgress progress = [&](const SweepPoint& point) {
    if (mpi.is_root()) print_row(point, mpi.size());
  };
  const LinkProfile measured = run_link_profile(mpi, choice, request.fit_errors, progress);
  if (measured.wrong_sizes > 0) {
    if (mpi.is_root())
      std::cerr << "syncplan: error: the all-reduce returned wrong averages at " << measured.wrong_sizes
                << " sizes (column #wrong); " << options.output_path << " not written\n";
    return 1;
  }
  if (!mpi.is_root()) return 0;
  std::printf("# alpha-beta fit: %s\n", describe_fit(*measured.fit, request.fit_errors).c_str());
  if (measured.poor_fit) warn(*measured.poor_fit);
  if (mpi.size() == 1)
    std::printf("# note: 1 rank: the all-reduce is a local copy (busbw 0), not a link; run under mpirun -np N\n");
  write_json_file_atomic(options.output_path, link_to_json(*measured.link), "-o,--output");
  std::printf("# link written to %s\n", options.output_path.c_str());
  return 0;
}

int run_profile_link(const ProfileLinkOptions& options) {
  const MpiSession mpi;
  return run_on_every_rank(mpi, [&] { return profile_link(mpi, options); });
}

}  // namespace

void add_profile_link_command(CLI::App& app, Action& action) {
  auto options = std::make_shared<ProfileLinkOptions>();
  CLI::App* command = app.add_subcommand(
      "profile-link",
      "Measure all-reduce time over message sizes (run under `mpirun -np N`; one rank per process, one GPU per "
      "rank with NCCL), print an nccl-tests-style table (size B, count, time us, algbw and busbw GB/s, "
      "busbw = algbw x 2(n-1)/n), fit time = alpha + beta x size and write a syncplan.link/v1 file (docs/link.md)");
  command->add_option("--backend", options->backend,
                      "mpi: MPI_Iallreduce on CPU buffers; nccl: ncclAllReduce (ncclAvg) on one GPU per rank, from "
                      "the GPU backend library (docs/comm.md); auto: nccl when every rank loads that library and "
                      "sees a GPU of its own, else mpi (default: auto)")
      ->check(CLI::IsMember({"auto", "mpi", "nccl"}));
  command->add_option("-b,--min-bytes", options->min_bytes,
                      "first size in bytes; K, M, G suffixes are x1024 (default: 8)");
  command->add_option("-e,--max-bytes", options->max_bytes,
                      "last size in bytes at most, K/M/G suffixes (default: 128M with nccl, 16M with mpi)");
  command->add_option("-f,--step-factor", options->step_factor, "multiply the size by this each step (default: 2)");
  command->add_option("-w,--warmup", options->warmup_iters, "untimed all-reduces per size, 0..1000 (default: 5)");
  command->add_option("-n,--iters", options->iters, "timed all-reduces per size, 1..10000 (default: 20)");
  command->add_option("--fit", options->fit,
                      "least squares on relative or absolute time errors (docs/link.md; default: relative)")
      ->check(CLI::IsMember({"relative", "absolute"}));
  command->add_option("-o,--output", options->output_path, "link fit to write (syncplan.link/v1 JSON; rank 0 writes)")
      ->required();
  command->callback([&action, options] { action = [options] { return run_profile_link(*options); }; });
}

}  // namespace syncplan::cli
