// The one table of strategies (STYLE pattern 1): every strategy `plan`, `simulate` and the DES
// know, each defined in one file (simulator/strategies/, planner/algorithms/) and listed once in
// planner/strategy_table.cpp with what it supports. docs/strategies.md says how to add one.
#pragma once

#include "planner/algorithms/algorithms.hpp"
#include "simulator/strategies/strategies.hpp"

#include <span>
#include <string>

namespace syncplan {

/// One strategy. What it supports follows from the functions it provides:
/// - `plan` (an assignment of layers to iterations, synced as gradients become ready): the
///   strategy is plannable (`plan --algorithm`), timed by the period model through its assignment,
///   and run in the DES as that assignment (program_from_assignment);
/// - `time` (syncs after compute, not an assignment: ssgd, flsgd): timed by the period model;
/// - `program`: its own DES sync program (ssgd, flsgd, ddp, mgwfbp);
/// a strategy with neither `plan` nor `time` runs only in the DES and needs a cluster.
struct Strategy {
  const char* name;     ///< the --strategy / --algorithm value
  const char* summary;  ///< one line for help texts and docs
  bool compared;        ///< a row of the comparison table `plan` prints (SPEC section 5)
  /// Its DES program needs the cluster's cost model (SyncTimeSource::kModel), not measured times.
  bool needs_cost_model;
  /// Plans a period of `period` iterations (pinned layers and search options honored); nullptr
  /// when the strategy is not a plan. Throws FieldError "period: ..." when period < 1.
  PlanCandidate (*plan)(const BackpropTimes& times, int period, const SearchOptions& search);
  /// The period model's timing of a strategy that is not a plan; nullptr otherwise.
  StrategyResult (*time)(const BackpropTimes& times, int period);
  /// The DES program of a strategy that is not a plan; nullptr for plans.
  SyncProgram (*program)(const DesStrategyContext& context, const BackpropTimes& times, int period);

  bool plannable() const { return plan != nullptr; }
  bool period_model() const { return plan != nullptr || time != nullptr; }
  bool des() const { return plan != nullptr || program != nullptr; }
  bool needs_cluster() const { return !period_model(); }

  /// The period model's timing (and assignment, for plans) over `period` iterations. Throws
  /// FieldError "strategy NAME: runs only in the discrete-event simulator ..." for DES-only ones.
  StrategyResult run_period_model(const BackpropTimes& times, int period, const SearchOptions& search = {}) const;
  /// The DES program over `period` iterations, planned on `times` (the DES's own per-layer times,
  /// backprop_times_for_des). Throws FieldError "period: ..." and the strategy's own errors.
  SyncProgram des_program(const DesStrategyContext& context, const BackpropTimes& times, int period,
                          const SearchOptions& search = {}) const;
};

/// Every strategy, in the order of SPEC section 5's table, then the DES-only ones.
std::span<const Strategy> strategies();

/// The strategy called `name`, or nullptr.
const Strategy* find_strategy(const std::string& name);

/// What a strategy is looked up for; decides which names are accepted and listed in errors.
enum class StrategyUse {
  kPeriodModel,  ///< simulate without a cluster: period_model()
  kDes,          ///< simulate with a cluster: des()
  kPlan,         ///< plan --algorithm: plannable()
};

/// The strategy called `name` that supports `use`. Throws FieldError naming the field ("strategy",
/// or "algorithm" for kPlan): "strategy: unknown 'NAME' (choose from ssgd, ...)", and for a
/// DES-only strategy under kPeriodModel "strategy NAME: runs only in the discrete-event simulator
/// (needs a cluster)".
const Strategy& strategy_for(const std::string& name, StrategyUse use);

/// The names `use` accepts, comma-separated, in table order.
std::string strategy_names_text(StrategyUse use);

/// The strategies `plan` compares, in table order (SPEC section 5).
std::vector<std::string> compared_strategy_names();

/// Shorthand: strategy_for(name, kPeriodModel).run_period_model(times, period, search).
StrategyResult run_strategy(const std::string& name, const BackpropTimes& times, int period,
                            const SearchOptions& search = {});

/// Shorthand: the plannable strategy `name` (strategy_for(name, kPlan)).
const Strategy& find_plan_algorithm(const std::string& name);

}  // namespace syncplan
