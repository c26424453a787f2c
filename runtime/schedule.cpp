// The executed schedule built from the simulator's sync programs, so that a run executes exactly
// the all-reduces `syncplan simulate` times (runtime/schedule.hpp, docs/runtime.md section 1).
#include "runtime/schedule.hpp"

#include "core/errors.hpp"
#include "core/field_error.hpp"
#include "simulator/bucket_fusion.hpp"
#include "simulator/des/sync_program.hpp"
#include "simulator/layer_times.hpp"
#include "simulator/period_model.hpp"
#include "simulator/strategies/strategies.hpp"

namespace syncplan {

namespace {

// The simulator's per-layer view of the model with no times: every c_j is the fp32 bytes the
// layer's all-reduce carries after the tied-layer and frozen rules (des_layers), so that
// has_allreduce(times, j) says exactly which layers the simulator issues an all-reduce for, and
// assignment_from_plan / buckets_from_plan check a plan as `simulate --plan` does.
BackpropTimes byte_times(const Model& model) {
  Profile profile = runtime_profile(model);
  for (LayerProfile& layer : profile.layers) {
    layer.backward_s = 0.0;
    layer.sync_s = layer.frozen ? 0.0 : static_cast<double>(*layer.param_bytes);
  }
  const DesLayers layers = des_layers(profile, "model " + model.name, SyncTimeSource::kMeasured);
  return backprop_times(layers, layers.sync_s, "model " + model.name);
}

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
  const BackpropTimes times = byte_times(model);
  const std::size_t count = times.size();
  SyncProgram program;
  SyncKind kind = SyncKind::kParameters;
  if (strategy == "ssgd") {
    program = ssgd_program(count, period);
    kind = SyncKind::kGradients;
  } else if (strategy == "wfbp") {
    program = program_from_assignment(wfbp_assignment(count, period));
    kind = SyncKind::kGradients;
  } else if (strategy == "flsgd") {
    program = flsgd_program(count, period);
  } else if (strategy == "plsgd-even") {
    program = program_from_assignment(plsgd_even_assignment(count, period));
  } else {
    const bool planned = strategy == "dreamddp" || strategy == "dp" || strategy == "search" || strategy == "best";
    throw FieldError("strategy", "strategy: " + std::string(planned ? "'" + strategy + "' is planned on a profile: "
                                                                         "write its plan with `syncplan plan --algorithm " +
                                                                         strategy + "` and run that plan"
                                                                   : "unknown '" + strategy + "'") +
                                     " (the runtime runs " + kScheduleStrategies + ", or a plan)");
  }
  Schedule schedule = from_program(model, times, program);
  schedule.strategy = strategy;
  schedule.algorithm = strategy;
  schedule.kind = kind;
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
