// The DES's Chrome trace (docs/des.md 4) for every strategy: well-formed "X" events, no overlap on
// one (pid, tid) timeline, and every synced layer exactly once per sync of the program.
#include "des_support.hpp"

#include "planner/strategy_table.hpp"

#include <algorithm>
#include <map>
#include <random>
#include <tuple>

namespace syncplan {
namespace {

const std::vector<std::string> kAllStrategies = {"ssgd", "wfbp",  "flsgd", "plsgd-even", "dreamddp",
                                                 "dp",   "best",  "ddp",   "mgwfbp"};

// Random layers in backprop order with forward, backward, update, measured sync and bytes.
DesLayers random_layers(std::mt19937_64& random, int count) {
  std::uniform_real_distribution<double> seconds(1e-4, 3e-3), bytes(1e4, 4e6);
  std::vector<double> backward, sync, param_bytes;
  for (int j = 0; j < count; ++j) {
    backward.push_back(seconds(random));
    sync.push_back(seconds(random));
    param_bytes.push_back(std::floor(bytes(random)));
  }
  DesLayers layers = des_test::backprop_layers(backward, sync, 0, 0, param_bytes);
  for (int j = 0; j < count; ++j) {
    layers.forward_s[j] = seconds(random) / 2;
    layers.update_s[j] = seconds(random) / 8;
  }
  return layers;
}

struct TraceCheck {
  int traced_workers = 0;
  int comm_streams = 1;
  int iterations = 1;
};

// (worker, iteration, layer name) -> how many all-reduces of that layer the worker shows.
using SyncCounts = std::map<std::tuple<int, int, std::string>, int>;

SyncCounts expected_counts(const SyncProgram& program, const DesLayers& layers, const TraceCheck& check) {
  SyncCounts counts;
  for (int w = 0; w < check.traced_workers; ++w)
    for (int i = 0; i < check.iterations; ++i)
      for (const SyncOp& op : program.iterations[i % program.period()])
        for (const int j : op.layers) ++counts[{w, i, layers.names[j]}];
  return counts;
}

bool is_number(const Json& value) { return value.is_number() && std::isfinite(value.get<double>()); }

// Checks the trace document; returns the all-reduce counts it shows.
SyncCounts validate_trace(const Json& trace, const DesLayers& layers, const TraceCheck& check) {
  REQUIRE(trace.is_object());
  REQUIRE(trace.contains("traceEvents"));
  const Json& events = trace.at("traceEvents");
  REQUIRE(events.is_array());
  std::map<std::pair<int, int>, std::vector<std::pair<double, double>>> timelines;  // (pid, tid) -> (ts, dur)
  SyncCounts counts;
  int backward_events = 0;
  for (const Json& event : events) {
    INFO("event " << event.dump());
    REQUIRE(event.is_object());
    REQUIRE(event.at("ph").is_string());
    const std::string ph = event.at("ph").get<std::string>();
    REQUIRE((ph == "X" || ph == "M"));
    REQUIRE(event.at("pid").is_number_integer());
    const int pid = event.at("pid").get<int>();
    REQUIRE(pid >= 0);
    REQUIRE(pid < check.traced_workers);
    if (ph == "M") continue;
    REQUIRE(event.at("name").is_string());
    REQUIRE_FALSE(event.at("name").get<std::string>().empty());
    REQUIRE(event.at("cat").is_string());
    REQUIRE(event.at("tid").is_number_integer());
    const int tid = event.at("tid").get<int>();
    REQUIRE(tid >= 0);
    REQUIRE(tid <= check.comm_streams);
    REQUIRE(is_number(event.at("ts")));
    REQUIRE(is_number(event.at("dur")));
    const double ts = event.at("ts").get<double>(), dur = event.at("dur").get<double>();
    REQUIRE(ts >= 0);
    REQUIRE(dur >= 0);
    timelines[{pid, tid}].emplace_back(ts, dur);
    const Json& args = event.at("args");
    REQUIRE(args.at("iteration").is_number_integer());
    const int iteration = args.at("iteration").get<int>();
    REQUIRE(iteration >= 0);
    REQUIRE(iteration < check.iterations);
    const std::string category = event.at("cat").get<std::string>();
    if (category == "allreduce") {
      REQUIRE(tid >= 1);
      std::vector<std::string> names;
      if (args.contains("layer")) names.push_back(args.at("layer").get<std::string>());
      else for (const Json& name : args.at("layers")) names.push_back(name.get<std::string>());
      REQUIRE_FALSE(names.empty());
      for (const std::string& name : names) ++counts[{pid, iteration, name}];
    } else {
      REQUIRE((category == "forward" || category == "backward" || category == "update"));
      REQUIRE(tid == 0);
      if (category == "backward") ++backward_events;
    }
  }
  // Every layer's backward (all > 0) in every iteration of every traced worker.
  REQUIRE(backward_events == check.traced_workers * check.iterations * static_cast<int>(layers.size()));
  // No two events of one timeline overlap (1e-9 us of rounding allowed).
  for (auto& [key, spans] : timelines) {
    std::sort(spans.begin(), spans.end());
    for (std::size_t k = 1; k < spans.size(); ++k) {
      INFO("pid " << key.first << " tid " << key.second << ": [" << spans[k - 1].first << ", +"
                  << spans[k - 1].second << "] then " << spans[k].first);
      REQUIRE(spans[k].first >= spans[k - 1].first + spans[k - 1].second - 1e-9);
    }
  }
  return counts;
}

}  // namespace

TEST_CASE("DES trace: every strategy's trace is well formed and shows each sync once", "[des][trace]") {
  std::mt19937_64 random(99);
  const DesLayers layers = random_layers(random, 9);
  // 4 workers in 2 nodes, a straggler and jitter: every worker is simulated.
  Json document = des_test::cluster_document(4, 2, 80, 1, 8, 10, "hierarchical");
  document["compute_slowdown"] = Json{{"2", 1.5}};
  document["jitter"] = Json{{"distribution", "lognormal"}, {"sigma", 0.1}, {"seed", 5}};
  const Cluster cluster = des_test::cluster_of(document);
  const Topology topology(cluster);
  const AllreduceModel model(cluster, topology);

  for (const SyncTimeSource source : {SyncTimeSource::kModel, SyncTimeSource::kMeasured}) {
    const DesStrategyContext context{layers, model, source, 8e6, 1e6};
    const BackpropTimes times = backprop_times_for_des(context);
    for (const std::string& name : kAllStrategies) {
      if (name == "mgwfbp" && source == SyncTimeSource::kMeasured) continue;
      for (const int streams : {1, 2}) {
        const int period = 3;
        TraceCheck check;
        check.traced_workers = 3;  // of 4: the trace holds only the first ones
        check.comm_streams = streams;
        check.iterations = 2 * period + 1;
        INFO("strategy " << name << ", sync time "
                         << (source == SyncTimeSource::kModel ? "model" : "measured") << ", " << streams
                         << " stream(s)");
        const SyncProgram program = des_test::des_program(name, context, times, period);
        DesOptions options;
        options.iterations = check.iterations;
        options.comm_streams = streams;
        options.sync_time = source;
        options.trace_workers = check.traced_workers;
        const DesResult result = run_des(layers, cluster, program, options);
        REQUIRE(result.simulated_workers == 4);
        const SyncCounts shown = validate_trace(des_trace_json(result, layers), layers, check);
        const SyncCounts expected = expected_counts(program, layers, check);
        REQUIRE(!expected.empty());
        REQUIRE(shown == expected);
      }
    }
  }
}

TEST_CASE("DES trace: identical workers trace the representative only", "[des][trace]") {
  // One simulated worker: even when more are asked for, the trace holds pid 0 only.
  std::mt19937_64 random(3);
  const DesLayers layers = random_layers(random, 4);
  const Cluster cluster = des_test::cluster_of(des_test::cluster_document(8, 8, 80, 1));
  const Topology topology(cluster);
  const AllreduceModel model(cluster, topology);
  const DesStrategyContext context{layers, model, SyncTimeSource::kMeasured};
  const BackpropTimes times = backprop_times_for_des(context);
  const SyncProgram program = des_test::des_program("wfbp", context, times, 2);
  DesOptions options;
  options.iterations = 2;
  options.trace_workers = 8;
  const DesResult result = run_des(layers, cluster, program, options);
  REQUIRE(result.simulated_workers == 1);
  TraceCheck check;
  check.traced_workers = 1;
  check.iterations = 2;
  REQUIRE(validate_trace(des_trace_json(result, layers), layers, check) == expected_counts(program, layers, check));
  // No trace asked for: no events.
  options.trace_workers = 0;
  REQUIRE(run_des(layers, cluster, program, options).trace.empty());
}

}  // namespace syncplan
