// `syncplan simulate`: time a plan or a strategy under the period model; optional result and trace.
#include "core/errors.hpp"
#include "core/json_io.hpp"
#include "planner/algorithm_table.hpp"
#include "planner/lower_bound.hpp"
#include "simulator/trace.hpp"
#include "tools/cli_common.hpp"

#include <cmath>
#include <iostream>
#include <memory>

namespace syncplan::cli {

namespace {

struct SimulateOptions {
  std::string profile_path, plan_path, strategy, output_path, trace_path;
  std::string period;  // empty: not given
};

// Relative difference used to say whether a plan's stored prediction is reproduced.
double relative_difference(double a, double b) {
  const double scale = std::max(std::fabs(a), std::fabs(b));
  return scale == 0 ? 0.0 : std::fabs(a - b) / scale;
}

int run_simulate(const SimulateOptions& options) {
  if (options.plan_path.empty() && options.strategy.empty())
    throw InputError("simulate: give --plan PLAN.json, or --strategy NAME with --period H");
  if (!options.strategy.empty() && options.period.empty())
    throw InputError("--period: required with --strategy");
  const int period = options.plan_path.empty() ? checked_period(options.period) : 0;
  if (!options.output_path.empty()) require_writable_output("-o", options.output_path);
  if (!options.trace_path.empty()) require_writable_output("--trace", options.trace_path);

  const Profile profile = read_profile_file(options.profile_path);
  const BackpropTimes times = backprop_times(profile, options.profile_path);

  PeriodTiming timing;
  std::string what;
  std::optional<Plan> plan;
  if (!options.plan_path.empty()) {
    plan = read_plan_file(options.plan_path, profile);
    timing = time_assignment(times, assignment_from_plan(*plan, times));
    what = "plan " + options.plan_path + " (" + plan->algorithm + ")";
  } else {
    timing = run_strategy(options.strategy, times, period).timing;
    what = "strategy " + options.strategy;
  }
  const int h_count = static_cast<int>(timing.iteration_s.size());
  const double lower_bound = spec_lower_bound_s(times, h_count);

  std::cout << "profile: " << describe_profile(profile, options.profile_path) << '\n'
            << what << ", period H = " << h_count << '\n'
            << "period_s " << seconds_text(timing.period_s) << "  mean_iteration_s "
            << seconds_text(timing.period_s / h_count) << "  total_wait_s "
            << seconds_text(timing.total_wait_s()) << "  lower_bound_period_s "
            << seconds_text(lower_bound) << '\n';
  std::vector<std::vector<std::string>> table = {{"iteration", "iteration_s", "wait_s", "syncs"}};
  for (int h = 0; h < h_count; ++h)
    table.push_back({std::to_string(h), seconds_text(timing.iteration_s[h]), seconds_text(timing.wait_s[h]),
                     std::to_string(timing.syncs[h].size())});
  print_table(std::cout, table);

  if (plan && plan->predicted) {
    double worst = relative_difference(plan->predicted->period_s, timing.period_s);
    for (int h = 0; h < h_count; ++h) {
      worst = std::max(worst, relative_difference(plan->predicted->iteration_s[h], timing.iteration_s[h]));
      worst = std::max(worst, relative_difference(plan->predicted->wait_s[h], timing.wait_s[h]));
    }
    if (worst <= 1e-9)
      std::cout << "reproduces the plan's predicted figures (largest relative difference " << worst << ")\n";
    else
      std::cout << "differs from the plan's predicted figures (largest relative difference " << worst
                << "; predicted period_s " << seconds_text(plan->predicted->period_s)
                << "): was the plan made on another profile?\n";
  }

  if (!options.output_path.empty()) {
    Json result;
    result["format"] = "syncplan.result/v1";
    result["model"] = profile.model ? Json(*profile.model) : Json(nullptr);
    result["profile"] = options.profile_path;
    if (plan) result["plan"] = options.plan_path;
    else result["strategy"] = options.strategy;
    result["period"] = h_count;
    result["period_s"] = timing.period_s;
    result["mean_iteration_s"] = timing.period_s / h_count;
    result["wait_s"] = timing.total_wait_s();
    result["iteration_s"] = timing.iteration_s;
    result["iteration_wait_s"] = timing.wait_s;
    result["lower_bound_period_s"] = lower_bound;
    write_json_file_atomic(options.output_path, result);
    std::cout << "result written to " << options.output_path << '\n';
  }
  if (!options.trace_path.empty()) {
    write_json_file_atomic(options.trace_path, period_trace(times, timing));
    std::cout << "trace written to " << options.trace_path << " (open in https://ui.perfetto.dev)\n";
  }
  return 0;
}

}  // namespace

void add_simulate_command(CLI::App& app, Action& action) {
  auto options = std::make_shared<SimulateOptions>();
  CLI::App* simulate = app.add_subcommand(
      "simulate", "Time a plan or a strategy under the period model (seconds; SPEC section 5)");
  simulate->add_option("--profile", options->profile_path, "syncplan.profile/v1 file")->required();
  CLI::Option* plan = simulate->add_option("--plan", options->plan_path, "syncplan.plan/v1 file to time");
  CLI::Option* strategy = simulate->add_option(
      "--strategy", options->strategy,
      "strategy to time: ssgd, wfbp, flsgd, plsgd-even, dreamddp, dp or best (needs --period)");
  CLI::Option* period = simulate->add_option("--period", options->period, "H: iterations per period (>= 1)");
  plan->excludes(strategy);
  plan->excludes(period);
  simulate->add_option("-o,--output", options->output_path,
                       "write a JSON result: period_s, iteration_s, iteration_wait_s (s)");
  simulate->add_option("--trace", options->trace_path,
                       "write a Chrome trace (microseconds; opens in Perfetto): compute and link streams");
  simulate->callback([&action, options] { action = [options] { return run_simulate(*options); }; });
}

}  // namespace syncplan::cli
