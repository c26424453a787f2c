// The report job (`syncplan report` without its command line): a plan timed by the period model
// on the profile (or a cluster's all-reduce times), drawn as a Gantt chart and laid out as a page
// with the summary, per-iteration and strategy-comparison tables (docs/report.md).
#pragma once

#include "core/report.hpp"
#include "planner/simulate_job.hpp"
#include "report/gantt.hpp"
#include "report/html.hpp"

#include <string>
#include <vector>

namespace syncplan::report {

/// What to report on. Errors name these fields (FieldError "plan").
struct PlanPageRequest {
  /// The plan (required: FieldError "plan: ..." when unset), its profile and where its all-reduce
  /// times come from (simulate.sync: the profile's sync_s, or with a cluster its cost model, as
  /// `simulate --cluster` gives the period model); only the period model is run.
  SimulateRequest simulate;
  std::vector<ReportStrategyRow> strategies;  ///< the plan's report's comparison (read_report_strategies); empty: none
  std::string report_origin;                  ///< the report's path, for the page
};

/// What the job made.
struct PlanPage {
  PeriodModelOutcome model;  ///< simulate_period_model(request.simulate): the times drawn
  GanttChart chart;          ///< gantt_chart of model.times and model.timing with model.lower_bound_s
  std::string gantt;         ///< gantt_svg(chart)
  HtmlPage page;             ///< the summary, per-iteration and comparison tables and the chart
};

/// Runs the period model on the plan and builds the chart and the page. Throws FieldError "plan"
/// without a plan, and what simulate_period_model throws (InputError naming the plan or profile).
PlanPage make_plan_page(const PlanPageRequest& request);

/// The strategy comparison of a plan report (syncplan.report/v1, docs/formats.md "Report") made
/// with `plan`: its `strategies`, in the file's order. Only format, model, period and strategies
/// are read (the rest of the report is not needed here and not checked); each row is read strictly
/// (unknown keys rejected). Throws InputError "PATH: ..." for an unreadable file or a bad row, and
/// "PATH: field 'period': ..." / "field 'model': ..." when the report is not of the plan's period
/// or model.
std::vector<ReportStrategyRow> read_report_strategies(const std::string& path, const Plan& plan);

}  // namespace syncplan::report
