// bench_simulator: the discrete-event simulator at scale. Target: 1,024 workers with
// jitter, 125 layers, 10 periods of H = 10, under 2 s and 2 GB peak (peak_rss_MB) on 2 cores.
// BM_des_scaling runs growing workers x layers x iterations and fits the time (expected O(N));
// BM_des_identical_* show that identical workers cost one representative; BM_des_point_100000workers
// times a whole point at 100,000 identical workers (topology, all-reduce model, program, run), as a
// what-if sweep runs it, with and without the result's bytes per link (docs/des.md section 5).
#include "core/cluster.hpp"
#include "planner/strategy_table.hpp"
#include "profiler/model_profile.hpp"
#include "simulator/des/engine.hpp"

#include <benchmark/benchmark.h>

#include <random>
#include <sys/resource.h>

namespace {

using namespace syncplan;

// A GPT-2-like synthetic profile: forward/backward 0.05-2 ms, parameters 0-10 MB per layer.
Profile synthetic_profile(int layer_count) {
  std::mt19937 generator(42);
  std::uniform_real_distribution<double> compute_s(5e-5, 2e-3), megabytes(0.0, 10.0);
  Profile profile;
  profile.source = "estimated:synthetic";
  for (int i = 0; i < layer_count; ++i) {
    LayerProfile layer;
    layer.name = "layer." + std::to_string(i);
    layer.forward_s = compute_s(generator) / 2;
    layer.backward_s = compute_s(generator);
    layer.param_bytes = static_cast<std::int64_t>(megabytes(generator) * 1e6);
    profile.layers.push_back(layer);
  }
  return profile;
}

Cluster synthetic_cluster(int workers, bool jitter) {
  Cluster cluster;
  cluster.workers = workers;
  cluster.workers_per_node = 8;
  cluster.intra_node = {3600, 5};
  cluster.inter_node = {100, 10};
  cluster.allreduce = AllreduceAlgorithm::kHierarchical;
  if (jitter) cluster.jitter = JitterSpec{JitterSpec::Distribution::kLognormal, 0.05, 7};
  return cluster;
}

double peak_rss_MB() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return usage.ru_maxrss / 1024.0;  // ru_maxrss is in KiB on Linux
}

void run(benchmark::State& state, int workers, int layer_count, int periods, bool jitter) {
  constexpr int kPeriod = 10;
  const Profile profile = synthetic_profile(layer_count);
  const Cluster cluster = synthetic_cluster(workers, jitter);
  const DesLayers layers = des_layers(profile, "synthetic", SyncTimeSource::kModel);
  const Topology topology(cluster);
  const AllreduceModel model(cluster, topology);
  const DesStrategyContext context{layers, model, SyncTimeSource::kModel};
  const BackpropTimes times = backprop_times_for_des(context);
  const SyncProgram program = find_strategy("dp")->des_program(context, times, kPeriod);
  DesOptions options;
  options.iterations = periods * kPeriod;
  options.sync_time = SyncTimeSource::kModel;
  std::size_t events = 0;
  double total_s = 0;
  int simulated = 0;
  for (auto _ : state) {
    const DesResult result = run_des(layers, cluster, topology, model, program, options);
    events = result.events;
    total_s = result.total_s;
    simulated = result.simulated_workers;
  }
  state.counters["simulated_workers"] = simulated;
  const double units = static_cast<double>(workers) * layer_count * options.iterations;
  state.SetComplexityN(static_cast<int64_t>(units));
  state.counters["events"] = static_cast<double>(events);
  state.counters["simulated_s"] = total_s;
  state.counters["ns_per_worker_layer_iteration"] =
      benchmark::Counter(units, benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
  state.counters["peak_rss_MB"] = peak_rss_MB();
}

void BM_des_1024workers_jitter(benchmark::State& state) { run(state, 1024, 125, 10, true); }

// Args = (workers, layers, periods of H = 10): each step doubles N = workers x layers x iterations,
// growing each factor in turn; BigO fits time ~ N.
void BM_des_scaling(benchmark::State& state) {
  run(state, static_cast<int>(state.range(0)), static_cast<int>(state.range(1)), static_cast<int>(state.range(2)), true);
}

void BM_des_identical_1024workers(benchmark::State& state) { run(state, 1024, 125, 10, false); }
// The same cluster shape with 8 workers: also one representative, so it should cost about the same
// as 1,024 identical workers (nothing grows with the worker count).
void BM_des_identical_8workers(benchmark::State& state) { run(state, 8, 125, 10, false); }

// Arg = 1: fill the result's link_bytes (225,000 entries at 100,000 workers of 8 per node); 0: not.
void BM_des_point_100000workers(benchmark::State& state) {
  constexpr int kPeriod = 10;
  const Profile profile = synthetic_profile(125);
  const Cluster cluster = synthetic_cluster(100000, false);
  const DesLayers layers = des_layers(profile, "synthetic", SyncTimeSource::kModel);
  DesOptions options;
  options.iterations = kPeriod;
  options.sync_time = SyncTimeSource::kModel;
  options.link_bytes = state.range(0) != 0;
  std::size_t links = 0;
  int simulated = 0;
  for (auto _ : state) {
    const Topology topology(cluster);
    const AllreduceModel model(cluster, topology);
    const DesStrategyContext context{layers, model, SyncTimeSource::kModel};
    const SyncProgram program = find_strategy("dp")->des_program(context, backprop_times_for_des(context), kPeriod);
    const DesResult result = run_des(layers, cluster, topology, model, program, options);
    links = result.link_bytes.size();
    simulated = result.simulated_workers;
  }
  state.counters["simulated_workers"] = simulated;
  state.counters["link_bytes_entries"] = static_cast<double>(links);
  state.counters["peak_rss_MB"] = peak_rss_MB();
}

// The jittered point at scale: GPT-2 (data/models/gpt2.json estimated for H100-SXM, bf16, batch 8)
// on 100,000 workers, one per node, with lognormal jitter sigma 0.05 (seed 7), a flat ring over
// 10 Gbit/s (data/clusters/8nodes-1gpu-10gbps.json widened), wfbp (H = 1), 10 iterations: every
// worker is simulated, so this is the cost of the per-worker compute draws and events. Target:
// under 3 s and 200 MB peak (run it alone: peak_rss_MB is the process's, over every benchmark run
// before it). Before and after in docs/des.md section 5.
void BM_des_jittered_100000workers_gpt2(benchmark::State& state) {
  ModelProfileRequest request;
  request.spec_path = SYNCPLAN_DATA_DIR "/models/gpt2.json";
  request.gpu_catalog_path = SYNCPLAN_DATA_DIR "/gpus.json";
  request.device = "estimate";
  request.dtype = "bf16";
  request.gpu = "H100-SXM";
  request.batch = 8;
  const Profile profile = make_model_profile(request).profile;
  Cluster cluster = read_cluster_file(SYNCPLAN_DATA_DIR "/clusters/8nodes-1gpu-10gbps.json");
  cluster.workers = 100000;
  cluster.allreduce = AllreduceAlgorithm::kRing;
  cluster.jitter = JitterSpec{JitterSpec::Distribution::kLognormal, 0.05, 7};
  const DesLayers layers = des_layers(profile, "gpt2", SyncTimeSource::kModel);
  DesOptions options;
  options.iterations = 10;
  options.sync_time = SyncTimeSource::kModel;
  options.link_bytes = false;
  double total_s = 0;
  std::size_t events = 0;
  for (auto _ : state) {
    const Topology topology(cluster);
    const AllreduceModel model(cluster, topology);
    const DesStrategyContext context{layers, model, SyncTimeSource::kModel};
    const SyncProgram program = find_strategy("wfbp")->des_program(context, backprop_times_for_des(context), 1);
    const DesResult result = run_des(layers, cluster, topology, model, program, options);
    total_s = result.total_s;
    events = result.events;
  }
  state.counters["layers"] = static_cast<double>(layers.size());
  state.counters["events"] = static_cast<double>(events);
  state.counters["simulated_s"] = total_s;
  state.counters["peak_rss_MB"] = peak_rss_MB();
}

}  // namespace

BENCHMARK(BM_des_1024workers_jitter)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_des_scaling)->Args({256, 125, 5})->Args({512, 125, 5})->Args({512, 250, 5})->Args({512, 250, 10})->Unit(benchmark::kMillisecond)->Complexity(benchmark::oN);
BENCHMARK(BM_des_identical_1024workers)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_des_identical_8workers)->Unit(benchmark::kMillisecond);
// Without link_bytes first: peak_rss_MB is the process's peak so far.
BENCHMARK(BM_des_point_100000workers)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond);

BENCHMARK(BM_des_jittered_100000workers_gpt2)->Unit(benchmark::kMillisecond)->Iterations(1);

BENCHMARK_MAIN();
