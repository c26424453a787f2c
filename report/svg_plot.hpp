// Line plots as self-contained SVG (no fonts, scripts or styles from outside): panels side by
// side, one line per series with its own colour and marker, a shared legend; for what-if sweeps
// (throughput against workers, one panel per bandwidth, one line per strategy) and any other rows.
#pragma once

#include <string>
#include <vector>

namespace syncplan::report {

/// One line of a panel. A point whose x or y is not finite (NaN: a failed what-if point) is
/// missing: the line has a gap there and no marker.
struct PlotSeries {
  std::string name;       ///< legend text; series of the same name share colour and marker across panels
  std::vector<double> x;  ///< abscissae, in the x axis's unit (as many as y)
  std::vector<double> y;  ///< ordinates, in the y axis's unit
};

/// One panel (one set of axes), e.g. one bandwidth.
struct PlotPanel {
  std::string title;                ///< above the panel, e.g. "10 Gbit/s"
  std::vector<PlotSeries> series;
};

/// A figure of panels sharing axis labels and a legend.
struct LinePlot {
  std::string title;    ///< above every panel
  std::string x_label;  ///< with its unit, e.g. "workers"
  std::string y_label;  ///< with its unit, e.g. "throughput (samples/s)"
  bool log_x = false;   ///< x on a log axis, ticks at powers of ten (every finite x must then be > 0)
  bool y_from_zero = true;  ///< the y axis includes 0 (throughput, speedup); false: the data's range
  bool log_y = false;   ///< y on a log axis too (every finite y must then be > 0; y_from_zero ignored)
  int columns = 3;      ///< panels per row (>= 1)
  std::vector<PlotPanel> panels{};
};

/// The plot as one SVG document (UTF-8, no XML declaration, so it can be inlined in HTML as is).
/// Every series is a `<g class="series" data-series="NAME">` holding one `<polyline>` per run of
/// finite points and one marker per point; the axes carry ticks and labels.
/// Throws FieldError "panels: ..." for a plot without panels, "series 'NAME': ..." when x and y
/// differ in length or a finite x (y) is <= 0 on a log x (y) axis, "columns: ..." when columns < 1.
std::string line_plot_svg(const LinePlot& plot);

/// One value of a table of results to plot, e.g. one what-if point: its panel (a bandwidth), its
/// series (a strategy), x (workers) and y (throughput; NaN for a failed point).
struct PlotPoint {
  std::string panel;
  std::string series;
  double x = 0;
  double y = 0;
};

/// Groups `points` into `plot.panels` (replacing them): panels and series in the order they first
/// appear, each series' points sorted by x. A row of the same panel, series and x as an earlier
/// one is an error (FieldError "points: ..." naming them), since a line cannot go through both.
void set_plot_points(LinePlot& plot, const std::vector<PlotPoint>& points);

/// Tick positions for an axis over [low, high] (low < high): on a log axis the powers of ten that
/// cover the range (low and high widened to them); otherwise 1, 2 or 5 times a power of ten, about
/// five of them, the range widened to the outer ticks. The first and last ticks are the axis's ends.
std::vector<double> axis_ticks(double low, double high, bool log_scale);

}  // namespace syncplan::report
