// The strategies the simulator times by itself (SPEC section 5's table), one file each under
// strategies/, registered in one table (STYLE pattern 1).
#pragma once

#include "simulator/period_model.hpp"

#include <optional>
#include <span>
#include <string>

namespace syncplan {

/// The timing of one strategy over a period, and its assignment when it can be written as a plan
/// (ssgd and flsgd sync after compute and cannot).
struct StrategyResult {
  PeriodTiming timing;
  std::optional<Assignment> assignment;
};

/// One strategy: its `--strategy` name, a one-line summary, and the function that times it for a
/// period of `period` iterations (period >= 1; throws InputError otherwise).
struct Strategy {
  const char* name;
  const char* summary;
  StrategyResult (*run)(const BackpropTimes& times, int period);
};

/// ssgd, wfbp, flsgd, plsgd-even, in that order.
std::span<const Strategy> simulator_strategies();

/// The strategy called `name`, or nullptr.
const Strategy* find_simulator_strategy(const std::string& name);

/// Throws InputError "--period: must be >= 1, got N" when period < 1.
void require_valid_period(long long period);

// The strategies, one file each (strategies/*.cpp). Formulas: SPEC section 5, docs/time-model.md.
StrategyResult run_ssgd(const BackpropTimes& times, int period);
StrategyResult run_wfbp(const BackpropTimes& times, int period);
StrategyResult run_flsgd(const BackpropTimes& times, int period);
StrategyResult run_plsgd_even(const BackpropTimes& times, int period);

/// plsgd-even's assignment: backprop order cut into H contiguous groups of ceil(L/H) layers,
/// group h synced in iteration h (later iterations are empty when H > L).
Assignment plsgd_even_assignment(std::size_t layer_count, int period);

/// The timing of a strategy whose syncs run after compute with no overlap: in each iteration h
/// with after_compute[h], every layer syncs back to back after backprop (`after_update` false) or
/// after the update (`after_update` true).
PeriodTiming time_unoverlapped(const BackpropTimes& times, const std::vector<bool>& after_compute,
                               bool after_update);

}  // namespace syncplan
