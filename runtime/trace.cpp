// Writing a rank's measured events with the simulator's timeline writer (runtime/trace.hpp).
#include "runtime/trace.hpp"

namespace syncplan {

Json measured_trace_events(const MeasuredTrace& trace, int rank, const std::vector<std::string>& layer_names) {
  Json events = Json::array();
  append_timeline_tracks(events, rank, "rank " + std::to_string(rank), 1);
  for (const MeasuredEvent& event : trace.events()) {
    TimelineSlice slice{.kind = event.kind, .pid = rank, .tid = event.kind == EventKind::kAllreduce ? 1 : 0,
                        .start_s = event.start_s, .duration_s = event.duration_s, .iteration = event.iteration};
    for (const std::size_t layer : event.layers) slice.layers.push_back(layer_names.at(layer));
    if (event.kind == EventKind::kAllreduce) slice.bytes = static_cast<double>(event.bytes);
    slice.delay = event.delay;
    events.push_back(timeline_slice_json(slice));
  }
  return events;
}

Json measured_trace_document(Json events, Json about) {
  return Json{{"traceEvents", std::move(events)}, {"displayTimeUnit", "ms"}, {"syncplan", std::move(about)}};
}

}  // namespace syncplan
