// Loss curves as a line plot (report/loss_plot.hpp).
#include "report/loss_plot.hpp"

#include "core/field_error.hpp"

#include <cmath>
#include <set>

namespace syncplan::report {

LinePlot loss_plot(const std::vector<LossCurve>& curves, const std::string& title) {
  LinePlot plot{.title = title, .x_label = "wall-clock time (s)", .y_label = "loss", .log_x = false,
                .y_from_zero = false, .columns = 1};
  PlotPanel panel{"loss against wall-clock time", {}};
  std::set<std::string> names;
  bool any_point = false;
  for (const LossCurve& curve : curves) {
    if (curve.time_s.size() != curve.loss.size())
      throw FieldError("loss", "loss: curve '" + curve.name + "' has " + std::to_string(curve.time_s.size()) +
                                   " times and " + std::to_string(curve.loss.size()) + " losses");
    if (!names.insert(curve.name).second) throw FieldError("loss", "loss: curve '" + curve.name + "' is given twice");
    for (std::size_t i = 0; i < curve.loss.size(); ++i)
      any_point = any_point || (std::isfinite(curve.loss[i]) && std::isfinite(curve.time_s[i]));
    panel.series.push_back({curve.name, curve.time_s, curve.loss});
  }
  if (!any_point) throw FieldError("loss", "loss: no curve has a finite loss to draw");
  plot.panels.push_back(std::move(panel));
  return plot;
}

}  // namespace syncplan::report
