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

}  // namespace syncplan
