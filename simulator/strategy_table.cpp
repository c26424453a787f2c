// The table of simulator strategies, and the shared timing of strategies that do not overlap.
#include "simulator/strategy_table.hpp"

#include "core/errors.hpp"

#include <array>

namespace syncplan {

namespace {
constexpr std::array<Strategy, 4> kStrategies = {{
    {"ssgd", "S-SGD: every layer every iteration, all-reduce after backprop (no overlap)", run_ssgd},
    {"wfbp", "S-SGD with wait-free backprop: every layer every iteration, overlapped", run_wfbp},
    {"flsgd", "full local SGD: whole model averaged once per period, after the step", run_flsgd},
    {"plsgd-even", "partial sync: backprop order cut into H even contiguous groups", run_plsgd_even},
}};
}  // namespace

std::span<const Strategy> simulator_strategies() { return kStrategies; }

const Strategy* find_simulator_strategy(const std::string& name) {
  for (const Strategy& strategy : kStrategies)
    if (name == strategy.name) return &strategy;
  return nullptr;
}

void require_valid_period(long long period) {
  if (period < 1) throw InputError("--period: must be >= 1, got " + std::to_string(period));
}

PeriodTiming time_unoverlapped(const BackpropTimes& times, const std::vector<bool>& after_compute,
                               bool after_update) {
  PeriodTiming timing;
  const double sync_start = times.forward_total_s + times.backprop_s() +
                            (after_update ? times.update_total_s : 0.0);
  for (const bool syncs : after_compute) {
    std::vector<SyncEvent> events;
    double link_free = sync_start;
    if (syncs) {
      for (int j = 0; j < static_cast<int>(times.size()); ++j) {
        events.push_back({j, link_free, link_free + times.sync_s[j], {}});
        link_free += times.sync_s[j];
      }
    }
    const double wait = syncs ? times.sync_total_s() : 0.0;
    timing.wait_s.push_back(wait);
    timing.iteration_s.push_back(times.compute_s() + wait);
    timing.update_start_s.push_back(times.forward_total_s + times.backprop_s() +
                                    (after_update ? 0.0 : wait));
    timing.period_s += timing.iteration_s.back();
    timing.syncs.push_back(std::move(events));
  }
  return timing;
}

}  // namespace syncplan
