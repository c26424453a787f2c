// The report job (report/plan_page.hpp): period model, Gantt chart and page of one plan.
#include "report/plan_page.hpp"

#include "core/errors.hpp"
#include "core/field_error.hpp"
#include "core/json_io.hpp"
#include "planner/lower_bound.hpp"

#include <cmath>
#include <cstdio>

namespace syncplan::report {

namespace {

std::string page_seconds(double seconds) { return format_short(seconds, 6); }

// A relative difference with 3 significant digits: "0", "2.5e-13", "0.0123".
std::string relative_text(double fraction) {
  char text[32];
  std::snprintf(text, sizeof text, "%.3g", fraction);
  return text;
}

HtmlTable summary_table(const PlanPageRequest& request, const PeriodModelOutcome& model) {
  const Plan& plan = *request.simulate.plan;
  const PeriodTiming& timing = model.timing;
  const int h_count = static_cast<int>(timing.iteration_s.size());
  const SyncTimes& sync = request.simulate.sync;
  HtmlTable table{"Summary (times in s)", {"quantity", "value"}, {}};
  table.rows = {
      {"model", plan.model.value_or("(unnamed)")},
      {"profile", request.simulate.origin},
      {"plan", request.simulate.plan_origin + " (" + plan.algorithm + ")"},
      {"all-reduce times", sync.text.empty() ? "the profile's sync_s" : sync.text},
      {"period H (iterations)", std::to_string(h_count)},
      {"period_s", page_seconds(timing.period_s)},
      {"lower bound period_s", page_seconds(model.lower_bound_s)},
      {"gap to lower bound", format_percent(gap_to_lower_bound(timing.period_s, model.lower_bound_s))},
      {"mean iteration_s", page_seconds(timing.period_s / h_count)},
      {"total wait_s", page_seconds(timing.total_wait_s())},
  };
  if (model.buckets)
    table.rows.push_back({"fused all-reduces per period", std::to_string(allreduce_count(*model.buckets))});
  if (model.prediction_difference)
    table.rows.push_back({"largest relative difference from the plan's predicted figures",
                          relative_text(*model.prediction_difference)});
  return table;
}

// All-reduces iteration h issues: a fused bucket is one; a tied layer or one whose sync_s is 0
// issues none (has_allreduce), as `simulate` counts them.
std::size_t allreduces_in(const PeriodModelOutcome& model, std::size_t h) {
  std::size_t count = 0;
  for (const SyncEvent& sync : model.timing.syncs[h]) count += has_allreduce(model.times, sync.layer) ? 1 : 0;
  return count;
}

HtmlTable iteration_table(const PeriodModelOutcome& model) {
  HtmlTable table{"Per iteration (s)", {"iteration", "iteration_s", "wait_s", "layers_synced", "allreduces"}, {}};
  for (std::size_t h = 0; h < model.timing.iteration_s.size(); ++h)
    table.rows.push_back({std::to_string(h), page_seconds(model.timing.iteration_s[h]),
                          page_seconds(model.timing.wait_s[h]),
                          std::to_string(model.assignment ? model.assignment->iterations[h].size()
                                                          : model.timing.syncs[h].size()),
                          std::to_string(allreduces_in(model, h))});
  return table;
}

HtmlTable comparison_table(const std::vector<ReportStrategyRow>& rows) {
  HtmlTable table{"Strategies compared by the plan's report (period model, s)",
                  {"strategy", "period_s", "mean_iteration_s", "total_wait_s", "vs_ssgd", "vs_flsgd"}, {}};
  for (const ReportStrategyRow& row : rows)
    table.rows.push_back({row.name, page_seconds(row.period_s), page_seconds(row.mean_iteration_s),
                          page_seconds(row.wait_s), format_ratio(row.speedup_over_ssgd),
                          format_ratio(row.speedup_over_flsgd)});
  return table;
}

double optional_speedup(ObjectReader& reader, const std::string& key) {
  const Json* value = reader.optional(key);
  return value ? read_nonnegative_number(*value, reader.where() + ": field '" + key + "'") : std::nan("");
}

}  // namespace

PlanPage make_plan_page(const PlanPageRequest& request) {
  if (!request.simulate.plan) throw FieldError("plan", "plan: the report job needs a plan");
  PlanPage page;
  page.model = simulate_period_model(request.simulate);
  const Plan& plan = *request.simulate.plan;
  const std::string title = "Plan " + plan.algorithm + " of " + plan.model.value_or("(unnamed model)") + ", H = " +
                            std::to_string(page.model.document.period) + ": period " +
                            page_seconds(page.model.timing.period_s) + " s";
  page.chart = gantt_chart(page.model.times, page.model.timing, page.model.lower_bound_s, title);
  page.gantt = gantt_svg(page.chart);

  page.page.title = "syncplan report: " + request.simulate.plan_origin;
  HtmlSection summary{"Summary", {}, {summary_table(request, page.model), iteration_table(page.model)}, {}};
  summary.paragraphs.push_back("Times from the period model (SPEC section 5) of " + request.simulate.origin +
                               "; the lower bound holds for every plan of this period (docs/time-model.md).");
  page.page.sections.push_back(std::move(summary));
  if (!request.strategies.empty())
    page.page.sections.push_back({"Strategy comparison",
                                  {"From the report " + request.report_origin + "."},
                                  {comparison_table(request.strategies)},
                                  {}});
  page.page.sections.push_back(
      {"Gantt chart of the period",
       {"One row per iteration: compute above, the link's all-reduces below; red is wait (exposed sync)."},
       {},
       {{"The period of " + request.simulate.plan_origin + ", the lower bound dashed.", page.gantt}}});
  return page;
}

std::vector<ReportStrategyRow> read_report_strategies(const std::string& path, const Plan& plan) {
  const Json document = read_json_file(path);
  ObjectReader reader(document, path);
  reader.require_format(kReportFormat);
  const std::int64_t period = reader.required_integer("period", 1);
  if (period != plan.period)
    throw InputError(path + ": field 'period': the report is of H = " + std::to_string(period) +
                     ", the plan of H = " + std::to_string(plan.period) + " (a report of another plan?)");
  const std::optional<std::string> model = reader.optional_string("model");
  if (model != plan.model)
    throw InputError(path + ": field 'model': the report is of '" + model.value_or("null") + "', the plan of '" +
                     plan.model.value_or("null") + "' (a report of another plan?)");
  const Json& strategies = reader.required("strategies");
  if (!strategies.is_object())
    throw InputError(path + ": field 'strategies': expected a JSON object, got " + json_type_name(strategies));
  std::vector<ReportStrategyRow> rows;
  for (const auto& item : strategies.items()) {
    ObjectReader row_reader(item.value(), path + ": strategy '" + item.key() + "'");
    ReportStrategyRow row;
    row.name = item.key();
    for (auto [key, field] : {std::pair{"period_s", &row.period_s}, std::pair{"mean_iteration_s", &row.mean_iteration_s},
                              std::pair{"wait_s", &row.wait_s}})
      *field = read_nonnegative_number(row_reader.required(key), row_reader.where() + ": field '" + key + "'");
    row.speedup_over_ssgd = optional_speedup(row_reader, "speedup_over_ssgd");
    row.speedup_over_flsgd = optional_speedup(row_reader, "speedup_over_flsgd");
    row_reader.reject_unknown_keys();
    rows.push_back(std::move(row));
  }
  return rows;
}

}  // namespace syncplan::report
