// A what-if sweep's pictures (`syncplan whatif --plot/--html`, docs/report.md "Sweeps"): the rows
// of planner/whatif_job.hpp as a line plot against workers and as a self-contained page.
#pragma once

#include "planner/whatif_job.hpp"
#include "report/html.hpp"
#include "report/svg_plot.hpp"

#include <string>

namespace syncplan::report {

/// What a sweep's plot shows on its y axis.
enum class WhatifMetric {
  kThroughput,  ///< samples/s of the whole cluster (workers x batch / iteration)
  kSpeedup,     ///< speedup over ssgd at the same point
};

/// Parses "throughput" or "speedup"; FieldError "plot_metric: ..." otherwise.
WhatifMetric whatif_metric(const std::string& name);

/// The sweep as a line plot: `metric` against workers on a log axis, one panel per inter-node
/// bandwidth (and latency, when the sweep has several), one line per strategy (and period, when
/// it has several: "dreamddp H=10"). Failed points are left out of their line (a gap at their
/// worker count). InputError "no point of the sweep has a value to draw (CAUSE)" when no row has
/// one (the command prefixes the flag given).
LinePlot whatif_plot(const WhatifOutcome& outcome, WhatifMetric metric);

/// The sweep's page: a summary paragraph, the plot (`plot_svg`, line_plot_svg of whatif_plot), and
/// the table of rows (the CSV's main columns, failed points with their error).
HtmlPage whatif_page(const WhatifOutcome& outcome, const std::string& plot_svg);

}  // namespace syncplan::report
