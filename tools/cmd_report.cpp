// `syncplan report`: parse the options, run the report job (report/plan_page.hpp), print the
// summary, write the Gantt chart (--svg) and the page (--html).
#include "core/errors.hpp"
#include "core/json_io.hpp"
#include "core/plan.hpp"
#include "report/plan_page.hpp"
#include "tools/cli_common.hpp"

#include <iostream>
#include <memory>

namespace syncplan::cli {

namespace {

struct ReportCliOptions {
  std::string plan_path, profile_path, report_path, svg_path, html_path;
  SyncTimeOptions sync;  // --cluster, --link, --sync-time: as for `simulate` without the DES
};

int run_report(const ReportCliOptions& options) {
  check_output_paths({{"--svg", options.svg_path}, {"--html", options.html_path}},
                     {{"PLAN", options.plan_path}, {"--profile", options.profile_path},
                      {"--report", options.report_path}, {"--cluster", options.sync.cluster_path},
                      {"--link", options.sync.link_path}});
  report::PlanPageRequest request;
  request.simulate.sync = read_sync_times(options.profile_path, options.sync);
  request.simulate.origin = options.profile_path;
  request.simulate.plan = read_plan_file(options.plan_path, request.simulate.sync.profile);
  request.simulate.plan_origin = options.plan_path;
  if (!options.report_path.empty()) {
    request.strategies = report::read_report_strategies(options.report_path, *request.simulate.plan);
    request.report_origin = options.report_path;
  }
  const report::PlanPage page = report::make_plan_page(request);
  const PeriodModelOutcome& model = page.model;
  warn_about_link(request.simulate.sync, model.buckets ? largest_allreduce_bytes(model.times, *model.buckets)
                                                       : largest_allreduce_bytes(model.times, false));

  std::cout << "profile: " << describe_profile(request.simulate.sync.profile, options.profile_path) << '\n';
  if (request.simulate.sync.cluster || request.simulate.sync.link)
    std::cout << "all-reduce times: " << request.simulate.sync.text << '\n';
  std::cout << "plan " << options.plan_path << " (" << request.simulate.plan->algorithm << "), period H = "
            << model.document.period << ": period_s " << seconds_text(model.timing.period_s)
            << "  lower_bound_period_s " << seconds_text(model.lower_bound_s) << "  total_wait_s "
            << seconds_text(model.timing.total_wait_s()) << '\n'
            << "gantt chart: " << page.chart.compute.size() << " compute blocks, " << page.chart.link.size()
            << " all-reduces\n";
  if (model.prediction_difference && *model.prediction_difference > 1e-9)
    std::cout << "differs from the plan's predicted figures (largest relative difference "
              << *model.prediction_difference << "): was the plan made on other all-reduce times?\n";

  OutputFiles outputs;
  if (!options.svg_path.empty()) outputs.add(options.svg_path, page.gantt, "--svg");
  if (!options.html_path.empty()) outputs.add(options.html_path, report::html_page(page.page), "--html");
  outputs.commit();
  if (!options.svg_path.empty()) std::cout << "gantt chart written to " << options.svg_path << '\n';
  if (!options.html_path.empty()) std::cout << "page written to " << options.html_path << '\n';
  return 0;
}

}  // namespace

void add_report_command(CLI::App& app, Action& action) {
  auto options = std::make_shared<ReportCliOptions>();
  CLI::App* command = app.add_subcommand(
      "report", "Draw a plan's period as a Gantt chart (SVG) and a self-contained HTML page: times in seconds "
                "from the period model (SPEC section 5), the lower bound marked (docs/report.md)");
  command->add_option("plan", options->plan_path, "syncplan.plan/v1 file")->required();
  command->add_option("--profile", options->profile_path, "syncplan.profile/v1 file the plan was made for")->required();
  command->add_option("--cluster", options->sync.cluster_path,
                      "syncplan.cluster/v1 file: its all-reduce times in the period model, as simulate --cluster "
                      "gives them, without the discrete-event simulator");
  command->add_option("--link", options->sync.link_path, kLinkHelp);
  CLI::Option* sync_time = command->add_option("--sync-time", options->sync.sync_time, kSyncTimeHelp)
                               ->check(CLI::IsMember({"auto", "measured", "model"}));
  command->add_option("--report", options->report_path,
                      "syncplan.report/v1 file of the plan (plan --report): its strategy comparison goes on the page");
  command->add_option("--svg", options->svg_path, "write the Gantt chart (SVG; time axis in s)");
  command->add_option("--html", options->html_path,
                      "write one self-contained HTML page: summary, per-iteration and comparison tables, the chart");
  command->callback([&action, options, sync_time] {
    options->sync.sync_time_given = sync_time->count() > 0;
    action = [options] { return run_report(*options); };
  });
}

}  // namespace syncplan::cli
