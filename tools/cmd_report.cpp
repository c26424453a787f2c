// `syncplan report`: parse the options, run the report job (report/plan_page.hpp), print the
// summary, write the Gantt chart (--svg) and the page (--html).
#include "core/errors.hpp"
#include "core/json_io.hpp"
#include "core/plan.hpp"
#include "report/loss_plot.hpp"
#include "report/plan_page.hpp"
#include "runtime/compare.hpp"
#include "tools/cli_common.hpp"

#include <cmath>
#include <iostream>
#include <memory>

namespace syncplan::cli {

namespace {

struct ReportCliOptions {
  std::string plan_path, profile_path, report_path, svg_path, html_path;
  SyncTimeOptions sync;  // --cluster, --link, --sync-time: as for `simulate` without the DES
  std::vector<std::string> losses;  // --loss NAME=LOG.jsonl, in order
};

// `syncplan report --loss NAME=LOG ... --svg LOSS.svg`: each run log's mean loss over the ranks
// against the wall-clock time at the end of each iteration (the latest rank's, as compare times
// iterations: runtime/compare.hpp), one line per log.
int run_loss_report(const ReportCliOptions& options) {
  if (options.svg_path.empty()) throw InputError("--loss: needs --svg LOSS.svg (the plot to write)");
  for (const auto& [flag, given] : {std::pair{"PLAN", !options.plan_path.empty()},
                                    {"--profile", !options.profile_path.empty()}, {"--report", !options.report_path.empty()},
                                    {"--html", !options.html_path.empty()}, {"--cluster", !options.sync.cluster_path.empty()},
                                    {"--link", !options.sync.link_path.empty()}})
    if (given) throw InputError(std::string("--loss: draws run logs only, without a plan; ") + flag + " is not for it");
  // Every value and path checked before any log is read (SPEC section 2: refuse up front).
  std::vector<std::pair<std::string, std::string>> runs;  // name, log path
  std::vector<NamedPath> inputs;
  for (const std::string& value : options.losses) {
    const std::size_t equals = value.find('=');
    if (equals == std::string::npos || equals == 0 || equals + 1 == value.size())
      throw InputError("--loss: '" + value + "': expected NAME=LOG.jsonl (a legend name and a run log)");
    // The legend name is printed and drawn: no control character (as profile texts; the helper's
    // re-check: an ESC sequence reached stdout raw).
    require_printable(value.substr(0, equals), "--loss", "NAME");
    runs.emplace_back(value.substr(0, equals), value.substr(equals + 1));
    inputs.push_back({"--loss " + runs.back().first, runs.back().second});
  }
  check_output_paths({{"--svg", options.svg_path}}, inputs);
  std::vector<report::LossCurve> curves;
  for (const auto& [name, path] : runs) {
    const Timeline timeline = read_timeline(path);
    if (!timeline.loss)
      throw InputError("--loss " + name + ": " + path + " is not a run log (a training log of `syncplan run --log` "
                                                         "or syncplan.torch_train --log)");
    report::LossCurve curve{name, {}, {}};
    double end_s = 0;
    for (std::size_t i = 0; i < timeline.iteration_s.size(); ++i) {
      end_s += timeline.iteration_s[i];
      curve.time_s.push_back(end_s);
      curve.loss.push_back((*timeline.loss)[i].value_or(std::nan("")));
    }
    curves.push_back(std::move(curve));
  }
  const std::string svg = with_flags({{"loss", "--loss"}}, [&] {
    return report::line_plot_svg(report::loss_plot(curves, "loss against wall-clock time"));
  });
  OutputFiles outputs;
  outputs.add(options.svg_path, svg, "--svg");
  outputs.commit();
  for (const report::LossCurve& curve : curves)
    std::cout << curve.name << ": " << curve.loss.size() << " iterations in " << seconds_text(curve.time_s.back())
              << " s, loss " << format_short(curve.loss.front(), 4) << " -> " << format_short(curve.loss.back(), 4) << '\n';
  std::cout << "loss curves written to " << options.svg_path << '\n';
  return 0;
}

int run_report(const ReportCliOptions& options) {
  if (!options.losses.empty()) return run_loss_report(options);
  if (options.plan_path.empty()) throw InputError("PLAN is required (a syncplan.plan/v1 file), or --loss NAME=LOG.jsonl");
  if (options.profile_path.empty()) throw InputError("--profile is required with a plan");
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
            << "  lower_bound_period_s " << seconds_text(model.lower_bound_s)
            << (model.lower_bound_from_plan.empty() ? "" : " (the plan's " + model.lower_bound_from_plan + " bound)")
            << "  total_wait_s "
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
                "from the period model (SPEC section 5), the lower bound marked; or, with --loss, training runs' "
                "loss curves (docs/report.md)");
  command->add_option("plan", options->plan_path, "syncplan.plan/v1 file (required unless --loss)");
  command->add_option("--profile", options->profile_path, "syncplan.profile/v1 file the plan was made for (required with PLAN)");
  command->add_option("--loss", options->losses,
                      "NAME=LOG.jsonl, repeatable: draw each run log's loss (mean over ranks) against wall-clock "
                      "time into --svg, one line per log, instead of a plan");
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
