// An independent reference of delayed averaging (docs/time-model.md section 13) for the runtime's
// acceptance (run_cases.sh, case delayed): trains every rank's replica of a `syncplan run --plan`
// in this one process, without MPI and without the executor, applying each snapshot and
// correction written out here from the plan file, and compares the parameters of the run's
// checkpoints with them bit for bit.
//
// What each replica r does per step t (h = t mod H), as the contract says and the trainer's CPU
// device computes it: zero gradients; forward and backward of every layer on its own shard's next
// batch (ByteShard, rank r of N); the snapshot s_r of every layer synced in h (its parameters
// now: nothing changes them during forward and backward); then, for every sync due before this
// step (h' + d = h), in sync order (h' ascending, then backprop order): m = (sum_r s_r) / N, and
// p_r <- m when d = 0 (the replacement), p_r <- p_r + (m - s_r) when d > 0; then AdamW.
// Bit for bit with 2 ranks only: a + b is the same float in any order and halving is exact, so
// MPI's sum then / 2 equals this file's; with more ranks MPI may add in another order.
//
// usage: delayed_reference PLAN TEXT BATCH SEQ SEED LR CHECKPOINT_DIR STEP...
//   the run: tiny-gpt (data/models), 2 ranks; each STEP a complete checkpoint of the run.
// Prints "ok: ..." and exits 0, or the first mismatches and exits 1; 2 on bad usage.
#include "core/errors.hpp"
#include "core/plan.hpp"
#include "model/adamw.hpp"
#include "model/cpu/cpu_graph.hpp"
#include "model/model_spec.hpp"
#include "runtime/byte_data.hpp"
#include "runtime/checkpoint.hpp"
#include "runtime/fingerprint.hpp"
#include "runtime/schedule.hpp"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <memory>
#include <set>
#include <string>
#include <vector>

using namespace syncplan;

namespace {

constexpr int kRanks = 2;

// One sync of the plan: layer (forward index), its iteration h and delay d.
struct Sync {
  std::size_t layer = 0;
  int h = 0;
  int delay = 0;
};

struct Replica {
  std::unique_ptr<cpu::CpuGraph> graph;
  std::unique_ptr<AdamW> optimizer;
  std::unique_ptr<ByteShard> shard;
  std::vector<std::vector<float>> snapshots;  // per entry of the syncs list, s_r (empty when not taken)
};

std::vector<float> layer_values(cpu::CpuGraph& graph, std::size_t layer) {
  std::vector<float> values;
  for (const std::span<float> tensor : graph.layer_parameters(layer)) values.insert(values.end(), tensor.begin(), tensor.end());
  return values;
}

int run(int argc, char** argv) {
  if (argc < 9) {
    std::fprintf(stderr, "usage: delayed_reference PLAN TEXT BATCH SEQ SEED LR CHECKPOINT_DIR STEP...\n");
    return 2;
  }
  const std::string plan_path = argv[1], text = argv[2];
  const std::int64_t batch = std::stoll(argv[3]), seq = std::stoll(argv[4]);
  const std::uint64_t seed = std::stoull(argv[5]);
  AdamWOptions adamw;
  adamw.learning_rate = std::stod(argv[6]);
  const std::string checkpoints = argv[7];
  std::set<std::int64_t> steps;
  for (int a = 8; a < argc; ++a) steps.insert(std::stoll(argv[a]));

  const ModelSpec spec = read_model_spec_file(SYNCPLAN_DATA_DIR "/models/tiny-gpt.json");
  const Model model = expand_model(spec);
  const Plan plan = read_plan_file(plan_path, runtime_profile(model));
  const Workload workload{batch, seq, Dtype::kFp32};

  std::vector<Replica> replicas(kRanks);
  for (int r = 0; r < kRanks; ++r) {
    replicas[r].graph = std::make_unique<cpu::CpuGraph>(model, workload);
    replicas[r].graph->initialize_parameters(seed);
    replicas[r].optimizer = std::make_unique<AdamW>(model.param_count(), adamw);
    replicas[r].shard = std::make_unique<ByteShard>(text, r, kRanks, batch, seq);
  }
  cpu::CpuGraph& probe = *replicas[0].graph;
  // The syncs in sync order: h ascending, then backprop order (descending forward index). Layers
  // that own no parameters (tied to another, frozen, none) are averaged by nobody.
  std::vector<Sync> syncs;
  for (std::size_t l = 0; l < model.layers.size(); ++l) {
    if (model.layers[l].frozen) throw InputError("delayed_reference: frozen layers are not modelled here");
    if (probe.tied(l) || probe.param_count(l) == 0) continue;
    const LayerSchedule& schedule = plan.layers.at(l);
    if (schedule.name != model.layers[l].name) throw InputError("delayed_reference: the plan's layers are not the model's");
    for (std::size_t i = 0; i < schedule.sync_iterations.size(); ++i)
      syncs.push_back({l, schedule.sync_iterations[i], schedule.delay(i)});
  }
  std::sort(syncs.begin(), syncs.end(), [](const Sync& a, const Sync& b) {
    return a.h != b.h ? a.h < b.h : a.layer > b.layer;
  });
  for (Replica& replica : replicas) replica.snapshots.resize(syncs.size());

  const RunFingerprint fingerprint = fingerprint_run(schedule_identity(plan), spec, batch, seq, kRanks);
  const std::int64_t last = *steps.rbegin();
  int corrections = 0, mismatches = 0;
  for (std::int64_t t = 0; t < last; ++t) {
    const int h = static_cast<int>(t % plan.period);
    for (Replica& replica : replicas) {
      const ByteBatch data = replica.shard->next();
      replica.graph->set_batch(data.ids, data.targets);
      replica.graph->set_dropout_seed(seed + static_cast<std::uint64_t>(t));
      replica.graph->zero_gradients();
      for (std::size_t l = 0; l < replica.graph->layer_count(); ++l) replica.graph->forward(l);
      for (std::size_t l = replica.graph->layer_count(); l-- > 0;) replica.graph->backward(l);
      for (std::size_t s = 0; s < syncs.size(); ++s)
        if (syncs[s].h == h) replica.snapshots[s] = layer_values(*replica.graph, syncs[s].layer);
    }
    for (std::size_t s = 0; s < syncs.size(); ++s) {
      if (syncs[s].h + syncs[s].delay != h) continue;
      const std::size_t n = replicas[0].snapshots[s].size();
      std::vector<float> mean(n);
      for (std::size_t i = 0; i < n; ++i) {
        float sum = 0;
        for (const Replica& replica : replicas) sum += replica.snapshots[s][i];
        mean[i] = sum / static_cast<float>(kRanks);
      }
      for (Replica& replica : replicas) {
        std::size_t i = 0;
        for (const std::span<float> tensor : replica.graph->layer_parameters(syncs[s].layer))
          for (float& p : tensor) {
            p = syncs[s].delay == 0 ? mean[i] : p + (mean[i] - replica.snapshots[s][i]);
            ++i;
          }
      }
      corrections += syncs[s].delay > 0;
    }
    for (Replica& replica : replicas) replica.optimizer->step(replica.graph->parameters(), replica.graph->gradients());

    const std::int64_t done = t + 1;
    if (!steps.count(done)) continue;
    for (int r = 0; r < kRanks; ++r) {
      const TrainingState state = read_rank_checkpoint(checkpoints, done, {fingerprint, r, kRanks},
                                                       static_cast<std::int64_t>(probe.parameters().size()));
      const std::span<const float> mine = replicas[r].graph->parameters();
      std::size_t differ = 0;
      for (std::size_t i = 0; i < mine.size(); ++i) {
        if (std::memcmp(&mine[i], &state.parameters[i], sizeof(float)) == 0) continue;
        if (differ++ < 5)
          std::printf("FAIL: step %lld rank %d: parameter %zu is %.9g in the run, %.9g in the reference\n",
                      static_cast<long long>(done), r, i, state.parameters[i], mine[i]);
      }
      mismatches += differ != 0;
      std::printf("%s: step %lld rank %d: %zu of %zu parameters differ from the reference\n", differ ? "FAIL" : "ok",
                  static_cast<long long>(done), r, differ, mine.size());
    }
  }
  std::printf("%s: %zu syncs per period, %d delayed corrections applied by the reference over %lld steps\n",
              mismatches ? "FAIL" : "ok", syncs.size(), corrections, static_cast<long long>(last));
  if (corrections == 0) {
    std::printf("FAIL: the plan has no delayed sync: nothing was checked\n");
    return 1;
  }
  return mismatches ? 1 : 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const std::exception& e) {
    std::printf("FAIL: %s\n", e.what());
    return 1;
  }
}
