// Bubble filling: extra syncs placed in link-idle time that delay nothing already planned
// (DreamDDP's fill-in step, generalized; docs/time-model.md section 8).
#pragma once

#include "simulator/period_model.hpp"

namespace syncplan {

/// Adds extra syncs to `assignment` in place and returns how many. For each iteration, candidates
/// are the layers it does not sync yet, fewest syncs per period first, then in backprop order; a
/// candidate is added when, with it, every sync already planned in that iteration starts exactly
/// when it did and the iteration's wait does not grow. So the period is unchanged and layers are
/// averaged more often. O(H L^2).
int fill_bubbles(const BackpropTimes& times, Assignment& assignment);

}  // namespace syncplan
