// Lower bounds on the period of any plan under the period model (SPEC section 5).
#pragma once

#include "simulator/period_model.hpp"

namespace syncplan {

/// SPEC section 5's bound, in seconds:
///   H (F + B_L + U) + max( sum c - H (B_L - b_1), max_j (B_j + c_j - B_L), 0 ).
/// Per iteration the link can hide at most B_L - b_1 of syncing (no gradient is ready before b_1),
/// and layer j, synced at least once per period, cannot finish before B_j + c_j.
/// Holds for every plan, including plans that sync a layer more than once (docs/time-model.md).
/// Throws InputError when period < 1.
double spec_lower_bound_s(const BackpropTimes& times, int period);

/// A bound at least as tight as SPEC section 5's (docs/time-model.md section 6, "suffix bound"), s:
///   H (F + B_L + U) + max( max over t in {B_j} of [ sum_{j: B_j >= t} c_j - H (B_L - t) ],
///                          sum_j max(0, B_j + c_j - B_L),  0 ).
/// Syncs of layers ready at or after t cannot start before t, so each iteration hides at most
/// B_L - t of them; and two layers overflowing in one iteration overflow by at least the sum of
/// their own overflows. O(L). Throws InputError when period < 1.
double suffix_lower_bound_s(const BackpropTimes& times, int period);

/// The tightest bound this module knows (currently suffix_lower_bound_s), s.
double best_lower_bound_s(const BackpropTimes& times, int period);

/// The bound for plans whose layers may be fused into buckets with all-reduce start-up time
/// alpha_s (s), docs/time-model.md section 12: the larger of best_lower_bound_s on the excess times
/// max(c_j - alpha, 0) (excess_sync_times) and
///   H (F + B_L + U) + max( max_j (B_j + c_j - B_L),
///                          max over t of [ sum_{B_j >= t} e_j + u (m_t - (B_L - t)) ], 0 )
/// with m_t the least min(c_j, alpha) among layers ready at or after t and u = 1 when
/// m_t >= B_L - t, else H. Holds for fused and unfused plans. With a measured link in `times`
/// (times.link): only best_lower_bound_s of excess_sync_times. Throws InputError when period < 1.
double fused_lower_bound_s(const BackpropTimes& times, int period, double alpha_s);

/// A relative gap below the bound smaller than this is rounding (the plan and the bound sum the
/// same times in different orders: -1.1e-16 on GPT-2); a larger one would be a wrong bound.
inline constexpr double kGapRoundingRelative = 1e-9;

/// A plan's gap to a lower bound, period_s / bound_s - 1 (a fraction >= 0; 0 when bound_s is 0).
/// A gap within kGapRoundingRelative of 0 (either side) is rounding and reads 0, so the plan meets
/// its bound (proven optimal); a more negative one means the bound
/// does not hold (a bug, since every bound holds for every plan): throws InternalError naming both.
double gap_to_lower_bound(double period_s, double bound_s);

/// The link limit of docs/time-model.md section 13, the bound for delayed-averaging plans, s:
///   max( H (F + u_B + B_L + U),  F + u_B + B_first + sum_j c_j + U )
/// with B_first the least B_j among layers with c_j > 0 (the second term dropped when every
/// c_j = 0): every iteration computes, and the one FIFO link carries every sync at least once
/// between the first synced gradient of iteration 0 and the last iteration's step. Holds for every
/// unfused plan, delayed or not (a fused bucket costs less than its layers' c_j together, so a
/// fused plan may beat it). Throws FieldError "period: ..." when period < 1.
double link_limit_s(const BackpropTimes& times, int period);

/// The bound of plans with delays at most max_delay (TAU >= 0; docs/time-model.md section 13), s:
/// the larger of link_limit_s and
///   H C + max( 0, max_j (B_j + c_j - B_L - min(TAU, H - 1) C) ),   C = F + u_B + B_L + U,
/// over layers with c_j > 0: layer j's sync ends no earlier than B_j + c_j after its iteration's
/// backprop starts, and the step that applies it, at most TAU iterations later, starts
/// B_L + d C + (the waits in between) after that. Throws FieldError "period: ..." when period < 1.
double delayed_lower_bound_s(const BackpropTimes& times, int period, int max_delay);

}  // namespace syncplan
