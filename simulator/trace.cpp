// Period-model timelines as Chrome traces ("traceEvents", "ph": "X", microseconds).
#include "simulator/trace.hpp"

#include "simulator/bucket_fusion.hpp"

#include "core/units.hpp"

namespace syncplan {

namespace {
constexpr int kComputeStream = 0;
constexpr int kLinkStream = 1;

Json complete_event(const std::string& name, const char* category, int stream, double start_s,
                    double duration_s, Json args) {
  return Json{{"name", name},
              {"cat", category},
              {"ph", "X"},
              {"pid", 0},
              {"tid", stream},
              {"ts", units::seconds_to_us(start_s)},
              {"dur", units::seconds_to_us(duration_s)},
              {"args", std::move(args)}};
}

Json thread_name(int stream, const char* name) {
  return Json{{"name", "thread_name"}, {"ph", "M"}, {"pid", 0}, {"tid", stream},
              {"args", {{"name", name}}}};
}
}  // namespace

const char* event_category(EventKind kind) {
  switch (kind) {
    case EventKind::kForward: return "forward";
    case EventKind::kBackward: return "backward";
    case EventKind::kUpdate: return "update";
    case EventKind::kAllreduce: return "allreduce";
    case EventKind::kCheckpoint: return "checkpoint";
  }
  return "";
}

std::string timeline_slice_name(EventKind kind, const std::vector<std::string>& layers) {
  switch (kind) {
    case EventKind::kForward:
    case EventKind::kBackward:
      return std::string(event_category(kind)) + (layers.empty() ? " (unattributed)" : " " + layers.front());
    case EventKind::kAllreduce: {
      std::string name = "all-reduce " + layers.at(0);
      if (layers.size() > 1) name += " .. " + layers.back() + " (" + std::to_string(layers.size()) + " layers)";
      return name;
    }
    case EventKind::kUpdate:
    case EventKind::kCheckpoint: return event_category(kind);
  }
  return "";
}

Json timeline_slice_json(const TimelineSlice& slice) {
  Json args = slice.kind == EventKind::kCheckpoint ? Json{{"after_iteration", slice.iteration}}
                                                   : Json{{"iteration", slice.iteration}};
  if (slice.layers.size() == 1) args["layer"] = slice.layers.front();
  else if (slice.layers.size() > 1) args["layers"] = slice.layers;
  if (slice.bytes) args["bytes"] = *slice.bytes;
  if (slice.delay > 0) {
    args["delay"] = slice.delay;
    args["applied_iteration"] = slice.iteration + slice.delay;
  }
  return Json{{"name", timeline_slice_name(slice.kind, slice.layers)}, {"cat", event_category(slice.kind)},
              {"ph", "X"}, {"pid", slice.pid}, {"tid", slice.tid}, {"ts", units::seconds_to_us(slice.start_s)},
              {"dur", units::seconds_to_us(slice.duration_s)}, {"args", std::move(args)}};
}

void append_timeline_tracks(Json& events, int pid, const std::string& process, int comm_streams) {
  events.push_back(Json{{"name", "process_name"}, {"ph", "M"}, {"pid", pid}, {"args", {{"name", process}}}});
  events.push_back(Json{{"name", "thread_name"}, {"ph", "M"}, {"pid", pid}, {"tid", 0}, {"args", {{"name", "compute"}}}});
  for (int s = 0; s < comm_streams; ++s)
    events.push_back(Json{{"name", "thread_name"}, {"ph", "M"}, {"pid", pid}, {"tid", 1 + s},
                          {"args", {{"name", "comm stream " + std::to_string(s)}}}});
}

Json period_trace(const BackpropTimes& times, const PeriodTiming& timing) {
  Json events = Json::array();
  events.push_back(Json{{"name", "process_name"}, {"ph", "M"}, {"pid", 0},
                        {"args", {{"name", "worker 0"}}}});
  events.push_back(thread_name(kComputeStream, "compute"));
  events.push_back(thread_name(kLinkStream, "link (all-reduce)"));
  double iteration_start = 0;
  for (std::size_t h = 0; h < timing.iteration_s.size(); ++h) {
    const Json iteration = static_cast<int>(h);
    const std::size_t events_before = events.size();
    if (times.forward_total_s > 0)
      events.push_back(complete_event("forward", "forward", kComputeStream, iteration_start,
                                      times.forward_total_s, {{"iteration", iteration}}));
    if (times.unattributed_backward_s > 0)
      events.push_back(complete_event("backward (unattributed)", "backward", kComputeStream,
                                      iteration_start + times.forward_total_s, times.unattributed_backward_s,
                                      {{"iteration", iteration}}));
    const double backward_start = iteration_start + times.backward_start_s();
    for (std::size_t j = 0; j < times.size(); ++j) {
      if (times.backward_s[j] <= 0) continue;
      const double ready_before = j == 0 ? 0.0 : times.ready_s[j - 1];
      events.push_back(complete_event("backward " + times.names[j], "backward", kComputeStream,
                                      backward_start + ready_before, times.backward_s[j],
                                      {{"layer", times.names[j]}, {"iteration", iteration}}));
    }
    if (times.update_total_s > 0)
      events.push_back(complete_event("update", "update", kComputeStream,
                                      iteration_start + timing.update_start_s[h],
                                      times.update_total_s, {{"iteration", iteration}}));
    for (const SyncEvent& sync : timing.syncs[h]) {
      // A layer with no all-reduce of its own (frozen, tied, or sync time 0) issues none: no event.
      if (sync.bucket.empty() && !has_allreduce(times, sync.layer)) continue;
      // A delayed sync (docs/time-model.md section 13) runs past its iteration's end: args.delay is
      // the number of iteration ends it passes, so that compare does not stretch its iteration to
      // it (docs/formats.md "Measured trace"; the helper's re-check: the trace of a delayed plan
      // read back "iteration 1 ends before the previous one").
      int delay = 0;
      for (double end_of = timing.iteration_s[h]; sync.end_s > end_of && delay < static_cast<int>(timing.iteration_s.size());)
        end_of += timing.iteration_s[(h + ++delay) % timing.iteration_s.size()];
      if (sync.bucket.empty()) {
        Json args{{"layer", times.names[sync.layer]}, {"iteration", iteration}};
        if (delay > 0) args["delay"] = delay;
        events.push_back(complete_event("all-reduce " + times.names[sync.layer], "sync", kLinkStream,
                                        iteration_start + sync.start_s, sync.end_s - sync.start_s, std::move(args)));
        continue;
      }
      Json names = Json::array();
      for (const int j : sync.bucket) names.push_back(times.names[j]);
      events.push_back(complete_event("all-reduce bucket of " + std::to_string(sync.bucket.size()) + " layers, " +
                                          times.names[sync.bucket.front()] + " .. " + times.names[sync.bucket.back()],
                                      "sync", kLinkStream, iteration_start + sync.start_s, sync.end_s - sync.start_s,
                                      {{"layers", std::move(names)}, {"iteration", iteration}}));
    }
    // An iteration with no event (every compute and sync time 0) still gets one, covering it, so
    // that the trace reads back with every iteration (compare; the helper's re-check: an
    // all-zero profile's trace was "a trace without timed events").
    if (events.size() == events_before)
      events.push_back(complete_event("idle", "idle", kComputeStream, iteration_start, timing.iteration_s[h],
                                      {{"iteration", iteration}}));
    iteration_start += timing.iteration_s[h];
  }
  return Json{{"traceEvents", std::move(events)}, {"displayTimeUnit", "ms"}};
}

double period_trace_memory_bytes(const BackpropTimes& times, const PeriodTiming& timing) {
  constexpr double kBytesPerEvent = 1600;  // as the DES trace's kTraceJsonBytesPerEvent (measured)
  const double iterations = static_cast<double>(timing.iteration_s.size());
  double events = iterations * (static_cast<double>(times.size()) + 3);  // backward per layer, forward, update, idle
  for (const auto& syncs : timing.syncs) events += static_cast<double>(syncs.size());
  double names = 0;
  for (const std::string& name : times.names) names += static_cast<double>(name.size());
  return events * kBytesPerEvent + iterations * 2 * names;  // a backward and an all-reduce name per layer
}

}  // namespace syncplan
