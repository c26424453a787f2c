// A what-if sweep's line plot and page (report/whatif_page.hpp).
#include "report/whatif_page.hpp"

#include "core/errors.hpp"
#include "core/field_error.hpp"

#include <set>

namespace syncplan::report {

namespace {

// "10 Gbit/s" (and ", 50 us" when the sweep varies the latency).
std::string whatif_panel_name(const WhatifRow& row, bool latencies) {
  std::string name = format_shortest(row.bandwidth_Gbps) + " Gbit/s";
  if (latencies) name += ", " + format_shortest(row.latency_us) + " us";
  return name;
}

// "dreamddp" (and " H=10" or " H=auto" when the sweep varies the period).
std::string whatif_series_name(const WhatifRow& row, bool periods) {
  return periods ? row.strategy + " H=" + row.period_requested : row.strategy;
}

std::string optional_text(const std::optional<double>& value, int decimals) {
  return value ? format_short(*value, decimals) : std::string();
}

}  // namespace

WhatifMetric whatif_metric(const std::string& name) {
  if (name == "throughput") return WhatifMetric::kThroughput;
  if (name == "speedup") return WhatifMetric::kSpeedup;
  throw FieldError("plot_metric", "plot_metric: unknown '" + name + "' (choose from throughput, speedup)");
}

LinePlot whatif_plot(const WhatifOutcome& outcome, WhatifMetric metric) {
  std::set<double> latencies;
  std::set<std::string> periods;
  for (const WhatifRow& row : outcome.rows) {
    latencies.insert(row.latency_us);
    periods.insert(row.period_requested);
  }
  LinePlot plot;
  plot.title = outcome.model + ": " + (metric == WhatifMetric::kThroughput ? "throughput" : "speedup over ssgd") +
               " against cluster size (" + to_string(outcome.scaling) + " scaling, DES)";
  plot.x_label = "workers";
  plot.y_label = metric == WhatifMetric::kThroughput ? "throughput (samples/s)" : "speedup over ssgd (x)";
  plot.log_x = true;
  std::vector<PlotPoint> points;
  for (const WhatifRow& row : outcome.rows) {
    const std::optional<double>& value = metric == WhatifMetric::kThroughput ? row.samples_per_s : row.speedup_vs_ssgd;
    if (row.status != WhatifStatus::kOk || !value) continue;
    points.push_back({whatif_panel_name(row, latencies.size() > 1), whatif_series_name(row, periods.size() > 1),
                      static_cast<double>(row.workers), *value});
  }
  if (points.empty()) {
    bool any_ok = false, any_zero = false, any_batch = false, ssgd_ok = false;
    for (const WhatifRow& row : outcome.rows) {
      if (row.status != WhatifStatus::kOk) continue;
      any_ok = true;
      any_zero |= row.period_s && *row.period_s == 0;
      any_batch |= row.batch_per_worker.has_value();
      ssgd_ok |= row.strategy == "ssgd";
    }
    // The cause a user can act on (the helper's new-user check: an all-zero profile was told to
    // give --batch when it had, and that ssgd failed when every ssgd row was ok).
    const std::string cause =
        !any_ok    ? "every point failed"
        : any_zero ? "the periods are 0 s: the profile's times are all 0, so neither samples/s nor a speedup is finite"
        : metric == WhatifMetric::kThroughput
            ? (any_batch ? "no point has a finite samples/s" : "no samples/s: the batch is not known; give --batch")
            : (ssgd_ok ? "no point has a finite speedup over ssgd"
                       : "no speedup over ssgd: ssgd is not among the strategies or failed at every point");
    throw InputError("no point of the sweep has a value to draw (" + cause + ")");
  }
  set_plot_points(plot, points);
  return plot;
}

HtmlPage whatif_page(const WhatifOutcome& outcome, const std::string& plot_svg) {
  HtmlSection summary;
  summary.heading = "What-if sweep of " + outcome.model;
  summary.paragraphs.push_back("Profile " + outcome.origin + ", base cluster " + outcome.cluster_origin + ", " +
                               to_string(outcome.scaling) + " scaling; " + count_text(outcome.rows.size(), "point") +
                               ", " + count_text(outcome.failed(), "failed point") +
                               ". Every point is timed by the discrete-event simulator (docs/whatif.md).");
  summary.figures.push_back({"The plot of the sweep, one line per strategy", plot_svg});
  HtmlSection points;
  points.heading = "Every point";
  HtmlTable table;
  table.caption = "Every point (docs/whatif.md lists the columns and units)";
  table.header = {"workers", "Gbit/s", "latency (us)", "H", "strategy", "iteration (s)", "samples/s",
                  "speedup vs ssgd", "speedup vs flsgd", "exposed comm (s)", "plan gap", "status"};
  for (const WhatifRow& row : outcome.rows)
    table.rows.push_back({std::to_string(row.workers), format_shortest(row.bandwidth_Gbps),
                          format_shortest(row.latency_us), row.period ? std::to_string(*row.period) : row.period_requested,
                          row.strategy, optional_text(row.iteration_s, 6), optional_text(row.samples_per_s, 1),
                          optional_text(row.speedup_vs_ssgd, 3), optional_text(row.speedup_vs_flsgd, 3),
                          optional_text(row.exposed_comm_s, 6), optional_text(row.plan_gap, 4),
                          row.status == WhatifStatus::kOk ? "ok" : "error: " + row.error});
  points.tables.push_back(std::move(table));
  HtmlPage page;
  page.title = "syncplan what-if: " + outcome.model;
  page.sections.push_back(std::move(summary));
  page.sections.push_back(std::move(points));
  return page;
}

}  // namespace syncplan::report
