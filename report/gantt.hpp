// A plan's period as a Gantt chart: one row per iteration h, the compute lane (forward, each
// layer's backward, update) above the link lane (each all-reduce or fused bucket), waits
// highlighted, the lower bound marked; times are the period model's (SPEC section 5).
#pragma once

#include "simulator/period_model.hpp"

#include <string>
#include <vector>

namespace syncplan::report {

/// What a block of the chart stands for.
enum class GanttKind {
  kForward,   ///< the iteration's forward pass, one block (F, the unattributed forward included)
  kBackward,  ///< one layer's backward compute b_j, or the unattributed backward before the first layer
  kUpdate,    ///< the optimizer update, one block (U)
  kWait,      ///< exposed sync time wait_h: compute waits for the link
  kSync,      ///< one all-reduce on the link (a layer, or a fused bucket)
};

/// "forward", "backward", "update", "wait" or "sync" (the SVG's data-kind).
const char* to_string(GanttKind kind);

/// One block, in seconds from the start of its iteration.
struct GanttBlock {
  GanttKind kind = GanttKind::kBackward;
  int iteration = 0;     ///< h, 0..H-1
  std::string label;     ///< layer name; a bucket's layers joined by " + "; "forward", "update", "wait"
  double start_s = 0;    ///< s from the iteration's start
  double end_s = 0;      ///< s from the iteration's start, >= start_s
};

/// The chart's content: what gantt_svg draws, and what tests compare with the period model.
struct GanttChart {
  std::string title;
  double period_s = 0;                  ///< sum of iteration_s (s)
  double lower_bound_s = 0;             ///< lower bound on any plan's period (s)
  std::vector<double> iteration_s;      ///< H entries (s)
  std::vector<double> wait_s;           ///< H entries (s)
  std::vector<GanttBlock> compute;      ///< the compute lane, iteration by iteration, in time order
  std::vector<GanttBlock> link;         ///< the link lane: timing.syncs in order
};

/// The chart of `timing` (a period-model timing of `times`, e.g. PeriodModelOutcome's): per
/// iteration h a forward block [0, F], the unattributed backward [F, F + u_B] when non-zero, each
/// layer's backward [F + u_B + B_{j-1}, F + u_B + B_j] (backprop order), the wait
/// [F + u_B + B_L, update start] when wait_h > 0 (after the update for a strategy that syncs after
/// it), the update [update start, update start + U]; and each SyncEvent as [start_s, end_s].
/// Blocks of zero length (a tied layer's sync, unknown forward) are left out.
GanttChart gantt_chart(const BackpropTimes& times, const PeriodTiming& timing, double lower_bound_s,
                       std::string title);

/// The chart as one SVG document (no XML declaration; inlinable in HTML): an iteration row of two
/// lanes per h (the first 100 iterations; a note says which are not drawn) on a shared time axis (s from the iteration's start), a dashed line at the lower
/// bound's mean iteration (lower_bound_s / H), and below them the whole period as one bar (each
/// iteration's compute and wait) with the lower bound marked on it. Every block is a `<rect
/// class="block">` with data-kind, data-iteration, data-label, data-start-s and data-end-s (exact
/// decimals: exact_number) and a `<title>` tooltip.
std::string gantt_svg(const GanttChart& chart);

}  // namespace syncplan::report
