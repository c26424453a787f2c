// Line plots as SVG written directly (report/svg_plot.hpp): axes, ticks, gaps for missing points,
// colours and markers per series name, a legend.
#include "report/svg_plot.hpp"

#include "core/field_error.hpp"
#include "report/svg_text.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <sstream>
#include <tuple>

namespace syncplan::report {

namespace {

// Tableau 10, a palette chosen for distinct hues on white (Tableau's default categorical colours).
constexpr const char* kPlotColours[] = {"#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f",
                                        "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac"};
constexpr int kPlotColourCount = sizeof kPlotColours / sizeof kPlotColours[0];
constexpr int kMarkerShapes = 7;  // circle, square, triangle up, diamond, triangle down, plus, cross

// Panel geometry in SVG user units (px).
constexpr double kPanelWidth = 400, kPanelHeight = 290;
constexpr double kAreaLeft = 72, kAreaRight = 16, kAreaTop = 30, kAreaBottom = 48;
constexpr double kTitleHeight = 34, kLegendItemWidth = 160, kLegendRowHeight = 22;
// Legend items: left margin, text start after the line and marker, the text's advance per
// character at font-size 12 (an upper estimate for sans-serif: lowercase averages about 0.55 em,
// 6.6 px; SVG cannot measure text), and the gap after the text (px).
constexpr double kLegendLeft = 20, kLegendTextOffset = 34, kLegendCharWidth = 7.5, kLegendGap = 16;

struct AxisRange {
  double low = 0, high = 1;
  bool log_scale = false;
  // Where `value` falls between the ends, 0..1.
  double fraction(double value) const {
    if (log_scale) return (std::log10(value) - std::log10(low)) / (std::log10(high) - std::log10(low));
    return (value - low) / (high - low);
  }
};

// Characters of UTF-8 `text` (its bytes less continuation bytes 10xxxxxx): a legend name's width.
std::size_t utf8_length(const std::string& text) {
  return static_cast<std::size_t>(
      std::count_if(text.begin(), text.end(), [](char c) { return (static_cast<unsigned char>(c) & 0xC0) != 0x80; }));
}

bool finite_point(const PlotSeries& series, std::size_t i) {
  return std::isfinite(series.x[i]) && std::isfinite(series.y[i]);
}

// The axis over the finite values, widened to its outer ticks.
AxisRange axis_over(double low, double high, bool log_scale, bool from_zero, std::vector<double>& ticks) {
  if (!(low <= high)) {  // no finite value at all
    low = log_scale ? 1 : 0;
    high = log_scale ? 10 : 1;
  }
  if (from_zero && !log_scale) {
    low = std::min(low, 0.0);
    high = std::max(high, 0.0);
  }
  if (low == high) {
    if (log_scale) low /= 10, high *= 10;
    else if (low == 0) high = 1;
    else low -= std::fabs(low) / 2, high += std::fabs(high) / 2;
  }
  ticks = axis_ticks(low, high, log_scale);
  return {ticks.front(), ticks.back(), log_scale};
}

// One marker of shape `shape` (0..kMarkerShapes-1) centred on (x, y).
std::string marker_svg(int shape, double x, double y, const char* colour) {
  constexpr double r = 4;
  const auto c = [](double value) { return svg_coordinate(value); };
  const std::string fill = std::string(" fill=\"") + colour + "\" stroke=\"" + colour + "\"";
  switch (shape) {
    case 0: return "<circle cx=\"" + c(x) + "\" cy=\"" + c(y) + "\" r=\"" + c(r) + "\"" + fill + "/>";
    case 1:
      return "<rect x=\"" + c(x - r) + "\" y=\"" + c(y - r) + "\" width=\"" + c(2 * r) + "\" height=\"" + c(2 * r) +
             "\"" + fill + "/>";
    case 2:
      return "<polygon points=\"" + c(x) + "," + c(y - r) + " " + c(x + r) + "," + c(y + r) + " " + c(x - r) + "," +
             c(y + r) + "\"" + fill + "/>";
    case 3:
      return "<polygon points=\"" + c(x) + "," + c(y - r) + " " + c(x + r) + "," + c(y) + " " + c(x) + "," +
             c(y + r) + " " + c(x - r) + "," + c(y) + "\"" + fill + "/>";
    case 4:
      return "<polygon points=\"" + c(x - r) + "," + c(y - r) + " " + c(x + r) + "," + c(y - r) + " " + c(x) + "," +
             c(y + r) + "\"" + fill + "/>";
    case 5:
      return "<path d=\"M" + c(x - r) + " " + c(y) + "H" + c(x + r) + "M" + c(x) + " " + c(y - r) + "V" + c(y + r) +
             "\" stroke=\"" + colour + "\" stroke-width=\"2\" fill=\"none\"/>";
    default:
      return "<path d=\"M" + c(x - r) + " " + c(y - r) + "L" + c(x + r) + " " + c(y + r) + "M" + c(x - r) + " " +
             c(y + r) + "L" + c(x + r) + " " + c(y - r) + "\" stroke=\"" + colour + "\" stroke-width=\"2\" fill=\"none\"/>";
  }
}

void check_plot(const LinePlot& plot) {
  if (plot.panels.empty()) throw FieldError("panels", "panels: a plot needs at least one panel");
  if (plot.columns < 1) throw FieldError("columns", "columns: must be >= 1, got " + std::to_string(plot.columns));
  for (const PlotPanel& panel : plot.panels)
    for (const PlotSeries& series : panel.series) {
      if (series.x.size() != series.y.size())
        throw FieldError("series", "series '" + series.name + "': x has " + std::to_string(series.x.size()) +
                                       " values, y has " + std::to_string(series.y.size()));
      for (const auto& [log_scale, values, axis] : {std::tuple{plot.log_x, &series.x, "x"},
                                                    std::tuple{plot.log_y, &series.y, "y"}})
        if (log_scale)
          for (const double value : *values)
            if (std::isfinite(value) && value <= 0)
              throw FieldError("series", "series '" + series.name + "': " + axis + " = " + tick_label(value) +
                                             " on a log axis (every " + axis + " must be > 0)");
    }
}

// One panel's axes, grid, ticks and lines, its plotting area's top-left corner at (left, top).
void write_panel(std::ostringstream& svg, const LinePlot& plot, const PlotPanel& panel, double left, double top,
                 const std::map<std::string, int>& style_of) {
  double x_low = std::numeric_limits<double>::infinity(), x_high = -x_low, y_low = x_low, y_high = -x_low;
  for (const PlotSeries& series : panel.series)
    for (std::size_t i = 0; i < series.x.size(); ++i)
      if (finite_point(series, i)) {
        x_low = std::min(x_low, series.x[i]), x_high = std::max(x_high, series.x[i]);
        y_low = std::min(y_low, series.y[i]), y_high = std::max(y_high, series.y[i]);
      }
  std::vector<double> x_ticks, y_ticks;
  const AxisRange x_axis = axis_over(x_low, x_high, plot.log_x, false, x_ticks);
  const AxisRange y_axis = axis_over(y_low, y_high, plot.log_y, plot.y_from_zero && !plot.log_y, y_ticks);
  const double width = kPanelWidth - kAreaLeft - kAreaRight, height = kPanelHeight - kAreaTop - kAreaBottom;
  const double x0 = left + kAreaLeft, y0 = top + kAreaTop;
  const auto px = [&](double x) { return x0 + x_axis.fraction(x) * width; };
  const auto py = [&](double y) { return y0 + height - y_axis.fraction(y) * height; };
  const auto c = [](double value) { return svg_coordinate(value); };

  svg << "<g class=\"panel\" data-title=\"" << xml_escape(panel.title) << "\">\n"
      << "<text x=\"" << c(x0 + width / 2) << "\" y=\"" << c(top + 20) << "\" text-anchor=\"middle\" "
      << "font-size=\"14\" font-weight=\"bold\">" << xml_escape(panel.title) << "</text>\n";
  for (const double tick : x_ticks)
    svg << "<line class=\"grid\" x1=\"" << c(px(tick)) << "\" y1=\"" << c(y0) << "\" x2=\"" << c(px(tick)) << "\" y2=\""
        << c(y0 + height) << "\" stroke=\"#dddddd\"/>\n"
        << "<text class=\"tick\" x=\"" << c(px(tick)) << "\" y=\"" << c(y0 + height + 16)
        << "\" text-anchor=\"middle\" font-size=\"11\">" << xml_escape(tick_label(tick)) << "</text>\n";
  for (const double tick : y_ticks)
    svg << "<line class=\"grid\" x1=\"" << c(x0) << "\" y1=\"" << c(py(tick)) << "\" x2=\"" << c(x0 + width) << "\" y2=\""
        << c(py(tick)) << "\" stroke=\"#dddddd\"/>\n"
        << "<text class=\"tick\" x=\"" << c(x0 - 6) << "\" y=\"" << c(py(tick) + 4)
        << "\" text-anchor=\"end\" font-size=\"11\">" << xml_escape(tick_label(tick)) << "</text>\n";
  svg << "<rect x=\"" << c(x0) << "\" y=\"" << c(y0) << "\" width=\"" << c(width) << "\" height=\"" << c(height)
      << "\" fill=\"none\" stroke=\"#333333\"/>\n"
      << "<text class=\"axis-label\" x=\"" << c(x0 + width / 2) << "\" y=\"" << c(y0 + height + 36)
      << "\" text-anchor=\"middle\" font-size=\"12\">" << xml_escape(plot.x_label) << "</text>\n"
      << "<text class=\"axis-label\" transform=\"translate(" << c(left + 16) << "," << c(y0 + height / 2)
      << ") rotate(-90)\" text-anchor=\"middle\" font-size=\"12\">" << xml_escape(plot.y_label) << "</text>\n";

  for (const PlotSeries& series : panel.series) {
    const int style = style_of.at(series.name);
    const char* colour = kPlotColours[style % kPlotColourCount];
    svg << "<g class=\"series\" data-series=\"" << xml_escape(series.name) << "\">\n";
    std::string points;  // the current run of finite points; a missing point ends it
    const auto flush = [&] {
      if (!points.empty())
        svg << "<polyline points=\"" << points << "\" fill=\"none\" stroke=\"" << colour << "\" stroke-width=\"2\"/>\n";
      points.clear();
    };
    for (std::size_t i = 0; i < series.x.size(); ++i) {
      if (!finite_point(series, i)) {
        flush();
        continue;
      }
      points += (points.empty() ? "" : " ") + c(px(series.x[i])) + "," + c(py(series.y[i]));
    }
    flush();
    for (std::size_t i = 0; i < series.x.size(); ++i)
      if (finite_point(series, i))
        svg << marker_svg(style % kMarkerShapes, px(series.x[i]), py(series.y[i]), colour) << '\n';
    svg << "</g>\n";
  }
  svg << "</g>\n";
}

}  // namespace

void set_plot_points(LinePlot& plot, const std::vector<PlotPoint>& points) {
  plot.panels.clear();
  std::map<std::string, std::size_t> panel_index;
  std::map<std::pair<std::string, std::string>, std::size_t> series_index;
  for (const PlotPoint& point : points) {
    const auto [panel_it, new_panel] = panel_index.emplace(point.panel, plot.panels.size());
    if (new_panel) plot.panels.push_back({point.panel, {}});
    PlotPanel& panel = plot.panels[panel_it->second];
    const auto [series_it, new_series] = series_index.emplace(std::pair{point.panel, point.series}, panel.series.size());
    if (new_series) panel.series.push_back({point.series, {}, {}});
    PlotSeries& series = panel.series[series_it->second];
    for (const double x : series.x)
      if (x == point.x)
        throw FieldError("points", "points: panel '" + point.panel + "', series '" + point.series + "' has two points at x = " +
                                       tick_label(point.x));
    series.x.push_back(point.x);
    series.y.push_back(point.y);
  }
  for (PlotPanel& panel : plot.panels)
    for (PlotSeries& series : panel.series) {
      std::vector<std::size_t> order(series.x.size());
      for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
      std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return series.x[a] < series.x[b]; });
      PlotSeries sorted{series.name, {}, {}};
      for (const std::size_t i : order) sorted.x.push_back(series.x[i]), sorted.y.push_back(series.y[i]);
      series = std::move(sorted);
    }
}

std::vector<double> axis_ticks(double low, double high, bool log_scale) {
  std::vector<double> ticks;
  if (log_scale) {
    const int first = static_cast<int>(std::floor(std::log10(low) + 1e-9));
    int last = static_cast<int>(std::ceil(std::log10(high) - 1e-9));
    if (last <= first) last = first + 1;
    const int step = std::max(1, (last - first + 7) / 8);  // at most about 8 labelled decades
    for (int e = first; e < last + step; e += step) ticks.push_back(std::pow(10.0, e));
    return ticks;
  }
  const double raw = (high - low) / 5;
  const double magnitude = std::pow(10.0, std::floor(std::log10(raw)));
  const double norm = raw / magnitude;
  const double step = (norm < 1.5 ? 1 : norm < 3.5 ? 2 : norm < 7.5 ? 5 : 10) * magnitude;
  const double first = std::floor(low / step + 1e-9), last = std::ceil(high / step - 1e-9);
  for (double k = first; k <= last; ++k) ticks.push_back(std::fabs(k) < 0.5 ? 0.0 : k * step);
  if (ticks.size() < 2) ticks.push_back(ticks.back() + step);
  return ticks;
}

std::string line_plot_svg(const LinePlot& plot) {
  check_plot(plot);
  std::map<std::string, int> style_of;  // series name -> colour and marker, in order of appearance
  std::vector<std::string> legend;
  for (const PlotPanel& panel : plot.panels)
    for (const PlotSeries& series : panel.series)
      if (style_of.emplace(series.name, static_cast<int>(legend.size())).second) legend.push_back(series.name);

  const int count = static_cast<int>(plot.panels.size());
  const int columns = std::min(plot.columns, count);
  const int rows = (count + columns - 1) / columns;
  // Each legend item is as wide as its longest name needs ("dreamddp H=auto"
  // was clipped at the right edge); the figure widens when one item alone is wider than it.
  std::size_t longest = 0;
  for (const std::string& name : legend) longest = std::max(longest, utf8_length(name));
  const double item_width =
      std::max(kLegendItemWidth, kLegendTextOffset + kLegendCharWidth * static_cast<double>(longest) + kLegendGap);
  const double width = std::max(columns * kPanelWidth, 2 * kLegendLeft + item_width);
  const int legend_per_row = std::max(1, static_cast<int>((width - kLegendLeft) / item_width));
  const int legend_rows = (static_cast<int>(legend.size()) + legend_per_row - 1) / legend_per_row;
  const double legend_top = kTitleHeight + rows * kPanelHeight + 8;
  const double height = legend_top + legend_rows * kLegendRowHeight + 10;
  const auto c = [](double value) { return svg_coordinate(value); };

  std::ostringstream svg;
  svg << "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"line-plot\" width=\"" << c(width) << "\" height=\""
      << c(height) << "\" viewBox=\"0 0 " << c(width) << " " << c(height) << "\" font-family=\"sans-serif\">\n"
      << "<title>" << xml_escape(plot.title) << "</title>\n"
      << "<rect width=\"100%\" height=\"100%\" fill=\"#ffffff\"/>\n"
      << "<text x=\"" << c(width / 2) << "\" y=\"22\" text-anchor=\"middle\" font-size=\"16\" font-weight=\"bold\">"
      << xml_escape(plot.title) << "</text>\n";
  for (int i = 0; i < count; ++i)
    write_panel(svg, plot, plot.panels[i], (i % columns) * kPanelWidth, kTitleHeight + (i / columns) * kPanelHeight,
                style_of);
  svg << "<g class=\"legend\">\n";
  for (int i = 0; i < static_cast<int>(legend.size()); ++i) {
    const double x = kLegendLeft + (i % legend_per_row) * item_width;
    const double y = legend_top + (i / legend_per_row) * kLegendRowHeight + 11;
    const char* colour = kPlotColours[i % kPlotColourCount];
    svg << "<g class=\"legend-item\" data-series=\"" << xml_escape(legend[i]) << "\"><line x1=\"" << c(x) << "\" y1=\""
        << c(y) << "\" x2=\"" << c(x + 28) << "\" y2=\"" << c(y) << "\" stroke=\"" << colour << "\" stroke-width=\"2\"/>"
        << marker_svg(i % kMarkerShapes, x + 14, y, colour) << "<text x=\"" << c(x + kLegendTextOffset) << "\" y=\"" << c(y + 4)
        << "\" font-size=\"12\">" << xml_escape(legend[i]) << "</text></g>\n";
  }
  svg << "</g>\n</svg>\n";
  return svg.str();
}

}  // namespace syncplan::report
