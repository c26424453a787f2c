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

/// The memory period_trace and its writer need for `timing` (bytes): per event (forward, backward
/// per layer, update, each all-reduce; every iteration of the period) its JSON object and text,
/// about 1,600 bytes as the DES trace's (docs/des.md section 5, "Memory"), plus the layer names.
/// The helper's re-check: 200 layers at H = 10,000 (4 million events) took 6.4 GB and a ulimit
/// ended it with std::bad_alloc; simulate refuses such a trace first.
double period_trace_memory_bytes(const BackpropTimes& times, const PeriodTiming& timing);

}  // namespace syncplan
