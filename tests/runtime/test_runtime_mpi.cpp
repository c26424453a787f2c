// The executor's semantics under mpirun, driving the executor and CpuGraph
// directly on tiny-gpt and each rank's shard of tests/runtime/data/training.txt, with every expected value computed
// here from all ranks' parameters (MPI_Allgather):
//  * partial: right after each parameter sync (plsgd-even, a plan with fused buckets, flsgd) the
//    synced layers' parameters are bit-identical on every rank and equal the mean of the ranks'
//    pre-sync values; the layers not synced differ across ranks (from iteration 1 on, when the
//    ranks' different batches have moved them apart); what the executor ran is the schedule.
//  * equivalence: H = 1 with every layer every iteration equals parameter-averaging S-SGD written
//    out without the executor (average the whole parameter arena, then step).
//  * row: a strategy defined in one table row for tests (tests/test_strategy_row.hpp, test-stride
//    at H = 2) runs in the trainer (run_training, as `syncplan run --strategy` does): each
//    iteration's log lists the layers the row assigns to it, averaged as parameters.
// Prints "ok: ..." lines and exits 0; a mismatch prints the first ones and exits 1; no text: 77.
//
// usage: test_runtime_mpi partial|equivalence|row [TEXT]
#include "comm/communicator.hpp"
#include "comm/mpi_communicator.hpp"
#include "comm/mpi_session.hpp"
#include "core/errors.hpp"
#include "model/adamw.hpp"
#include "model/cpu/cpu_graph.hpp"
#include "model/model_spec.hpp"
#include "runtime/executor.hpp"
#include "runtime/schedule.hpp"
#include "runtime/trainer.hpp"
#include "../test_strategy_row.hpp"

#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <set>
#include <string>
#include <vector>

using namespace syncplan;

namespace {

constexpr std::int64_t kBatch = 2, kSeq = 16;
constexpr std::uint64_t kSeed = 7;

struct Context {
  const MpiSession& mpi;
  Communicator& comm;
  const Model& model;
  const ByteShard& shard;
  int failures = 0;
};

// Every rank's copy of `values`, rank after rank.
std::vector<float> allgather(std::span<const float> values) {
  int ranks = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &ranks);
  std::vector<float> all(values.size() * static_cast<std::size_t>(ranks));
  MPI_Allgather(values.data(), static_cast<int>(values.size()), MPI_FLOAT, all.data(), static_cast<int>(values.size()),
                MPI_FLOAT, MPI_COMM_WORLD);
  return all;
}

// The element ranges [offset, offset + size) of layer `layer`'s parameters in the arena.
std::vector<std::pair<std::size_t, std::size_t>> layer_ranges(cpu::CpuGraph& graph, std::size_t layer) {
  std::vector<std::pair<std::size_t, std::size_t>> ranges;
  for (const std::span<float> tensor : graph.layer_parameters(layer))
    ranges.emplace_back(static_cast<std::size_t>(tensor.data() - graph.parameters().data()), tensor.size());
  return ranges;
}

// Checks the synced layers of one sync on every rank: `before` and `after` are every rank's whole
// arena (allgather) before and right after the sync. Expected: after is the same on every rank,
// and equals mean_r before_r. With 2 ranks the float sum a + b is the same in any order, so the
// mean is exactly float(a + b) / 2 = the double mean rounded (halving is exact); with more ranks
// MPI may add in another order than this test, so the test allows 4 float roundings of the
// magnitudes summed: |after - mean| <= 4 * 2^-24 * sum_r |before_r| / N.
void check_synced(Context& context, cpu::CpuGraph& graph, const std::vector<std::size_t>& layers,
                  const std::vector<float>& before, const std::vector<float>& after, const std::string& what) {
  const int ranks = context.mpi.size();
  const std::size_t n = graph.parameters().size();
  int wrong = 0;
  for (const std::size_t layer : layers)
    for (const auto& [offset, size] : layer_ranges(graph, layer))
      for (std::size_t i = offset; i < offset + size; ++i) {
        double sum = 0, magnitude = 0;
        for (int r = 0; r < ranks; ++r) {
          sum += before[r * n + i];
          magnitude += std::fabs(before[r * n + i]);
        }
        const double mean = sum / ranks;
        const double tolerance = ranks == 2 ? 0.0 : 4 * std::ldexp(magnitude / ranks, -24);
        for (int r = 0; r < ranks; ++r) {
          const float value = after[r * n + i];
          const bool same = std::memcmp(&value, &after[i], sizeof value) == 0;
          const bool mean_ok = ranks == 2 ? value == static_cast<float>(mean) : std::fabs(value - mean) <= tolerance;
          if ((!same || !mean_ok) && wrong++ < 5 && context.mpi.is_root())
            std::printf("FAIL: %s: layer %s element %zu rank %d: %.9g, rank 0 %.9g, mean of pre-sync values %.9g\n",
                        what.c_str(), context.model.layers[layer].name.c_str(), i - offset, r, value, after[i], mean);
        }
      }
  context.failures += wrong;
}

// Checks that each owning layer that has taken a local step since it was last equal on every rank
// (equal_until[layer] < step: the ranks start equal, a sync before step s leaves them equal at s, a
// sync after step s equal at s + 1) differs across ranks in at least one element at `step`.
void check_unsynced_differ(Context& context, cpu::CpuGraph& graph, const std::vector<int>& equal_until, int step,
                           const std::vector<float>& after, const std::string& what) {
  const std::size_t n = graph.parameters().size();
  for (std::size_t layer = 0; layer < context.model.layers.size(); ++layer) {
    if (equal_until[layer] >= step || graph.param_count(layer) == 0 || graph.tied(layer)) continue;
    bool differs = false;
    for (const auto& [offset, size] : layer_ranges(graph, layer))
      for (std::size_t i = offset; i < offset + size && !differs; ++i)
        for (int r = 1; r < context.mpi.size() && !differs; ++r) differs = after[r * n + i] != after[i];
    if (!differs) {
      ++context.failures;
      if (context.mpi.is_root())
        std::printf("FAIL: %s: layer %s was not synced, yet its parameters are equal on every rank\n", what.c_str(),
                    context.model.layers[layer].name.c_str());
    }
  }
}

// Runs `iterations` steps of `schedule` from the seed's parameters, checking every sync.
void run_partial(Context& context, const Schedule& schedule, int iterations, const std::string& what) {
  const Workload workload{kBatch, kSeq, Dtype::kFp32};
  cpu::CpuGraph graph(context.model, workload);
  graph.initialize_parameters(kSeed);
  AdamW optimizer(context.model.param_count());
  RunClock clock;
  const LayerBuffers buffers = [&](std::size_t layer) { return graph.layer_parameters(layer); };
  Executor executor(schedule, context.comm, buffers, clock);
  ByteShard shard = context.shard;  // a copy: its cursor starts at 0 in every case
  const int failures_before = context.failures;
  int syncs = 0;
  std::vector<int> equal_until(context.model.layers.size(), 0);  // the same initial parameters on every rank
  for (int step = 0; step < iterations; ++step) {
    executor.begin_iteration();
    const int h = executor.period_position();
    const std::vector<float> before = allgather(graph.parameters());
    const ByteBatch batch = shard.next();
    graph.set_batch(batch.ids, batch.targets);
    graph.zero_gradients();
    for (std::size_t l = 0; l < graph.layer_count(); ++l) graph.forward(l);
    for (std::size_t l = graph.layer_count(); l-- > 0;) {
      graph.backward(l);
      executor.layer_backward_done(l);
    }
    executor.before_step();
    // The pre-step syncs (kLayerDone, kAfterBackward) are done: check them.
    std::vector<std::size_t> pre_step, post_step;
    for (const ScheduleBucket& bucket : schedule.iterations[h])
      (bucket.launch == LaunchPoint::kAfterStep ? post_step : pre_step).insert(
          (bucket.launch == LaunchPoint::kAfterStep ? post_step : pre_step).end(), bucket.layers.begin(), bucket.layers.end());
    const std::vector<float> synced = allgather(graph.parameters());
    const std::string at = what + " iteration " + std::to_string(step) + " (h = " + std::to_string(h) + ")";
    check_synced(context, graph, pre_step, before, synced, at + " before the step");
    for (const std::size_t layer : pre_step) equal_until[layer] = step;
    check_unsynced_differ(context, graph, equal_until, step, synced, at);
    syncs += !pre_step.empty();
    optimizer.step(graph.parameters(), graph.gradients());
    const std::vector<float> stepped = allgather(graph.parameters());
    executor.after_step();
    if (!post_step.empty()) {
      check_synced(context, graph, post_step, stepped, allgather(graph.parameters()), at + " after the step");
      for (const std::size_t layer : post_step) equal_until[layer] = step + 1;
      ++syncs;
    }
    // What the executor ran is the schedule, bucket by bucket.
    const ExecutedIteration& executed = executor.last_executed();
    bool same = executed.buckets.size() == schedule.iterations[h].size() && executed.period_position == h;
    for (std::size_t b = 0; same && b < executed.buckets.size(); ++b)
      same = executed.buckets[b].layers == schedule.iterations[h][b].layers;
    if (!same) {
      ++context.failures;
      std::printf("FAIL: %s: rank %d executed other buckets than the schedule's\n", at.c_str(), context.mpi.rank());
    }
  }
  if (context.failures == failures_before)
    std::printf("ok: rank %d: %s: %d iterations, %d syncs: synced layers bit-identical and the mean of the ranks' "
                "pre-sync values, unsynced layers differ, executed = schedule\n",
                context.mpi.rank(), what.c_str(), iterations, syncs);
}

// A plan for tiny-gpt with H = 2 and fused buckets: the owning layers in backprop order, the first
// half synced in iteration 0 as one bucket, the rest in iteration 1 in buckets of two.
Json fused_plan(const Model& model) {
  std::vector<std::string> owning;  // backprop order
  for (std::size_t l = model.layers.size(); l-- > 0;)
    if (model.layers[l].param_count() > 0) owning.push_back(model.layers[l].name);
  const std::size_t half = owning.size() / 2;
  std::set<std::string> first(owning.begin(), owning.begin() + static_cast<std::ptrdiff_t>(half));
  Json layers = Json::array();
  for (const ModelLayer& layer : model.layers) {
    // lm_head shares wte's table and syncs when wte does (the plan rule of docs/time-model.md 11).
    const std::string& owner = layer.tied_to ? *layer.tied_to : layer.name;
    layers.push_back({{"name", layer.name}, {"sync_iterations", {first.count(owner) ? 0 : 1}}});
  }
  Json iteration0 = Json::array({Json(std::vector<std::string>(owning.begin(), owning.begin() + static_cast<std::ptrdiff_t>(half)))});
  Json iteration1 = Json::array();
  for (std::size_t i = half; i < owning.size(); i += 2)
    iteration1.push_back(std::vector<std::string>(owning.begin() + static_cast<std::ptrdiff_t>(i),
                                                  owning.begin() + static_cast<std::ptrdiff_t>(std::min(i + 2, owning.size()))));
  return {{"format", "syncplan.plan/v1"}, {"period", 2}, {"algorithm", "test"}, {"layers", layers},
          {"buckets", {{"alpha_s", 0.0}, {"iterations", Json::array({iteration0, iteration1})}}}};
}

int partial(Context& context) {
  run_partial(context, strategy_schedule(context.model, "plsgd-even", 3), 4, "plsgd-even H=3");
  const Plan plan = plan_from_json(fused_plan(context.model), "fused plan", runtime_profile(context.model));
  run_partial(context, plan_schedule(context.model, plan, "fused plan"), 3, "plan with fused buckets H=2");
  run_partial(context, strategy_schedule(context.model, "flsgd", 2), 4, "flsgd H=2");
  return context.failures == 0 ? 0 : 1;
}

// H = 1, every layer every iteration, against parameter-averaging S-SGD without the executor:
// p <- mean_r p_r (the whole arena, one MPI_Allreduce), then p <- AdamW(p, own gradient). With 2
// ranks the two agree bit for bit (a + b is commutative, halving exact); with more, MPI may sum in
// another order, a float rounding that AdamW's m / sqrt(v) can blow up where a gradient is near 0,
// so the test wants 99.9% of the elements within 1e-6 and all within 2 lr per step.
int equivalence(Context& context) {
  constexpr int kIterations = 4;
  const Workload workload{kBatch, kSeq, Dtype::kFp32};
  cpu::CpuGraph run(context.model, workload), reference(context.model, workload);
  run.initialize_parameters(kSeed);
  reference.initialize_parameters(kSeed);
  AdamW run_optimizer(context.model.param_count()), reference_optimizer(context.model.param_count());
  RunClock clock;
  Executor executor(strategy_schedule(context.model, "plsgd-even", 1), context.comm,
                    [&](std::size_t layer) { return run.layer_parameters(layer); }, clock);
  ByteShard run_shard = context.shard, reference_shard = context.shard;  // one cursor each, from 0
  for (int step = 0; step < kIterations; ++step) {
    executor.begin_iteration();
    const ByteBatch batch = run_shard.next();
    run.set_batch(batch.ids, batch.targets);
    run.zero_gradients();
    for (std::size_t l = 0; l < run.layer_count(); ++l) run.forward(l);
    for (std::size_t l = run.layer_count(); l-- > 0;) {
      run.backward(l);
      executor.layer_backward_done(l);
    }
    executor.before_step();
    run_optimizer.step(run.parameters(), run.gradients());
    executor.after_step();

    const ByteBatch same = reference_shard.next();
    reference.set_batch(same.ids, same.targets);
    reference.forward_backward();
    const std::span<float> p = reference.parameters();
    MPI_Allreduce(MPI_IN_PLACE, p.data(), static_cast<int>(p.size()), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    for (float& value : p) value /= static_cast<float>(context.mpi.size());
    reference_optimizer.step(p, reference.gradients());
  }
  const double lr = AdamWOptions{}.learning_rate;
  std::size_t close = 0, differ = 0;
  double largest = 0;
  for (std::size_t i = 0; i < run.parameters().size(); ++i) {
    const double difference = std::fabs(static_cast<double>(run.parameters()[i]) - reference.parameters()[i]);
    largest = std::max(largest, difference);
    close += difference <= 1e-6;
    differ += difference != 0;
  }
  const std::size_t n = run.parameters().size();
  const bool ok = context.mpi.size() == 2 ? differ == 0
                                          : close >= n - n / 1000 && largest <= 2 * lr * kIterations;
  std::printf("%s: rank %d: H = 1, every layer, %d iterations vs parameter-averaging S-SGD: %zu of %zu parameters "
              "differ (largest %.3g)\n", ok ? "ok" : "FAIL", context.mpi.rank(), kIterations, differ, n, largest);
  return ok ? 0 : 1;
}

// test-stride through the trainer: in iteration i the layers with parameters (those wfbp syncs)
// whose backprop index j = L - 1 - m (m the model index) has j mod 2 = i mod 2.
int row(Context& context, const std::string& text) {
  const ScopedStrategyRow added(test::kStrideRow);
  TrainRequest request;
  request.model = "tiny-gpt";
  request.models_dir = SYNCPLAN_DATA_DIR "/models";
  request.strategy = "test-stride";
  request.period = 2;
  request.data_path = text;
  request.iterations = 4;
  request.batch = kBatch;
  request.seq = kSeq;
  request.seed = kSeed;
  const CommunicatorFactory make_comm = [&](int) { return make_mpi_communicator(context.mpi, request.timeout_s); };
  const TrainResult result = run_training(context.mpi, make_comm, request);
  const std::vector<std::size_t> owning = strategy_schedule(context.model, "wfbp", 1).synced_layers(0);
  const std::size_t count = context.model.layers.size();
  for (const IterationRecord& record : result.records) {
    std::multiset<std::string> expected, synced;
    for (const std::size_t m : owning)
      if ((count - 1 - m) % 2 == static_cast<std::size_t>(record.iteration % 2)) expected.insert(context.model.layers[m].name);
    for (const std::vector<std::string>& bucket : record.buckets) synced.insert(bucket.begin(), bucket.end());
    if (synced != expected || expected.empty()) {
      std::printf("FAIL: rank %d: iteration %lld synced %zu layers, the row assigns %zu\n", context.mpi.rank(),
                  static_cast<long long>(record.iteration), synced.size(), expected.size());
      ++context.failures;
    }
  }
  if (context.mpi.is_root() && result.trace["syncplan"]["sync"] != "parameters") {
    std::printf("FAIL: the run averaged %s, the row says parameters\n", result.trace["syncplan"]["sync"].dump().c_str());
    ++context.failures;
  }
  if (context.failures == 0)
    std::printf("ok: rank %d: test-stride (one table row) ran %zu iterations with the row's layers\n", context.mpi.rank(),
                result.records.size());
  return context.failures == 0 ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "";
  const std::string text = argc > 2 ? argv[2] : SYNCPLAN_TRAINING_TEXT;
  if (!std::filesystem::is_regular_file(text)) {
    std::printf("skip: no training text at %s\n", text.c_str());
    return 77;
  }
  const MpiSession mpi;
  Communicator comm = make_mpi_communicator(mpi);
  const Model model = expand_model(read_model_spec_file(SYNCPLAN_DATA_DIR "/models/tiny-gpt.json"));
  const ByteShard shard(text, mpi.rank(), mpi.size(), kBatch, kSeq);
  Context context{mpi, comm, model, shard};
  int code = 2;
  if (mode == "partial") code = partial(context);
  else if (mode == "equivalence") code = equivalence(context);
  else if (mode == "row") code = row(context, text);
  else std::printf("usage: test_runtime_mpi partial|equivalence|row [TEXT]\n");
  std::fflush(stdout);
  // Every rank's verdict: the job fails when one rank's check did.
  return mpi.first_failing_rank(code == 0) < 0 ? 0 : std::max(code, 1);
}
