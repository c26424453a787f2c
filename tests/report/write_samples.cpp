// Writes a sample line plot (a what-if shape: 3 strategies x 2 bandwidths over workers on a log
// axis, one failed point) as SVG and an HTML page holding it, for check_pages.py and the
// headless-Chromium rendering test. usage: write_samples FOLDER
#include "report/html.hpp"
#include "report/svg_plot.hpp"

#include <cmath>
#include <fstream>
#include <iostream>

using namespace syncplan::report;

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: write_samples FOLDER\n";
    return 2;
  }
  const std::string folder = argv[1];
  const std::vector<double> workers = {8, 64, 512, 4096, 100000};
  LinePlot plot{.title = "Throughput against workers (sample rows)", .x_label = "workers (log scale)",
                .y_label = "throughput (samples/s)", .log_x = true, .columns = 2};
  for (const double gbps : {1.0, 10.0}) {
    PlotPanel panel{std::to_string(static_cast<int>(gbps)) + " Gbit/s", {}};
    for (const auto& [name, efficiency] : {std::pair{"ssgd", 0.3}, std::pair{"flsgd", 0.7}, std::pair{"dp", 0.9}}) {
      PlotSeries series{name, workers, {}};
      for (const double n : workers) series.y.push_back(n * 10 * efficiency * gbps / (gbps + std::log10(n)));
      if (std::string(name) == "dp" && gbps == 1.0) series.y[2] = std::nan("");  // a failed point: a gap
      panel.series.push_back(series);
    }
    plot.panels.push_back(panel);
  }
  const std::string svg = line_plot_svg(plot);
  HtmlPage page{"Sample what-if page",
                {{"Rows", {"Three strategies at two bandwidths."}, {{"points", {"workers", "Gbit/s"}, {{"8", "1"}, {"64", "10"}}}},
                  {{"throughput", svg}}}}};
  std::ofstream(folder + "/line_plot.svg") << svg;
  std::ofstream(folder + "/plot_page.html") << html_page(page);
  return 0;
}
