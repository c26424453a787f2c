// The planning-algorithm table and the uniform way to time any strategy by name.
#include "planner/algorithm_table.hpp"

#include "core/errors.hpp"
#include "simulator/bucket_fusion.hpp"

#include <algorithm>
#include <array>

namespace syncplan {

namespace {

// Adds the pinned layers to every iteration of a plan made without them.
PlanCandidate with_pins(PlanCandidate candidate, const std::vector<bool>& every_iteration) {
  for (auto& layers : candidate.assignment.iterations) {
    for (int j = 0; j < static_cast<int>(every_iteration.size()); ++j)
      if (every_iteration[j] && !std::binary_search(layers.begin(), layers.end(), j))
        layers.insert(std::upper_bound(layers.begin(), layers.end(), j), j);
  }
  return candidate;
}

PlanCandidate plan_plsgd_even(const BackpropTimes& times, int period, const SearchOptions& search) {
  return with_pins({"plsgd-even", plsgd_even_assignment(times.size(), period)}, search.every_iteration);
}

PlanCandidate plan_wfbp(const BackpropTimes& times, int period, const SearchOptions&) {
  return {"wfbp", *run_wfbp(times, period).assignment};
}

constexpr std::array<PlanAlgorithm, 6> kAlgorithms = {{
    {"plsgd-even", "contiguous groups of ceil(L/H) layers in backprop order", plan_plsgd_even},
    {"wfbp", "every layer in every iteration (S-SGD with overlap)", plan_wfbp},
    {"dreamddp", "DreamDDP's depth-first search over contiguous groups",
     [](const BackpropTimes& times, int period, const SearchOptions& search) {
       return with_pins(plan_dreamddp(times, period), search.every_iteration);
     }},
    {"dp", "exact optimum over contiguous groups (dynamic programming)",
     [](const BackpropTimes& times, int period, const SearchOptions& search) {
       return plan_dp(times, period, search.every_iteration);
     }},
    {"search", "free assignment: local search from the dp plan, never worse than dp", plan_search},
    {"best", "the best plan of dp, dreamddp, plsgd-even and search", plan_best},
}};

std::string algorithm_names_text() {
  std::string names;
  for (const PlanAlgorithm& algorithm : kAlgorithms)
    names += (names.empty() ? "" : ", ") + std::string(algorithm.name);
  return names;
}

}  // namespace

std::span<const PlanAlgorithm> plan_algorithms() { return kAlgorithms; }

const PlanAlgorithm& find_plan_algorithm(const std::string& name) {
  for (const PlanAlgorithm& algorithm : kAlgorithms)
    if (name == algorithm.name) return algorithm;
  throw InputError("--algorithm: unknown '" + name + "' (choose from " + algorithm_names_text() + ")");
}

PlanCandidate plan_best(const BackpropTimes& times, int period, const SearchOptions& search) {
  PlanCandidate best;
  double best_period = 0;
  // search starts from dp and keeps only strict improvements: it wins only when it found better.
  for (const char* name : {"dp", "dreamddp", "plsgd-even", "search"}) {
    PlanCandidate candidate = find_plan_algorithm(name).plan(times, period, search);
    const double candidate_period = time_planned(times, candidate.assignment, search.bucket_alpha_s).period_s;
    if (best.algorithm.empty() || candidate_period < best_period) {
      best = std::move(candidate);
      best_period = candidate_period;
    }
  }
  return best;
}

std::vector<std::string> compared_strategy_names() {
  return {"ssgd", "wfbp", "flsgd", "plsgd-even", "dreamddp", "dp", "search"};
}

std::string strategy_names_text() {
  std::string names;
  for (const Strategy& strategy : simulator_strategies())
    names += (names.empty() ? "" : ", ") + std::string(strategy.name);
  for (const PlanAlgorithm& algorithm : kAlgorithms)
    if (!find_simulator_strategy(algorithm.name)) names += ", " + std::string(algorithm.name);
  return names;
}

bool is_strategy_name(const std::string& name) {
  if (find_simulator_strategy(name)) return true;
  for (const PlanAlgorithm& algorithm : kAlgorithms)
    if (name == algorithm.name) return true;
  return false;
}

StrategyResult run_strategy(const std::string& name, const BackpropTimes& times, int period,
                            const SearchOptions& search) {
  // Planning algorithms first: plsgd-even and wfbp are also simulator strategies, but only the
  // planner's versions honor --every-iteration (the assignments are otherwise the same).
  for (const PlanAlgorithm& algorithm : kAlgorithms) {
    if (name != algorithm.name) continue;
    Assignment assignment = algorithm.plan(times, period, search).assignment;
    return {time_assignment(times, assignment), std::move(assignment)};
  }
  if (const Strategy* strategy = find_simulator_strategy(name)) return strategy->run(times, period);
  if (name == "ddp" || name == "mgwfbp")
    throw InputError("--strategy " + name + ": runs only in the discrete-event simulator (add --cluster CLUSTER.json)");
  throw InputError("--strategy: unknown '" + name + "' (choose from " + strategy_names_text() + ")");
}

}  // namespace syncplan
