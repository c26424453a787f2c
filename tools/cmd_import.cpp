// `syncplan import dreamddp` and `syncplan import dreamddp-schedule` (SPEC section 2).
#include "core/json_io.hpp"
#include "core/limits.hpp"
#include "planner/simulate_job.hpp"
#include "profiler/import_dreamddp.hpp"
#include "profiler/import_torch_trace.hpp"
#include "profiler/import_nccl_tests.hpp"
#include "tools/cli_common.hpp"

#include <iostream>
#include <memory>

namespace syncplan::cli {

namespace {

struct DreamddpOptions {
  std::string bp_path, comm_path, output_path, model, nonfinite = "error", missing_comm = "error";
  std::vector<std::string> tied;
  long long workers = 0;
};

struct ScheduleOptions {
  std::string schedule_path, profile_path, output_path;
};

struct TorchTraceOptions {
  std::string trace_path, output_path, model, missing_backward = "error";
};

int run_import_torch_trace(const TorchTraceOptions& options) {
  check_output_paths({{"-o", options.output_path}}, {{"trace", options.trace_path}});
  // The name goes into the profile and its messages: checked as a profile's `model` is, naming the
  // option (the helper's re-check: the message named the input file's field).
  require_printable(options.model, "--model", "NAME");
  TorchTraceImportOptions import_options;
  if (!options.model.empty()) import_options.model = options.model;
  import_options.missing_backward = options.missing_backward == "null"   ? MissingBackwardPolicy::kNull
                                    : options.missing_backward == "zero" ? MissingBackwardPolicy::kZero
                                                                         : MissingBackwardPolicy::kError;
  const TorchTraceImport imported = import_torch_trace(options.trace_path, import_options);
  write_json_file_atomic(options.output_path, profile_to_json(imported.profile), "-o,--output");
  std::cout << "imported " << imported.profile.layers.size() << " layers (" << convention_name(imported.convention)
            << "; backward from " << backward_name(imported.backward) << "), medians of " << imported.iterations
            << " iteration(s)";
  if (imported.incomplete_iterations > 0)
    std::cout << " (" << imported.incomplete_iterations << " incomplete iteration(s) left out)";
  std::cout << " into " << options.output_path << '\n';
  return 0;
}

int run_import_dreamddp(const DreamddpOptions& options) {
  check_output_paths({{"-o", options.output_path}}, {{"--bp", options.bp_path}, {"--comm", options.comm_path}});
  require_printable(options.model, "--model", "NAME");  // as for import torch-trace
  DreamddpImportOptions import_options;
  if (!options.model.empty()) import_options.model = options.model;
  if (options.workers > 0) import_options.workers = options.workers;
  import_options.nonfinite = options.nonfinite == "zero" ? NonfinitePolicy::kZero : NonfinitePolicy::kError;
  import_options.missing_comm = options.missing_comm == "drop"     ? MissingCommPolicy::kDrop
                               : options.missing_comm == "frozen" ? MissingCommPolicy::kFrozen
                                                                  : MissingCommPolicy::kError;
  import_options.tied = options.tied;
  const DreamddpImport imported = with_flags(
      {{"tied", "--tied"}}, [&] { return import_dreamddp_files(options.bp_path, options.comm_path, import_options); });
  write_json_file_atomic(options.output_path, profile_to_json(imported.profile), "-o,--output");
  for (const std::string& line : imported.zeroed) warn(line);  // held: printed only when the command succeeds
  const auto layers = [](std::size_t n) { return std::to_string(n) + (n == 1 ? " layer" : " layers"); };
  std::cout << "imported " << layers(imported.profile.layers.size()) << " into " << options.output_path;
  if (!imported.without_comm.empty())
    std::cout << "; " << layers(imported.without_comm.size()) << " without an all-reduce time "
              << (import_options.missing_comm == MissingCommPolicy::kDrop ? "dropped (their backward time too)"
                                                                          : "kept as frozen (not synced)");
  std::cout << '\n';
  return 0;
}

int run_import_schedule(const ScheduleOptions& options) {
  check_output_paths({{"-o", options.output_path}},
                     {{"schedule", options.schedule_path}, {"--profile", options.profile_path}});
  SimulateRequest request;
  request.sync = choose_sync_times(read_profile_file(options.profile_path), options.profile_path, {});
  request.origin = options.profile_path;
  request.plan = import_dreamddp_schedule(options.schedule_path, request.sync.profile);
  request.plan_origin = options.schedule_path;
  // The plan's prediction is the period model's timing of it (SPEC section 4).
  const PeriodModelOutcome outcome = simulate_period_model(request);
  Plan plan = *request.plan;
  plan.predicted = prediction_from_timing(outcome.timing, outcome.lower_bound_s);
  write_json_file_atomic(options.output_path, plan_to_json(plan), "-o,--output");
  std::cout << "imported a schedule of period H = " << plan.period << " into " << options.output_path
            << "; predicted period " << seconds_text(outcome.timing.period_s) << " s\n";
  return 0;
}

struct NcclTestsOptions {
  std::string log_path, output_path, fit = "relative";
  int workers = 0;  // 0: from the log
  bool in_place = false;
};

int run_import_nccl_tests(const NcclTestsOptions& options) {
  check_output_paths({{"-o", options.output_path}}, {{"LOG", options.log_path}});
  NcclTestsImportOptions import_options;
  if (options.workers > 0) import_options.workers = options.workers;
  import_options.in_place = options.in_place;
  import_options.fit_errors = options.fit == "absolute" ? FitErrors::kAbsolute : FitErrors::kRelative;
  const NcclTestsImport imported =
      with_flags({{"workers", "--workers"}}, [&] { return import_nccl_tests(options.log_path, import_options); });
  for (const std::string& warning : imported.warnings) warn(warning);
  write_json_file_atomic(options.output_path, link_to_json(imported.link), "-o,--output");
  std::cout << "imported " << imported.link.samples.size() << " sizes of an all-reduce across "
            << imported.link.workers << " ranks (" << imported.format << ", "
            << (options.in_place ? "in-place" : "out-of-place") << " times) into " << options.output_path << '\n'
            << "alpha-beta fit: "
            << describe_fit({imported.link.alpha_s, imported.link.beta_s_per_byte, imported.link.r_squared,
                             imported.through_origin},
                            import_options.fit_errors)
            << '\n';
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
      ->check(CLI::Range(1LL, static_cast<long long>(limits::kMaxWorkers)));
  from_dreamddp->add_option("--nonfinite", dreamddp->nonfinite,
                            "NaN/Infinity in a time: 'error' names the layer, 'zero' uses 0 s with a "
                            "warning (default: error)")
      ->check(CLI::IsMember({"error", "zero"}));
  from_dreamddp->add_option("--missing-comm", dreamddp->missing_comm,
                            "a backward-file layer with no all-reduce time (LoRA: frozen base weights): 'error' "
                            "names it, 'drop' leaves it out with its backward time (DreamDDP's alignment), "
                            "'frozen' keeps its backward time, marked frozen and never synced (default: error)")
      ->check(CLI::IsMember({"error", "drop", "frozen"}));
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

  auto torch_trace = std::make_shared<TorchTraceOptions>();
  CLI::App* from_torch = import->add_subcommand(
      "torch-trace", "A PyTorch profiler Chrome trace (JSON) into a syncplan.profile/v1: forward_s and backward_s "
                     "(s, medians over iterations) per leaf module, from 'syncplan.forward:NAME' / "
                     "'syncplan.backward:NAME' ranges (tools/torch_profile.py --trace) or nn.Module events; "
                     "docs/torch.md");
  from_torch->add_option("trace", torch_trace->trace_path, "Chrome trace: {\"traceEvents\": [...]} or an array")
      ->required();
  from_torch->add_option("--model", torch_trace->model, "model name written into the profile (default: none)");
  from_torch->add_option("--missing-backward", torch_trace->missing_backward,
                         "a layer with forward but no backward events: 'error' names it, 'null' writes backward_s "
                         "null (unknown), 'zero' writes 0 s (default: error)")
      ->check(CLI::IsMember({"error", "null", "zero"}));
  from_torch->add_option("-o,--output", torch_trace->output_path, "profile to write (JSON)")->required();
  from_torch->callback([&action, torch_trace] { action = [torch_trace] { return run_import_torch_trace(*torch_trace); }; });

  auto nccl_tests = std::make_shared<NcclTestsOptions>();
  CLI::App* from_nccl_tests = import->add_subcommand(
      "nccl-tests", "NVIDIA nccl-tests all_reduce_perf output (the printed table, or the -J JSON file) into a "
                    "syncplan.link/v1 alpha-beta fit (docs/link.md)");
  from_nccl_tests->add_option("log", nccl_tests->log_path, "all_reduce_perf's output: text log or -J JSON")->required();
  from_nccl_tests->add_option("--workers", nccl_tests->workers,
                              "ranks of the run, when the log gives no usable count ('#  Rank' lines, -J "
                              "config.nthreads x ngpus x devices; a warning names what it replaces), else it must "
                              "agree (default: from the log)")
      ->check(CLI::Range(1, 1 << 16));
  from_nccl_tests->add_flag("--in-place", nccl_tests->in_place,
                            "fit the in-place times instead of the out-of-place ones (default: out-of-place)");
  from_nccl_tests->add_option("--fit", nccl_tests->fit,
                              "least squares on relative or absolute time errors (docs/link.md; default: relative)")
      ->check(CLI::IsMember({"relative", "absolute"}));
  from_nccl_tests->add_option("-o,--output", nccl_tests->output_path, "link fit to write (syncplan.link/v1 JSON)")
      ->required();
  from_nccl_tests->callback([&action, nccl_tests] {
    action = [nccl_tests] { return run_import_nccl_tests(*nccl_tests); };
  });
}

}  // namespace syncplan::cli
