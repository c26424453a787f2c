// Unit tests of the report module: axis ticks, the line plot's series, gaps and errors, the Gantt
// chart against the period model (hand-derived times, and the SVG's data attributes read back),
// the HTML page's escaping and checks, and the reader of a plan report's comparison.
#include "core/errors.hpp"
#include "core/field_error.hpp"
#include "core/json_io.hpp"
#include "core/profile.hpp"
#include "planner/plan_job.hpp"
#include "report/gantt.hpp"
#include "report/html.hpp"
#include "report/plan_page.hpp"
#include "report/loss_plot.hpp"
#include "report/svg_plot.hpp"
#include "report/svg_text.hpp"
#include "report/whatif_page.hpp"

#include <catch2/catch.hpp>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <regex>
#include <string>

using namespace syncplan;
using namespace syncplan::report;

namespace {

std::size_t count_of(const std::string& text, const std::string& piece) {
  std::size_t count = 0;
  for (std::size_t at = text.find(piece); at != std::string::npos; at = text.find(piece, at + piece.size())) ++count;
  return count;
}

// The 3-layer profile of tests/cli/data/tiny_profile.json, in memory: forward order embed,
// hidden, head; each forward 0.0002 s, backward 0.001 s, update 0.0001 s; sync_s 0.0005, 0.001,
// 0.003 s.
Profile tiny_profile() {
  const Json document = Json::parse(R"({
   "format": "syncplan.profile/v1", "model": "tiny", "source": "estimated:test", "workers": 2,
   "layers": [
    {"name": "embed", "param_count": 100, "param_bytes": 400, "forward_s": 0.0002, "backward_s": 0.001,
     "update_s": 0.0001, "sync_s": 0.0005},
    {"name": "hidden", "param_count": 200, "param_bytes": 800, "forward_s": 0.0002, "backward_s": 0.001,
     "update_s": 0.0001, "sync_s": 0.001},
    {"name": "head", "param_count": 600, "param_bytes": 2400, "forward_s": 0.0002, "backward_s": 0.001,
     "update_s": 0.0001, "sync_s": 0.003}]})");
  return profile_from_json(document, "tiny.json");
}

// H = 2: head syncs in iteration 0, hidden and embed in iteration 1.
Plan tiny_plan() {
  Plan plan;
  plan.model = "tiny";
  plan.period = 2;
  plan.algorithm = "hand";
  plan.layers = {{"embed", {1}}, {"hidden", {1}}, {"head", {0}}};
  return plan;
}

// The plan job's request on the tiny profile for period H (algorithm best).
PlanRequest tiny_plan_request(int period) {
  PlanRequest request;
  request.profile = tiny_profile();
  request.origin = "tiny.json";
  request.period = period;
  return request;
}

PlanPageRequest tiny_request() {
  PlanPageRequest request;
  request.simulate.sync = choose_sync_times(tiny_profile(), "tiny.json", {});
  request.simulate.origin = "tiny.json";
  request.simulate.plan = tiny_plan();
  request.simulate.plan_origin = "plan.json";
  return request;
}

}  // namespace

TEST_CASE("axis ticks: nice linear steps and powers of ten", "[report]") {
  // [0, 0.37]: a fifth of the span is 0.074 = 7.4 x 0.01, which rounds to a step of 5 x 0.01:
  // 0, 0.05, ..., 0.4 (9 ticks, the last widened past 0.37).
  const std::vector<double> linear = axis_ticks(0, 0.37, false);
  REQUIRE(linear.size() == 9);
  CHECK(linear.front() == 0);
  CHECK(linear.back() == Approx(0.4));
  CHECK(linear[1] == Approx(0.05));
  // [8, 100000] on a log axis: the decades 10^0 .. 10^5 cover it.
  const std::vector<double> log = axis_ticks(8, 100000, true);
  REQUIRE(log.size() == 6);
  CHECK(log.front() == Approx(1));
  CHECK(log.back() == Approx(100000));
}

TEST_CASE("line plot: one series group per line, gaps at missing points, legend, escaping", "[report]") {
  LinePlot plot{.title = "speedup <&> test", .x_label = "workers", .y_label = "throughput (samples/s)", .log_x = true};
  const double nan = std::nan("");
  plot.panels.push_back({"1 Gbit/s", {{"ssgd", {8, 64, 512}, {10, 20, 30}}, {"dp", {8, 64, 512}, {12, nan, 40}}}});
  plot.panels.push_back({"10 Gbit/s", {{"ssgd", {8, 64, 512}, {11, 21, 31}}, {"dp", {8, 64, 512}, {13, 23, 43}}}});
  const std::string svg = line_plot_svg(plot);
  CHECK(count_of(svg, "class=\"series\"") == 4);   // 2 strategies x 2 panels
  CHECK(count_of(svg, "class=\"panel\"") == 2);
  CHECK(count_of(svg, "class=\"legend-item\"") == 2);  // one per strategy, not per panel
  // dp at 1 Gbit/s misses its middle point: two runs of one point each, so 3 + 2 polylines for
  // the first panel's lines... ssgd 1, dp 2; the second panel 1 + 1: 5 in all.
  CHECK(count_of(svg, "<polyline") == 5);
  CHECK(svg.find("speedup &lt;&amp;&gt; test") != std::string::npos);
  CHECK(svg.find("<&>") == std::string::npos);
  // The same strategy keeps its colour across panels: dp's colour (the second) appears in both.
  CHECK(count_of(svg, "stroke=\"#f28e2b\" stroke-width=\"2\"/>") >= 3);

  SECTION("bad rows are errors naming the series") {
    LinePlot bad = plot;
    bad.panels[0].series[0].y.pop_back();
    CHECK_THROWS_WITH(line_plot_svg(bad), Catch::Contains("series 'ssgd'") && Catch::Contains("x has 3 values, y has 2"));
    bad = plot;
    bad.panels[1].series[1].x[0] = 0;
    CHECK_THROWS_AS(line_plot_svg(bad), FieldError);
    bad.panels.clear();
    CHECK_THROWS_WITH(line_plot_svg(bad), Catch::StartsWith("panels:"));
  }
}

TEST_CASE("line plot: every legend item fits inside the figure", "[report]") {
  // The what-if page's legend ended "dreamddp H=aut" at the SVG's right edge.
  // Each item's text must end inside the width under a sans-serif font's advance of 0.6 em (7.2
  // px at font-size 12; an average lowercase letter is about 0.55 em): x + 7.2 x characters <=
  // width. Before the fix, 5 items per row in 800 px put the fifth text at x = 694: 694 + 7.2 x 15
  // = 802 > 800. Long names must also not overlap the next item: x_next >= x + 7.2 x characters.
  const std::vector<std::string> names = {"ssgd", "wfbp", "flsgd", "plsgd-even", "dreamddp H=auto", "best H=4",
                                          std::string(120, 'w')};
  for (const std::size_t count : {5, 6, 7})
    for (const int columns : {1, 2, 3}) {
      CAPTURE(count, columns);
      LinePlot plot{.title = "t", .x_label = "workers", .y_label = "samples/s", .columns = columns};
      for (int p = 0; p < columns; ++p) {
        PlotPanel panel{"panel " + std::to_string(p), {}};
        for (std::size_t i = 0; i < count; ++i) panel.series.push_back({names[i], {1, 2}, {1, 2}});
        plot.panels.push_back(panel);
      }
      const std::string svg = line_plot_svg(plot);
      const std::size_t width_at = svg.find("width=\"") + 7;
      const double width = std::stod(svg.substr(width_at));
      std::size_t at = svg.find("<g class=\"legend\">");
      REQUIRE(at != std::string::npos);
      std::vector<std::pair<double, double>> items;  // (text x, text y)
      for (std::size_t i = 0; i < count; ++i) {
        at = svg.find("<text x=\"", svg.find("class=\"legend-item\"", at)) + 9;
        const double x = std::stod(svg.substr(at));
        const double y = std::stod(svg.substr(svg.find("y=\"", at) + 3));
        CAPTURE(names[i], x, width);
        CHECK(x + 7.2 * static_cast<double>(names[i].size()) <= width);
        if (i > 0 && items.back().second == y)
          CHECK(items.back().first + 7.2 * static_cast<double>(names[i - 1].size()) <= x);
        items.emplace_back(x, y);
      }
    }
}

TEST_CASE("loss plot: one series per run, gaps at unknown losses, bad curves named", "[report]") {
  const double nan = std::nan("");
  const LinePlot plot = loss_plot({{"ssgd", {0.1, 0.2, 0.3}, {5, 4, 3}}, {"plan", {0.05, 0.1, 0.15}, {5, nan, 3.5}}}, "t");
  REQUIRE(plot.panels.size() == 1);
  CHECK_FALSE(plot.log_x);
  CHECK_FALSE(plot.y_from_zero);  // losses near 3-5: the axis spans the data, not 0..5
  const std::string svg = line_plot_svg(plot);
  CHECK(count_of(svg, "class=\"series\"") == 2);
  CHECK(count_of(svg, "<polyline") == 3);  // ssgd one line; plan split by its NaN: 2 runs of 1 point
  CHECK(count_of(svg, "class=\"legend-item\"") == 2);
  CHECK_THROWS_WITH(loss_plot({{"a", {0.1}, {1, 2}}}, "t"), Catch::Contains("curve 'a' has 1 times and 2 losses"));
  CHECK_THROWS_WITH(loss_plot({{"a", {0.1}, {1}}, {"a", {0.1}, {2}}}, "t"), Catch::Contains("'a' is given twice"));
  CHECK_THROWS_WITH(loss_plot({{"a", {0.1}, {nan}}}, "t"), Catch::Contains("no curve has a finite loss"));
}

TEST_CASE("plot points: grouped by panel and series, sorted by x, on log-log axes", "[report]") {
  // Rows as a sweep writes them, out of order: 2 bandwidths x 2 strategies x 2 worker counts.
  const std::vector<PlotPoint> points = {{"10 Gbit/s", "dp", 64, 30},  {"1 Gbit/s", "ssgd", 64, 2},
                                         {"10 Gbit/s", "dp", 8, 20},   {"1 Gbit/s", "ssgd", 8, 1},
                                         {"10 Gbit/s", "ssgd", 8, 10}, {"1 Gbit/s", "dp", 8, 5},
                                         {"10 Gbit/s", "ssgd", 64, 15}, {"1 Gbit/s", "dp", 64, std::nan("")}};
  LinePlot plot{.title = "t", .x_label = "workers", .y_label = "samples/s", .log_x = true, .log_y = true};
  set_plot_points(plot, points);
  REQUIRE(plot.panels.size() == 2);
  CHECK(plot.panels[0].title == "10 Gbit/s");  // first seen first
  REQUIRE(plot.panels[0].series.size() == 2);
  CHECK(plot.panels[0].series[0].name == "dp");
  CHECK(plot.panels[0].series[0].x == std::vector<double>{8, 64});
  CHECK(plot.panels[0].series[0].y == std::vector<double>{20, 30});
  CHECK(std::isnan(plot.panels[1].series[1].y[1]));  // 1 Gbit/s dp at 64: the failed point
  const std::string svg = line_plot_svg(plot);
  CHECK(count_of(svg, "class=\"series\"") == 4);
  // y from 1 to 30 on a log axis: ticks 1, 10, 100.
  CHECK(svg.find(">100</text>") != std::string::npos);
  std::vector<PlotPoint> twice = points;
  twice.push_back({"1 Gbit/s", "ssgd", 8, 3});
  CHECK_THROWS_WITH(set_plot_points(plot, twice), Catch::Contains("two points at x = 8"));
  plot.panels[0].series[0].y[0] = 0;
  CHECK_THROWS_WITH(line_plot_svg(plot), Catch::Contains("y = 0 on a log axis"));
}

TEST_CASE("gantt chart: blocks equal the period model's times, derived by hand", "[report]") {
  const PlanPage page = make_plan_page(tiny_request());
  const GanttChart& chart = page.chart;
  // Backprop order head, hidden, embed: B = 0.001, 0.002, 0.003; F = 0.0006, U = 0.0003.
  // h = 0: head's sync starts at F + B_1 = 0.0016 and ends at 0.0046; backprop ends at 0.0036, so
  // wait = 0.001 and iteration = 0.0006 + 0.003 + 0.0003 + 0.001 = 0.0049.
  // h = 1: hidden 0.0026..0.0036, embed 0.0036..0.0041; wait 0.0005, iteration 0.0044.
  REQUIRE(chart.iteration_s.size() == 2);
  CHECK(chart.iteration_s[0] == Approx(0.0049).margin(1e-12));
  CHECK(chart.iteration_s[1] == Approx(0.0044).margin(1e-12));
  CHECK(chart.period_s == Approx(0.0093).margin(1e-12));
  REQUIRE(chart.link.size() == 3);
  CHECK(chart.link[0].label == "head");
  CHECK(chart.link[0].start_s == Approx(0.0016).margin(1e-12));
  CHECK(chart.link[0].end_s == Approx(0.0046).margin(1e-12));
  CHECK(chart.link[2].label == "embed");
  CHECK(chart.link[2].end_s == Approx(0.0041).margin(1e-12));
  // Per iteration: forward, 3 backward, wait, update.
  REQUIRE(chart.compute.size() == 12);
  CHECK(chart.compute[4].kind == GanttKind::kWait);
  CHECK(chart.compute[4].start_s == Approx(0.0036).margin(1e-12));
  CHECK(chart.compute[4].end_s == Approx(0.0046).margin(1e-12));

  // The same against the period model itself, to 1e-9: every sync event and every wait.
  const PeriodTiming& timing = page.model.timing;
  std::size_t k = 0;
  for (std::size_t h = 0; h < timing.syncs.size(); ++h)
    for (const SyncEvent& sync : timing.syncs[h]) {
      REQUIRE(k < chart.link.size());
      CHECK(std::fabs(chart.link[k].start_s - sync.start_s) <= 1e-9);
      CHECK(std::fabs(chart.link[k].end_s - sync.end_s) <= 1e-9);
      ++k;
    }
  for (const GanttBlock& block : chart.compute)
    if (block.kind == GanttKind::kWait)
      CHECK(std::fabs((block.end_s - block.start_s) - timing.wait_s[block.iteration]) <= 1e-9);
  CHECK(chart.lower_bound_s == page.model.lower_bound_s);
}

TEST_CASE("gantt svg: the data attributes read back as the chart's times", "[report]") {
  const PlanPage page = make_plan_page(tiny_request());
  // Read every block's kind, iteration and times back from the SVG text (an independent path
  // from the struct: the text the browser draws).
  const std::regex block(R"re(<rect class="block" data-kind="([a-z]+)" data-iteration="(\d+)" data-label="[^"]*" )re"
                         R"re(data-start-s="([^"]+)" data-end-s="([^"]+)")re");
  std::vector<GanttBlock> read;
  for (auto it = std::sregex_iterator(page.gantt.begin(), page.gantt.end(), block); it != std::sregex_iterator(); ++it)
    read.push_back({GanttKind::kForward, std::stoi((*it)[2]), (*it)[1], std::stod((*it)[3]), std::stod((*it)[4])});
  REQUIRE(read.size() == page.chart.compute.size() + page.chart.link.size());
  std::vector<GanttBlock> drawn = page.chart.compute;
  drawn.insert(drawn.end(), page.chart.link.begin(), page.chart.link.end());
  for (std::size_t i = 0; i < read.size(); ++i) {
    CHECK(read[i].label == to_string(drawn[i].kind));
    CHECK(read[i].iteration == drawn[i].iteration);
    CHECK(std::fabs(read[i].start_s - drawn[i].start_s) <= 1e-9);
    CHECK(std::fabs(read[i].end_s - drawn[i].end_s) <= 1e-9);
  }
  CHECK(count_of(page.gantt, "class=\"lower-bound\"") == 2);
  // Tooltips name a block's kind once ("forward forward", "wait wait"): 2
  // iterations, each with one forward, update and wait block titled "h = N, forward: ...";
  // backward and sync blocks keep kind and layer ("backward head").
  for (const char* doubled : {"forward forward", "update update", "wait wait", "backward backward"})
    CHECK(page.gantt.find(doubled) == std::string::npos);
  CHECK(count_of(page.gantt, ", forward: ") == 2);
  CHECK(count_of(page.gantt, ", wait: ") == 2);
  CHECK(count_of(page.gantt, "<title>h = 0, backward head: ") == 1);
}

TEST_CASE("gantt chart of a fused plan on the profile: one block per bucket", "[report]") {
  // A bucket fusion of head and hidden (the plan job's, alpha 0.2 ms, below every sync_s).
  PlanRequest plan_request = tiny_plan_request(1);
  plan_request.algorithm = "dp";
  plan_request.bucket_alpha_s = 0.0002;
  const PlanOutcome outcome = run_plan_job(plan_request);
  PlanPageRequest request = tiny_request();
  request.simulate.plan = outcome.plan;
  const PlanPage page = make_plan_page(request);
  REQUIRE(page.model.buckets);
  CHECK(page.chart.link.size() == allreduce_count(*page.model.buckets));
  CHECK(page.chart.period_s == Approx(outcome.timing.period_s).epsilon(1e-12));
}

TEST_CASE("gantt svg of a long period: 100 rows drawn, every iteration in the period bar", "[report]") {
  // H = 150 with S-SGD's every-layer-every-iteration (wfbp): 150 iterations, 3 syncs each.
  PlanPageRequest request = tiny_request();
  Plan plan = tiny_plan();
  plan.period = 150;
  for (LayerSchedule& layer : plan.layers) {
    layer.sync_iterations.clear();
    for (int h = 0; h < 150; ++h) layer.sync_iterations.push_back(h);
  }
  request.simulate.plan = plan;
  const PlanPage page = make_plan_page(request);
  CHECK(page.chart.link.size() == 450);
  CHECK(count_of(page.gantt, "data-kind=\"sync\"") == 300);  // 100 rows x 3 all-reduces
  CHECK(count_of(page.gantt, "class=\"period-iteration\"") == 150);
  CHECK(page.gantt.find("iterations 100 to 149 not drawn") != std::string::npos);
}

TEST_CASE("html page: escaped text, inline figures, checks", "[report]") {
  HtmlPage page{"a <b> & c", {{"s", {"p1 \"quoted\""}, {{"t", {"x", "y"}, {{"1", "<2>"}}}}, {{"fig", "<svg xmlns=\"http://www.w3.org/2000/svg\"></svg>"}}}}};
  const std::string html = html_page(page);
  CHECK(html.find("<title>a &lt;b&gt; &amp; c</title>") != std::string::npos);
  CHECK(html.find("<td>&lt;2&gt;</td>") != std::string::npos);
  CHECK(html.find("<figure>\n<svg xmlns") != std::string::npos);
  CHECK(html.find("<link") == std::string::npos);
  CHECK(html.find("<script") == std::string::npos);
  HtmlPage bad = page;
  bad.sections[0].tables[0].rows[0].push_back("extra");
  CHECK_THROWS_WITH(html_page(bad), Catch::StartsWith("tables: table 't'"));
  bad = page;
  bad.sections[0].figures[0].svg = "<svg><script>alert(1)</script></svg>";
  CHECK_THROWS_WITH(html_page(bad), Catch::Contains("without a network"));
  bad.sections[0].figures[0].svg = "<img src=\"x.png\">";
  CHECK_THROWS_WITH(html_page(bad), Catch::Contains("not an SVG document"));
  // In markup a network reference is refused: an attribute, a <style> body; as text (a layer named
  // "url(http://x)" in a <text>) it is only a name, and the page is written.
  bad.sections[0].figures[0].svg = "<svg><rect style=\"fill:url(http://x/p)\"/></svg>";
  CHECK_THROWS_WITH(html_page(bad), Catch::Contains("holds 'url(http' in its markup"));
  bad.sections[0].figures[0].svg = "<svg><style>rect{fill:url(http://x/p)}</style></svg>";
  CHECK_THROWS_WITH(html_page(bad), Catch::Contains("holds 'url(http' in its markup"));
  bad.sections[0].figures[0].svg = "<svg><a href=\"//x\">y</a></svg>";
  CHECK_THROWS_WITH(html_page(bad), Catch::Contains("holds 'href=\"//'"));
  HtmlPage named = page;
  named.sections[0].figures[0].svg = "<svg><text>url(http://x) href=\"http layer</text></svg>";
  CHECK(html_page(named).find("<text>url(http://x)") != std::string::npos);
  // Nor in a data-* attribute's value (the Gantt bars' data-label holds the layer's name), while
  // the same text in a style attribute is still refused.
  named.sections[0].figures[0].svg = "<svg><rect data-label=\"url(http://x) layer\" width=\"2\"/></svg>";
  CHECK(html_page(named).find("data-label=\"url(http://x) layer\"") != std::string::npos);
  named.sections[0].figures[0].svg = "<svg><rect data-label=\"a\" style=\"fill:url(http://x)\"/></svg>";
  CHECK_THROWS_WITH(html_page(named), Catch::Contains("holds 'url(http' in its markup"));
}

TEST_CASE("xml escaping and exact numbers", "[report]") {
  CHECK(xml_escape("a<b>&\"'") == "a&lt;b&gt;&amp;&quot;&#39;");
  CHECK(xml_escape(std::string("x\x01y")) == "x\xEF\xBF\xBDy");
  // A path's bytes that are not UTF-8 (0x9B, 0xFF), a C1 control (U+0085 as C2 85) and a sequence
  // cut at the end become U+FFFD each; characters stay (the helper's re-check: the page held them raw).
  CHECK(xml_escape(std::string("p\x9b\xc2\x85\xff\xc3\xa9\xe2\x82")) ==
        "p\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD\xc3\xa9\xEF\xBF\xBD");
  const double third = 1.0 / 3.0;
  CHECK(std::stod(exact_number(third)) == third);  // round trip, bit for bit
  CHECK(svg_coordinate(12.5) == "12.5");
  // Below 10,000 plain; above, a metric suffix: 1000, 20k, 160k, 1M, 1.5G.
  CHECK(tick_label(1000) == "1000");
  CHECK(tick_label(20000) == "20k");
  CHECK(tick_label(160000) == "160k");
  CHECK(tick_label(1e6) == "1M");
  CHECK(tick_label(1.5e9) == "1.5G");
  CHECK(tick_label(0.005) == "0.005");
  CHECK(svg_coordinate(-0.001) == "0");
}

TEST_CASE("report strategies: read back as plan_report wrote them, and checked against the plan", "[report]") {
  const PlanRequest plan_request = tiny_plan_request(2);
  const PlanOutcome outcome = run_plan_job(plan_request);
  const PlanReport written = plan_report(outcome, plan_request);
  const std::string path = (std::filesystem::temp_directory_path() / "syncplan_test_report_strategies.json").string();
  write_json_file_atomic(path, report_to_json(written));
  const std::vector<ReportStrategyRow> rows = read_report_strategies(path, outcome.plan);
  REQUIRE(rows.size() == written.strategies.size());
  for (std::size_t i = 0; i < rows.size(); ++i) {
    CHECK(rows[i].name == written.strategies[i].name);
    CHECK(rows[i].period_s == written.strategies[i].period_s);
    CHECK(rows[i].speedup_over_ssgd == written.strategies[i].speedup_over_ssgd);
  }
  Plan other = outcome.plan;
  other.period = 3;
  CHECK_THROWS_WITH(read_report_strategies(path, other), Catch::Contains("field 'period'"));
  Json tampered = report_to_json(written);
  tampered["strategies"]["ssgd"]["bogus"] = 1;
  write_json_file_atomic(path, tampered);
  CHECK_THROWS_WITH(read_report_strategies(path, outcome.plan), Catch::Contains("strategy 'ssgd'") && Catch::Contains("bogus"));
  std::remove(path.c_str());
}

// whatif --plot with nothing to draw names the cause a user can act on (the helper's new-user
// check: an all-zero profile with --batch 1 was told "give --batch", and "ssgd failed at every
// point" when every ssgd row was ok).
TEST_CASE("whatif plot: with no point to draw, the message names the real cause", "[report]") {
  using namespace syncplan;
  WhatifOutcome outcome;
  outcome.model = "zeros";
  WhatifRow row;
  row.workers = 2;
  row.strategy = "ssgd";
  row.batch_per_worker = 1;
  row.period_s = 0.0;  // an all-zero profile: samples/s and the speedup are not finite, so unset
  outcome.rows = {row};
  row.strategy = "best";
  outcome.rows.push_back(row);
  for (const WhatifMetric metric : {WhatifMetric::kThroughput, WhatifMetric::kSpeedup})
    CHECK_THROWS_WITH(whatif_plot(outcome, metric), Catch::Contains("the periods are 0 s") &&
                                                        !Catch::Contains("give --batch") && !Catch::Contains("ssgd failed"));
  // Without a batch (and a period above 0): the batch is what is missing.
  for (WhatifRow& each : outcome.rows) each.period_s = 1.0, each.batch_per_worker.reset();
  CHECK_THROWS_WITH(whatif_plot(outcome, WhatifMetric::kThroughput), Catch::Contains("give --batch"));
  // Every point failed.
  for (WhatifRow& each : outcome.rows) each.status = WhatifStatus::kError;
  CHECK_THROWS_WITH(whatif_plot(outcome, WhatifMetric::kSpeedup), Catch::Contains("every point failed"));
}
