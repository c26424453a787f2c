// PyTorch profiler Chrome traces into per-layer profiles, from module annotations (docs/torch.md).
#include "profiler/import_torch_trace.hpp"

#include "core/errors.hpp"
#include "core/json_io.hpp"
#include "core/limits.hpp"
#include "core/statistics.hpp"
#include "core/units.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <string_view>
#include <vector>

namespace syncplan {

namespace {

constexpr std::string_view kForwardPrefix = "syncplan.forward:";
constexpr std::string_view kBackwardPrefix = "syncplan.backward:";
constexpr std::string_view kModulePrefix = "nn.Module: ";

// A complete ("X") host event, in the trace's microseconds.
struct Span {
  std::string thread;  // "pid/tid" as the trace writes them (numbers or strings)
  double start_us = 0;
  double end_us = 0;
};

// An op that carries an autograd sequence number ("Sequence number" in its args).
struct SequencedOp {
  std::int64_t sequence = 0;
  Span span;
};

using RangesByName = std::map<std::string, std::vector<Span>>;

// The events the import uses, by kind; every other event is ignored.
struct Events {
  RangesByName forward;                     // "syncplan.forward:NAME" -> NAME's ranges
  RangesByName backward;                    // "syncplan.backward:NAME"
  RangesByName modules;                     // "nn.Module: Linear_0" -> "Linear_0"'s ranges
  std::vector<SequencedOp> forward_ops;     // "Fwd thread id" 0 or absent
  std::vector<SequencedOp> backward_nodes;  // "Fwd thread id" > 0: autograd nodes run in backward
};

// Kineto copies each host range onto the GPU timeline (gpu_user_annotation); kernels and runtime
// calls are not module ranges either. Host time only (docs/torch.md, "Limits").
bool is_device_event(const Json& event) {
  const auto cat = event.find("cat");
  if (cat == event.end() || !cat->is_string()) return false;
  const std::string& name = cat->get_ref<const std::string&>();
  return name.starts_with("gpu_") || name == "kernel" || name == "Kernel" || name == "cuda_runtime" ||
         name == "cuda_driver";
}

std::optional<std::int64_t> integer_arg(const Json& event, const char* key) {
  const auto args = event.find("args");
  if (args == event.end() || !args->is_object()) return std::nullopt;
  const auto value = args->find(key);
  if (value == args->end()) return std::nullopt;
  return integer_value(*value);
}

// Chrome trace `ts` and `dur` are microseconds. A host range longer than a day is no measurement
// (a corrupt or hand-edited trace), and a huge one would enclose every later range and silently
// turn the layer into a container.
constexpr double kLongestEvent_us = limits::kLongestTime_s * units::kMicrosecondsPerSecond;

// The latest `ts` (us): 2^53, the last whole microsecond a double holds exactly (285 years after
// the Unix epoch; PyTorch's profiler writes epoch microseconds, about 1.7e15 today, or times since
// the trace's start). A later or a negative timestamp is no clock reading.
constexpr double kLatestTimestamp_us = 9007199254740992.0;

Span read_span(const Json& event, const std::string& where) {
  const auto ts = event.find("ts");
  if (ts == event.end()) throw InputError(where + ": missing field 'ts'");
  if (!ts->is_number() || !std::isfinite(ts->get<double>()))
    throw InputError(where + ": field 'ts': expected a finite number (microseconds), got " + json_type_name(*ts));
  if (!(ts->get<double>() >= 0 && ts->get<double>() <= kLatestTimestamp_us))
    throw InputError(where + ": field 'ts': " + format_shortest(ts->get<double>()) + " us is " +
                     (ts->get<double>() < 0 ? "negative" : "past 2^53 us (285 years after the Unix epoch)") +
                     "; not a clock reading (Chrome trace timestamps are microseconds)");
  const auto dur = event.find("dur");
  if (dur == event.end())
    throw InputError(where + ": missing field 'dur' (a complete event needs its duration, microseconds)");
  const double duration_us = read_nonnegative_number(*dur, where + ": field 'dur'");
  if (duration_us > kLongestEvent_us)
    throw InputError(where + ": field 'dur': " + format_shortest(duration_us) +
                     " us is over a day; not a plausible duration (Chrome trace durations are microseconds)");
  const auto id = [&](const char* key) {
    const auto it = event.find(key);
    return it == event.end() ? std::string("null") : it->dump();
  };
  Span span;
  span.thread = id("pid") + "/" + id("tid");
  span.start_us = ts->get<double>();
  span.end_us = span.start_us + duration_us;
  return span;
}

void add_range(RangesByName& ranges, const std::string& name, std::string_view prefix, const Json& event,
               const std::string& where) {
  const std::string layer = name.substr(prefix.size());
  if (layer.empty()) throw InputError(where + ": empty layer name after '" + std::string(prefix) + "'");
  ranges[layer].push_back(read_span(event, where));
}

// `spans` (one name's ranges) without those inside another of them on the same thread (a module
// reentered, or an annotation inside an nn.Module event of the same name): the time is the outer
// range's, counted once (the helper's new-user check: 20 us holding 5 us of the same name read as
// 25 us). Which names are containers is decided on all ranges (container_names), before this.
std::vector<Span> outermost_spans(std::vector<Span> spans) {
  std::stable_sort(spans.begin(), spans.end(), [](const Span& a, const Span& b) {
    if (a.thread != b.thread) return a.thread < b.thread;
    if (a.start_us != b.start_us) return a.start_us < b.start_us;
    return a.end_us > b.end_us;
  });
  std::vector<Span> kept;
  for (const Span& span : spans) {
    if (!kept.empty() && kept.back().thread == span.thread && span.end_us <= kept.back().end_us) continue;
    kept.push_back(span);
  }
  return kept;
}

Events collect_events(const Json& events, const std::string& origin) {
  Events out;
  for (std::size_t i = 0; i < events.size(); ++i) {
    const Json& event = events[i];
    const std::string at = origin + ": traceEvents[" + std::to_string(i) + "]";
    if (!event.is_object()) throw InputError(at + ": expected an event object, got " + json_type_name(event));
    const auto phase = event.find("ph");
    if (phase == event.end() || *phase != "X" || is_device_event(event)) continue;
    const auto name_it = event.find("name");
    if (name_it == event.end() || !name_it->is_string()) continue;
    const std::string& name = name_it->get_ref<const std::string&>();
    // A layer's name reaches the profile, whose reader refuses control characters (and messages
    // print names): refuse it here; any other event's name is only left out of messages.
    const bool annotated =
        name.starts_with(kForwardPrefix) || name.starts_with(kBackwardPrefix) || name.starts_with(kModulePrefix);
    if (annotated) require_printable_name(name, at);
    const std::string where = has_control_character(name) ? at : at + " '" + name + "'";
    if (name.starts_with(kForwardPrefix)) {
      add_range(out.forward, name, kForwardPrefix, event, where);
    } else if (name.starts_with(kBackwardPrefix)) {
      add_range(out.backward, name, kBackwardPrefix, event, where);
    } else if (name.starts_with(kModulePrefix)) {
      add_range(out.modules, name, kModulePrefix, event, where);
    } else if (const auto sequence = integer_arg(event, "Sequence number"); sequence && *sequence >= 0) {
      const bool backward_node = integer_arg(event, "Fwd thread id").value_or(0) > 0;
      (backward_node ? out.backward_nodes : out.forward_ops).push_back({*sequence, read_span(event, where)});
    }
  }
  return out;
}

// Names with a range that encloses another name's range on the same thread: containers (a block,
// a whole model), not layers. Layers are the leaf modules. Two names with the same range on one
// thread are refused (`origin` names the trace): which is the leaf cannot be told (the helper's
// check: the alphabetically first became the container and the other the layer, silently).
std::set<std::string> container_names(const RangesByName& ranges, const std::string& origin) {
  struct Item {
    const Span* span;
    const std::string* name;
  };
  std::vector<Item> items;
  for (const auto& [name, spans] : ranges)
    for (const Span& span : spans) items.push_back({&span, &name});
  std::stable_sort(items.begin(), items.end(), [](const Item& a, const Item& b) {
    if (a.span->thread != b.span->thread) return a.span->thread < b.span->thread;
    if (a.span->start_us != b.span->start_us) return a.span->start_us < b.span->start_us;
    return a.span->end_us > b.span->end_us;  // the outer of two ranges that start together first
  });
  std::set<std::string> containers;
  std::vector<Item> open;  // ranges enclosing the current one, outermost first
  for (std::size_t i = 0; i < items.size(); ++i) {
    const Item& item = items[i];
    if (i > 0 && item.span->thread != items[i - 1].span->thread) open.clear();
    while (!open.empty() && open.back().span->end_us <= item.span->start_us) open.pop_back();
    if (!open.empty() && item.span->end_us <= open.back().span->end_us && *open.back().name != *item.name) {
      if (open.back().span->start_us == item.span->start_us && open.back().span->end_us == item.span->end_us)
        throw InputError(origin + ": '" + *open.back().name + "' and '" + *item.name + "' have the same range on one " +
                         "thread (" + format_shortest(item.span->start_us) + " us, " +
                         format_shortest(item.span->end_us - item.span->start_us) +
                         " us long): which of them is the layer and which encloses it cannot be told; annotate "
                         "only the leaf module");
      containers.insert(*open.back().name);
    }
    open.push_back(item);
  }
  return containers;
}

double earliest_start_us(const std::vector<Span>& spans) {
  double earliest = spans.front().start_us;
  for (const Span& span : spans) earliest = std::min(earliest, span.start_us);
  return earliest;
}

// Per layer and iteration: summed durations and whether any event was seen.
struct IterationSums {
  std::vector<double> forward_us, backward_us;
  std::vector<bool> forward_seen, backward_seen;
  bool has_backward = false;     // backward events somewhere in the trace
  bool created_nodes = true;     // (sequence numbers) its forward ops created autograd nodes
};

class Importer {
 public:
  Importer(const Events& events, const std::string& origin) : events_(events), origin_(origin) {}

  TorchTraceImport run(const TorchTraceImportOptions& options) {
    TorchTraceImport result;
    choose_layers(result);
    split_iterations();
    for (std::size_t layer = 0; layer < layers_.size(); ++layer)
      for (const Span& span : outermost_spans((*ranges_).at(layers_[layer]))) add(sums_[layer], span, /*backward=*/false);
    result.backward = link_backward(result.convention);
    return finish(result, options);
  }

 private:
  // Layers: the leaf names of the chosen convention, in order of their first forward.
  void choose_layers(TorchTraceImport& result) {
    if (!events_.forward.empty()) {
      result.convention = TorchTraceConvention::kAnnotations;
      ranges_ = &events_.forward;
    } else if (!events_.backward.empty()) {
      throw InputError(origin_ + ": '" + std::string(kBackwardPrefix) + "' annotations but no '" +
                       std::string(kForwardPrefix) + "' ones; the forward ranges name the layers");
    } else if (!events_.modules.empty()) {
      result.convention = TorchTraceConvention::kModuleEvents;
      ranges_ = &events_.modules;
    } else {
      throw InputError(origin_ + ": no module annotations found; record with tools/torch_profile.py --trace, "
                       "with torch.profiler.record_function('syncplan.forward:NAME') around each module's "
                       "forward, or with torch.profiler.profile(with_stack=True) for nn.Module events "
                       "(docs/torch.md)");
    }
    containers_ = container_names(*ranges_, origin_);
    if (containers_.size() == ranges_->size()) {
      // Every name encloses another's range somewhere: no leaf is left to be a layer. Happens when
      // names nest inside each other both ways (A holds B and B holds A, e.g. a module reentered).
      throw InputError(origin_ + ": no layer: every annotated name ('" + ranges_->begin()->first +
                       "' among them) has a range enclosing another name's range on its thread, so each is a "
                       "container, not a leaf module (names that nest inside each other both ways, A in B "
                       "in A, cannot be layers)");
    }
    std::vector<std::pair<double, std::string>> firsts;
    for (const auto& [name, spans] : *ranges_)
      if (!containers_.count(name)) firsts.emplace_back(earliest_start_us(spans), name);
    std::sort(firsts.begin(), firsts.end());
    for (const auto& [start_us, name] : firsts) {
      index_.emplace(name, layers_.size());
      layers_.push_back(name);
    }
  }

  // An iteration starts at each forward of the first layer.
  void split_iterations() {
    // An iteration starts with each outermost range of the first layer (one nested in a range of
    // its own name is the same call, not a new iteration: the helper's re-check).
    for (const Span& span : outermost_spans(ranges_->at(layers_.front()))) iteration_starts_us_.push_back(span.start_us);
    std::sort(iteration_starts_us_.begin(), iteration_starts_us_.end());
    const std::size_t count = iteration_starts_us_.size();
    sums_.assign(layers_.size(), IterationSums{std::vector<double>(count, 0.0), std::vector<double>(count, 0.0),
                                               std::vector<bool>(count, false), std::vector<bool>(count, false)});
  }

  // Adds a span to the iteration it starts in; spans before the first iteration are ignored.
  void add(IterationSums& sums, const Span& span, bool backward) {
    const auto after = std::upper_bound(iteration_starts_us_.begin(), iteration_starts_us_.end(), span.start_us);
    if (after == iteration_starts_us_.begin()) return;
    const std::size_t iteration = static_cast<std::size_t>(after - iteration_starts_us_.begin()) - 1;
    (backward ? sums.backward_us : sums.forward_us)[iteration] += span.end_us - span.start_us;
    (backward ? sums.backward_seen : sums.forward_seen)[iteration] = true;
    if (backward) sums.has_backward = true;
  }

  TorchTraceBackward link_backward(TorchTraceConvention convention) {
    if (convention == TorchTraceConvention::kAnnotations && !events_.backward.empty()) {
      for (const auto& [name, spans] : events_.backward) {
        const auto layer = index_.find(name);
        if (layer == index_.end()) {
          if (containers_.count(name)) continue;  // a container's backward: its layers have their own
          throw InputError(origin_ + ": layer '" + name + "': '" + std::string(kBackwardPrefix) +
                           "' annotations but no '" + std::string(kForwardPrefix) + "' ones");
        }
        for (const Span& span : outermost_spans(spans)) add(sums_[layer->second], span, /*backward=*/true);
      }
      return TorchTraceBackward::kAnnotations;
    }
    if (events_.forward_ops.empty() || events_.backward_nodes.empty()) return TorchTraceBackward::kNone;
    link_by_sequence_numbers();
    return TorchTraceBackward::kSequenceNumbers;
  }

  // Each autograd node run in backward carries the sequence number of the forward op that created
  // it. Among forward ops with that number on a thread, the latest to start created the node (the
  // rule PyTorch draws its fwdbwd flow arrows by); its layer is the leaf range enclosing it.
  void link_by_sequence_numbers() {
    std::map<std::string, std::vector<std::pair<const Span*, std::size_t>>> leaf_ranges;  // thread -> (range, layer)
    for (std::size_t layer = 0; layer < layers_.size(); ++layer)
      for (const Span& span : ranges_->at(layers_[layer])) leaf_ranges[span.thread].emplace_back(&span, layer);
    for (auto& [thread, ranges] : leaf_ranges)
      std::sort(ranges.begin(), ranges.end(),
                [](const auto& a, const auto& b) { return a.first->start_us < b.first->start_us; });
    const auto layer_at = [&](const Span& op) -> std::optional<std::size_t> {
      const auto thread = leaf_ranges.find(op.thread);
      if (thread == leaf_ranges.end()) return std::nullopt;
      const auto& ranges = thread->second;
      auto after = std::upper_bound(ranges.begin(), ranges.end(), op.start_us,
                                    [](double t, const auto& range) { return t < range.first->start_us; });
      if (after == ranges.begin()) return std::nullopt;
      --after;
      if (op.start_us > after->first->end_us) return std::nullopt;
      return after->second;
    };

    std::map<std::pair<std::string, std::int64_t>, const Span*> creator;  // (thread, sequence) -> latest op
    for (const SequencedOp& op : events_.forward_ops) {
      const Span*& latest = creator[{op.span.thread, op.sequence}];
      if (!latest || op.span.start_us >= latest->start_us) latest = &op.span;
    }
    for (IterationSums& sums : sums_) sums.created_nodes = false;
    std::map<std::int64_t, std::size_t> layer_of_sequence;  // over the threads that hold layers
    for (const auto& [key, op] : creator) {
      if (!leaf_ranges.count(key.first)) continue;
      if (const auto layer = layer_at(*op)) {
        layer_of_sequence.emplace(key.second, *layer);
        sums_[*layer].created_nodes = true;
      }
    }
    for (const SequencedOp& node : events_.backward_nodes) {
      const auto layer = layer_of_sequence.find(node.sequence);
      if (layer != layer_of_sequence.end()) add(sums_[layer->second], node.span, /*backward=*/true);
    }
  }

  TorchTraceImport finish(TorchTraceImport& result, const TorchTraceImportOptions& options) {
    if (result.backward == TorchTraceBackward::kNone && options.missing_backward == MissingBackwardPolicy::kError)
      throw InputError(origin_ + ": no backward events: neither '" + std::string(kBackwardPrefix) +
                       "' annotations nor autograd sequence numbers (Kineto traces); --missing-backward "
                       "null or zero imports forward times only");
    std::vector<std::size_t> complete;
    for (std::size_t k = 0; k < iteration_starts_us_.size(); ++k) {
      bool whole = true;
      for (const IterationSums& sums : sums_)
        whole = whole && sums.forward_seen[k] && (!sums.has_backward || sums.backward_seen[k]);
      if (whole) complete.push_back(k);
    }
    if (complete.empty())
      throw InputError(origin_ + ": no complete iteration: in each of the " +
                       std::to_string(iteration_starts_us_.size()) +
                       " iteration(s) some layer has no forward or no backward event");
    result.iterations = complete.size();
    result.incomplete_iterations = iteration_starts_us_.size() - complete.size();

    Profile& profile = result.profile;
    profile.model = options.model;
    profile.source = "imported:torch-trace";
    for (std::size_t layer = 0; layer < layers_.size(); ++layer) {
      const IterationSums& sums = sums_[layer];
      LayerProfile entry;
      entry.name = layers_[layer];
      std::vector<double> forward_s, backward_s;
      for (const std::size_t k : complete) {
        forward_s.push_back(sums.forward_us[k] / units::kMicrosecondsPerSecond);
        backward_s.push_back(sums.backward_us[k] / units::kMicrosecondsPerSecond);
      }
      entry.forward_s = median(forward_s);
      if (sums.has_backward) {
        entry.backward_s = median(backward_s);
      } else if (!sums.created_nodes) {
        entry.backward_s = 0.0;  // its forward created no autograd node: no backward work
      } else if (options.missing_backward == MissingBackwardPolicy::kError) {
        throw InputError(origin_ + ": layer '" + entry.name + "': forward events but no backward events (looked for: " +
                         backward_name(result.backward) +
                         "); --missing-backward null or zero accepts it (docs/torch.md)");
      } else if (options.missing_backward == MissingBackwardPolicy::kZero) {
        entry.backward_s = 0.0;
      }
      profile.layers.push_back(std::move(entry));
    }
    validate_profile(profile, origin_);
    return std::move(result);
  }

  const Events& events_;
  const std::string& origin_;
  const RangesByName* ranges_ = nullptr;      // the chosen convention's forward ranges
  std::set<std::string> containers_;          // names that enclose other names: not layers
  std::vector<std::string> layers_;           // forward order
  std::map<std::string, std::size_t> index_;  // name -> position in layers_
  std::vector<double> iteration_starts_us_;
  std::vector<IterationSums> sums_;           // per layer
};

}  // namespace

const char* convention_name(TorchTraceConvention convention) {
  return convention == TorchTraceConvention::kAnnotations ? "syncplan.forward annotations" : "nn.Module events";
}

const char* backward_name(TorchTraceBackward backward) {
  switch (backward) {
    case TorchTraceBackward::kAnnotations: return "backward annotations";
    case TorchTraceBackward::kSequenceNumbers: return "autograd sequence numbers";
    case TorchTraceBackward::kNone: return "no backward events in the trace";
  }
  return "";
}

TorchTraceImport torch_trace_to_profile(const Json& trace, const std::string& origin,
                                        const TorchTraceImportOptions& options) {
  const Json* events = &trace;
  if (trace.is_object()) {
    const auto it = trace.find("traceEvents");
    if (it == trace.end())
      throw InputError(origin + ": missing field 'traceEvents' (a Chrome trace is {\"traceEvents\": [...]} "
                       "or an array of events)");
    events = &*it;
    if (!events->is_array())
      throw InputError(origin + ": field 'traceEvents': expected an array of events, got " + json_type_name(*events));
  } else if (!trace.is_array()) {
    throw InputError(origin + ": expected a Chrome trace (an object with 'traceEvents' or an array of events), got " +
                     json_type_name(trace));
  }
  const Events collected = collect_events(*events, origin);
  return Importer(collected, origin).run(options);
}

TorchTraceImport import_torch_trace(const std::string& trace_path, const TorchTraceImportOptions& options) {
  TorchTraceImport imported = torch_trace_to_profile(read_json_file(trace_path), trace_path, options);
  // Read back with the profile reader, so that an import never yields a profile the tool then
  // refuses (core/limits.hpp); the error names the trace.
  profile_from_json(profile_to_json(imported.profile), trace_path + " (as imported)");
  return imported;
}

}  // namespace syncplan
