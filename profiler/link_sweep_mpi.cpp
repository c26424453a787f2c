// The CPU backend of profile-link: MPI_Allreduce on float buffers, timed with MPI_Wtime.
#include "profiler/link_sweep.hpp"

#include "comm/mpi_check.hpp"

#include <vector>

namespace syncplan {

std::vector<SweepPoint> sweep_allreduce_mpi(const MpiSession& mpi, const LinkSweepOptions& options,
                                            const SweepProgress& progress) {
  const std::size_t max_count = static_cast<std::size_t>(sweep_sizes(options).back()) / sizeof(float);
  const std::vector<float> send(max_count, static_cast<float>(mpi.rank() + 1));
  std::vector<float> receive(max_count);
  const float expected = expected_allreduce_sum(mpi.size());

  return run_sweep(mpi, options, progress, [&](std::int64_t count) {
    const int elements = static_cast<int>(count);  // check_sweep_options keeps it within int
    const auto all_reduce = [&] {
      SYNCPLAN_MPI_CHECK(MPI_Allreduce(send.data(), receive.data(), elements, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD));
    };
    for (int i = 0; i < options.warmup_iters; ++i) all_reduce();
    mpi.barrier();
    const double start_s = MPI_Wtime();
    for (int i = 0; i < options.iters; ++i) all_reduce();
    const double mean_s = (MPI_Wtime() - start_s) / options.iters;
    return RankMeasurement{mean_s, count_wrong(receive, count, expected)};
  });
}

}  // namespace syncplan
