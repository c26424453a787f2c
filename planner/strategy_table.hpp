// The one table of strategies (STYLE pattern 1): every strategy `plan`, `simulate`, `whatif`, the
// DES and `run` know, each defined in one file (simulator/strategies/, planner/algorithms/) and
// listed once in planner/strategy_table.cpp with what it supports and how each job runs it.
// docs/strategies.md says how to add one.
#pragma once

#include "planner/algorithms/algorithms.hpp"
#include "simulator/strategies/strategies.hpp"

#include <span>
#include <string>

namespace syncplan {

/// How `syncplan run` executes a strategy named without a plan (docs/runtime.md section 1).
enum class RuntimeExecution {
  kNone,        ///< not at all: it runs only in the simulator (ddp, mgwfbp)
  kPlanFirst,   ///< planned on a profile: `plan --algorithm NAME` writes the plan `run --plan` executes
  kGradients,   ///< its DES program, averaging gradients before the step (S-SGD: ssgd, wfbp)
  kParameters,  ///< its DES program, averaging parameters (local SGD: flsgd, plsgd-even)
};

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
  /// How `syncplan run --strategy NAME` executes it (its DES program, built on the model's layers).
  RuntimeExecution runtime = RuntimeExecution::kNone;
  /// A composite strategy (best): the plannable strategies whose plans it chooses among; the plan
  /// job plans each once and shares them with its comparison table. Empty for the others.
  std::span<const char* const> members = {};
  /// A search that starts from another strategy's plan (search: from dp's): the plan job hands it
  /// that plan, planned once (SearchOptions::dp_plan). nullptr for the others.
  const char* starts_from = nullptr;
  /// A time-limited search: `plan`'s comparison table shows it only when the chosen algorithm ran
  /// one, so that the job's time limit is spent once (docs/time-model.md section 7).
  bool time_limited = false;
  /// `plan` proves its choice optimal or bounds its gap with the exact method when this is the
  /// algorithm (docs/time-model.md section 14; --exact-nodes and --prove-s apply).
  bool proven = false;

  bool plannable() const { return plan != nullptr; }
  bool period_model() const { return plan != nullptr || time != nullptr; }
  bool des() const { return plan != nullptr || program != nullptr; }
  bool needs_cluster() const { return !period_model(); }
  bool runs_in_runtime() const {
    return runtime == RuntimeExecution::kGradients || runtime == RuntimeExecution::kParameters;
  }

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
  kRun,          ///< run --strategy (without a plan): runs_in_runtime()
};

/// The strategy called `name` that supports `use`. Throws FieldError naming the field ("strategy",
/// or "algorithm" for kPlan): "strategy: unknown 'NAME' (choose from ssgd, ...)", and for a
/// DES-only strategy under kPeriodModel "strategy NAME: runs only in the discrete-event simulator
/// (needs a cluster)"; under kRun "strategy: 'NAME' is planned on a profile: write its plan with
/// `syncplan plan --algorithm NAME` and run that plan (the runtime runs ssgd, ..., or a plan)" for
/// a kPlanFirst row, and "strategy: 'NAME' runs only in the simulator (...)" for a kNone row.
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

/// Adds `row` to the end of the table while it lives, for tests that check that one row is all a
/// strategy needs to run in plan, simulate, whatif and run. One at a time, never while another
/// thread reads the table; throws InternalError when a row of that name exists already.
class ScopedStrategyRow {
 public:
  explicit ScopedStrategyRow(const Strategy& row);
  ~ScopedStrategyRow();
  ScopedStrategyRow(const ScopedStrategyRow&) = delete;
  ScopedStrategyRow& operator=(const ScopedStrategyRow&) = delete;
};

}  // namespace syncplan
