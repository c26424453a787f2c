// `syncplan import dreamddp` and `syncplan import dreamddp-schedule` (SPEC section 2).
#include "core/json_io.hpp"
#include "planner/lower_bound.hpp"
#include "profiler/import_dreamddp.hpp"
#include "tools/cli_common.hpp"

#include <iostream>
#include <memory>

namespace syncplan::cli {

namespace {

struct DreamddpOptions {
  std::string bp_path, comm_path, output_path, model, nonfinite = "error";
  std::vector<std::string> tied;
  long long workers = 0;
};

struct ScheduleOptions {
  std::string schedule_path, profile_path, output_path;
};

int run_import_dreamddp(const DreamddpOptions& options) {
  check_output_paths({{"-o", options.output_path}}, {{"--bp", options.bp_path}, {"--comm", options.comm_path}});
  DreamddpImportOptions import_options;
  if (!options.model.empty()) import_options.model = options.model;
  if (options.workers > 0) import_options.workers = options.workers;
  import_options.nonfinite = options.nonfinite == "zero" ? NonfinitePolicy::kZero : NonfinitePolicy::kError;
  import_options.tied = options.tied;
  const Profile profile = import_dreamddp(options.bp_path, options.comm_path, import_options);
  write_json_file_atomic(options.output_path, profile_to_json(profile));
  std::cout << "imported " << profile.layers.size() << " layers into " << options.output_path << '\n';
  return 0;
}

int run_import_schedule(const ScheduleOptions& options) {
  check_output_paths({{"-o", options.output_path}},
                     {{"schedule", options.schedule_path}, {"--profile", options.profile_path}});
  const Profile profile = read_profile_file(options.profile_path);
  const BackpropTimes times = backprop_times(profile, options.profile_path);
  Plan plan = import_dreamddp_schedule(options.schedule_path, profile);
  const PeriodTiming timing = time_assignment(times, assignment_from_plan(plan, times, options.schedule_path));
  plan.predicted = prediction_from_timing(timing, best_lower_bound_s(times, plan.period));
  write_json_file_atomic(options.output_path, plan_to_json(plan));
  std::cout << "imported a schedule of period H = " << plan.period << " into " << options.output_path
            << "; predicted period " << seconds_text(timing.period_s) << " s\n";
  return 0;
}

}  // namespace

void add_import_commands(CLI::App& app, Action& action) {
  CLI::App* import = app.add_subcommand("import", "Import profiles and schedules from other tools");
  import->require_subcommand(1);

  auto dreamddp = std::make_shared<DreamddpOptions>();
  CLI::App* from_dreamddp = import->add_subcommand(
      "dreamddp", "DreamDDP's per-layer backward-time and all-reduce-time files (flat JSON "
                  "{layer: seconds}, forward order) into a syncplan.profile/v1");
  from_dreamddp->add_option("--bp", dreamddp->bp_path, "backward time per layer (s), JSON object")->required();
  from_dreamddp->add_option("--comm", dreamddp->comm_path, "all-reduce time per layer (s), JSON object")->required();
  from_dreamddp->add_option("--model", dreamddp->model, "model name written into the profile (default: none)");
  from_dreamddp->add_option("--workers", dreamddp->workers,
                            "worker count the all-reduce times were measured at (default: unknown)")
      ->check(CLI::Range(1LL, 1LL << 20));
  from_dreamddp->add_option("--nonfinite", dreamddp->nonfinite,
                            "NaN/Infinity in a time: 'error' names the layer, 'zero' uses 0 s with a "
                            "warning (default: error)")
      ->check(CLI::IsMember({"error", "zero"}));
  from_dreamddp->add_option("--tied", dreamddp->tied,
                            "LAYER=OWNER: LAYER shares OWNER's parameters and is synced once with it "
                            "(GPT-2: lm_head=transformer.wte); repeatable (default: none)");
  from_dreamddp->add_option("-o,--output", dreamddp->output_path, "profile to write (JSON)")->required();
  from_dreamddp->callback([&action, dreamddp] { action = [dreamddp] { return run_import_dreamddp(*dreamddp); }; });

  auto schedule = std::make_shared<ScheduleOptions>();
  CLI::App* from_schedule = import->add_subcommand(
      "dreamddp-schedule", "DreamDDP's schedule file ({\"H\": h, \"schedule\": {layer: iteration or "
                           "[iterations]}}) into a syncplan.plan/v1 with its predicted times (s)");
  from_schedule->add_option("schedule", schedule->schedule_path, "DreamDDP schedule file (JSON)")->required();
  from_schedule->add_option("--profile", schedule->profile_path, "profile the schedule is for")->required();
  from_schedule->add_option("-o,--output", schedule->output_path, "plan to write (JSON)")->required();
  from_schedule->callback([&action, schedule] { action = [schedule] { return run_import_schedule(*schedule); }; });
}

}  // namespace syncplan::cli
