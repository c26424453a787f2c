// Chrome trace (Trace Event Format, opens in Perfetto) of one period under the period model.
#pragma once

#include "core/json_io.hpp"
#include "simulator/period_model.hpp"

namespace syncplan {

/// The trace of `timing` for one worker: pid 0; tid 0 = compute stream (forward, backward per
/// layer in backprop order, update), tid 1 = link (one "X" event per all-reduce, args: layer,
/// iteration; none for a layer without an all-reduce of its own, has_allreduce: frozen, tied or
/// sync time 0). `ts`/`dur` are microseconds from the period's start.
Json period_trace(const BackpropTimes& times, const PeriodTiming& timing);

}  // namespace syncplan
