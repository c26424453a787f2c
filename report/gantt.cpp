// The Gantt chart of a period (report/gantt.hpp): blocks from a period-model timing, then SVG.
#include "report/gantt.hpp"

#include "core/errors.hpp"
#include "report/svg_plot.hpp"
#include "report/svg_text.hpp"

#include <algorithm>
#include <sstream>

namespace syncplan::report {

namespace {

// Geometry in SVG user units (px).
constexpr double kGanttWidth = 1100, kGanttLabelWidth = 120, kGanttRight = 30, kGanttTop = 66;
constexpr double kLaneHeight = 14, kRowGap = 10;
constexpr double kRowHeight = 2 * kLaneHeight + kRowGap;
// Rows drawn at most: a period of 10,000 iterations would be a picture nobody reads, and hundreds
// of MB; the whole-period bar still shows every iteration.
constexpr int kMostGanttRows = 100;

const char* block_fill(const GanttBlock& block, int index_in_lane) {
  switch (block.kind) {
    case GanttKind::kForward: return "#9ecae1";
    case GanttKind::kBackward: return index_in_lane % 2 ? "#31a354" : "#74c476";  // neighbours told apart
    case GanttKind::kUpdate: return "#fdae6b";
    case GanttKind::kWait: return "#d62728";
    case GanttKind::kSync: return index_in_lane % 2 ? "#3f5d9c" : "#6b8fd6";
  }
  return "#999999";
}

std::string bucket_label(const BackpropTimes& times, const SyncEvent& sync) {
  if (sync.bucket.empty()) return times.names.at(sync.layer);
  std::string label;
  for (const int j : sync.bucket) label += (label.empty() ? "" : " + ") + times.names.at(j);
  return label;
}

void add_block(std::vector<GanttBlock>& lane, GanttKind kind, int h, std::string label, double start_s, double end_s) {
  if (end_s > start_s) lane.push_back({kind, h, std::move(label), start_s, end_s});
}

}  // namespace

const char* to_string(GanttKind kind) {
  switch (kind) {
    case GanttKind::kForward: return "forward";
    case GanttKind::kBackward: return "backward";
    case GanttKind::kUpdate: return "update";
    case GanttKind::kWait: return "wait";
    case GanttKind::kSync: return "sync";
  }
  return "?";
}

GanttChart gantt_chart(const BackpropTimes& times, const PeriodTiming& timing, double lower_bound_s,
                       std::string title) {
  const int h_count = static_cast<int>(timing.iteration_s.size());
  SYNCPLAN_CHECK(timing.wait_s.size() == timing.iteration_s.size() && timing.syncs.size() == timing.iteration_s.size() &&
                 timing.update_start_s.size() == timing.iteration_s.size());
  GanttChart chart;
  chart.title = std::move(title);
  chart.period_s = timing.period_s;
  chart.lower_bound_s = lower_bound_s;
  chart.iteration_s = timing.iteration_s;
  chart.wait_s = timing.wait_s;
  const double forward_end = times.forward_total_s, backward_start = times.backward_start_s();
  const double backprop_end = backward_start + times.backprop_s();
  for (int h = 0; h < h_count; ++h) {
    add_block(chart.compute, GanttKind::kForward, h, "forward", 0, forward_end);
    add_block(chart.compute, GanttKind::kBackward, h, "backward (unattributed)", forward_end, backward_start);
    for (std::size_t j = 0; j < times.size(); ++j)
      add_block(chart.compute, GanttKind::kBackward, h, times.names[j],
                backward_start + (j == 0 ? 0 : times.ready_s[j - 1]), backward_start + times.ready_s[j]);
    const double update_start = timing.update_start_s[h], update_end = update_start + times.update_total_s;
    if (update_start > backprop_end) {  // the link held the update back: wait before it
      add_block(chart.compute, GanttKind::kWait, h, "wait", backprop_end, update_start);
      add_block(chart.compute, GanttKind::kUpdate, h, "update", update_start, update_end);
    } else {  // syncs after the update (flsgd, ssgd-like): the wait ends the iteration
      add_block(chart.compute, GanttKind::kUpdate, h, "update", update_start, update_end);
      add_block(chart.compute, GanttKind::kWait, h, "wait", update_end, update_end + timing.wait_s[h]);
    }
    for (const SyncEvent& sync : timing.syncs[h])
      add_block(chart.link, GanttKind::kSync, h, bucket_label(times, sync), sync.start_s, sync.end_s);
  }
  return chart;
}

std::string gantt_svg(const GanttChart& chart) {
  const int h_count = static_cast<int>(chart.iteration_s.size());
  const double mean_bound_s = h_count > 0 ? chart.lower_bound_s / h_count : 0;
  double longest = mean_bound_s;
  for (const double seconds : chart.iteration_s) longest = std::max(longest, seconds);
  const std::vector<double> ticks = axis_ticks(0, longest > 0 ? longest : 1, false);
  const double axis_end = ticks.back();
  const double plot_width = kGanttWidth - kGanttLabelWidth - kGanttRight;
  const auto px = [&](double seconds) { return kGanttLabelWidth + seconds / axis_end * plot_width; };
  const auto c = [](double value) { return svg_coordinate(value); };
  const int rows = std::min(h_count, kMostGanttRows);
  const double rows_bottom = kGanttTop + rows * kRowHeight;
  const double period_top = rows_bottom + 56;  // the whole-period bar
  const double legend_top = period_top + 2 * kLaneHeight + 40;
  const double height = legend_top + 30;

  std::ostringstream svg;
  svg << "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"gantt\" width=\"" << c(kGanttWidth) << "\" height=\""
      << c(height) << "\" viewBox=\"0 0 " << c(kGanttWidth) << " " << c(height) << "\" font-family=\"sans-serif\" "
      << "data-period-s=\"" << exact_number(chart.period_s) << "\" data-lower-bound-s=\""
      << exact_number(chart.lower_bound_s) << "\" data-iterations=\"" << h_count << "\">\n"
      << "<title>" << xml_escape(chart.title) << "</title>\n"
      << "<rect width=\"100%\" height=\"100%\" fill=\"#ffffff\"/>\n"
      << "<text x=\"" << c(kGanttWidth / 2) << "\" y=\"20\" text-anchor=\"middle\" font-size=\"15\" "
      << "font-weight=\"bold\">" << xml_escape(chart.title) << "</text>\n"
      << "<text x=\"" << c(kGanttLabelWidth) << "\" y=\"38\" font-size=\"11\">each row: one iteration h, compute "
      << "lane above the link lane; time in s from the iteration's start</text>\n";
  for (const double tick : ticks)
    svg << "<line class=\"grid\" x1=\"" << c(px(tick)) << "\" y1=\"" << c(kGanttTop - 4) << "\" x2=\"" << c(px(tick))
        << "\" y2=\"" << c(rows_bottom) << "\" stroke=\"#e0e0e0\"/>\n<text class=\"tick\" x=\"" << c(px(tick))
        << "\" y=\"" << c(rows_bottom + 14) << "\" text-anchor=\"middle\" font-size=\"10\">" << tick_label(tick)
        << "</text>\n";
  svg << "<text class=\"axis-label\" x=\"" << c(kGanttLabelWidth + plot_width / 2) << "\" y=\"" << c(rows_bottom + 30)
      << "\" text-anchor=\"middle\" font-size=\"12\">time in the iteration (s)</text>\n";
  if (rows < h_count)
    svg << "<text x=\"" << c(kGanttLabelWidth + plot_width) << "\" y=\"38\" text-anchor=\"end\" font-size=\"11\">"
        << "iterations " << rows << " to " << h_count - 1 << " not drawn</text>\n";
  for (int h = 0; h < rows; ++h) {
    const double top = kGanttTop + h * kRowHeight;
    svg << "<text x=\"6\" y=\"" << c(top + kLaneHeight - 2) << "\" font-size=\"11\">h = " << h << "  "
        << tick_label(chart.iteration_s[h]) << " s</text>\n<text x=\"6\" y=\"" << c(top + 2 * kLaneHeight - 2)
        << "\" font-size=\"10\" fill=\"#555555\">link</text>\n";
  }
  const auto write_lane = [&](const std::vector<GanttBlock>& lane, double lane_offset) {
    int index = 0, previous_h = -1;
    for (const GanttBlock& block : lane) {
      if (block.iteration >= rows) break;  // blocks come iteration by iteration
      if (block.iteration != previous_h) index = 0, previous_h = block.iteration;
      const double top = kGanttTop + block.iteration * kRowHeight + lane_offset;
      const std::string label = xml_escape(block.label);
      svg << "<rect class=\"block\" data-kind=\"" << to_string(block.kind) << "\" data-iteration=\"" << block.iteration
          << "\" data-label=\"" << label << "\" data-start-s=\"" << exact_number(block.start_s) << "\" data-end-s=\""
          << exact_number(block.end_s) << "\" x=\"" << c(px(block.start_s)) << "\" y=\"" << c(top) << "\" width=\""
          << c(std::max(0.5, px(block.end_s) - px(block.start_s))) << "\" height=\"" << c(kLaneHeight - 1)
          << "\" fill=\"" << block_fill(block, index++) << "\"><title>h = " << block.iteration << ", "
          // "forward", "update", "wait" and "backward (unattributed)" blocks are labelled with their
          // kind: named once, not "forward forward".
          << (block.label == to_string(block.kind) || block.label.rfind(std::string(to_string(block.kind)) + " (", 0) == 0
                  ? label
                  : std::string(to_string(block.kind)) + " " + label)
          << ": "
          << tick_label(block.start_s) << " s to "
          << tick_label(block.end_s) << " s</title></rect>\n";
    }
  };
  write_lane(chart.compute, 0);
  write_lane(chart.link, kLaneHeight);
  const bool right_half = px(mean_bound_s) > kGanttWidth / 2;  // its label then goes left of the line
  svg << "<line class=\"lower-bound\" x1=\"" << c(px(mean_bound_s)) << "\" y1=\"" << c(kGanttTop - 8) << "\" x2=\""
      << c(px(mean_bound_s)) << "\" y2=\"" << c(rows_bottom) << "\" stroke=\"#000000\" stroke-width=\"1.5\" "
      << "stroke-dasharray=\"6 3\"/>\n<text x=\"" << c(px(mean_bound_s) + (right_half ? -4 : 4)) << "\" y=\""
      << c(kGanttTop - 8) << "\" text-anchor=\"" << (right_half ? "end" : "start") << "\" font-size=\"10\">lower bound / H = " << tick_label(mean_bound_s) << " s</text>\n";

  // The whole period on its own scale: iterations back to back, compute then wait.
  const double period_end = std::max(chart.period_s, chart.lower_bound_s) > 0 ? std::max(chart.period_s, chart.lower_bound_s) : 1;
  const auto qx = [&](double seconds) { return kGanttLabelWidth + seconds / period_end * plot_width; };
  svg << "<text x=\"6\" y=\"" << c(period_top + kLaneHeight) << "\" font-size=\"11\">period " << tick_label(chart.period_s)
      << " s</text>\n";
  double start = 0;
  for (int h = 0; h < h_count; ++h) {
    const double compute = chart.iteration_s[h] - chart.wait_s[h];
    svg << "<rect class=\"period-iteration\" data-iteration=\"" << h << "\" data-start-s=\"" << exact_number(start)
        << "\" data-end-s=\"" << exact_number(start + chart.iteration_s[h]) << "\" x=\"" << c(qx(start)) << "\" y=\""
        << c(period_top) << "\" width=\"" << c(std::max(0.5, qx(start + compute) - qx(start))) << "\" height=\""
        << c(2 * kLaneHeight) << "\" fill=\"" << (h % 2 ? "#74c476" : "#a1d99b") << "\" stroke=\"#ffffff\"><title>h = "
        << h << ": " << tick_label(chart.iteration_s[h]) << " s, wait " << tick_label(chart.wait_s[h])
        << " s</title></rect>\n";
    if (chart.wait_s[h] > 0)
      svg << "<rect x=\"" << c(qx(start + compute)) << "\" y=\"" << c(period_top) << "\" width=\""
          << c(std::max(0.5, qx(start + chart.iteration_s[h]) - qx(start + compute))) << "\" height=\""
          << c(2 * kLaneHeight) << "\" fill=\"#d62728\"/>\n";
    start += chart.iteration_s[h];
  }
  svg << "<line class=\"lower-bound\" x1=\"" << c(qx(chart.lower_bound_s)) << "\" y1=\"" << c(period_top - 6)
      << "\" x2=\"" << c(qx(chart.lower_bound_s)) << "\" y2=\"" << c(period_top + 2 * kLaneHeight + 6)
      << "\" stroke=\"#000000\" stroke-width=\"2\" stroke-dasharray=\"6 3\"/>\n<text x=\"" << c(qx(chart.lower_bound_s))
      << "\" y=\"" << c(period_top + 2 * kLaneHeight + 20) << "\" text-anchor=\"end\" font-size=\"10\">lower bound "
      << tick_label(chart.lower_bound_s) << " s</text>\n<text x=\"" << c(kGanttLabelWidth) << "\" y=\""
      << c(period_top - 10) << "\" font-size=\"11\">the whole period, iterations back to back (0 to "
      << tick_label(period_end) << " s)</text>\n";

  const struct { const char* fill; const char* text; } legend[] = {
      {"#9ecae1", "forward"}, {"#74c476", "backward (per layer)"}, {"#fdae6b", "update"},
      {"#d62728", "wait (exposed sync)"}, {"#6b8fd6", "all-reduce on the link"}};
  svg << "<g class=\"legend\">\n";
  double x = kGanttLabelWidth;
  for (const auto& item : legend) {
    svg << "<rect x=\"" << c(x) << "\" y=\"" << c(legend_top) << "\" width=\"14\" height=\"12\" fill=\"" << item.fill
        << "\"/><text x=\"" << c(x + 18) << "\" y=\"" << c(legend_top + 10) << "\" font-size=\"11\">" << item.text
        << "</text>\n";
    x += 170;
  }
  svg << "<line x1=\"" << c(x) << "\" y1=\"" << c(legend_top + 6) << "\" x2=\"" << c(x + 20) << "\" y2=\""
      << c(legend_top + 6) << "\" stroke=\"#000000\" stroke-dasharray=\"6 3\"/><text x=\"" << c(x + 24) << "\" y=\""
      << c(legend_top + 10) << "\" font-size=\"11\">lower bound</text>\n</g>\n</svg>\n";
  return svg.str();
}

}  // namespace syncplan::report
