// Loss curves of training runs: loss against wall-clock time, one line per run (`syncplan report
// --loss`, docs/report.md section 4), drawn by report/svg_plot.hpp.
#pragma once

#include "report/svg_plot.hpp"

#include <string>
#include <vector>

namespace syncplan::report {

/// One run's loss curve: time_s[i] is the wall-clock time (s, from the start of the run's first
/// logged iteration) at the end of iteration i, loss[i] the loss logged for it (NaN where it is not
/// known: the line has a gap there). time_s and loss have one length.
struct LossCurve {
  std::string name;  ///< legend text, e.g. "ssgd" or "plan"
  std::vector<double> time_s;
  std::vector<double> loss;
};

/// The curves as one panel: x "wall-clock time (s)" (linear, from 0), y "loss" (the data's range,
/// not from 0), one series per curve in the order given. Throws FieldError "loss: ..." naming the
/// curve when time_s and loss differ in length, a name is given twice, or no curve has a finite
/// point (nothing to draw); line_plot_svg's own checks apply to the result.
LinePlot loss_plot(const std::vector<LossCurve>& curves, const std::string& title);

}  // namespace syncplan::report
