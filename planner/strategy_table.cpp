// The table of every strategy (one row each) and the uniform ways to run one by name. Adding a
// strategy: one file with its functions (simulator/strategies/ or planner/algorithms/) and one row
// here (docs/strategies.md).
#include "planner/strategy_table.hpp"

#include "core/errors.hpp"
#include "core/field_error.hpp"

#include <array>
#include <vector>

namespace syncplan {

PlanCandidate with_pins(PlanCandidate candidate, const std::vector<bool>& every_iteration) {
  for (auto& layers : candidate.assignment.iterations) {
    for (int j = 0; j < static_cast<int>(every_iteration.size()); ++j)
      if (every_iteration[j] && !std::binary_search(layers.begin(), layers.end(), j))
        layers.insert(std::upper_bound(layers.begin(), layers.end(), j), j);
  }
  return candidate;
}

namespace {

// Adapters from each strategy's own function to the table's signature.
PlanCandidate plan_wfbp(const BackpropTimes& times, int period, const SearchOptions&) {
  return {"wfbp", wfbp_assignment(times.size(), period)};  // every layer already: nothing to pin
}
PlanCandidate plan_plsgd_even(const BackpropTimes& times, int period, const SearchOptions& search) {
  return with_pins({"plsgd-even", plsgd_even_assignment(times.size(), period)}, search.every_iteration);
}
PlanCandidate plan_dreamddp_pinned(const BackpropTimes& times, int period, const SearchOptions& search) {
  return with_pins(plan_dreamddp(times, period), search.every_iteration);
}
PlanCandidate plan_dp_pinned(const BackpropTimes& times, int period, const SearchOptions& search) {
  return plan_dp(times, period, search.every_iteration);
}

constexpr auto kGradients = RuntimeExecution::kGradients;
constexpr auto kParameters = RuntimeExecution::kParameters;
constexpr auto kPlanFirst = RuntimeExecution::kPlanFirst;
constexpr auto kNotRun = RuntimeExecution::kNone;

// Every strategy, once. Columns: name, summary, compared (a row of plan's table), needs_cost_model,
// plan (plannable; timed and simulated as its assignment), time (period model of a non-plan),
// program (DES program of a non-plan), runtime (how `run` executes it), members (a composite's),
// starts_from (a search's starting plan), time_limited, proven.
constexpr std::array<Strategy, 10> kStrategies = {{
    {"ssgd", "S-SGD: every layer every iteration, all-reduce after backprop (no overlap)",
     true, false, nullptr, run_ssgd, ssgd_des_program, kGradients},
    {"wfbp", "S-SGD with wait-free backprop: every layer every iteration, overlapped",
     true, false, plan_wfbp, nullptr, nullptr, kGradients},
    {"flsgd", "full local SGD: whole model averaged once per period, after the step",
     true, false, nullptr, run_flsgd, flsgd_des_program, kParameters},
    {"plsgd-even", "partial sync: backprop order cut into H even contiguous groups of ceil(L/H) layers",
     true, false, plan_plsgd_even, nullptr, nullptr, kParameters},
    {"dreamddp", "DreamDDP's depth-first search over contiguous groups",
     true, false, plan_dreamddp_pinned, nullptr, nullptr, kPlanFirst},
    {"dp", "exact optimum over contiguous groups (dynamic programming)",
     true, false, plan_dp_pinned, nullptr, nullptr, kPlanFirst},
    {"search", "free assignment: local search from the dp plan, never worse than dp",
     true, false, plan_search, nullptr, nullptr, kPlanFirst, {}, "dp", true},
    {"best", "the best plan of dp, dreamddp, plsgd-even and search",
     false, false, plan_best, nullptr, nullptr, kPlanFirst, kBestCandidates, nullptr, false, true},
    {"ddp", "PyTorch DDP's gradient buckets (25 MiB, first 1 MiB), every iteration",
     false, false, nullptr, nullptr, ddp_des_program, kNotRun},
    {"mgwfbp", "MG-WFBP: merged gradients where a merge ends no later, every iteration",
     false, true, nullptr, nullptr, mgwfbp_des_program, kNotRun},
}};

// The table: kStrategies, then the rows a test added (ScopedStrategyRow).
std::vector<Strategy>& table() {
  static std::vector<Strategy> rows(kStrategies.begin(), kStrategies.end());
  return rows;
}

bool supports(const Strategy& strategy, StrategyUse use) {
  switch (use) {
    case StrategyUse::kPeriodModel: return strategy.period_model();
    case StrategyUse::kDes: return strategy.des();
    case StrategyUse::kPlan: return strategy.plannable();
    case StrategyUse::kRun: return strategy.runs_in_runtime();
  }
  return false;
}

}  // namespace

StrategyResult Strategy::run_period_model(const BackpropTimes& times, int period, const SearchOptions& search) const {
  if (plan) {
    Assignment assignment = plan(times, period, search).assignment;
    return {time_assignment(times, assignment), std::move(assignment)};
  }
  if (time) return time(times, period);
  throw FieldError("strategy", "strategy " + std::string(name) +
                                   ": runs only in the discrete-event simulator (needs a cluster)");
}

SyncProgram Strategy::des_program(const DesStrategyContext& context, const BackpropTimes& times, int period,
                                  const SearchOptions& search) const {
  require_valid_period(period);
  if (program) return program(context, times, period);
  SYNCPLAN_CHECK(plan != nullptr);
  return program_from_assignment(plan(times, period, search).assignment);
}

std::span<const Strategy> strategies() { return table(); }

const Strategy* find_strategy(const std::string& name) {
  for (const Strategy& strategy : table())
    if (name == strategy.name) return &strategy;
  return nullptr;
}

std::string strategy_names_text(StrategyUse use) {
  std::string names;
  for (const Strategy& strategy : table())
    if (supports(strategy, use)) names += (names.empty() ? "" : ", ") + std::string(strategy.name);
  return names;
}

const Strategy& strategy_for(const std::string& name, StrategyUse use) {
  const std::string field = use == StrategyUse::kPlan ? "algorithm" : "strategy";
  const Strategy* strategy = find_strategy(name);
  if (use == StrategyUse::kRun && !(strategy && strategy->runs_in_runtime())) {
    const std::string runs = " (the runtime runs " + strategy_names_text(use) + ", or a plan)";
    if (strategy && strategy->runtime == RuntimeExecution::kPlanFirst)
      throw FieldError(field, field + ": '" + name + "' is planned on a profile: write its plan with `syncplan plan "
                                                     "--algorithm " + name + "` and run that plan" + runs);
    throw FieldError(field, field + (strategy ? ": '" + name + "' runs only in the simulator" : ": unknown '" + name + "'") + runs);
  }
  if (strategy && use == StrategyUse::kPeriodModel && strategy->des() && !strategy->period_model())
    throw FieldError(field, field + " " + name + ": runs only in the discrete-event simulator (needs a cluster)");
  if (strategy && use == StrategyUse::kPlan && !strategy->plannable())
    throw FieldError(field, field + " " + name + ": not a planning algorithm but a fixed strategy (time it with "
                                                  "simulate --strategy; plannable: " + strategy_names_text(use) + ")");
  if (!strategy || !supports(*strategy, use)) {
    // Under the period model an unknown name lists the DES-only strategies too, saying what they need.
    std::string des_only;
    if (use == StrategyUse::kPeriodModel)
      for (const Strategy& other : table())
        if (other.des() && !other.period_model()) des_only += (des_only.empty() ? "" : ", ") + std::string(other.name);
    throw FieldError(field, field + ": unknown '" + name + "' (choose from " + strategy_names_text(use) +
                                (des_only.empty() ? "" : "; with a cluster also " + des_only) + ")");
  }
  return *strategy;
}

std::vector<std::string> compared_strategy_names() {
  std::vector<std::string> names;
  for (const Strategy& strategy : table())
    if (strategy.compared) names.push_back(strategy.name);
  return names;
}

StrategyResult run_strategy(const std::string& name, const BackpropTimes& times, int period,
                            const SearchOptions& search) {
  return strategy_for(name, StrategyUse::kPeriodModel).run_period_model(times, period, search);
}

const Strategy& find_plan_algorithm(const std::string& name) { return strategy_for(name, StrategyUse::kPlan); }

ScopedStrategyRow::ScopedStrategyRow(const Strategy& row) {
  if (find_strategy(row.name)) throw InternalError(std::string("strategy table: a row '") + row.name + "' exists already");
  table().push_back(row);
}

ScopedStrategyRow::~ScopedStrategyRow() { table().pop_back(); }

}  // namespace syncplan
