// bench_runtime: the executor's bookkeeping against a training step. Target: the hooks
// cost under 1% of a tiny-gpt step. Runs on one MPI rank (Open MPI's singleton), so a bucket's
// all-reduce is MPI's local copy: what is timed is the executor plus MPI's per-call overhead.
//   BM_executor_iteration/S: one iteration of hooks alone (begin, L x layer_backward_done,
//     before_step, after_step) for strategy S; counter hook_ns = time per hook.
//   BM_step/0: a tiny-gpt step (batch 4 x seq 64: forward, backward, AdamW) without the executor;
//   BM_step/S: the same step with the executor's hooks between the layers; counter hooks_share =
//     time inside the hooks / time of the step (the target: < 0.01).
//   BM_parse_trace/N: reading a Chrome trace of N "X" events (parse_json_text, as compare and the
//     importers read); counter s_per_event. The target: about flat in N, linear reading (a
//     parser callback once made it O(N^2): compare took 11 s for the 42 MB trace of simulate --period
//     2000, now 1.8 s). Measured on this 2-core machine: 4 to 7 us per event (with the machine's
//     load) at 10,000, 40,000 and 160,000 events alike.
#include "comm/abi_status.hpp"
#include "core/json_io.hpp"
#include "comm/mpi_communicator.hpp"
#include "comm/mpi_session.hpp"
#include "model/adamw.hpp"
#include "model/cpu/cpu_graph.hpp"
#include "model/model_spec.hpp"
#include "runtime/executor.hpp"
#include "runtime/schedule.hpp"

#include <benchmark/benchmark.h>

#include <chrono>
#include <optional>
#include <string>

namespace {

using namespace syncplan;

const char* const kStrategies[] = {"none", "ssgd", "wfbp", "plsgd-even", "flsgd"};

// A backend of one rank whose buckets are done when started: no MPI, nothing copied. `next_id`
// numbers the requests (the Communicator tells the ones in flight apart by id).
CommBackendTable immediate_table(std::int64_t& next_id) {
  CommBackendTable table;
  table.name = "immediate";
  table.buffer_place = "host";
  table.state = &next_id;
  table.start = [](void* state, const CommBuffer*, std::size_t, void*, std::int64_t* request, AbiStatus* status) {
    *request = (*static_cast<std::int64_t*>(state))++;
    return abi_call(status, [] {});
  };
  table.test = [](void*, std::int64_t, int* done, AbiStatus* status) {
    *done = 1;
    return abi_call(status, [] {});
  };
  table.abort = [](void*, int) {};
  table.destroy = [](void*) {};
  return table;
}

struct Fixture {
  MpiSession mpi;
  Communicator mpi_comm = make_mpi_communicator(mpi);
  std::int64_t next_id = 0;
  Communicator immediate{immediate_table(next_id)};
  Model model = expand_model(read_model_spec_file(SYNCPLAN_DATA_DIR "/models/tiny-gpt.json"));
  Communicator& comm(std::int64_t backend) { return backend == 1 ? mpi_comm : immediate; }
};

Fixture& fixture() {
  static Fixture instance;
  return instance;
}

Schedule schedule_for(std::int64_t strategy) {
  return strategy_schedule(fixture().model, kStrategies[strategy], strategy == 3 || strategy == 4 ? 4 : 1);
}

void BM_executor_iteration(benchmark::State& state) {
  Fixture& f = fixture();
  cpu::CpuGraph graph(f.model, Workload{1, 8, Dtype::kFp32});
  RunClock clock;
  Executor executor(schedule_for(state.range(0)), f.comm(state.range(1)), [&](std::size_t l) { return graph.layer_parameters(l); }, clock);
  const std::size_t layers = graph.layer_count();
  const auto started = std::chrono::steady_clock::now();
  for (auto _ : state) {
    executor.begin_iteration();
    for (std::size_t l = layers; l-- > 0;) executor.layer_backward_done(l);
    executor.before_step();
    executor.after_step();
  }
  const double elapsed_ns = std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - started).count();
  state.SetLabel(std::string(kStrategies[state.range(0)]) + (state.range(1) == 1 ? ", mpi" : ", immediate"));
  state.counters["hook_ns"] = elapsed_ns / static_cast<double>(state.iterations() * (layers + 3));
}
BENCHMARK(BM_executor_iteration)->ArgsProduct({{1, 2, 3, 4}, {0, 1}})->Unit(benchmark::kMicrosecond);

void BM_step(benchmark::State& state) {
  Fixture& f = fixture();
  cpu::CpuGraph graph(f.model, Workload{4, 64, Dtype::kFp32});
  graph.initialize_parameters(1);
  const TokenBatch batch = random_token_batch(graph.graph(), 2);
  graph.set_batch(batch.ids, batch.targets);
  AdamW optimizer(f.model.param_count());
  RunClock clock;
  const bool hooks = state.range(0) > 0;
  std::optional<Executor> executor;
  if (hooks)
    executor.emplace(schedule_for(state.range(0)), f.comm(state.range(1)), [&](std::size_t l) { return graph.layer_parameters(l); }, clock);
  using Clock = std::chrono::steady_clock;
  Clock::duration in_hooks{}, in_steps{};
  const std::size_t layers = graph.layer_count();
  for (auto _ : state) {
    const Clock::time_point step_start = Clock::now();
    Clock::time_point t = step_start;
    auto hook = [&](auto&& call) {
      if (!hooks) return;
      t = Clock::now();
      call();
      in_hooks += Clock::now() - t;
    };
    hook([&] { executor->begin_iteration(); });
    graph.zero_gradients();
    for (std::size_t l = 0; l < layers; ++l) graph.forward(l);
    for (std::size_t l = layers; l-- > 0;) {
      graph.backward(l);
      hook([&] { executor->layer_backward_done(l); });
    }
    hook([&] { executor->before_step(); });
    optimizer.step(graph.parameters(), graph.gradients());
    hook([&] { executor->after_step(); });
    in_steps += Clock::now() - step_start;
  }
  state.SetLabel(std::string(kStrategies[state.range(0)]) + (state.range(1) == 1 ? ", mpi" : ", immediate"));
  state.counters["hooks_share"] = std::chrono::duration<double>(in_hooks).count() /
                                  std::chrono::duration<double>(in_steps).count();
}
BENCHMARK(BM_step)->ArgsProduct({{0, 1, 2, 3, 4}, {0, 1}})->Unit(benchmark::kMillisecond);

void BM_parse_trace(benchmark::State& state) {
  const auto events = static_cast<std::size_t>(state.range(0));
  std::string text = "{\"traceEvents\": [";
  for (std::size_t i = 0; i < events; ++i) {
    if (i > 0) text += ",\n";
    text += "{\"name\": \"backward layer" + std::to_string(i % 50) + "\", \"cat\": \"backward\", \"ph\": \"X\", "
            "\"pid\": 0, \"tid\": 0, \"ts\": " + std::to_string(i * 10) + ", \"dur\": 10, \"args\": {\"layer\": "
            "\"layer" + std::to_string(i % 50) + "\", \"iteration\": " + std::to_string(i / 100) + "}}";
  }
  text += "]}";
  for (auto _ : state) benchmark::DoNotOptimize(parse_json_text(text, "trace.json"));
  state.counters["s_per_event"] = benchmark::Counter(static_cast<double>(events) * static_cast<double>(state.iterations()),
                                                     benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}
BENCHMARK(BM_parse_trace)->Arg(10'000)->Arg(40'000)->Arg(160'000)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
