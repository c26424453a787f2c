// The check that the DES reproduces the period model for every strategy of the table (docs/des.md
// 2), shared by test_des_equivalence.cpp and test_des_gpt2.cpp.
#pragma once

#include "des_support.hpp"

#include "planner/strategy_table.hpp"

#include <algorithm>
#include <cmath>
#include <string>

namespace syncplan::des_test {

/// |a - b| / max(|a|, |b|), 0 when both are 0.
inline double relative_difference(double a, double b) {
  const double scale = std::max(std::fabs(a), std::fabs(b));
  return scale == 0 ? 0.0 : std::fabs(a - b) / scale;
}

// Runs every strategy through the DES for `periods` periods and compares with the period model.
inline void check_equivalence(const Profile& profile, const Cluster& cluster, int period, int periods) {
  REQUIRE(cluster.identical_workers());
  const BackpropTimes model_times = backprop_times(profile, "profile.json");
  const DesLayers layers = des_layers(profile, "profile.json", SyncTimeSource::kMeasured);
  const Topology topology(cluster);
  const AllreduceModel model(cluster, topology);
  const DesStrategyContext context{layers, model, SyncTimeSource::kMeasured};
  const BackpropTimes des_times = backprop_times_for_des(context);
  // Every strategy of the table that the period model times (SPEC section 5's and the plannable ones).
  for (const Strategy& strategy : strategies()) {
    if (!strategy.period_model()) continue;
    const std::string name = strategy.name;
    INFO("strategy " << name << ", H = " << period << ", " << profile.layers.size() << " layers, " << periods
                     << " period(s)");
    const PeriodTiming expected = run_strategy(name, model_times, period).timing;
    DesOptions options;
    options.iterations = period * periods;
    options.sync_time = SyncTimeSource::kMeasured;
    const DesResult result = run_des(layers, cluster, des_program(name, context, des_times, period), options);
    REQUIRE(result.simulated_workers == 1);
    REQUIRE(result.iteration_s.size() == static_cast<std::size_t>(period * periods));
    // Each simulated period takes period_s (iterations do not overlap: every all-reduce of an
    // iteration ends before its update or before the next iteration starts).
    const double expected_total = expected.period_s * periods;
    INFO("DES total_s " << result.total_s << ", period model " << expected_total);
    REQUIRE(relative_difference(result.total_s, expected_total) <= 1e-9);
    for (int i = 0; i < period * periods; ++i) {
      INFO("iteration " << i << ": DES " << result.iteration_s[i] << ", period model "
                        << expected.iteration_s[i % period]);
      REQUIRE(relative_difference(result.iteration_s[i], expected.iteration_s[i % period]) <= 1e-9);
    }
    // The exposed communication is the period model's wait: period - H (F + B_L + U).
    const double expected_wait = (expected.period_s - period * model_times.compute_s()) * periods;
    REQUIRE(std::fabs(result.exposed_comm_s() - expected_wait) <= 1e-9 * expected_total);
  }
}

}  // namespace syncplan::des_test
