// Writing a rank's measured events in the DES's Chrome-trace schema (runtime/trace.hpp).
#include "runtime/trace.hpp"

#include "core/units.hpp"

namespace syncplan {

namespace {

const char* category(EventKind kind) {
  switch (kind) {
    case EventKind::kForward: return "forward";
    case EventKind::kBackward: return "backward";
    case EventKind::kUpdate: return "update";
    case EventKind::kAllreduce: return "allreduce";
    case EventKind::kCheckpoint: return "checkpoint";
  }
  return "";
}

}  // namespace

std::string allreduce_event_name(const std::vector<std::size_t>& layers, const std::vector<std::string>& layer_names) {
  std::string name = "all-reduce " + layer_names.at(layers.front());
  if (layers.size() > 1)
    name += " .. " + layer_names.at(layers.back()) + " (" + std::to_string(layers.size()) + " layers)";
  return name;
}

Json measured_trace_events(const MeasuredTrace& trace, int rank, const std::vector<std::string>& layer_names) {
  Json events = Json::array();
  events.push_back(Json{{"name", "process_name"}, {"ph", "M"}, {"pid", rank}, {"args", {{"name", "rank " + std::to_string(rank)}}}});
  events.push_back(Json{{"name", "thread_name"}, {"ph", "M"}, {"pid", rank}, {"tid", 0}, {"args", {{"name", "compute"}}}});
  events.push_back(Json{{"name", "thread_name"}, {"ph", "M"}, {"pid", rank}, {"tid", 1}, {"args", {{"name", "comm stream 0"}}}});
  for (const MeasuredEvent& event : trace.events()) {
    Json args{{"iteration", event.iteration}};
    std::string name;
    int tid = 0;
    switch (event.kind) {
      case EventKind::kForward:
      case EventKind::kBackward:
        name = std::string(category(event.kind)) + " " + layer_names.at(event.layers.at(0));
        args["layer"] = layer_names.at(event.layers.at(0));
        break;
      case EventKind::kUpdate: name = "update"; break;
      case EventKind::kCheckpoint:
        name = "checkpoint";
        args = Json{{"after_iteration", event.iteration}};
        break;
      case EventKind::kAllreduce: {
        name = allreduce_event_name(event.layers, layer_names);
        tid = 1;
        if (event.layers.size() == 1) {
          args["layer"] = layer_names.at(event.layers.front());
        } else {
          Json names = Json::array();
          for (const std::size_t layer : event.layers) names.push_back(layer_names.at(layer));
          args["layers"] = std::move(names);
        }
        args["bytes"] = event.bytes;
        if (event.delay > 0) {
          args["delay"] = event.delay;
          args["applied_iteration"] = event.iteration + event.delay;
        }
        break;
      }
    }
    events.push_back(Json{{"name", std::move(name)}, {"cat", category(event.kind)}, {"ph", "X"}, {"pid", rank},
                          {"tid", tid}, {"ts", units::seconds_to_us(event.start_s)},
                          {"dur", units::seconds_to_us(event.duration_s)}, {"args", std::move(args)}});
  }
  return events;
}

Json measured_trace_document(Json events, Json about) {
  return Json{{"traceEvents", std::move(events)}, {"displayTimeUnit", "ms"}, {"syncplan", std::move(about)}};
}

}  // namespace syncplan
