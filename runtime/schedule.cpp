// The executed schedule built from the simulator's sync programs, so that a run executes exactly
// the all-reduces `syncplan simulate` times (runtime/schedule.hpp, docs/runtime.md section 1).
#include "runtime/schedule.hpp"

#include "core/errors.hpp"
#include "core/field_error.hpp"
#include "simulator/bucket_fusion.hpp"
#include "simulator/des/sync_program.hpp"
#include "simulator/layer_times.hpp"
#include "simulator/period_model.hpp"
#include "core/units.hpp"
#include "planner/strategy_table.hpp"
#include "simulator/collectives.hpp"
#include "simulator/sync_times.hpp"
#include "simulator/topology.hpp"

namespace syncplan {

namespace {

// The simulator's per-layer view of the model with no times: every sync_s is the fp32 bytes the
// layer's all-reduce carries after the tied-layer and frozen rules (des_layers).
DesLayers byte_layers(const Model& model) {
  Profile profile = runtime_profile(model);
  for (LayerProfile& layer : profile.layers) {
    layer.backward_s = 0.0;
    layer.sync_s = layer.frozen ? 0.0 : static_cast<double>(*layer.param_bytes);
  }
  return des_layers(profile, "model " + model.name, SyncTimeSource::kMeasured);
}

// byte_layers as the period model's times: c_j is the layer's bytes, so that has_allreduce(times,
// j) says exactly which layers the simulator issues an all-reduce for, and assignment_from_plan /
// buckets_from_plan check a plan as `simulate --plan` does.
BackpropTimes byte_times(const DesLayers& layers, const Model& model) {
  return backprop_times(layers, layers.sync_s, "model " + model.name);
}
BackpropTimes byte_times(const Model& model) { return byte_times(byte_layers(model), model); }

LaunchPoint launch_point(IssuePoint issue) {
  switch (issue) {
    case IssuePoint::kGradientReady: return LaunchPoint::kLayerDone;
    case IssuePoint::kAfterBackward: return LaunchPoint::kAfterBackward;
    case IssuePoint::kAfterUpdate: return LaunchPoint::kAfterStep;
  }
  throw InternalError("unknown issue point");
}

// A sync program (backprop indices) as the runtime's buckets (model indices, backprop order),
// without the layers that have nothing of their own to average.
Schedule from_program(const Model& model, const BackpropTimes& times, const SyncProgram& program) {
  Schedule schedule;
  for (const ModelLayer& layer : model.layers) schedule.layer_names.push_back(layer.name);
  const std::size_t count = model.layers.size();
  for (const std::vector<SyncOp>& ops : program.iterations) {
    std::vector<ScheduleBucket>& buckets = schedule.iterations.emplace_back();
    for (const SyncOp& op : ops) {
      ScheduleBucket bucket;
      bucket.launch = launch_point(op.issue);
      bucket.delay = op.delay;
      for (const int j : op.layers) {
        if (!has_allreduce(times, j)) continue;
        bucket.layers.push_back(count - 1 - static_cast<std::size_t>(j));
        bucket.bytes += static_cast<std::int64_t>(times.sync_s[j]);
      }
      if (!bucket.layers.empty()) buckets.push_back(std::move(bucket));
    }
  }
  return schedule;
}

}  // namespace

const char* sync_kind_name(SyncKind kind) { return kind == SyncKind::kGradients ? "gradients" : "parameters"; }

std::vector<std::size_t> Schedule::synced_layers(int h) const {
  std::vector<std::size_t> layers;
  for (const ScheduleBucket& bucket : iterations.at(h)) layers.insert(layers.end(), bucket.layers.begin(), bucket.layers.end());
  return layers;
}

bool Schedule::delayed() const {
  for (const std::vector<ScheduleBucket>& buckets : iterations)
    for (const ScheduleBucket& bucket : buckets)
      if (bucket.delay > 0) return true;
  return false;
}

std::optional<std::pair<int, std::size_t>> Schedule::in_flight_at(int position) const {
  for (int h = 0; h < position && h < period(); ++h)
    for (std::size_t b = 0; b < iterations[h].size(); ++b)
      if (h + iterations[h][b].delay >= position) return std::pair{h, b};
  return std::nullopt;
}

Profile runtime_profile(const Model& model) { return model_profile_skeleton(model, Dtype::kFp32, "model"); }

Schedule strategy_schedule(const Model& model, const std::string& strategy, int period) {
  require_valid_period(period);
  const Strategy& row = strategy_for(strategy, StrategyUse::kRun);
  // The strategy's DES program on the model's layers, as `simulate --strategy` runs it. The
  // runtime's rows need no cost model (needs_cost_model is false for each): one worker's.
  SYNCPLAN_CHECK(!row.needs_cost_model);
  const DesLayers layers = byte_layers(model);
  const BackpropTimes times = byte_times(layers, model);
  Cluster one_worker;
  one_worker.intra_node = one_worker.inter_node = LinkSpec{1.0, 0.0};
  const Topology topology(one_worker);
  const AllreduceModel cost(one_worker, topology);
  const DesStrategyContext context{layers, cost, SyncTimeSource::kMeasured, kDdpBucketCapMiB * units::kBytesPerMiB,
                                   kDdpFirstBucketMiB * units::kBytesPerMiB, nullptr};
  Schedule schedule = from_program(model, times, row.des_program(context, times, period));
  schedule.strategy = strategy;
  schedule.algorithm = strategy;
  schedule.kind = row.runtime == RuntimeExecution::kGradients ? SyncKind::kGradients : SyncKind::kParameters;
  return schedule;
}

Schedule plan_schedule(const Model& model, const Plan& plan, const std::string& origin) {
  const BackpropTimes times = byte_times(model);
  const Assignment assignment = assignment_from_plan(plan, times, origin);
  const SyncProgram program = plan.buckets ? program_from_buckets(buckets_from_plan(*plan.buckets, assignment, times, origin))
                                           : program_from_assignment(assignment);
  Schedule schedule = from_program(model, times, program);
  schedule.strategy = "plan";
  schedule.algorithm = plan.algorithm;
  schedule.kind = SyncKind::kParameters;
  return schedule;
}

Schedule read_plan_schedule(const Model& model, const std::string& path) {
  try {
    return plan_schedule(model, read_plan_file(path, runtime_profile(model)), path);
  } catch (const InputError& e) {
    // read_plan_file speaks of "the profile": here that is the model's layer list.
    throw InputError(std::string(e.what()) + " (the runtime's profile is model " + model.name + "'s layers)");
  }
}

}  // namespace syncplan
