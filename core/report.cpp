// The syncplan.report/v1 writer (core/report.hpp).
#include "core/report.hpp"

#include "core/errors.hpp"

#include <cmath>

namespace syncplan {

namespace {
Json finite_or_null(double value) { return std::isfinite(value) ? Json(value) : Json(nullptr); }
}  // namespace

std::string format_percent(double fraction) {
  const double percent = std::round(100.0 * fraction * 100.0) / 100.0 + 0.0;  // + 0.0: -0 reads 0
  return format_short(percent, 2) + "%";
}

Json report_to_json(const PlanReport& report) {
  Json strategies = Json::object();
  for (const ReportStrategyRow& row : report.strategies)
    strategies[row.name] = Json{{"period_s", row.period_s},
                                {"mean_iteration_s", row.mean_iteration_s},
                                {"wait_s", row.wait_s},
                                {"speedup_over_ssgd", finite_or_null(row.speedup_over_ssgd)},
                                {"speedup_over_flsgd", finite_or_null(row.speedup_over_flsgd)}};
  Json document;
  document["format"] = kReportFormat;
  document["model"] = report.model ? Json(*report.model) : Json(nullptr);
  document["profile"] = report.profile;
  document["period"] = report.period;
  document["strategies"] = std::move(strategies);
  document["lower_bound_period_s"] = report.lower_bound_period_s;
  document["lower_bounds"] = Json{{"spec_s", report.spec_lower_bound_s},
                                 {"suffix_s", report.suffix_lower_bound_s},
                                 {"link_limit_s", report.link_limit_s}};
  if (report.exact_lower_bound_s) document["lower_bounds"]["exact_s"] = *report.exact_lower_bound_s;
  if (report.relaxed) document["lower_bounds"]["relaxed_s"] = report.relaxed->period_s;
  const ReportChosen& chosen = report.chosen;
  document["chosen"] = Json{{"algorithm", chosen.algorithm},
                            {"requested_algorithm", chosen.requested_algorithm},
                            {"period_s", chosen.period_s},
                            {"gap_to_lower_bound", chosen.gap_to_lower_bound},
                            {"extra_syncs", chosen.extra_syncs},
                            {"bound", chosen.bound},
                            {"proven_optimal", chosen.proven_optimal}};
  if (chosen.buckets)
    document["chosen"]["buckets"] = Json{{"alpha_s", chosen.buckets->alpha_s},
                                         {"allreduces", chosen.buckets->allreduces},
                                         {"unfused_allreduces", chosen.buckets->unfused_allreduces},
                                         {"unfused_period_s", chosen.buckets->unfused_period_s},
                                         {"unfused_lower_bound_period_s", chosen.buckets->unfused_lower_bound_period_s}};
  const ReportSearch& search = report.search;
  document["search"] = Json{{"time_limit_s", search.time_limit_s},   {"runs", search.runs},
                            {"elapsed_s", search.elapsed_s},         {"time_limited_runs", search.time_limited_runs},
                            {"stopped_by", search.stopped_by},       {"rounds", search.rounds}};
  if (report.exact)
    document["exact"] = Json{{"nodes", report.exact->nodes},
                             {"node_limit", report.exact->node_limit},
                             {"proven_optimal", report.exact->proven_optimal},
                             {"improved", report.exact->improved},
                             {"time_limited", report.exact->time_limited},
                             {"budget", report.exact->prove_s ? "prove_s" : "nodes"}};
  if (report.exact && report.exact->prove_s) document["exact"]["prove_s"] = *report.exact->prove_s;
  if (report.relaxed)
    document["relaxed"] = Json{{"fraction", report.relaxed->fraction},
                               {"dropped_layers", report.relaxed->dropped_layers},
                               {"nodes", report.relaxed->nodes},
                               {"period_s", report.relaxed->period_s}};
  if (report.cluster) document["cluster"] = *report.cluster;
  if (report.link) document["link"] = *report.link;
  document["sync_times"] = report.sync_times;
  document["period_chosen_by"] = report.period_automatic ? "auto" : "given";
  document["every_iteration"] = report.every_iteration;
  if (report.max_overhead) document["max_overhead"] = *report.max_overhead;
  return document;
}

}  // namespace syncplan
