// The period time model of SPEC section 5 (DreamDDP's semantics, docs/time-model.md): one
// idealized worker, a first-in-first-out link, syncs overlapped with backprop.
#pragma once

#include "core/link.hpp"
#include "core/plan.hpp"
#include "core/profile.hpp"
#include "simulator/layer_times.hpp"

#include <memory>
#include <span>
#include <string>
#include <vector>

namespace syncplan {

class AllreduceModel;

/// Per-layer times in backprop order: index 0 is the output-most layer (SPEC 5's j = 1).
struct BackpropTimes {
  std::vector<std::string> names;  ///< L layer names, backprop order
  std::vector<double> backward_s;  ///< b_j: backward compute of layer j (s)
  std::vector<double> sync_s;      ///< c_j: one all-reduce of layer j's parameters (s)
  std::vector<double> ready_s;     ///< B_j = b_1 + ... + b_j: when j's gradient is ready (s after backprop starts)
  double forward_total_s = 0;      ///< F: sum of known forward times plus the unattributed forward (s)
  /// Backward compute outside every layer (the profile's unattributed backward_s, s), charged
  /// serially before the first layer's backward (the loss's backward runs there): it delays every
  /// B_j alike and hides no sync (docs/time-model.md, "Unattributed compute").
  double unattributed_backward_s = 0;
  double update_total_s = 0;       ///< U: sum of known update times (s), 0 when unknown
  /// Tied parameters (profile `tied_to`): carrier[j] is the layer whose sync averages layer j's
  /// parameters: the latest-ready layer of j's tie group (its gradient is complete only then), j
  /// itself when j is not tied. Only carriers have a sync time; the others' c_j is 0.
  std::vector<int> carrier;
  /// Set when a measured link times the all-reduces (--link; sync_times.hpp charge_buckets_by_link):
  /// a fused bucket costs link->time_s(sum of its layers' sync_bytes) instead of fused_sync_s
  /// (docs/link.md). Null: fused_sync_s with the bucket alpha.
  std::shared_ptr<const LinkModel> link;
  /// Set when a cluster's "auto" all-reduce times the syncs (AllreduceModel::piecewise(); set by
  /// backprop_times_for_des): a fused bucket costs allreduce->time_s(sum of its layers' sync_bytes),
  /// the cheapest algorithm for the bucket's size, as the DES charges it (docs/collectives.md 6).
  std::shared_ptr<const AllreduceModel> allreduce;
  /// With `link` or `allreduce`: bytes of each c_j's all-reduce (after the tie rule).
  std::vector<double> sync_bytes;

  std::size_t size() const { return names.size(); }
  /// True when a fused bucket's time is a function of its summed bytes (`link` or `allreduce` set).
  bool bucket_time_by_bytes() const { return link != nullptr || allreduce != nullptr; }
  /// That function: link->time_s or allreduce->time_s of `bytes` (s). Only when bucket_time_by_bytes().
  double bucket_time_s(double bytes) const;
  /// A slope under that function: bucket_time_s(n) >= this x n for every n >= 0 (s/byte;
  /// LinkModel::least_s_per_byte, AllreduceModel::least_s_per_byte). Only when bucket_time_by_bytes().
  double bucket_least_s_per_byte() const;
  /// B_L: the layers' backprop (s after the first layer's backward starts; SPEC 5's B_L).
  double backprop_s() const { return ready_s.empty() ? 0.0 : ready_s.back(); }
  /// When the first layer's backward starts, in s after the iteration starts: F (the unattributed
  /// forward included) plus the unattributed backward compute before it.
  double backward_start_s() const { return forward_total_s + unattributed_backward_s; }
  /// F + u_B + B_L + U (the unattributed compute included): an iteration without any exposed sync (s).
  double compute_s() const { return backward_start_s() + backprop_s() + update_total_s; }
  /// Sum of c_j over all layers (s).
  double sync_total_s() const;
  /// Backprop index of the layer at forward index `forward_index`.
  std::size_t backprop_index(std::size_t forward_index) const { return size() - 1 - forward_index; }
};

/// The one builder of BackpropTimes (for the period model and for planning on the DES's times):
/// names, b_j, B_j, F, U and the tie carriers from `layers`, and c_j = sync_s[j] (s, backprop order,
/// already after the tied-layer rule). Throws InputError "ORIGIN: field 'layers': the times add up to
/// more than a double can hold" when the sums are not finite.
BackpropTimes backprop_times(const DesLayers& layers, const std::vector<double>& sync_s, const std::string& origin);

/// BackpropTimes from a profile's own sync_s (des_layers, then the builder above). Every layer needs
/// `backward_s` and `sync_s`; a null one throws InputError "ORIGIN: layer 'NAME': field
/// 'backward_s' is null; the period model needs it".
BackpropTimes backprop_times(const Profile& profile, const std::string& origin);

/// Which layers sync in each iteration of a period: iterations[h] holds backprop indices,
/// ascending. A layer may appear in several iterations.
struct Assignment {
  std::vector<std::vector<int>> iterations;  ///< H entries (H = period)
  /// Delayed averaging (docs/time-model.md section 13): empty (every delay 0), or H entries with
  /// delays[h][i] the delay d of the sync of iterations[h][i] (h + d <= H - 1).
  std::vector<std::vector<int>> delays = {};
  int period() const { return static_cast<int>(iterations.size()); }
  /// The delay of the i-th sync of iteration h (0 when delays is empty).
  int delay(int h, std::size_t i) const { return delays.empty() ? 0 : delays.at(h).at(i); }
  /// Whether any sync has a non-zero delay.
  bool delayed() const;
};

/// One all-reduce on the timeline, in seconds from the start of its iteration: the iteration it
/// started in (for a delayed sync, docs/time-model.md section 13, end_s may exceed that
/// iteration's length: the sync runs on into later iterations).
struct SyncEvent {
  int layer = 0;        ///< backprop index
  double start_s = 0;   ///< when the all-reduce starts (s from the start of its iteration)
  double end_s = 0;     ///< when it ends (s from the start of the iteration it started in)
  std::vector<int> bucket;  ///< a fused bucket's layers (backprop order; `layer` is its last); empty: one layer
};

/// The timing of one period, as SPEC section 5 defines it (section 13's rule for a delayed
/// assignment: time_assignment).
struct PeriodTiming {
  double period_s = 0;                        ///< sum of iteration_s (s)
  std::vector<double> iteration_s;            ///< H entries: F + B_L + U + wait_h (s)
  std::vector<double> wait_s;                 ///< H entries: exposed sync time wait_h (s)
  /// H entries: the all-reduces started in each iteration, times from that iteration's start
  /// (a delayed sync's end_s may exceed its iteration_s: it ends in a later iteration).
  std::vector<std::vector<SyncEvent>> syncs;
  std::vector<double> update_start_s;         ///< H entries: when the optimizer update starts (s from iteration start)

  double total_wait_s() const;
  /// Appends an iteration whose syncs (`events`) overlap backprop and end at `link_end_s` (s after
  /// backprop starts): wait = max(0, link_end_s - B_L), iteration = F + B_L + U + wait (SPEC 5).
  void add_overlapped_iteration(const BackpropTimes& times, double link_end_s, std::vector<SyncEvent> events);
};

/// End of the last sync of `layers` (ascending backprop indices) on a FIFO link that starts each
/// sync at max(B_j, end of the previous sync), in seconds after backprop starts; 0 when empty.
/// SPEC section 5, first rule.
double link_end_s(const BackpropTimes& times, std::span<const int> layers);

/// Throws InputError "ORIGIN: field 'layers': the times of H iterations add up to more than a double
/// can hold" unless H x (compute + every sync) is finite: no strategy's period of H iterations
/// exceeds that (S-SGD without overlap), so every period timed afterwards is a finite number.
void require_finite_periods(const BackpropTimes& times, int period, const std::string& origin);

/// wait_h = max(0, link_end_s - B_L) for one iteration (SPEC section 5).
double iteration_wait_s(const BackpropTimes& times, std::span<const int> layers);

/// Times a whole assignment under SPEC section 5; one with a non-zero delay (assignment.delayed())
/// under docs/time-model.md section 13 (time_delayed). Throws InternalError on an index out of range.
PeriodTiming time_assignment(const BackpropTimes& times, const Assignment& assignment);

/// Section 13's timing of an assignment with delays (docs/time-model.md section 13): one FIFO link
/// across the period, syncs in the order (h ascending, then backprop index), each starting at
/// max(A_h + B_j, end of the previous sync) with A_h = T_h + F + u_B; the step of iteration k starts
/// at update_k = max(A_k + B_L, end of every sync applied at k, i.e. with h + d = k);
/// wait_k = update_k - (A_k + B_L), T_(k+1) = update_k + U. Empty delays mean every d = 0 (then it
/// equals section 2's timing up to rounding; time_assignment takes section 2's own code for that).
/// Throws InternalError when delays do not match iterations in shape, or a delay is negative or
/// has h + d > H - 1 (a plan's delays are checked as InputError when it is read).
PeriodTiming time_delayed(const BackpropTimes& times, const Assignment& assignment);

/// The assignment's syncs with the largest delay section 13 allows under max_delay (TAU >= 0):
/// d = min(TAU, H - 1 - h) for every sync of iteration h (delays of `assignment` replaced).
Assignment with_max_delays(Assignment assignment, int max_delay);

/// Section 13's choice of delays: times `assignment` with the largest delays (with_max_delays),
/// then gives each sync the smallest d whose step, in that schedule, starts at or after the sync's
/// end (update_(h+d) >= end). The period and every iteration's timing equal the largest delays'
/// (docs/time-model.md section 13, "Choosing the delays"), and lowering any delay by 1 would add
/// wait to the iteration it then lands in. Delays of `assignment` are ignored. max_delay >= 0
/// (InternalError otherwise).
Assignment choose_delays(const BackpropTimes& times, Assignment assignment, int max_delay);

/// Converts a plan (checked against the same profile) to an assignment, and back.
/// Tied layers (times.carrier) must sync in their carrier's iterations: otherwise throws
/// InputError naming `origin` (the plan file) and both layers.
Assignment assignment_from_plan(const Plan& plan, const BackpropTimes& times, const std::string& origin = "plan");

/// Moves every tied layer to its carrier's iterations (where its parameters are synced), so that
/// an assignment from any planner lists tied layers where they really sync (docs/time-model.md 11).
void align_tied_layers(const BackpropTimes& times, Assignment& assignment);
/// `layers` of the result follow `profile`'s order; `predicted` is left empty.
Plan plan_from_assignment(const Assignment& assignment, const Profile& profile,
                          const BackpropTimes& times, const std::string& algorithm);

/// Throws FieldError "period: must be >= 1, got N" when period < 1, and "period: at most 10000,
/// got N" above kMaxPeriod (every iteration is stored and timed).
void require_valid_period(long long period);

/// The timing of a strategy whose syncs run after compute with no overlap: in each iteration h
/// with after_compute[h], every layer syncs back to back after backprop (`after_update` false) or
/// after the update (`after_update` true).
PeriodTiming time_unoverlapped(const BackpropTimes& times, const std::vector<bool>& after_compute,
                               bool after_update);

/// The plan's `predicted` block for `timing` (lower bound given separately).
PlanPrediction prediction_from_timing(const PeriodTiming& timing, double lower_bound_period_s);

}  // namespace syncplan
