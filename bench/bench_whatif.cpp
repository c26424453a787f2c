// bench_whatif: the what-if sweep: GPT-2 (roofline estimate) on the 32-node base
// cluster, 6 worker counts up to 100,000 x 3 inter-node
// bandwidths x 2 periods x 5 strategies = 180 points, timed on all cores. Target: under a minute
// on this machine (docs/whatif.md records the figure).
#include "planner/whatif_job.hpp"

#include <benchmark/benchmark.h>

#include <algorithm>
#include <thread>

namespace {

using namespace syncplan;

WhatifRequest issue_sweep() {
  WhatifRequest request;
  ModelProfileRequest model;
  model.spec_path = SYNCPLAN_DATA_DIR "/models/gpt2.json";
  model.gpu_catalog_path = SYNCPLAN_DATA_DIR "/gpus.json";
  model.device = "estimate";
  model.dtype = "bf16";
  model.gpu = "H100-SXM";
  model.batch = 8;
  model.seq = 1024;
  request.model = model;
  request.origin = "--model gpt2";
  request.cluster_origin = SYNCPLAN_DATA_DIR "/clusters/32nodes-8gpu-100gbps.json";
  request.base = read_cluster_file(request.cluster_origin);
  request.workers = {8, 64, 512, 4096, 32768, 100000};
  request.bandwidth_Gbps = {1, 10, 100};
  request.latency_us = {request.base.inter_node.latency_us};
  request.periods = {5, 20};
  request.strategies = {"ssgd", "wfbp", "flsgd", "dreamddp", "best"};
  return request;
}

void BM_whatif_issue_sweep(benchmark::State& state) {
  const WhatifRequest request = issue_sweep();
  const int jobs = static_cast<int>(state.range(0));
  int failed = 0;
  std::size_t points = 0;
  for (auto _ : state) {
    const WhatifOutcome outcome = run_whatif_job(request, {jobs, {}});
    failed = outcome.failed();
    points = outcome.rows.size();
    benchmark::DoNotOptimize(outcome.rows.data());
  }
  state.counters["points"] = static_cast<double>(points);
  state.counters["failed"] = failed;
}
BENCHMARK(BM_whatif_issue_sweep)
    ->Arg(1)
    ->Arg(static_cast<int>(std::max(1u, std::thread::hardware_concurrency())))
    ->Unit(benchmark::kSecond)
    ->Iterations(1)
    ->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
