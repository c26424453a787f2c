// Reading predictions and measurements as iteration timelines, and comparing them (runtime/compare.hpp,
// docs/compare.md).
#include "runtime/compare.hpp"

#include "core/errors.hpp"
#include "core/field_error.hpp"
#include "core/limits.hpp"
#include "core/result.hpp"
#include "core/statistics.hpp"
#include "core/units.hpp"

#include <algorithm>
#include <climits>
#include <cmath>
#include <limits>
#include <map>
#include <set>
#include <sstream>

namespace syncplan {

const char* to_string(TimelineKind kind) {
  switch (kind) {
    case TimelineKind::kPeriodModelResult: return "period-model result";
    case TimelineKind::kDesResult: return "des result";
    case TimelineKind::kPeriodModelTrace: return "period-model trace";
    case TimelineKind::kSimulatedTrace: return "simulated trace";
    case TimelineKind::kMeasuredTrace: return "measured trace";
    case TimelineKind::kRunLog: return "run log";
  }
  return "?";
}

double IterationComparison::error_percent() const { return error_s() / measured_s * 100; }
double PositionComparison::error_percent() const { return error_s() / measured_s * 100; }

double StatisticComparison::error_percent() const { return error_s() / measured_s * 100; }

bool StatisticComparison::within_noise() const { return std::fabs(error_percent()) <= noise_floor_percent; }

namespace {

// The all-reduce categories: the DES's and the run's ("allreduce"), the period model's ("sync").
constexpr const char* kAllreduceCategory = "allreduce";
constexpr const char* kPeriodModelSyncCategory = "sync";
// A checkpoint written between iterations (runtime/trace.hpp): its time is no iteration's.
constexpr const char* kCheckpointCategory = "checkpoint";

// A trace's ts/dur bound (microseconds): 1e15 us is about 31 years, past any run.
constexpr double kLongestTraceTime_us = limits::kLongestTraceTime_us;
// Two runs' mean times within this relative difference tie in the ranking.
constexpr double kRankingTie = 1e-9;
// A predicted iteration's bound (s), as simulate checks it before writing a result.
constexpr double kLongestPredictedIteration_s = limits::kLongestPredictedIteration_s;

// The keys each engine's result has (docs/formats.md "Simulation result"); any other is an error.
const std::set<std::string> kPeriodModelResultKeys = {
    "format", "engine", "model", "profile", "plan", "strategy", "period", "period_s", "mean_iteration_s",
    "wait_s", "iteration_s", "iteration_wait_s", "lower_bound_period_s"};
const std::set<std::string> kDesResultKeys = {
    "format", "engine", "model", "profile", "cluster", "plan", "strategy", "period", "iterations", "sync_time",
    "link", "workers", "simulated_workers", "period_s", "total_s", "mean_iteration_s", "iteration_s",
    "worker_iteration_s", "exposed_comm_s", "worker_exposed_comm_s", "comm_busy_s", "overlap_fraction",
    "link_bytes", "median_iteration_s", "p90_iteration_s"};

// A result's iteration_s: an array of `count` finite numbers >= 0.
std::vector<double> read_iteration_times(const Json& value, const std::string& where, std::size_t count,
                                         const std::string& count_field) {
  if (!value.is_array()) throw InputError(where + ": field 'iteration_s': expected an array, got " + json_type_name(value));
  if (value.size() != count)
    throw InputError(where + ": field 'iteration_s': " + std::to_string(value.size()) + " entries, but '" +
                     count_field + "' is " + std::to_string(count));
  std::vector<double> times;
  for (std::size_t i = 0; i < value.size(); ++i)
    times.push_back(read_number_in(value[i], where + ": field 'iteration_s'[" + std::to_string(i) + "]", 0,
                                   kLongestPredictedIteration_s));
  return times;
}

Timeline read_result(const Json& document, const std::string& origin) {
  ObjectReader reader(document, origin);
  reader.require_format(kResultFormat);
  const std::string engine = reader.required_string("engine");
  Timeline timeline;
  timeline.path = origin;
  const int period = static_cast<int>(reader.required_integer("period", 1, limits::kMaxPeriod));
  timeline.period = period;
  const std::set<std::string>* keys = nullptr;
  if (engine == kPeriodModelEngine) {
    timeline.kind = TimelineKind::kPeriodModelResult;
    timeline.repeats = true;
    timeline.iteration_s = read_iteration_times(reader.required("iteration_s"), origin, period, "period");
    keys = &kPeriodModelResultKeys;
  } else if (engine == kDesEngine) {
    timeline.kind = TimelineKind::kDesResult;
    const auto iterations = reader.required_integer("iterations", 1, limits::kMaxIterations);
    timeline.iteration_s =
        read_iteration_times(reader.required("iteration_s"), origin, static_cast<std::size_t>(iterations), "iterations");
    timeline.ranks = static_cast<int>(reader.required_integer("workers", 1, limits::kMaxWorkers));
    keys = &kDesResultKeys;
  } else {
    throw InputError(origin + ": field 'engine': expected \"" + kPeriodModelEngine + "\" or \"" + kDesEngine +
                     "\", got \"" + engine + "\"");
  }
  for (const std::string& key : *keys) reader.optional(key);  // the rest of the result is not compared
  reader.reject_unknown_keys();
  return timeline;
}

// ---- traces ------------------------------------------------------------------------------------

struct Extent {
  double start_us = 0, end_us = 0;
};

struct TraceAllreduce {
  int pid = 0, iteration = 0;
  std::vector<std::string> layers;
  double start_us = 0, end_us = 0;
};

// An event's layers: args.layer (one) or args.layers (a non-empty array of strings).
// Layer names are printed in compare's tables: refused with a control character or a byte that is
// not UTF-8, as in every other reader (the helper's re-check: ESC was read and printed escaped).
std::vector<std::string> allreduce_layers(ObjectReader& args, const std::string& where) {
  if (const auto layer = args.optional_string("layer")) {
    require_printable(*layer, where, "layer");
    return {*layer};
  }
  const Json* layers = args.optional("layers");
  if (layers == nullptr)
    throw InputError(where + ": an all-reduce without 'layer' or 'layers' (cannot match it to the other side)");
  if (!layers->is_array() || layers->empty())
    throw InputError(where + ": field 'layers': expected a non-empty array of layer names");
  std::vector<std::string> names;
  for (const Json& name : *layers) {
    if (!name.is_string()) throw InputError(where + ": field 'layers': expected layer names, got " + json_type_name(name));
    require_printable(name.get<std::string>(), where, "layers");
    names.push_back(name.get<std::string>());
  }
  return names;
}

// A number of microseconds of a trace event, finite, in [minimum, kLongestTraceTime_us].
double trace_time_us(const Json& event, const char* key, const std::string& where, double minimum) {
  const auto it = event.find(key);
  if (it == event.end()) throw InputError(where + ": missing field '" + std::string(key) + "'");
  return read_number_in(*it, where + ": field '" + key + "'", minimum, kLongestTraceTime_us);
}

int trace_integer(const Json& event, const char* key, const std::string& where) {
  const auto it = event.find(key);
  if (it == event.end()) throw InputError(where + ": missing field '" + std::string(key) + "'");
  const auto value = integer_value(*it);
  if (!value || *value < 0 || *value > INT_MAX)
    throw InputError(where + ": field '" + key + "': expected a whole number >= 0, got " + it->dump());
  return static_cast<int>(*value);
}

// A trace's statement of its period H (`field`: a measured trace's syncplan.period, a DES trace's
// otherData.period): absent or null is unknown; else a whole number 1..kMaxPeriod, bounded as a
// plan's period is (it was clamped to INT_MAX, a number the file never held). A period of another
// type or below 1 was ignored, and the run's H went unchecked.
std::optional<int> stated_period(const Json& holder, const std::string& origin, const std::string& field) {
  const auto period = holder.find("period");
  if (period == holder.end() || period->is_null()) return std::nullopt;
  const std::optional<std::int64_t> whole = whole_number_value(*period);  // 4.0 is 4, as a result's period
  if (period->is_number_unsigned() && !whole)  // past int64
    throw InputError(origin + ": field '" + field + "': at most " + std::to_string(limits::kMaxPeriod) + ", got " +
                     period->dump() + " (limits: docs/formats.md)");
  if (!whole || *whole < 1)
    throw InputError(origin + ": field '" + field + "': expected the run's period H, a whole number >= 1, got " +
                     (period->is_number() ? period->dump() : json_type_name(*period)));
  if (*whole > limits::kMaxPeriod)
    throw InputError(origin + ": field '" + field + "': at most " + std::to_string(limits::kMaxPeriod) + ", got " +
                     std::to_string(*whole) + " (limits: docs/formats.md)");
  return static_cast<int>(*whole);
}

// A measured trace's "syncplan" object (written by `run`, docs/runtime.md): "source" "measured"
// makes it a measured trace, and its "period" is the run's H (stated_period). Its other keys
// describe the run and are not compared.
void read_run_description(const Json& about, const std::string& origin, Timeline& timeline) {
  if (!about.is_object()) throw InputError(origin + ": field 'syncplan': expected an object, got " + json_type_name(about));
  const auto source = about.find("source");
  if (source != about.end() && source->is_string() && source->get<std::string>() == "measured")
    timeline.kind = TimelineKind::kMeasuredTrace;
  timeline.period = stated_period(about, origin, "syncplan.period");
}

// The microseconds of [from, to) covered by `pauses` (sorted by start, not overlapping).
double paused_us(const std::vector<Extent>& pauses, double from_us, double to_us) {
  double covered = 0;
  for (const Extent& pause : pauses) covered += std::max(0.0, std::min(pause.end_us, to_us) - std::max(pause.start_us, from_us));
  return covered;
}

// The union of `spans` as sorted, disjoint extents.
std::vector<Extent> merged(std::vector<Extent> spans) {
  std::sort(spans.begin(), spans.end(), [](const Extent& a, const Extent& b) { return a.start_us < b.start_us; });
  std::vector<Extent> out;
  for (const Extent& span : spans) {
    if (!out.empty() && span.start_us <= out.back().end_us) out.back().end_us = std::max(out.back().end_us, span.end_us);
    else out.push_back(span);
  }
  return out;
}

// The iteration times of a trace from each pid's per-iteration extents (compare.md section 2),
// less the time of the checkpoint after the previous iteration (`pauses` by args.after_iteration,
// on any rank: their union) that falls between that iteration's end and this one's.
// Throws InputError for an iteration without events or one ending before the previous one.
void set_iteration_times(const std::map<int, std::map<int, Extent>>& extents,
                         const std::map<int, std::vector<Extent>>& pauses, const std::string& origin, Timeline& timeline) {
  std::map<int, Extent> iterations;  // over every pid
  for (const auto& [pid, per_iteration] : extents)
    for (const auto& [iteration, extent] : per_iteration) {
      auto [it, inserted] = iterations.try_emplace(iteration, extent);
      if (!inserted) {
        it->second.start_us = std::min(it->second.start_us, extent.start_us);
        it->second.end_us = std::max(it->second.end_us, extent.end_us);
      }
    }
  const int first = iterations.begin()->first, last = iterations.rbegin()->first;
  if (static_cast<std::int64_t>(last) - first + 1 != static_cast<std::int64_t>(iterations.size())) {
    int missing = first;
    while (iterations.count(missing)) ++missing;
    throw InputError(origin + ": iteration " + std::to_string(missing) + " has no events (the trace has iterations " +
                     std::to_string(first) + ".." + std::to_string(last) + ")");
  }
  timeline.first_iteration = first;
  timeline.ranks = static_cast<int>(extents.size());
  double previous_end_us = iterations.begin()->second.start_us;
  for (const auto& [iteration, extent] : iterations) {
    if (extent.end_us < previous_end_us)
      throw InputError(origin + ": iteration " + std::to_string(iteration) +
                       " ends before the previous one (events out of order)");
    const auto before = pauses.find(iteration - 1);  // the checkpoint after the previous iteration
    const double paused = before == pauses.end() ? 0.0 : paused_us(merged(before->second), previous_end_us, extent.end_us);
    timeline.iteration_s.push_back((extent.end_us - previous_end_us - paused) / units::kMicrosecondsPerSecond);
    previous_end_us = extent.end_us;
  }
}

// A Chrome trace: its events (the object format's traceEvents, or the array format's whole
// document) and, in a measured trace, the object format's "syncplan" object (null: none).
// A checkpoint slice (between iterations, docs/formats.md "Measured trace"): its extent among the
// pauses after args.after_iteration. Throws InputError naming the event without it.
void read_checkpoint(const Json& event, const std::string& where, std::map<int, std::vector<Extent>>& pauses) {
  const double start_us = trace_time_us(event, "ts", where, -kLongestTraceTime_us);
  const auto args = event.find("args");
  if (args == event.end() || !args->is_object())
    throw InputError(where + ": field 'args': a checkpoint event needs args.after_iteration");
  const int after = static_cast<int>(ObjectReader(*args, where + ": args").required_integer("after_iteration", 0, INT_MAX));
  pauses[after].push_back({start_us, start_us + trace_time_us(event, "dur", where, 0)});
}

// The all-reduces of the lowest pid that has any, in seconds from their own iteration's start
// (`extents`: [pid][iteration]).
std::vector<TimedAllreduce> timed_allreduces(std::vector<TraceAllreduce> allreduces,
                                             std::map<int, std::map<int, Extent>>& extents) {
  std::vector<TimedAllreduce> timed;
  if (allreduces.empty()) return timed;
  const int pid = std::min_element(allreduces.begin(), allreduces.end(), [](const auto& a, const auto& b) {
                    return a.pid < b.pid;
                  })->pid;
  for (TraceAllreduce& allreduce : allreduces) {
    if (allreduce.pid != pid) continue;
    const double origin_us = extents[pid][allreduce.iteration].start_us;
    timed.push_back(TimedAllreduce{allreduce.iteration, std::move(allreduce.layers),
                                   (allreduce.start_us - origin_us) / units::kMicrosecondsPerSecond,
                                   (allreduce.end_us - origin_us) / units::kMicrosecondsPerSecond});
  }
  return timed;
}

Timeline read_trace(const Json& events, const Json* syncplan_object, const std::string& origin) {
  if (!events.is_array()) throw InputError(origin + ": field 'traceEvents': expected an array, got " + json_type_name(events));
  Timeline timeline;
  timeline.path = origin;
  timeline.kind = TimelineKind::kSimulatedTrace;
  if (syncplan_object != nullptr) read_run_description(*syncplan_object, origin, timeline);
  std::map<int, std::map<int, Extent>> extents;  // [pid][iteration]
  std::vector<TraceAllreduce> allreduces;
  std::map<int, std::vector<Extent>> pauses;  // checkpoints, by the iteration they follow
  bool period_model_syncs = false;
  for (std::size_t i = 0; i < events.size(); ++i) {
    const Json& event = events[i];
    std::string where = origin + ": traceEvents[" + std::to_string(i) + "]";
    if (!event.is_object()) throw InputError(where + ": expected a JSON object, got " + json_type_name(event));
    if (const auto name = event.find("name"); name != event.end() && name->is_string())
      where += " ('" + name->get<std::string>() + "')";
    const auto phase = event.find("ph");
    if (phase == event.end() || !phase->is_string()) throw InputError(where + ": field 'ph': expected a string");
    if (phase->get<std::string>() != "X") continue;  // metadata and other phases carry no timing here
    if (const auto category = event.find("cat");
        category != event.end() && category->is_string() && *category == kCheckpointCategory) {
      read_checkpoint(event, where, pauses);
      continue;
    }
    const auto args_it = event.find("args");
    if (args_it == event.end() || !args_it->is_object() || !args_it->contains("iteration")) continue;  // outside iterations
    ObjectReader args(*args_it, where + ": args");
    const int iteration = static_cast<int>(args.required_integer("iteration", 0, INT_MAX));
    const double start_us = trace_time_us(event, "ts", where, -kLongestTraceTime_us);
    const double end_us = start_us + trace_time_us(event, "dur", where, 0);
    const int pid = trace_integer(event, "pid", where);
    const auto category = event.find("cat");
    const std::string cat = category != event.end() && category->is_string() ? category->get<std::string>() : "";
    // A delayed all-reduce (args.delay > 0, docs/formats.md "Measured trace") runs on into later
    // iterations: it does not stretch its launch iteration.
    const bool delayed = (cat == kAllreduceCategory || cat == kPeriodModelSyncCategory) && args_it->contains("delay") &&
                         args.required_integer("delay", 0, INT_MAX) > 0;
    if (!delayed) {
      auto [extent, inserted] = extents[pid].try_emplace(iteration, Extent{start_us, end_us});
      if (!inserted) {
        extent->second.start_us = std::min(extent->second.start_us, start_us);
        extent->second.end_us = std::max(extent->second.end_us, end_us);
      }
    }
    if (cat == kAllreduceCategory || cat == kPeriodModelSyncCategory) {
      period_model_syncs = period_model_syncs || cat == kPeriodModelSyncCategory;
      allreduces.push_back(TraceAllreduce{pid, iteration, allreduce_layers(args, where + ": args"), start_us, end_us});
    }
  }
  if (extents.empty())
    throw InputError(origin + ": a trace without timed events (\"ph\": \"X\" with args.iteration): nothing to compare");
  set_iteration_times(extents, pauses, origin, timeline);
  if (period_model_syncs && timeline.kind == TimelineKind::kSimulatedTrace) {
    timeline.kind = TimelineKind::kPeriodModelTrace;
    timeline.repeats = true;
    timeline.period = static_cast<int>(timeline.iteration_s.size());
  }
  timeline.allreduces = timed_allreduces(std::move(allreduces), extents);
  return timeline;
}

// ---- logs --------------------------------------------------------------------------------------

struct LogLine {
  int line = 0;
  double iteration_s = 0;
  std::optional<double> loss;  // null in the log: not finite
};

// One log line's object: every SPEC section 8 key plus compute_s and wait_s, nothing else.
void read_log_line(const Json& object, const std::string& where, std::map<int, std::map<int, LogLine>>& by_iteration,
                   int line) {
  ObjectReader reader(object, where);
  const int iteration = static_cast<int>(reader.required_integer("iteration", 0, INT_MAX));
  const int rank = static_cast<int>(reader.required_integer("rank", 0, limits::kMaxWorkers - 1));
  const Json& loss = reader.required("loss");  // null: a loss that was not finite (JSON has no NaN)
  // Not compared, only drawn (report --loss): any loss within +-1e15, negative ones too (a loss
  // need not be a cross-entropy); a loss near the largest double drew "-nan" into an SVG (issue
  // 24's overflow audit). The magnitude is checked with the reader's own number rules.
  constexpr double kLargestLoss = 1e15;
  std::optional<double> loss_value;
  if (!loss.is_null()) {
    if (loss.is_number() && loss.get<double>() < 0) {
      // The reader's rules are for non-negative numbers; a negative loss keeps its sign in the message.
      loss_value = loss.get<double>();
      if (!(*loss_value >= -kLargestLoss))
        throw InputError(where + ": field 'loss': at least -1e+15, got " + format_shortest(*loss_value) +
                         " (limits: docs/formats.md)");
    } else {
      loss_value = read_number_in(loss, where + ": field 'loss'", 0, kLargestLoss);
    }
  }
  // A measured time is at most a day (limits::kLongestTime_s): the ranks' running sums stay finite.
  const double iteration_s = read_number_in(reader.required("iteration_s"), where + ": field 'iteration_s'", 0,
                                            limits::kLongestTime_s);
  const Json& synced = reader.required("synced_layers");
  if (!synced.is_array()) throw InputError(where + ": field 'synced_layers': expected an array, got " + json_type_name(synced));
  for (const Json& name : synced)
    if (!name.is_string()) throw InputError(where + ": field 'synced_layers': expected layer names, got " + json_type_name(name));
  read_number_in(reader.required("compute_s"), where + ": field 'compute_s'", 0, limits::kLongestTime_s);
  read_number_in(reader.required("wait_s"), where + ": field 'wait_s'", 0, limits::kLongestTime_s);
  // Optional: the buckets that averaged synced_layers, and the emulated link when it was on.
  if (const Json* buckets = reader.optional("buckets", Null::kRejected)) {
    const bool arrays_of_names = buckets->is_array() && std::all_of(buckets->begin(), buckets->end(), [](const Json& b) {
      return b.is_array() && std::all_of(b.begin(), b.end(), [](const Json& name) { return name.is_string(); });
    });
    if (!arrays_of_names) throw InputError(where + ": field 'buckets': expected an array of arrays of layer names");
  }
  if (const Json* link = reader.optional("emulated_link"); link != nullptr && !link->is_object())
    throw InputError(where + ": field 'emulated_link': expected an object or null, got " + json_type_name(*link));
  // Optional, delayed-averaging runs (docs/formats.md "Training log"): not compared, only typed.
  if (const Json* delays = reader.optional("sync_delays", Null::kRejected); delays != nullptr && !delays->is_array())
    throw InputError(where + ": field 'sync_delays': expected an array, got " + json_type_name(*delays));
  if (const Json* applied = reader.optional("applied", Null::kRejected); applied != nullptr && !applied->is_array())
    throw InputError(where + ": field 'applied': expected an array, got " + json_type_name(*applied));
  reader.reject_unknown_keys();
  auto [it, inserted] = by_iteration[iteration].try_emplace(rank, LogLine{line, iteration_s, loss_value});
  if (!inserted)
    throw InputError(where + ": iteration " + std::to_string(iteration) + " of rank " + std::to_string(rank) +
                     " again (first on line " + std::to_string(it->second.line) + ")");
}

Timeline read_log(const std::string& text, const std::string& origin) {
  std::map<int, std::map<int, LogLine>> by_iteration;  // [iteration][rank]
  std::istringstream lines(text);
  std::string line;
  int number = 0;
  while (std::getline(lines, line)) {
    ++number;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    const std::string where = origin + ": line " + std::to_string(number);
    read_log_line(parse_json_text(line, where), where, by_iteration, number);
  }
  if (by_iteration.empty()) throw InputError(origin + ": an empty log (no line)");
  std::set<int> ranks;
  for (const auto& [iteration, per_rank] : by_iteration)
    for (const auto& [rank, entry] : per_rank) ranks.insert(rank);
  const int count = static_cast<int>(ranks.size());
  if (*ranks.rbegin() != count - 1) {
    int missing = 0;
    while (ranks.count(missing)) ++missing;
    throw InputError(origin + ": no line of rank " + std::to_string(missing) + " (ranks up to " +
                     std::to_string(*ranks.rbegin()) + " logged)");
  }
  const int first = by_iteration.begin()->first, last = by_iteration.rbegin()->first;
  Timeline timeline;
  timeline.path = origin;
  timeline.kind = TimelineKind::kRunLog;
  timeline.first_iteration = first;
  timeline.ranks = count;
  // Each rank's iteration_s follow one another on its own clock, all started together after a
  // barrier: rank r's iteration i ends at the sum of its iteration_s up to i. As in the DES, the
  // iteration's time is the latest end over the ranks minus the latest end of the previous one.
  std::vector<double> rank_end_s(count, 0.0);
  double previous_end_s = 0;
  timeline.loss.emplace();
  for (int iteration = first;; ++iteration) {
    const auto it = by_iteration.find(iteration);
    if (it == by_iteration.end())
      throw InputError(origin + ": no line for iteration " + std::to_string(iteration) + " (the log has iterations " +
                       std::to_string(first) + ".." + std::to_string(last) + ")");
    double latest_end_s = 0;
    // The ranks' mean loss; unknown when any rank's is (a loss that was not finite).
    std::optional<double> loss_sum = 0.0;
    for (int rank = 0; rank < count; ++rank) {
      const auto entry = it->second.find(rank);
      if (entry == it->second.end())
        throw InputError(origin + ": iteration " + std::to_string(iteration) + ": no line of rank " + std::to_string(rank) +
                         " (every rank logs every iteration; " + std::to_string(count) + " ranks logged)");
      rank_end_s[rank] += entry->second.iteration_s;
      latest_end_s = std::max(latest_end_s, rank_end_s[rank]);
      if (loss_sum && entry->second.loss) *loss_sum += *entry->second.loss / count;
      else loss_sum.reset();
    }
    // Divided rank by rank: a sum of losses near the largest double would overflow.
    timeline.loss->push_back(loss_sum && std::isfinite(*loss_sum) ? loss_sum : std::nullopt);
    timeline.iteration_s.push_back(latest_end_s - previous_end_s);
    previous_end_s = latest_end_s;
    if (iteration == last) break;
  }
  return timeline;
}

// ---- comparison --------------------------------------------------------------------------------

std::string range_text(const Timeline& timeline) {
  const std::size_t count = timeline.iteration_s.size();
  return "iterations " + std::to_string(timeline.first_iteration) + ".." +
         std::to_string(timeline.first_iteration + static_cast<long long>(count) - 1) + " (" + std::to_string(count) + ")";
}

// The predicted side's iteration number for the run's iteration `iteration`.
int predicted_iteration(const Timeline& predicted, int iteration) {
  if (!predicted.repeats) return iteration;
  return predicted.first_iteration + iteration % static_cast<int>(predicted.iteration_s.size());
}

using AllreduceKey = std::pair<int, std::vector<std::string>>;  // iteration, sorted layers

AllreduceKey key_of(int iteration, std::vector<std::string> layers) {
  std::sort(layers.begin(), layers.end());
  return {iteration, std::move(layers)};
}

std::optional<AllreduceSummary> match_allreduces(const Timeline& predicted, const Timeline& measured, int first_compared) {
  std::map<AllreduceKey, std::vector<const TimedAllreduce*>> by_key;
  std::map<int, int> predicted_per_iteration;
  for (const TimedAllreduce& allreduce : *predicted.allreduces) {
    by_key[key_of(allreduce.iteration, allreduce.layers)].push_back(&allreduce);
    ++predicted_per_iteration[allreduce.iteration];
  }
  AllreduceSummary summary;
  std::map<AllreduceKey, std::size_t> used;  // per run iteration and layers: occurrences matched so far
  std::map<int, int> matched_per_iteration;
  int skipped = 0;  // measured all-reduces in the warm-up iterations left out
  for (const TimedAllreduce& allreduce : *measured.allreduces) {
    if (allreduce.iteration < first_compared) {
      ++skipped;
      continue;
    }
    const AllreduceKey own = key_of(allreduce.iteration, allreduce.layers);
    const auto candidates = by_key.find(key_of(predicted_iteration(predicted, allreduce.iteration), allreduce.layers));
    std::size_t& occurrence = used[own];
    if (candidates == by_key.end() || occurrence >= candidates->second.size()) {
      ++summary.measured_only;
      continue;
    }
    const TimedAllreduce& match = *candidates->second[occurrence++];
    summary.matched.push_back(AllreduceComparison{allreduce.iteration, allreduce.layers, match.start_s,
                                                  allreduce.start_s, match.end_s, allreduce.end_s});
    ++matched_per_iteration[allreduce.iteration];
  }
  const int count = static_cast<int>(measured.iteration_s.size());
  for (int k = first_compared - measured.first_iteration; k < count; ++k) {  // k: no int overflow near INT_MAX
    const int iteration = measured.first_iteration + k;
    const auto it = predicted_per_iteration.find(predicted_iteration(predicted, iteration));
    if (it != predicted_per_iteration.end()) summary.predicted_only += it->second - matched_per_iteration[iteration];
  }
  // Neither side all-reduces in the compared iterations (frozen layers, sync times of 0, or a plan
  // that syncs only in skipped ones): the schedules agree and there is nothing to time (the
  // helper's re-check: `compare t.json t.json` refused such a trace against itself).
  if (summary.matched.empty() && summary.predicted_only == 0 && summary.measured_only == 0) return std::nullopt;
  if (summary.matched.empty())
    throw InputError(predicted.path + " and " + measured.path +
                     ": no all-reduce in common (same iteration and layers) in the compared iterations: " +
                     std::to_string(summary.predicted_only) + " predicted, " + std::to_string(summary.measured_only) +
                     " measured" +
                     (skipped > 0 ? "; " + std::to_string(skipped) + " measured all-reduce" + (skipped == 1 ? " is" : "s are") +
                                        " in the warm-up iterations --skip leaves out (--skip 0 compares them)"
                                  : std::string()));
  for (const AllreduceComparison& pair : summary.matched) {
    summary.mean_abs_start_error_s += std::fabs(pair.start_error_s());
    summary.mean_abs_end_error_s += std::fabs(pair.end_error_s());
  }
  summary.mean_abs_start_error_s /= static_cast<double>(summary.matched.size());
  summary.mean_abs_end_error_s /= static_cast<double>(summary.matched.size());
  return summary;
}

bool is_result(TimelineKind kind) { return kind == TimelineKind::kPeriodModelResult || kind == TimelineKind::kDesResult; }

// The mean, median and p90 of the compared iterations on both sides, the measured ones' noise
// floors (bootstrap), and the run against its own median (docs/compare.md section 4).
void compare_statistics(PairComparison& pair) {
  std::vector<double> predicted, measured;
  for (const IterationComparison& row : pair.iterations)
    if (!row.skipped) {
      predicted.push_back(row.predicted_s);
      measured.push_back(row.measured_s);
    }
  const std::vector<Statistic> statistics = {[](const std::vector<double>& x) { return mean(x); },
                                             [](const std::vector<double>& x) { return median(x); },
                                             [](const std::vector<double>& x) { return quantile(x, 0.9); }};
  const std::vector<double> errors =
      bootstrap_standard_errors(measured, statistics, kBootstrapResamples, kBootstrapSeed);
  StatisticComparison* rows[] = {&pair.mean, &pair.median, &pair.p90};
  for (std::size_t s = 0; s < statistics.size(); ++s) {
    rows[s]->predicted_s = statistics[s](predicted);
    rows[s]->measured_s = statistics[s](measured);
    rows[s]->noise_floor_percent = kNoiseFloorStandardErrors * errors[s] / rows[s]->measured_s * 100;
  }
  double absolute_fraction_sum = 0;
  for (const double m : measured) absolute_fraction_sum += std::fabs(m - pair.median.measured_s) / m;
  pair.noise_floor.median_mape_percent = absolute_fraction_sum / static_cast<double>(measured.size()) * 100;
  pair.noise_floor.p90_over_median = pair.p90.measured_s / pair.median.measured_s;
}

// The compared iterations grouped by h = iteration mod H (docs/compare.md section 4.1).
std::vector<PositionComparison> compare_positions(const std::vector<IterationComparison>& iterations, int period) {
  std::vector<PositionComparison> positions(static_cast<std::size_t>(period));
  for (int h = 0; h < period; ++h) positions[h].position = h;
  for (const IterationComparison& row : iterations) {
    if (row.skipped) continue;
    PositionComparison& position = positions[static_cast<std::size_t>(row.iteration % period)];
    ++position.iterations;
    position.predicted_s += row.predicted_s;
    position.measured_s += row.measured_s;
  }
  std::vector<PositionComparison> compared;
  for (PositionComparison& position : positions) {
    if (position.iterations == 0) continue;
    position.predicted_s /= position.iterations;
    position.measured_s /= position.iterations;
    compared.push_back(position);
  }
  return compared;
}

}  // namespace

Timeline parse_timeline(const std::string& text, const std::string& origin) {
  if (text.find_first_not_of(" \t\r\n") == std::string::npos)
    throw InputError(origin + ": an empty file (expected a simulate result, a Chrome trace or a run log)");
  Json document;
  try {
    document = parse_json_text(text, origin);
  } catch (const InputError&) {
    // Not one JSON document: a log of several lines, when its first line is an object on its own.
    // Lines are views into the text, not copies (the helper's re-check: a 168 MB trace refused for
    // memory was copied here, and that ran out with no file named).
    std::size_t at = 0;
    const auto next_nonblank_line = [&]() -> std::string_view {
      while (at < text.size()) {
        const std::size_t end = std::min(text.find('\n', at), text.size());
        const std::string_view line(text.data() + at, end - at);
        at = end + 1;
        if (line.find_first_not_of(" \t\r") != std::string_view::npos) return line;
      }
      return {};
    };
    const std::string_view first = next_nonblank_line();
    const std::string_view second = next_nonblank_line();
    if (second.empty()) throw;  // one line: the whole file's error
    bool first_is_object = false;
    try {
      first_is_object = parse_json_text(std::string(first), origin).is_object();
    } catch (const InputError&) {
    }
    // A first line that is itself broken (a duplicate key, a missing '}') but starts an object, as
    // the next line does: a log whose line 1 is at fault (the whole file's error named line 2).
    const auto starts_object = [](std::string_view line) {
      const std::size_t at = line.find_first_not_of(" \t\r");
      return at != std::string::npos && line[at] == '{' && line.find_first_not_of(" \t\r{", at) != std::string::npos;
    };
    if (!first_is_object && !(starts_object(first) && starts_object(second)))
      throw;  // the whole file's error: where the document breaks
    return read_log(text, origin);
  }
  if (document.is_array()) {
    // Chrome's JSON array format; an array of run-log lines is a log written the wrong way.
    if (!document.empty() && document.front().is_object() && document.front().contains("iteration") &&
        !document.front().contains("ph"))
      throw InputError(origin + ": a JSON array of run-log lines; a run log is JSON lines, one object per line as "
                                "`syncplan run --log` writes it (docs/formats.md \"Training log\")");
    return read_trace(document, nullptr, origin);
  }
  if (!document.is_object())
    throw InputError(origin + ": expected a JSON object (a simulate result or a Chrome trace), an array of trace "
                              "events or JSON lines, got " + json_type_name(document));
  if (document.contains("traceEvents")) {
    const auto syncplan_object = document.find("syncplan");
    Timeline timeline =
        read_trace(document.at("traceEvents"), syncplan_object == document.end() ? nullptr : &*syncplan_object, origin);
    // A DES trace (`simulate --cluster --trace`) states its period in Chrome's metadata object.
    const auto other = document.find("otherData");
    if (timeline.kind == TimelineKind::kSimulatedTrace && !timeline.period && other != document.end()) {
      if (!other->is_object())  // Chrome's format: a dictionary of metadata
        throw InputError(origin + ": field 'otherData': expected an object, got " + json_type_name(*other));
      timeline.period = stated_period(*other, origin, "otherData.period");
    }
    return timeline;
  }
  if (document.contains("format")) return read_result(document, origin);
  if (document.contains("iteration")) return read_log(text, origin);
  throw InputError(origin + ": neither a simulate result ('format'), a Chrome trace ('traceEvents') nor a run log "
                            "line ('iteration')");
}

Timeline read_timeline(const std::string& path) { return parse_timeline(read_text_file(path), path); }

PairComparison compare_timelines(const Timeline& predicted, const Timeline& measured, const CompareOptions& options) {
  if (options.skip < 0) throw FieldError("skip", "skip: must be >= 0, got " + std::to_string(options.skip));
  if (predicted.kind == TimelineKind::kRunLog)
    throw InputError(predicted.path + ": a run log is a measurement, not a prediction (give a simulate result or "
                                      "trace as PREDICTED)");
  if (is_result(measured.kind))
    throw InputError(measured.path + ": a simulate result is a prediction, not a measurement (give a run trace or "
                                     "log as MEASURED)");
  const int count = static_cast<int>(measured.iteration_s.size());
  // Both sides say their period (a result; a measured trace's syncplan.period): they must agree.
  const std::optional<int> predicted_period =
      predicted.repeats ? std::optional<int>(static_cast<int>(predicted.iteration_s.size())) : predicted.period;
  if (predicted_period && measured.period && *measured.period != *predicted_period)
    throw InputError(measured.path + ": field '" +
                     (measured.kind == TimelineKind::kSimulatedTrace ? "otherData.period" : "syncplan.period") +
                     "': the run's period H = " +
                     std::to_string(*measured.period) + ", but " + predicted.path + " predicts a period of H = " +
                     std::to_string(*predicted_period));
  if (!predicted.repeats && (predicted.first_iteration != measured.first_iteration ||
                             predicted.iteration_s.size() != measured.iteration_s.size()))
    throw InputError(predicted.path + " has " + range_text(predicted) + ", " + measured.path + " has " +
                     range_text(measured) + ": a prediction other than the period model's must cover the run's "
                     "iterations (simulate --cluster --iterations " + std::to_string(count) + ")");
  if (options.skip >= count)
    throw FieldError("skip", "skip: " + std::to_string(options.skip) + " leaves none of the " + std::to_string(count) +
                                 " iterations of " + measured.path + " to compare");
  PairComparison pair;
  pair.predicted_path = predicted.path;
  pair.measured_path = measured.path;
  pair.predicted_kind = predicted.kind;
  pair.measured_kind = measured.kind;
  pair.measured_ranks = measured.ranks;
  if (predicted.repeats) pair.predicted_period = static_cast<int>(predicted.iteration_s.size());
  double absolute_fraction_sum = 0;
  for (int k = 0; k < count; ++k) {
    IterationComparison row;
    row.iteration = measured.first_iteration + k;
    row.predicted_s = predicted.iteration_s[predicted_iteration(predicted, row.iteration) - predicted.first_iteration];
    row.measured_s = measured.iteration_s[k];
    row.skipped = k < options.skip;
    if (!(row.measured_s > 0))
      throw InputError(measured.path + ": iteration " + std::to_string(row.iteration) +
                       ": the measured time is 0 s (MAPE divides by it)");
    if (!row.skipped) {
      ++pair.compared;
      absolute_fraction_sum += std::fabs(row.error_s()) / row.measured_s;
      pair.mean_predicted_s += row.predicted_s;
      pair.mean_measured_s += row.measured_s;
    }
    pair.iterations.push_back(row);
  }
  pair.mape_percent = absolute_fraction_sum / pair.compared * 100;
  pair.mean_predicted_s /= pair.compared;
  pair.mean_measured_s /= pair.compared;
  compare_statistics(pair);
  pair.period = predicted.period.value_or(measured.period.value_or(0));
  if (pair.period > 1) pair.positions = compare_positions(pair.iterations, pair.period);
  if (predicted.allreduces && measured.allreduces)
    pair.allreduces = match_allreduces(predicted, measured, measured.first_iteration + options.skip);
  return pair;
}

bool means_tie(double a_s, double b_s) {
  return std::fabs(a_s - b_s) <= kRankingTie * std::max(std::fabs(a_s), std::fabs(b_s));
}

RankingComparison rank_runs(const std::vector<std::pair<double, double>>& mean_predicted_measured_s) {
  const int runs = static_cast<int>(mean_predicted_measured_s.size());
  RankingComparison ranking;
  for (int i = 0; i < runs; ++i) {
    ranking.predicted_order.push_back(i);
    ranking.measured_order.push_back(i);
  }
  std::stable_sort(ranking.predicted_order.begin(), ranking.predicted_order.end(), [&](int a, int b) {
    return mean_predicted_measured_s[a].first < mean_predicted_measured_s[b].first;
  });
  std::stable_sort(ranking.measured_order.begin(), ranking.measured_order.end(), [&](int a, int b) {
    return mean_predicted_measured_s[a].second < mean_predicted_measured_s[b].second;
  });
  // -1, 0 or 1: which of two means is smaller, 0 for a tie.
  const auto order = [](double x, double y) { return means_tie(x, y) ? 0 : x < y ? -1 : 1; };
  for (int a = 0; a < runs; ++a)
    for (int b = a + 1; b < runs; ++b) {
      ++ranking.run_pairs;
      const auto& [pa, ma] = mean_predicted_measured_s[a];
      const auto& [pb, mb] = mean_predicted_measured_s[b];
      if (order(pa, pb) == order(ma, mb)) ++ranking.concordant_pairs;
    }
  return ranking;
}

CompareReport compare_files(const std::vector<std::pair<std::string, std::string>>& pairs,
                            const CompareOptions& options) {
  if (pairs.empty()) throw InputError("compare: give at least one PREDICTED MEASURED pair");
  CompareReport report;
  report.skip = options.skip;
  std::vector<std::pair<double, double>> means;
  for (const auto& [predicted, measured] : pairs) {
    report.pairs.push_back(compare_timelines(read_timeline(predicted), read_timeline(measured), options));
    means.emplace_back(report.pairs.back().mean_predicted_s, report.pairs.back().mean_measured_s);
  }
  if (pairs.size() >= 2) report.ranking = rank_runs(means);
  return report;
}

Json compare_to_json(const CompareReport& report) {
  Json pairs = Json::array();
  for (const PairComparison& pair : report.pairs) {
    Json document;
    document["predicted"] = pair.predicted_path;
    document["predicted_kind"] = to_string(pair.predicted_kind);
    document["predicted_period"] = pair.predicted_period ? Json(*pair.predicted_period) : Json(nullptr);
    document["measured"] = pair.measured_path;
    document["measured_kind"] = to_string(pair.measured_kind);
    document["measured_ranks"] = pair.measured_ranks;
    document["compared_iterations"] = pair.compared;
    document["mape_percent"] = pair.mape_percent;
    document["mean_predicted_s"] = pair.mean_predicted_s;
    document["mean_measured_s"] = pair.mean_measured_s;
    Json statistics = Json::object();
    for (const auto& [name, row] : {std::pair<const char*, const StatisticComparison&>{"mean", pair.mean},
                                    {"median", pair.median},
                                    {"p90", pair.p90}})
      statistics[name] = Json{{"predicted_s", row.predicted_s},
                              {"measured_s", row.measured_s},
                              {"error_s", row.error_s()},
                              {"error_percent", row.error_percent()},
                              {"noise_floor_percent", row.noise_floor_percent},
                              {"within_noise", row.within_noise()}};
    document["statistics"] = std::move(statistics);
    document["noise_floor"] = Json{{"median_mape_percent", pair.noise_floor.median_mape_percent},
                                   {"p90_over_median", pair.noise_floor.p90_over_median},
                                   {"mape_within_noise", pair.mape_within_noise()}};
    Json iterations = Json::array();
    for (const IterationComparison& row : pair.iterations)
      iterations.push_back(Json{{"iteration", row.iteration}, {"predicted_s", row.predicted_s},
                                {"measured_s", row.measured_s}, {"error_s", row.error_s()},
                                {"error_percent", row.error_percent()}, {"skipped", row.skipped}});
    document["iterations"] = std::move(iterations);
    document["period"] = pair.period > 0 ? Json(pair.period) : Json(nullptr);
    Json positions = Json::array();
    for (const PositionComparison& row : pair.positions)
      positions.push_back(Json{{"position", row.position}, {"iterations", row.iterations},
                               {"predicted_s", row.predicted_s}, {"measured_s", row.measured_s},
                               {"error_s", row.error_s()}, {"error_percent", row.error_percent()}});
    document["positions"] = std::move(positions);
    if (pair.allreduces) {
      Json matched = Json::array();
      for (const AllreduceComparison& row : pair.allreduces->matched)
        matched.push_back(Json{{"iteration", row.iteration}, {"layers", row.layers},
                               {"predicted_start_s", row.predicted_start_s}, {"measured_start_s", row.measured_start_s},
                               {"start_error_s", row.start_error_s()}, {"predicted_end_s", row.predicted_end_s},
                               {"measured_end_s", row.measured_end_s}, {"end_error_s", row.end_error_s()}});
      document["allreduces"] = Json{{"matched", std::move(matched)},
                                    {"predicted_only", pair.allreduces->predicted_only},
                                    {"measured_only", pair.allreduces->measured_only},
                                    {"mean_abs_start_error_s", pair.allreduces->mean_abs_start_error_s},
                                    {"mean_abs_end_error_s", pair.allreduces->mean_abs_end_error_s}};
    } else {
      document["allreduces"] = nullptr;
    }
    pairs.push_back(std::move(document));
  }
  Json ranking = nullptr;
  if (report.ranking)
    ranking = Json{{"predicted_order", report.ranking->predicted_order},
                   {"measured_order", report.ranking->measured_order},
                   {"concordant_pairs", report.ranking->concordant_pairs},
                   {"run_pairs", report.ranking->run_pairs},
                   {"same", report.ranking->same()}};
  return Json{{"format", kCompareFormat}, {"skip", report.skip}, {"pairs", std::move(pairs)}, {"ranking", std::move(ranking)}};
}

}  // namespace syncplan
