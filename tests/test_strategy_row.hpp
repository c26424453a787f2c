// A strategy defined for tests only, in one table row (planner/strategy_table.hpp): the tests that
// add it (ScopedStrategyRow) check that the row alone makes it run in plan, simulate, whatif
// (tests/des/test_strategy_table.cpp) and run (tests/runtime/test_runtime_mpi.cpp, mode "row").
#pragma once

#include "planner/strategy_table.hpp"

#include <utility>

namespace syncplan::test {

/// "test-stride": in iteration h of the period, every layer j (backprop order, 0 = output-most)
/// with j mod H = h; with H <= L every layer syncs once per period. Averages parameters in `run`.
inline PlanCandidate plan_stride(const BackpropTimes& times, int period, const SearchOptions& search) {
  require_valid_period(period);
  Assignment assignment;
  assignment.iterations.assign(static_cast<std::size_t>(period), {});
  for (int j = 0; j < static_cast<int>(times.size()); ++j) assignment.iterations[j % period].push_back(j);
  return with_pins({"test-stride", std::move(assignment)}, search.every_iteration);
}

/// The row: compared in plan's table, a plan (timed and simulated as its assignment), run by the
/// runtime as its DES program averaging parameters.
inline constexpr Strategy kStrideRow{"test-stride", "tests only: layer j (backprop order) syncs in iteration j mod H",
                                     true, false, plan_stride, nullptr, nullptr, RuntimeExecution::kParameters};

}  // namespace syncplan::test
