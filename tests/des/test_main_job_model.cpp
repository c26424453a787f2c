// The main job from a model spec through the library API only (no tools/ code): spec -> profile
// (profiler's make_model_profile: the roofline estimate, and the CPU measurement through the layer
// graph) -> the cluster's all-reduce times -> the planning job -> the DES check of the plan.
#include "des_support.hpp"
#include "equivalence.hpp"

#include "model/model_spec.hpp"
#include "planner/plan_job.hpp"
#include "planner/simulate_job.hpp"
#include "profiler/model_profile.hpp"

#include <numeric>

namespace syncplan {

TEST_CASE("main job from a model spec: tiny-gpt profiled, planned for 8 workers, checked on the DES", "[main_job]") {
  const std::string device = GENERATE(std::string("estimate"), std::string("cpu"));
  CAPTURE(device);
  ModelProfileRequest profile_request;
  profile_request.spec_path = SYNCPLAN_DATA_DIR "/models/tiny-gpt.json";
  profile_request.gpu_catalog_path = SYNCPLAN_DATA_DIR "/gpus.json";
  profile_request.device = device;
  profile_request.gpu = device == "estimate" ? "H100-SXM" : "";
  profile_request.batch = 2;
  profile_request.seq = 16;
  profile_request.warmup = 0;
  profile_request.repeats = 1;
  const ModelProfile made = make_model_profile(profile_request);

  // The profile lists the spec's layers, in the spec's (forward call) order, with no all-reduce
  // times: those come from the cluster below.
  const Model model = expand_model(read_model_spec_file(profile_request.spec_path.string()));
  REQUIRE(made.profile.layers.size() == model.layers.size());
  for (std::size_t i = 0; i < model.layers.size(); ++i) {
    REQUIRE(made.profile.layers[i].name == model.layers[i].name);
    REQUIRE(made.profile.layers[i].backward_s.has_value());
    REQUIRE_FALSE(made.profile.layers[i].sync_s.has_value());
  }
  REQUIRE(made.profile.source == (device == "estimate" ? "estimated:roofline:H100-SXM" : "measured:cpu"));
  REQUIRE_FALSE(made.notes.empty());

  SyncTimeInputs inputs;
  inputs.cluster = read_cluster_file(SYNCPLAN_DATA_DIR "/clusters/8nodes-1gpu-10gbps.json");
  inputs.cluster_origin = "8nodes-1gpu-10gbps.json";
  const SyncTimes sync = choose_sync_times(made.profile, "tiny-gpt", inputs);
  REQUIRE(sync.source == SyncTimeSource::kModel);  // no measured sync_s: the cluster's cost model

  PlanRequest request;
  request.profile = sync.profile;
  request.origin = "tiny-gpt";
  request.times = sync_backprop_times(sync, "tiny-gpt");
  request.period = 4;
  request.algorithm = "best";
  const PlanOutcome outcome = run_plan_job(request);

  // S-SGD by hand from the per-layer times (SPEC section 5): H (F + B_L + U + sum c).
  const BackpropTimes& times = outcome.times;
  const double sum_b = std::accumulate(times.backward_s.begin(), times.backward_s.end(), 0.0);
  const double sum_c = std::accumulate(times.sync_s.begin(), times.sync_s.end(), 0.0);
  REQUIRE(sum_c > 0);
  REQUIRE(outcome.strategy("ssgd").period_s ==
          Approx(4 * (times.forward_total_s + sum_b + times.update_total_s + sum_c)).epsilon(1e-12));
  // best is never worse than dp or plsgd-even, and never below its own lower bound.
  REQUIRE(outcome.timing.period_s <= outcome.strategy("dp").period_s * (1 + 1e-12));
  REQUIRE(outcome.timing.period_s <= outcome.strategy("plsgd-even").period_s * (1 + 1e-12));
  REQUIRE(outcome.timing.period_s >= outcome.lower_bound_s * (1 - 1e-12));
  REQUIRE(outcome.plan.layers.size() == model.layers.size());

  // The DES of the cluster's 8 identical workers, charging the same cost model, runs the plan in
  // its predicted period.
  SimulateRequest simulate;
  simulate.sync = sync;
  simulate.origin = "tiny-gpt";
  simulate.plan = outcome.plan;
  simulate.plan_origin = "plan.json";
  const DesOutcome des = simulate_des(simulate);
  REQUIRE(des_test::relative_difference(des.result.total_s, outcome.plan.predicted->period_s) <= 1e-9);
}

}  // namespace syncplan
