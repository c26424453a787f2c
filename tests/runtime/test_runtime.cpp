// The runtime without MPI (runtime/schedule.hpp, runtime/executor.hpp, runtime/trace.hpp): the
// schedules of the strategies and of plans on tiny-gpt, the executor's hooks on a scripted
// communicator (when buckets launch, progress, complete and time out), the emulated link's
// completion times, and the trace's names. Expected numbers are derived in the comments.
#include "comm/communicator.hpp"
#include "core/errors.hpp"
#include "core/field_error.hpp"
#include "model/model_spec.hpp"
#include "runtime/executor.hpp"
#include "runtime/fingerprint.hpp"
#include "runtime/schedule.hpp"
#include "runtime/trace.hpp"
#include "runtime/trainer.hpp"
#include "simulator/des/engine.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <numeric>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>
#include <unistd.h>

using namespace syncplan;

namespace {

const Model& tiny_gpt() {
  static const Model model = expand_model(read_model_spec_file(SYNCPLAN_DATA_DIR "/models/tiny-gpt.json"));
  return model;
}

std::size_t index_of(const Model& model, const std::string& name) {
  for (std::size_t i = 0; i < model.layers.size(); ++i)
    if (model.layers[i].name == name) return i;
  FAIL("no layer " << name);
  return 0;
}

// The layers with parameters of their own to average: not tied, not frozen, > 0 parameters.
std::vector<std::size_t> owning_layers(const Model& model) {
  std::vector<std::size_t> layers;
  for (std::size_t i = 0; i < model.layers.size(); ++i)
    if (model.layers[i].param_count() > 0 && !model.layers[i].frozen) layers.push_back(i);
  return layers;
}

// A communicator of `size` ranks that records each start and completes a bucket after
// `polls_to_done` tests (never when negative, nor a bucket whose first buffer `never` picks). When a
// bucket completes it adds `add_when_done` to every element of its buffers: the "mean" is then
// the buffers at start plus that, as if the other ranks' values were higher by 2 x add_when_done.
struct ScriptedComm {
  int polls_to_done = 0;
  int size = 2;
  float add_when_done = 0;
  std::function<bool(const CommBuffer&)> never;
  std::vector<std::size_t> started_elements;  // per start, its total element count
  std::vector<int> polls;                     // per request id, tests so far
  std::vector<std::vector<CommBuffer>> buffers;  // per request id, its buffers
  std::vector<void*> ready;                      // per request id, the ready event it was given
  const char* place = "host";                    // buffer_place
};

CommBackendTable scripted_table(ScriptedComm& comm) {
  CommBackendTable table;
  table.name = "scripted";
  table.buffer_place = comm.place;
  table.state = &comm;
  table.rank = 0;
  table.size = comm.size;
  table.start = [](void* state, const CommBuffer* buffers, std::size_t count, void* ready, std::int64_t* request,
                   AbiStatus* status) {
    auto& self = *static_cast<ScriptedComm*>(state);
    self.ready.push_back(ready);
    std::size_t elements = 0;
    for (std::size_t b = 0; b < count; ++b) elements += buffers[b].count;
    self.started_elements.push_back(elements);
    self.polls.push_back(0);
    self.buffers.emplace_back(buffers, buffers + count);
    *request = static_cast<std::int64_t>(self.polls.size() - 1);
    return abi_call(status, [] {});
  };
  table.test = [](void* state, std::int64_t request, int* done, AbiStatus* status) {
    auto& self = *static_cast<ScriptedComm*>(state);
    const auto id = static_cast<std::size_t>(request);
    const int polls = ++self.polls.at(id);
    *done = self.polls_to_done >= 0 && polls > self.polls_to_done && !(self.never && self.never(self.buffers.at(id).at(0)));
    if (*done)
      for (const CommBuffer& buffer : self.buffers.at(id))
        for (std::size_t i = 0; i < buffer.count; ++i) buffer.data[i] += self.add_when_done;
    return abi_call(status, [] {});
  };
  table.abort = [](void*, int) {};
  table.destroy = [](void*) {};
  return table;
}

// Host buffers of every layer's parameters, for the executor to hand to the communicator.
struct LayerStore {
  std::vector<std::vector<float>> tensors;
  explicit LayerStore(const Model& model) {
    for (const ModelLayer& layer : model.layers) tensors.emplace_back(static_cast<std::size_t>(layer.param_count()), 1.0f);
  }
  LayerBuffers buffers() {
    return [this](std::size_t layer) { return std::vector<std::span<float>>{std::span<float>(tensors.at(layer))}; };
  }
};

}  // namespace

TEST_CASE("ssgd averages every owning layer's gradient after backprop, each its own bucket", "[runtime]") {
  const Model& model = tiny_gpt();
  const Schedule schedule = strategy_schedule(model, "ssgd", 2);
  CHECK(schedule.kind == SyncKind::kGradients);
  REQUIRE(schedule.period() == 2);
  const std::vector<std::size_t> owning = owning_layers(model);
  for (int h = 0; h < 2; ++h) {
    const auto& buckets = schedule.iterations[h];
    REQUIRE(buckets.size() == owning.size());
    // Backprop order: the owning layers from the output-most (largest index) down.
    for (std::size_t b = 0; b < buckets.size(); ++b) {
      REQUIRE(buckets[b].layers.size() == 1);
      CHECK(buckets[b].layers[0] == owning[owning.size() - 1 - b]);
      CHECK(buckets[b].launch == LaunchPoint::kAfterBackward);
      CHECK(buckets[b].bytes == 4 * model.layers[buckets[b].layers[0]].param_count());
    }
  }
  // lm_head is tied to transformer.wte: its table is synced once, by wte (the tie group's
  // latest-ready layer), 256 x 128 fp32 = 131,072 bytes; lm_head itself is in no bucket.
  const std::size_t wte = index_of(model, "transformer.wte"), lm_head = index_of(model, "lm_head");
  const std::vector<std::size_t> synced = schedule.synced_layers(0);
  CHECK(std::count(synced.begin(), synced.end(), lm_head) == 0);
  REQUIRE(std::count(synced.begin(), synced.end(), wte) == 1);
  CHECK(schedule.iterations[0].back().layers[0] == wte);
  CHECK(schedule.iterations[0].back().bytes == 256 * 128 * 4);
}

TEST_CASE("wfbp launches every gradient as its layer's backward ends; flsgd averages parameters after the last step", "[runtime]") {
  const Model& model = tiny_gpt();
  const Schedule wfbp = strategy_schedule(model, "wfbp", 1);
  CHECK(wfbp.kind == SyncKind::kGradients);
  for (const ScheduleBucket& bucket : wfbp.iterations[0]) CHECK(bucket.launch == LaunchPoint::kLayerDone);
  CHECK(wfbp.iterations[0].size() == owning_layers(model).size());

  const Schedule flsgd = strategy_schedule(model, "flsgd", 3);
  CHECK(flsgd.kind == SyncKind::kParameters);
  CHECK(flsgd.iterations[0].empty());
  CHECK(flsgd.iterations[1].empty());
  REQUIRE(flsgd.iterations[2].size() == owning_layers(model).size());
  for (const ScheduleBucket& bucket : flsgd.iterations[2]) CHECK(bucket.launch == LaunchPoint::kAfterStep);
}

TEST_CASE("plsgd-even cuts backprop order into H groups of ceil(L/H) layers", "[runtime]") {
  const Model& model = tiny_gpt();
  const std::size_t L = model.layers.size();
  constexpr int H = 4;
  const std::size_t group = (L + H - 1) / H;
  const Schedule schedule = strategy_schedule(model, "plsgd-even", H);
  CHECK(schedule.kind == SyncKind::kParameters);
  std::set<std::size_t> seen;
  for (int h = 0; h < H; ++h) {
    std::size_t previous = L;
    for (const ScheduleBucket& bucket : schedule.iterations[h]) {
      CHECK(bucket.launch == LaunchPoint::kLayerDone);
      const std::size_t layer = bucket.layers.at(0);
      // Backprop index j = L-1-layer lies in group h: [h g, (h+1) g).
      const std::size_t j = L - 1 - layer;
      CHECK(j / group == static_cast<std::size_t>(h));
      CHECK(layer < previous);  // descending model index = backprop order
      previous = layer;
      CHECK(seen.insert(layer).second);
    }
  }
  const std::vector<std::size_t> owning = owning_layers(model);
  CHECK(seen == std::set<std::size_t>(owning.begin(), owning.end()));
}

TEST_CASE("strategies that need a profile and unknown ones are refused naming the field", "[runtime]") {
  const Model& model = tiny_gpt();
  CHECK_THROWS_WITH(strategy_schedule(model, "dp", 4), Catch::Contains("strategy: 'dp' is planned on a profile"));
  CHECK_THROWS_WITH(strategy_schedule(model, "bogus", 4), Catch::Contains("strategy: unknown 'bogus'"));
  CHECK_THROWS_AS(strategy_schedule(model, "ssgd", 0), FieldError);
}

TEST_CASE("a plan runs as given: its layers, its buckets; layers must be the model's", "[runtime]") {
  const Model& model = tiny_gpt();
  const Profile profile = runtime_profile(model);
  // H = 2: the first block's attention projection (c_attn) and MLP input (c_fc) sync in iteration 1,
  // everything else in iteration 0.
  const std::string attn = "transformer.h.0.attn.c_attn", fc = "transformer.h.0.mlp.c_fc";
  Json layers = Json::array();
  for (const LayerProfile& layer : profile.layers)
    layers.push_back({{"name", layer.name}, {"sync_iterations", {layer.name == attn || layer.name == fc ? 1 : 0}}});
  Json document{{"format", "syncplan.plan/v1"}, {"period", 2}, {"algorithm", "hand"}, {"layers", layers}};
  const Schedule plain = plan_schedule(model, plan_from_json(document, "plan.json", profile), "plan.json");
  CHECK(plain.strategy == "plan");
  CHECK(plain.algorithm == "hand");
  REQUIRE(plain.iterations[1].size() == 2);
  // Backprop order: c_fc (later in the forward) is done first.
  CHECK(plain.iterations[1][0].layers == std::vector<std::size_t>{index_of(model, fc)});
  CHECK(plain.iterations[1][1].layers == std::vector<std::size_t>{index_of(model, attn)});

  // The same with one fused bucket in iteration 1: launched once c_attn's backward is done.
  document["buckets"] = {{"alpha_s", 1e-5}, {"iterations", Json::array()}};
  Json iteration0 = Json::array();
  for (auto it = profile.layers.rbegin(); it != profile.layers.rend(); ++it)
    if (it->name != attn && it->name != fc && it->param_count.value_or(0) > 0) iteration0.push_back(Json::array({it->name}));
  document["buckets"]["iterations"] = Json::array({iteration0, Json::array({Json::array({fc, attn})})});
  const Schedule fused = plan_schedule(model, plan_from_json(document, "plan.json", profile), "plan.json");
  REQUIRE(fused.iterations[1].size() == 1);
  CHECK(fused.iterations[1][0].layers == std::vector<std::size_t>{index_of(model, fc), index_of(model, attn)});
  CHECK(fused.iterations[1][0].bytes ==
        4 * (model.layers[index_of(model, fc)].param_count() + model.layers[index_of(model, attn)].param_count()));

  // A layer the model does not have: InputError naming the file and the layer.
  document.erase("buckets");
  document["layers"][3]["name"] = "transformer.h.9.attn.c_attn";
  CHECK_THROWS_WITH(plan_from_json(document, "plan.json", profile),
                    Catch::Contains("plan.json") && Catch::Contains("transformer.h.9.attn.c_attn"));
}

TEST_CASE("the executor launches a bucket when its last layer's backward is done and polls the ones in flight", "[runtime]") {
  const Model& model = tiny_gpt();
  ScriptedComm scripted;
  scripted.polls_to_done = 1;  // done at the second test
  Communicator comm(scripted_table(scripted));
  LayerStore store(model);
  RunClock clock;
  const Schedule schedule = strategy_schedule(model, "plsgd-even", 1);  // every owning layer, iteration 0
  Executor executor(schedule, comm, store.buffers(), clock);
  CHECK(executor.iteration() == 0);
  executor.begin_iteration();
  const std::size_t L = model.layers.size();
  for (std::size_t l = L; l-- > 0;) {
    executor.layer_backward_done(l);
    // Started so far: the buckets whose (only) layer is >= l.
    std::size_t expected = 0;
    for (const ScheduleBucket& bucket : schedule.iterations[0]) expected += bucket.layers.back() >= l;
    CHECK(scripted.started_elements.size() == expected);
  }
  CHECK_THROWS_AS(executor.after_step(), InternalError);  // before_step first
  executor.before_step();
  CHECK(comm.in_flight() == 0);
  executor.after_step();
  CHECK(executor.iteration() == 1);
  const ExecutedIteration& executed = executor.last_executed();
  CHECK(executed.iteration == 0);
  REQUIRE(executed.buckets.size() == schedule.iterations[0].size());
  for (std::size_t b = 0; b < executed.buckets.size(); ++b) {
    CHECK(executed.buckets[b].layers == schedule.iterations[0][b].layers);
    CHECK(executed.buckets[b].end_s >= executed.buckets[b].launch_s);
    CHECK(scripted.started_elements[b] == static_cast<std::size_t>(schedule.iterations[0][b].bytes / 4));
  }
  // A second begin without finishing the iteration is a bug of the loop.
  executor.begin_iteration();
  CHECK_THROWS_AS(executor.begin_iteration(), InternalError);
}

TEST_CASE("the watch hears of each bucket before its start, and of the waits; a timeout carries the bucket's tag", "[runtime]") {
  const Model& model = tiny_gpt();
  ScriptedComm scripted;
  scripted.polls_to_done = -1;  // never done: every wait polls until its deadline
  Communicator comm(scripted_table(scripted));
  LayerStore store(model);
  RunClock clock;
  // ssgd: every owning layer's gradient, each its own bucket, all started in before_step, in
  // backprop order (output-most first), so bucket b is the b-th owning layer from the end.
  const Schedule schedule = strategy_schedule(model, "ssgd", 1);
  const std::vector<std::size_t> owning = owning_layers(model);
  std::vector<std::string> heard;             // first layers, in the order the watch heard them
  std::vector<std::size_t> started_before;    // communicator starts already made at each call
  std::vector<std::int64_t> waited_tags;
  double longest_wait_s = 0;
  ExecutorOptions options;
  options.timeout_s = 0.1;
  options.watch.started = [&](std::int64_t iteration, const std::string& first_layer) {
    CHECK(iteration == 5);
    heard.push_back(first_layer);
    started_before.push_back(scripted.started_elements.size());
    return static_cast<std::int64_t>(100 + heard.size() - 1);  // tags 100, 101, ...
  };
  options.watch.waiting = [&](std::int64_t tag, double waited_s) {
    waited_tags.push_back(tag);
    longest_wait_s = std::max(longest_wait_s, waited_s);
  };
  options.first_iteration = 5;
  Executor executor(schedule, comm, store.buffers(), clock, options);
  executor.begin_iteration();
  for (std::size_t l = model.layers.size(); l-- > 0;) executor.layer_backward_done(l);
  CHECK(heard.empty());  // ssgd starts nothing during backprop
  try {
    executor.before_step();
    FAIL("no SyncTimeout");
  } catch (const SyncTimeout& e) {
    // The first bucket waited for is the first started: tag 100, the output-most owning layer.
    CHECK(e.tag() == 100);
    CHECK(e.iteration() == 5);
    CHECK(e.first_layer() == model.layers[owning.back()].name);
  }
  REQUIRE(heard.size() == owning.size());
  for (std::size_t b = 0; b < heard.size(); ++b) {
    CHECK(heard[b] == model.layers[owning[owning.size() - 1 - b]].name);
    CHECK(started_before[b] == b);  // heard before its own start
  }
  // Every wait call was for the bucket waited for, until just before the 0.1 s deadline.
  REQUIRE(!waited_tags.empty());
  CHECK(std::all_of(waited_tags.begin(), waited_tags.end(), [](std::int64_t tag) { return tag == 100; }));
  CHECK(longest_wait_s > 0.05);
  CHECK(longest_wait_s <= 0.1);
}

TEST_CASE("the iteration counter advances once per step and wraps the period position", "[runtime]") {
  const Model& model = tiny_gpt();
  ScriptedComm scripted;
  Communicator comm(scripted_table(scripted));
  LayerStore store(model);
  RunClock clock;
  ExecutorOptions options;
  options.first_iteration = 5;  // a resumed run
  Executor executor(strategy_schedule(model, "plsgd-even", 3), comm, store.buffers(), clock, options);
  std::vector<int> positions, logged;
  std::vector<std::int64_t> iterations;
  for (int step = 0; step < 4; ++step) {
    executor.begin_iteration();
    positions.push_back(executor.period_position());
    for (std::size_t l = model.layers.size(); l-- > 0;) executor.layer_backward_done(l);
    executor.before_step();
    executor.after_step();
    logged.push_back(executor.last_executed().period_position);
    iterations.push_back(executor.last_executed().iteration);
  }
  CHECK(executor.iteration() == 9);
  CHECK(positions == std::vector<int>{2, 0, 1, 2});  // 5 mod 3, 6 mod 3, ...
  CHECK(logged == positions);
  CHECK(iterations == std::vector<std::int64_t>{5, 6, 7, 8});
}

TEST_CASE("the emulated link completes buckets first in, first out at the ring model's time", "[runtime]") {
  const Model& model = tiny_gpt();
  ScriptedComm scripted;
  scripted.size = 2;
  scripted.polls_to_done = 0;  // the real all-reduce is done at once: the emulation decides
  Communicator comm(scripted_table(scripted));
  LayerStore store(model);
  RunClock clock;
  ExecutorOptions options;
  options.link = EmulatedLink{1.0, 50.0};  // 1 Gbit/s = 1.25e8 B/s, 50 us
  const Schedule schedule = strategy_schedule(model, "ssgd", 1);
  Executor executor(schedule, comm, store.buffers(), clock, options);
  // Ring on 2 workers (docs/collectives.md 3): 2(p-1) alpha + 2(p-1)/p n / B = 100 us + n / 1.25e8 s.
  // wte's 131,072 bytes: 100e-6 + 1.048576e-3 = 1.148576e-3 s.
  CHECK(executor.emulated_allreduce_s(131072) == Approx(1.148576e-3).epsilon(1e-12));
  executor.begin_iteration();
  for (std::size_t l = model.layers.size(); l-- > 0;) executor.layer_backward_done(l);
  const double launched_s = clock.now_s();
  executor.before_step();  // ssgd launches every bucket here, at once
  executor.after_step();
  const ExecutedIteration& executed = executor.last_executed();
  double link_free_s = 0, total_s = 0;
  for (const ExecutedBucket& bucket : executed.buckets) {
    const double own_s = executor.emulated_allreduce_s(static_cast<double>(bucket.bytes));
    total_s += own_s;
    // Each starts when launched and the previous one is over: max(launch, previous end) + its time.
    CHECK(bucket.emulated_end_s == Approx(std::max(bucket.launch_s, link_free_s) + own_s).margin(1e-12));
    CHECK(bucket.end_s >= bucket.emulated_end_s);
    link_free_s = bucket.emulated_end_s;
  }
  // Launched together, they end one sum of their times later: the waits add up to at least that.
  CHECK(executed.wait_s >= total_s * 0.99);
  CHECK(executed.buckets.back().end_s >= launched_s + total_s * 0.99);
  CHECK_THROWS_AS(emulated_cluster({0, 0}, 2), FieldError);
  CHECK_THROWS_AS(emulated_cluster({1, -1}, 2), FieldError);
}

TEST_CASE("a bucket that never completes ends the wait with SyncTimeout naming rank, iteration and first layer", "[runtime]") {
  const Model& model = tiny_gpt();
  ScriptedComm scripted;
  scripted.polls_to_done = -1;
  Communicator comm(scripted_table(scripted));
  LayerStore store(model);
  RunClock clock;
  ExecutorOptions options;
  options.timeout_s = 0.2;
  Executor executor(strategy_schedule(model, "wfbp", 1), comm, store.buffers(), clock, options);
  executor.begin_iteration();
  for (std::size_t l = model.layers.size(); l-- > 0;) executor.layer_backward_done(l);
  const auto started = std::chrono::steady_clock::now();
  try {
    executor.before_step();
    FAIL("no SyncTimeout");
  } catch (const SyncTimeout& e) {
    const double waited_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    CHECK(waited_s >= 0.2);
    CHECK(waited_s < 1.2);
    CHECK(e.rank() == 0);
    CHECK(e.iteration() == 0);
    // wfbp's first bucket is the output-most owning layer's.
    const std::string first = model.layers[owning_layers(model).back()].name;
    CHECK(e.first_layer() == first);
    CHECK_THAT(e.what(), Catch::Contains("rank 0: iteration 0:") && Catch::Contains("'" + first + "'") &&
                             Catch::Contains("deadline of 0.2 s"));
  }
  CHECK_THROWS_AS(Executor(strategy_schedule(model, "wfbp", 1), comm, store.buffers(), clock,
                           [] {
                             ExecutorOptions zero_deadline;
                             zero_deadline.timeout_s = 0;
                             return zero_deadline;
                           }()),
                  FieldError);
}

TEST_CASE("buckets sent through the DES and the runtime's trace writer give the same events", "[runtime]") {
  // Three layers, forward order a, b, c (the runtime's model indices 0..2); the DES numbers them in
  // backprop order, c = 0, b = 1, a = 2, so DES layer j is model layer 2 - j. Period 2: iteration 0
  // syncs the bucket {c, b} with delay 1 (applied before iteration 1's update), iteration 1 syncs
  // {a}. One worker, measured all-reduce times: the DES decides every start and duration; the same
  // events are then recorded as the trainer records them and written by the runtime's writer.
  DesLayers layers;
  layers.names = {"c", "b", "a"};
  layers.forward_s = {0.0, 0.0, 0.25};
  layers.backward_s = {0.25, 0.5, 0.25};
  layers.update_s = {0.0, 0.0, 0.125};
  layers.sync_s = {0.5, 0.25, 0.5};
  layers.param_bytes = {1024, 2048, 512};
  SyncProgram program;
  program.iterations = {{SyncOp{{0, 1}, IssuePoint::kGradientReady, 1}}, {SyncOp{{2}, IssuePoint::kGradientReady, 0}}};
  const Cluster cluster = cluster_from_json(Json{{"format", "syncplan.cluster/v1"}, {"workers", 1}, {"workers_per_node", 1},
                                                 {"intra_node", {{"bandwidth_Gbps", 10}, {"latency_us", 5}}}},
                                            "cluster.json");
  DesOptions options;
  options.iterations = 2;
  options.trace_workers = 1;
  const DesResult result = run_des(layers, cluster, program, options);
  const Json des_events = des_trace_json(result, layers)["traceEvents"];

  MeasuredTrace trace;
  int allreduces = 0;
  for (const DesTraceEvent& event : result.trace) {
    std::vector<std::size_t> model_layers;
    for (const int j : event.layers) model_layers.push_back(static_cast<std::size_t>(2 - j));
    const std::int64_t bytes = event.kind == EventKind::kAllreduce ? static_cast<std::int64_t>(event.bytes) : 0;
    trace.record({event.kind, event.iteration, model_layers, event.start_s, event.duration_s, bytes, event.delay});
    allreduces += event.kind == EventKind::kAllreduce;
  }
  REQUIRE(allreduces == 2);
  const Json runtime_events = measured_trace_events(trace, 0, {"a", "b", "c"});

  // The slices: every one equal, field by field (name, cat, tid, ts, dur and args).
  const auto slices = [](const Json& events) {
    Json kept = Json::array();
    for (const Json& event : events)
      if (event["ph"] == "X") kept.push_back(event);
    return kept;
  };
  REQUIRE(slices(des_events).size() == result.trace.size());
  CHECK(slices(runtime_events) == slices(des_events));
  // The tracks: the same thread names; the process is a worker in one and a rank in the other.
  const auto thread_names = [](const Json& events) {
    std::vector<std::string> names;
    for (const Json& event : events)
      if (event["name"] == "thread_name") names.push_back(event["args"]["name"]);
    return names;
  };
  CHECK(thread_names(runtime_events) == thread_names(des_events));
  CHECK(thread_names(des_events) == std::vector<std::string>{"compute", "comm stream 0"});
  // What the delayed bucket's slice says, written out once (docs/formats.md "Measured trace").
  const Json delayed = [&] {
    for (const Json& event : slices(des_events))
      if (event["cat"] == "allreduce" && event["args"].contains("delay")) return event;
    return Json();
  }();
  CHECK(delayed["name"] == "all-reduce c .. b (2 layers)");
  CHECK(delayed["tid"] == 1);
  CHECK(delayed["args"]["layers"] == Json::array({"c", "b"}));
  CHECK(delayed["args"]["bytes"] == 3072);  // 1024 + 2048
  CHECK(delayed["args"]["iteration"] == 0);
  CHECK(delayed["args"]["delay"] == 1);
  CHECK(delayed["args"]["applied_iteration"] == 1);
}

TEST_CASE("train requests are checked before anything is read", "[runtime]") {
  TrainRequest request;
  request.iterations = 0;
  CHECK_THROWS_WITH(check_train_request(request), Catch::StartsWith("iterations: must be in [1,"));
  request.iterations = 1;
  request.adamw.learning_rate = 0;
  CHECK_THROWS_WITH(check_train_request(request), Catch::StartsWith("learning_rate:"));
  request.adamw.learning_rate = 1e20;  // a loss of NaN after one step
  CHECK_THROWS_WITH(check_train_request(request), Catch::StartsWith("learning_rate:"));
  request.adamw.learning_rate = 1e-3;
  request.device = "tpu";
  CHECK_THROWS_WITH(check_train_request(request), Catch::StartsWith("device: unknown 'tpu'"));
  request.device = "cpu";
  CHECK_NOTHROW(check_train_request(request));
  // Checkpoints need a period: every K >= 1 steps.
  request.checkpoint_dir = "checkpoints";
  CHECK_THROWS_WITH(check_train_request(request), Catch::StartsWith("checkpoint_every: must be >= 1"));
  request.checkpoint_every = 20;
  // A folder that can be created is checked where it would be made: nothing is left behind.
  const std::filesystem::path base = std::filesystem::temp_directory_path() / ("syncplan-ckcheck-" + std::to_string(::getpid()));
  request.checkpoint_dir = base / "a" / "b";
  CHECK_NOTHROW(check_train_request(request));
  CHECK_FALSE(std::filesystem::exists(base));
  // A file, a path below a file, and a folder under /proc were refused only at the first
  // save, after training; now before, naming --checkpoint's field and the folder.
  std::filesystem::create_directories(base);
  std::ofstream(base / "file") << "x";
  request.checkpoint_dir = base / "file";
  CHECK_THROWS_WITH(check_train_request(request), Catch::StartsWith("checkpoint_dir: " + (base / "file").string() +
                                                                    ": exists and is not a folder"));
  request.checkpoint_dir = base / "file" / "below";
  CHECK_THROWS_WITH(check_train_request(request), Catch::StartsWith("checkpoint_dir: ") &&
                                                      Catch::Contains((base / "file").string() + " is not a folder"));
  request.checkpoint_dir = "/proc/syncplan-checkpoints";
  CHECK_THROWS_WITH(check_train_request(request), Catch::StartsWith("checkpoint_dir: /proc/syncplan-checkpoints: "));
  // An existing folder stays as it was: only the probe came and went. Checks of one folder at
  // once (ranks on one file system; a rank once removed what another was probing) all pass.
  request.checkpoint_dir = base;
  CHECK_NOTHROW(check_train_request(request));
  CHECK(std::distance(std::filesystem::directory_iterator(base), std::filesystem::directory_iterator{}) == 1);
  std::vector<std::thread> others;
  for (int k = 0; k < 4; ++k)
    others.emplace_back([&] { for (int i = 0; i < 50; ++i) check_checkpoint_folder(base / "shared" / "ck"); });
  for (int i = 0; i < 50; ++i) CHECK_NOTHROW(check_checkpoint_folder(base / "shared" / "ck"));
  for (std::thread& other : others) other.join();
  CHECK(std::distance(std::filesystem::directory_iterator(base), std::filesystem::directory_iterator{}) == 1);
  std::filesystem::remove_all(base);
}

TEST_CASE("frozen layers are synced by nobody; a tied layer must sync with its carrier", "[runtime]") {
  // tiny-gpt with its position embedding frozen (a spec's `frozen` pattern, docs/models.md section 2).
  Json spec = read_json_file(SYNCPLAN_DATA_DIR "/models/tiny-gpt.json");
  spec["frozen"] = {"transformer.wpe"};
  const Model model = expand_model(model_spec_from_json(spec, "tiny-gpt with frozen wpe"));
  const std::size_t wpe = index_of(model, "transformer.wpe");
  for (const char* strategy : {"ssgd", "wfbp", "flsgd", "plsgd-even"}) {
    const Schedule schedule = strategy_schedule(model, strategy, 2);
    for (int h = 0; h < 2; ++h) {
      const std::vector<std::size_t> synced = schedule.synced_layers(h);
      CHECK(std::count(synced.begin(), synced.end(), wpe) == 0);
    }
  }
  // lm_head (tied to wte) synced in another iteration than wte: refused naming both.
  const Model& tiny = tiny_gpt();
  const Profile profile = runtime_profile(tiny);
  Json layers = Json::array();
  for (const LayerProfile& layer : profile.layers)
    layers.push_back({{"name", layer.name}, {"sync_iterations", {layer.name == "lm_head" ? 1 : 0}}});
  const Json document{{"format", "syncplan.plan/v1"}, {"period", 2}, {"algorithm", "hand"}, {"layers", layers}};
  CHECK_THROWS_WITH(plan_schedule(tiny, plan_from_json(document, "plan.json", profile), "plan.json"),
                    Catch::Contains("plan.json") && Catch::Contains("'lm_head'") && Catch::Contains("'transformer.wte'"));
}

// A tiny-gpt plan of H = 3: every layer syncs in iteration 0 without delay, but the first block's
// MLP input (c_fc) syncs in 0 with delay 2 and the token embedding (wte, with its tied lm_head)
// in 1 with delay 1: both are applied before the step of iteration 2, c_fc's first (sync order).
Json delayed_plan_document(const Profile& profile, bool with_delays) {
  Json layers = Json::array();
  for (const LayerProfile& layer : profile.layers) {
    const std::string& owner = layer.tied_to ? *layer.tied_to : layer.name;
    Json entry{{"name", layer.name}, {"sync_iterations", {owner == "transformer.wte" ? 1 : 0}}};
    if (owner == "transformer.h.0.mlp.c_fc") entry["sync_delays"] = {with_delays ? 2 : 0};
    if (owner == "transformer.wte") entry["sync_delays"] = {with_delays ? 1 : 0};
    layers.push_back(std::move(entry));
  }
  return {{"format", "syncplan.plan/v1"}, {"period", 3}, {"algorithm", "hand"}, {"layers", layers}};
}

// A scripted communicator on which delayed_plan_document's delayed buckets (c_fc, wte) never
// complete (the communicator gets their copies, not the store's tensors) and every in-place bucket
// completes at its first test, with the delayed schedule on tiny-gpt.
struct DelayedNeverComplete {
  const Model& model = tiny_gpt();
  Schedule schedule;
  ScriptedComm scripted;
  Communicator comm{scripted_table(scripted)};
  LayerStore store{model};
  RunClock clock;
  DelayedNeverComplete() {
    const Profile profile = runtime_profile(model);
    schedule = plan_schedule(model, plan_from_json(delayed_plan_document(profile, true), "p.json", profile), "p.json");
    scripted.never = [this](const CommBuffer& buffer) {
      return std::none_of(store.tensors.begin(), store.tensors.end(),
                          [&](const std::vector<float>& tensor) { return tensor.data() == buffer.data; });
    };
  }
};

// One iteration through the hooks, with every layer's backward.
void run_hooks(Executor& executor, std::size_t layers, const std::function<void()>& step = {}) {
  executor.begin_iteration();
  for (std::size_t l = layers; l-- > 0;) executor.layer_backward_done(l);
  executor.before_step();
  if (step) step();
  executor.after_step();
}

TEST_CASE("a delayed plan's schedule carries each bucket's delay and says where syncs are in flight", "[runtime]") {
  const Model& model = tiny_gpt();
  const Profile profile = runtime_profile(model);
  const std::size_t fc = index_of(model, "transformer.h.0.mlp.c_fc"), wte = index_of(model, "transformer.wte");
  const Schedule schedule = plan_schedule(model, plan_from_json(delayed_plan_document(profile, true), "p.json", profile), "p.json");
  CHECK(schedule.delayed());
  REQUIRE(schedule.iterations[1].size() == 1);
  CHECK(schedule.iterations[1][0].layers == std::vector<std::size_t>{wte});
  CHECK(schedule.iterations[1][0].delay == 1);
  std::size_t fc_bucket = 0;
  for (std::size_t b = 0; b < schedule.iterations[0].size(); ++b) {
    const bool is_fc = schedule.iterations[0][b].layers == std::vector<std::size_t>{fc};
    CHECK(schedule.iterations[0][b].delay == (is_fc ? 2 : 0));
    if (is_fc) fc_bucket = b;
  }
  // Position 0: nothing in flight (no sync crosses the period's end); 1 and 2: c_fc's (0 + 2 >= 2),
  // the first found in sync order; wte's (1 + 1) too at 2.
  CHECK_FALSE(schedule.in_flight_at(0).has_value());
  CHECK(schedule.in_flight_at(1) == std::optional<std::pair<int, std::size_t>>({0, fc_bucket}));
  CHECK(schedule.in_flight_at(2) == std::optional<std::pair<int, std::size_t>>({0, fc_bucket}));
  // Every delay 0 written out is no delay at all, and executes (and fingerprints) as the plan without them.
  const Plan zero = plan_from_json(delayed_plan_document(profile, false), "z.json", profile);
  CHECK_FALSE(plan_schedule(model, zero, "z.json").delayed());
  Json plain_document = delayed_plan_document(profile, false);
  for (Json& layer : plain_document["layers"]) layer.erase("sync_delays");
  const Plan plain = plan_from_json(plain_document, "plain.json", profile);
  CHECK(schedule_identity(zero) == schedule_identity(plain));
  CHECK(schedule_identity(plan_from_json(delayed_plan_document(profile, true), "p.json", profile)) != schedule_identity(plain));
}

TEST_CASE("a delayed bucket averages a snapshot on the side and is applied as p + (m - s) before the step of h + d",
          "[runtime]") {
  const Model& model = tiny_gpt();
  const Profile profile = runtime_profile(model);
  const std::size_t fc = index_of(model, "transformer.h.0.mlp.c_fc"), wte = index_of(model, "transformer.wte");
  const std::size_t attn = index_of(model, "transformer.h.0.attn.c_attn");
  const Schedule schedule = plan_schedule(model, plan_from_json(delayed_plan_document(profile, true), "p.json", profile), "p.json");
  ScriptedComm scripted;
  scripted.polls_to_done = 0;  // done at the first test
  scripted.add_when_done = 1;  // m = s + 1
  Communicator comm(scripted_table(scripted));
  LayerStore store(model);     // every parameter 1
  RunClock clock;
  Executor executor(schedule, comm, store.buffers(), clock);
  const std::size_t L = model.layers.size();
  // Iteration 0: c_attn (d = 0) is averaged in place: 1 + 1 = 2. c_fc's all-reduce runs on its
  // copy: its live parameters stay 1; its "step" then sets them to 5 (the local progress).
  run_hooks(executor, L, [&] {
    CHECK(store.tensors[attn][0] == 2.0f);
    CHECK(store.tensors[fc][0] == 1.0f);
    std::fill(store.tensors[fc].begin(), store.tensors[fc].end(), 5.0f);
  });
  const ExecutedIteration first = executor.last_executed();
  CHECK(first.applied.empty());
  bool fc_logged = false;
  for (const ExecutedBucket& bucket : first.buckets)
    if (bucket.layers == std::vector<std::size_t>{fc}) {
      fc_logged = true;
      CHECK(bucket.delay == 2);
      CHECK(bucket.end_s == 0);  // completes in a later iteration's record
    }
  CHECK(fc_logged);
  // Iteration 1: wte's snapshot s = 1 is averaged on the side (m = 2); c_fc is not due yet.
  run_hooks(executor, L, [&] {
    CHECK(store.tensors[fc][0] == 5.0f);
    CHECK(store.tensors[wte][0] == 1.0f);
    std::fill(store.tensors[wte].begin(), store.tensors[wte].end(), 3.0f);
  });
  CHECK(executor.last_executed().applied.empty());
  // Iteration 2: both corrections before the step: c_fc 5 + (2 - 1) = 6, wte 3 + (2 - 1) = 4.
  run_hooks(executor, L, [&] {
    CHECK(std::all_of(store.tensors[fc].begin(), store.tensors[fc].end(), [](float p) { return p == 6.0f; }));
    CHECK(std::all_of(store.tensors[wte].begin(), store.tensors[wte].end(), [](float p) { return p == 4.0f; }));
  });
  const ExecutedIteration& third = executor.last_executed();
  REQUIRE(third.applied.size() == 2);
  CHECK(third.applied[0].bucket.layers == std::vector<std::size_t>{fc});  // sync order: iteration 0 first
  CHECK(third.applied[0].started_iteration == 0);
  CHECK(third.applied[0].bucket.delay == 2);
  CHECK(third.applied[1].bucket.layers == std::vector<std::size_t>{wte});
  CHECK(third.applied[1].started_iteration == 1);
  for (const AppliedSync& sync : third.applied) {
    CHECK(sync.bucket.launch_s <= sync.bucket.end_s);
    CHECK(sync.bucket.end_s <= sync.applied_s);
  }
  CHECK(executor.drain() == 0);  // a period boundary: nothing in flight

  // A run cannot start where a delayed sync would be in flight.
  ExecutorOptions resumed;
  resumed.first_iteration = 4;  // position 1: c_fc's sync of iteration 3 (position 0) is in flight
  CHECK_THROWS_WITH(Executor(schedule, comm, store.buffers(), clock, resumed),
                    Catch::StartsWith("first_iteration: 4 is period position 1") &&
                        Catch::Contains("'transformer.h.0.mlp.c_fc' started in the period's iteration 0"));
  // A run that ends after iteration 0 drops c_fc's sync (its step is never run) but waits for it.
  Executor short_run(schedule, comm, store.buffers(), clock);
  run_hooks(short_run, L);
  CHECK(short_run.drain() == 1);
}

TEST_CASE("on a communicator of device memory, delayed snapshots and corrections go through DeviceSnapshots",
          "[runtime]") {
  // The same plan and numbers as the host case above, the communicator now saying "device": the
  // executor must not touch the snapshot memory itself but allocate it (two buffers per delayed
  // bucket), take each snapshot through `take` and hand its ready event to the all-reduce of
  // mean, and correct through `correct` before the step of h + d, in sync order. The functions
  // here do on host memory what a GPU's do (copies; p + (m - s)), and record their calls.
  const Model& model = tiny_gpt();
  const Profile profile = runtime_profile(model);
  const std::size_t fc = index_of(model, "transformer.h.0.mlp.c_fc"), wte = index_of(model, "transformer.wte");
  const Schedule schedule = plan_schedule(model, plan_from_json(delayed_plan_document(profile, true), "p.json", profile), "p.json");
  ScriptedComm scripted;
  scripted.add_when_done = 1;  // m = s + 1
  scripted.place = "device";
  Communicator comm(scripted_table(scripted));
  LayerStore store(model);
  RunClock clock;
  CHECK_THROWS_WITH(Executor(schedule, comm, store.buffers(), clock),
                    Catch::Contains("needs snapshots where the scripted communicator averages, in device memory"));

  std::vector<std::vector<float>> memory;  // the "device" buffers
  memory.reserve(8);
  int sentinel = 0;
  std::vector<std::size_t> taken, corrected;  // the first tensor's size of each call
  const std::size_t L = model.layers.size();
  int step = 0, corrected_at_step = -1;
  ExecutorOptions options;
  options.device_snapshots = DeviceSnapshots{
      [&](std::size_t floats) { return std::span<float>(memory.emplace_back(floats, -7.0f)); },
      [&](std::span<const std::span<float>> tensors, std::span<float> own, std::span<float> mean) {
        auto o = own.begin(), m = mean.begin();
        for (const std::span<float> tensor : tensors) {
          o = std::copy(tensor.begin(), tensor.end(), o);
          m = std::copy(tensor.begin(), tensor.end(), m);
        }
        taken.push_back(tensors.front().size());
        return static_cast<void*>(&sentinel);
      },
      [&](std::span<const std::span<float>> tensors, std::span<const float> own, std::span<const float> mean) {
        std::size_t at = 0;
        for (const std::span<float> tensor : tensors)
          for (float& p : tensor) {
            p = p + (mean[at] - own[at]);
            ++at;
          }
        corrected.push_back(tensors.front().size());
        corrected_at_step = step;
      }};
  Executor executor(schedule, comm, store.buffers(), clock, options);
  CHECK(memory.size() == 4);  // own and mean of c_fc's and wte's delayed buckets
  const auto fc_size = store.tensors[fc].size(), wte_size = store.tensors[wte].size();
  run_hooks(executor, L, [&] { std::fill(store.tensors[fc].begin(), store.tensors[fc].end(), 5.0f); ++step; });
  CHECK(taken == std::vector<std::size_t>{fc_size});
  run_hooks(executor, L, [&] { std::fill(store.tensors[wte].begin(), store.tensors[wte].end(), 3.0f); ++step; });
  CHECK(taken == std::vector<std::size_t>{fc_size, wte_size});
  CHECK(corrected.empty());
  run_hooks(executor, L, [&] {
    // Before this (the third) step: c_fc 5 + (2 - 1) = 6, wte 3 + (2 - 1) = 4, c_fc first.
    CHECK(corrected == std::vector<std::size_t>{fc_size, wte_size});
    CHECK(corrected_at_step == 2);
    CHECK(std::all_of(store.tensors[fc].begin(), store.tensors[fc].end(), [](float p) { return p == 6.0f; }));
    CHECK(std::all_of(store.tensors[wte].begin(), store.tensors[wte].end(), [](float p) { return p == 4.0f; }));
    ++step;
  });
  // The delayed all-reduces got the snapshots' ready event and their mean buffer, no other.
  int with_sentinel = 0;
  for (std::size_t id = 0; id < scripted.ready.size(); ++id)
    if (scripted.ready[id] == &sentinel) {
      ++with_sentinel;
      REQUIRE(scripted.buffers[id].size() == 1);
      const float* data = scripted.buffers[id][0].data;
      CHECK(std::any_of(memory.begin(), memory.end(), [&](const std::vector<float>& m) { return m.data() == data; }));
    }
  CHECK(with_sentinel == 2);
  CHECK(executor.drain() == 0);
}

TEST_CASE("a delayed bucket that never completes times out before the step it is due at, or in drain", "[runtime]") {
  DelayedNeverComplete setup;
  auto& [model, schedule, scripted, comm, store, clock] = setup;
  ExecutorOptions options;
  options.timeout_s = 0.2;
  Executor executor(schedule, comm, store.buffers(), clock, options);
  const std::size_t L = model.layers.size();
  run_hooks(executor, L);  // c_fc is not waited for in iterations 0 and 1
  run_hooks(executor, L);
  executor.begin_iteration();
  for (std::size_t l = L; l-- > 0;) executor.layer_backward_done(l);
  try {
    executor.before_step();
    FAIL("no SyncTimeout");
  } catch (const SyncTimeout& e) {
    CHECK(e.iteration() == 2);
    CHECK(e.first_layer() == "transformer.h.0.mlp.c_fc");
  }
  Executor short_run(schedule, comm, store.buffers(), clock, options);
  run_hooks(short_run, L);
  CHECK_THROWS_AS(short_run.drain(), SyncTimeout);
}

TEST_CASE("the forward's hooks test the delayed buckets in flight, and nothing when none is", "[runtime]") {
  // c_fc's copy (from iteration 0) and wte's (from iteration 1) never complete.
  DelayedNeverComplete setup;
  auto& [model, schedule, scripted, comm, store, clock] = setup;
  Executor executor(schedule, comm, store.buffers(), clock);
  const std::size_t L = model.layers.size();
  const auto tests = [&] { return std::accumulate(scripted.polls.begin(), scripted.polls.end(), 0); };
  // Iteration 0's forward: nothing started, nothing tested.
  executor.begin_iteration();
  for (std::size_t l = 0; l < L; ++l) executor.layer_forward_done(l);
  CHECK(scripted.polls.empty());
  for (std::size_t l = L; l-- > 0;) executor.layer_backward_done(l);
  executor.before_step();
  executor.after_step();
  // Iteration 1's forward: c_fc's delayed all-reduce (due before iteration 2's step) is the one
  // thing in flight, so each of the L forward hooks tests it once: L tests more, all of them its.
  const int before = tests();
  const std::size_t started = scripted.polls.size();
  executor.begin_iteration();
  for (std::size_t l = 0; l < L; ++l) executor.layer_forward_done(l);
  CHECK(tests() - before == static_cast<int>(L));
  CHECK(scripted.polls.size() == started);  // the forward launches nothing
  // Out of order (after before_step, before the next begin) it is the loop's bug.
  for (std::size_t l = L; l-- > 0;) executor.layer_backward_done(l);
  executor.before_step();
  CHECK_THROWS_AS(executor.layer_forward_done(0), InternalError);
}

TEST_CASE("a delayed run's log line has sync_delays and applied; the trace marks delayed all-reduces", "[runtime]") {
  IterationRecord record;
  record.iteration = 6;
  record.buckets = {{"a"}, {"b"}};
  CHECK_FALSE(log_line(record, std::nullopt).contains("applied"));  // not delayed: the old line
  record.delayed = true;
  record.sync_delays = {0, 2};
  record.applied = {{6, {"a"}, 0, 1.0, 1.5, 1.5}, {4, {"c"}, 2, 0.25, 0.5, 1.75}};
  const Json line = log_line(record, std::nullopt);
  CHECK(line["sync_delays"] == Json::array({0, 2}));
  REQUIRE(line["applied"].size() == 2);
  CHECK(line["applied"][1] == Json{{"iteration", 4}, {"layers", {"c"}}, {"delay", 2}, {"start_s", 0.25},
                                   {"end_s", 0.5}, {"applied_s", 1.75}});
  MeasuredTrace trace;
  trace.record({EventKind::kAllreduce, 4, {2}, 0.25, 0.25, 64, 2});
  const Json events = measured_trace_events(trace, 0, {"a", "b", "c"});
  CHECK(events[3]["args"]["iteration"] == 4);
  CHECK(events[3]["args"]["delay"] == 2);
  CHECK(events[3]["args"]["applied_iteration"] == 6);
}
