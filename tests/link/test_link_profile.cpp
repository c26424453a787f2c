// The link-profiling job on one rank (Open MPI's singleton start): the backend choice, its errors
// naming the request field, and a small sweep through the MPI communicator with its fit.
#include "core/field_error.hpp"
#include "profiler/link_profile.hpp"

#include <catch2/catch.hpp>

namespace syncplan {

TEST_CASE("link profile job: backend choice, field errors, a small MPI sweep", "[link_profile]") {
  const MpiSession mpi;  // one per process: MPI cannot start again after MPI_Finalize

  LinkProfileRequest request;
  request.backend = "mpi";
  const LinkBackendChoice mpi_choice = choose_link_backend(mpi, request);
  CHECK(mpi_choice.name == "mpi");
  CHECK(mpi_choice.source == "measured:mpi");
  CHECK(mpi_choice.why.empty());
  CHECK(mpi_choice.sweep.max_bytes == kMpiDefaultMaxBytes);  // no max_bytes given: the backend's 16 MiB
  CHECK_FALSE(mpi_choice.gpu.has_value());

  // auto on a machine without a GPU (or without the GPU library) falls back to MPI and says why.
  request.backend = "auto";
  const LinkBackendChoice automatic = choose_link_backend(mpi, request);
  if (!automatic.gpu) {
    CHECK(automatic.name == "mpi");
    CHECK(automatic.why.rfind("auto: ", 0) == 0);
  }

  const auto field_of = [&](const LinkProfileRequest& bad) -> std::string {
    try {
      choose_link_backend(mpi, bad);
    } catch (const FieldError& e) {
      return e.field();
    }
    return "(accepted)";
  };
  LinkProfileRequest bad = request;
  bad.backend = "infiniband";
  CHECK(field_of(bad) == "backend");
  bad = request;
  bad.backend = "mpi";
  bad.min_bytes = 2;  // under one float
  CHECK(field_of(bad) == "min_bytes");
  bad.min_bytes = 64;
  bad.max_bytes = 32;
  CHECK(field_of(bad) == "max_bytes");

  // Sizes 1 KiB x 4^k up to 16 MiB: 1K, 4K, 16K, 64K, 256K, 1M, 4M, 16M, eight points, every
  // average right (one rank averages with itself), and a link file of one worker with one sample
  // per size. The range spans four orders of magnitude, so the copy's time grows with the size
  // and the fit's beta is positive despite timer noise at the small sizes.
  request.backend = "mpi";
  request.min_bytes = 1024;
  request.max_bytes = 16 << 20;
  request.step_factor = 4;
  request.warmup_iters = 1;
  request.iters = 3;
  const LinkBackendChoice small = choose_link_backend(mpi, request);
  int reported = 0;
  const LinkProfile measured = run_link_profile(mpi, small, FitErrors::kRelative, [&](const SweepPoint&) { ++reported; });
  REQUIRE(measured.points.size() == 8);
  CHECK(reported == 8);
  CHECK(measured.points.front().size_bytes == 1024);
  CHECK(measured.points.back().size_bytes == 16 << 20);
  CHECK(measured.wrong_sizes == 0);
  REQUIRE(measured.link.has_value());
  CHECK(measured.link->workers == 1);
  CHECK(measured.link->samples.size() == 8);
  CHECK(measured.link->source == "measured:mpi");
}

}  // namespace syncplan
