// The what-if job against independent single runs: every point of a GPT-2 sweep equals its own
// cluster file read, `plan` and `simulate` (the library calls the commands make), whatever the
// threads; bad requests are refused before any point; a point that fails is reported in its row.
#include <catch2/catch.hpp>

#include "core/field_error.hpp"
#include "planner/plan_job.hpp"
#include "planner/simulate_job.hpp"
#include "planner/whatif_job.hpp"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <sstream>

namespace syncplan {

namespace {

const std::string kBase = SYNCPLAN_DATA_DIR "/clusters/8nodes-1gpu-10gbps.json";
const std::string kHierarchical = SYNCPLAN_DATA_DIR "/clusters/32nodes-8gpu-100gbps.json";

ModelProfileRequest gpt2_estimate(std::int64_t batch) {
  ModelProfileRequest model;
  model.spec_path = SYNCPLAN_DATA_DIR "/models/gpt2.json";
  model.gpu_catalog_path = SYNCPLAN_DATA_DIR "/gpus.json";
  model.device = "estimate";
  model.dtype = "bf16";
  model.gpu = "H100-SXM";
  model.batch = batch;
  model.seq = 1024;
  return model;
}

WhatifRequest gpt2_request(const std::string& base_path) {
  WhatifRequest request;
  request.model = gpt2_estimate(8);
  request.origin = "--model gpt2";
  request.base = read_cluster_file(base_path);
  request.cluster_origin = base_path;
  request.workers = {8, 64};
  request.bandwidth_Gbps = {10, 100};
  request.latency_us = {request.base.inter_node.latency_us};
  request.periods = {4, std::nullopt};
  request.search.rounds = 3;  // small, so that the test is quick; rounds (not time) end the search
  return request;
}

// The point's cluster as a user would write its file: the base's JSON with the swept keys edited.
Cluster cluster_file_for(const std::string& base_path, const WhatifRow& row) {
  std::ifstream in(base_path);
  std::stringstream text;
  text << in.rdbuf();
  Json document = Json::parse(text.str());
  document["workers"] = row.workers;
  document["inter_node"]["bandwidth_Gbps"] = row.bandwidth_Gbps;
  document["inter_node"]["latency_us"] = row.latency_us;
  if (row.straggler != 1) {
    document["compute_slowdown"] = std::vector<double>(static_cast<std::size_t>(row.workers), 1.0);
    document["compute_slowdown"][0] = row.straggler;
  }
  if (row.jitter_sigma > 0) document["jitter"] = {{"distribution", "lognormal"}, {"sigma", row.jitter_sigma}, {"seed", 1}};
  return cluster_from_json(document, "point.json");
}

// `simulate --cluster point.json` of a strategy, or `plan --period H --algorithm NAME` then
// `simulate --plan`, on the profile `plan --model gpt2 --batch B` makes: the DES period (s). For
// best, also `plan --fuse-buckets` (alpha: the cluster's all-reduce time of 0 bytes) then
// `simulate --plan`; the shorter period.
struct SingleRun {
  double period_s = 0;
  double iteration_s = 0;
  std::optional<double> plan_gap;
};

SingleRun single_run(const WhatifRequest& request, const WhatifRow& row, const std::string& strategy, int period) {
  const Profile profile = make_model_profile(gpt2_estimate(*row.batch_per_worker)).profile;
  SyncTimeInputs inputs;
  inputs.cluster = cluster_file_for(request.cluster_origin, row);
  inputs.cluster_origin = "point.json";
  inputs.mode = SyncTimeMode::kModel;
  const SyncTimes sync = choose_sync_times(profile, "--model gpt2", inputs);
  SimulateRequest simulate;
  simulate.sync = sync;
  simulate.origin = "--model gpt2";
  SingleRun single;
  if (find_strategy(strategy)->plannable()) {
    PlanRequest plan;
    plan.profile = sync.profile;
    plan.origin = "--model gpt2";
    plan.times = sync_backprop_times(sync, "--model gpt2");
    plan.period = period;
    plan.algorithm = strategy;
    plan.search = request.search;
    const PlanOutcome planned = run_plan_job(plan);
    simulate.plan = planned.plan;
    single.plan_gap = planned.gap_to_lower_bound;
    if (strategy == "best") {
      const DesOutcome unfused = simulate_des(simulate);
      plan.bucket_alpha_s = sync.alpha_s;
      plan.fuse_after_planning = true;
      const PlanOutcome fused = run_plan_job(plan);
      SimulateRequest fused_simulate = simulate;
      fused_simulate.plan = fused.plan;
      const DesOutcome fused_des = simulate_des(fused_simulate);
      const bool fused_wins = fused_des.document.period_s() < unfused.document.period_s();
      const DesOutcome& kept = fused_wins ? fused_des : unfused;
      single.period_s = kept.document.period_s();
      single.iteration_s = kept.result.total_s / kept.document.iterations;
      single.plan_gap = fused_wins ? fused.gap_to_lower_bound : planned.gap_to_lower_bound;
      return single;
    }
  } else {
    simulate.strategy = strategy;
    simulate.period = period;
  }
  const DesOutcome des = simulate_des(simulate);
  single.period_s = des.document.period_s();
  single.iteration_s = des.result.total_s / des.document.iterations;
  return single;
}

// `plan --algorithm dp --period auto --max-overhead F` on the point's cluster: its H.
int auto_period_of(const WhatifRequest& request, const WhatifRow& row) {
  const Profile profile = make_model_profile(gpt2_estimate(*row.batch_per_worker)).profile;
  SyncTimeInputs inputs;
  inputs.cluster = cluster_file_for(request.cluster_origin, row);
  inputs.mode = SyncTimeMode::kModel;
  const SyncTimes sync = choose_sync_times(profile, "--model gpt2", inputs);
  PlanRequest plan;
  plan.profile = sync.profile;
  plan.times = sync_backprop_times(sync, "--model gpt2");
  plan.algorithm = "dp";
  plan.max_overhead = request.max_overhead;
  return run_plan_job(plan).period;
}

bool close(double a, double b) { return std::fabs(a - b) <= 1e-9 * std::max(std::fabs(a), std::fabs(b)); }

}  // namespace

TEST_CASE("whatif: every point equals a single plan/simulate of its own cluster file", "[whatif]") {
  WhatifRequest request = gpt2_request(kBase);
  request.strategies = {"ssgd", "wfbp", "ddp", "mgwfbp", "flsgd", "plsgd-even", "dreamddp", "dp", "search", "best"};
  const WhatifOutcome outcome = run_whatif_job(request, {2, {}});
  // 2 worker counts x 2 bandwidths x 1 latency x 2 periods x 10 strategies.
  REQUIRE(outcome.rows.size() == 80);
  REQUIRE(outcome.failed() == 0);
  // Order: workers, bandwidth, latency, period, strategy (strategy fastest).
  REQUIRE(outcome.rows[0].workers == 8);
  REQUIRE(outcome.rows[10].period_requested == "auto");
  REQUIRE(outcome.rows[20].bandwidth_Gbps == 100);
  REQUIRE(outcome.rows[40].workers == 64);
  // A few points of every strategy: each worker count and bandwidth once, fixed and automatic H.
  for (const int index : {0, 13, 26, 39, 40, 53, 66, 79, 5, 18, 31, 44, 57, 70, 9, 22, 35, 48, 61, 74, 1, 2, 3, 4, 6, 7, 8}) {
    const WhatifRow& row = outcome.rows[index];
    CAPTURE(index, row.strategy, row.workers, row.bandwidth_Gbps, row.period_requested);
    REQUIRE(row.index == index);
    REQUIRE(row.nodes == row.workers);  // one worker per node in the base
    const int period = row.period_requested == "auto" ? auto_period_of(request, row) : std::stoi(row.period_requested);
    REQUIRE(*row.period == period);
    const SingleRun single = single_run(request, row, row.strategy, period);
    REQUIRE(close(*row.period_s, single.period_s));
    REQUIRE(close(*row.iteration_s, single.iteration_s));
    // Throughput from its definition: workers x batch per worker / iteration time; tokens x 1024.
    REQUIRE(close(*row.samples_per_s, row.workers * 8.0 / single.iteration_s));
    REQUIRE(close(*row.tokens_per_s, *row.samples_per_s * 1024));
    // The baselines at the same point, each its own single run.
    REQUIRE(close(*row.speedup_vs_ssgd, single_run(request, row, "ssgd", period).period_s / single.period_s));
    REQUIRE(close(*row.speedup_vs_flsgd, single_run(request, row, "flsgd", period).period_s / single.period_s));
    REQUIRE(row.plan_gap.has_value() == single.plan_gap.has_value());
    if (single.plan_gap) REQUIRE(close(*row.plan_gap, *single.plan_gap));
    REQUIRE(row.search_time_limited.value_or(false) == false);
  }
}

TEST_CASE("whatif: the rows are the same whatever the threads", "[whatif]") {
  WhatifRequest request = gpt2_request(kBase);
  request.strategies = {"ssgd", "flsgd", "dreamddp", "search"};
  const std::string one = whatif_csv(run_whatif_job(request, {1, {}}));
  const std::string three = whatif_csv(run_whatif_job(request, {3, {}}));
  REQUIRE(one == three);
  // Header and 32 rows.
  REQUIRE(std::count(one.begin(), one.end(), '\n') == 33);
}

TEST_CASE("whatif: bytes per worker per period follow the strategy's syncs", "[whatif]") {
  WhatifRequest request = gpt2_request(kBase);
  request.workers = {8};
  request.bandwidth_Gbps = {10};
  request.periods = {4};
  request.strategies = {"ssgd", "flsgd", "dp"};
  const WhatifOutcome outcome = run_whatif_job(request);
  // ssgd all-reduces every layer in each of the 4 iterations, flsgd once per period, and any plan
  // syncs every layer at least once: ssgd = 4 x flsgd, and a plan lies in [flsgd, ssgd].
  const double ssgd = *outcome.rows[0].bytes_per_worker, flsgd = *outcome.rows[1].bytes_per_worker;
  REQUIRE(flsgd > 0);
  REQUIRE(close(ssgd, 4 * flsgd));
  REQUIRE(*outcome.rows[2].bytes_per_worker >= flsgd);
  REQUIRE(*outcome.rows[2].bytes_per_worker <= ssgd);
  // GPT-2 small's parameters (124M, tied embedding counted once) in bf16 are about 249 MB.
  REQUIRE(flsgd > 2.0e8);
  REQUIRE(flsgd < 3.0e8);
  // ssgd is its own baseline.
  REQUIRE(*outcome.rows[0].speedup_vs_ssgd == 1.0);
  REQUIRE(*outcome.rows[1].speedup_vs_flsgd == 1.0);
}

TEST_CASE("whatif: strong scaling splits the global batch, the profile made at the per-worker batch", "[whatif]") {
  WhatifRequest request = gpt2_request(kBase);
  request.scaling = WhatifScaling::kStrong;
  request.global_batch = 64;
  request.workers = {8, 16};
  request.bandwidth_Gbps = {10};
  request.periods = {4};
  request.strategies = {"wfbp"};
  const WhatifOutcome outcome = run_whatif_job(request);
  REQUIRE(*outcome.rows[0].batch_per_worker == 8);  // 64 / 8
  REQUIRE(*outcome.rows[1].batch_per_worker == 4);  // 64 / 16
  for (const WhatifRow& row : outcome.rows)
    REQUIRE(close(*row.period_s, single_run(request, row, "wfbp", 4).period_s));
  // The global batch is the same at both sizes: samples/s = 64 / iteration_s.
  REQUIRE(close(*outcome.rows[1].samples_per_s, 64 / *outcome.rows[1].iteration_s));
  const std::string csv = whatif_csv(outcome);
  REQUIRE(csv.find(",strong,") != std::string::npos);
}

TEST_CASE("whatif: a straggler and jitter equal a cluster file with compute_slowdown and jitter", "[whatif]") {
  WhatifRequest request = gpt2_request(kBase);
  request.workers = {8, 16};
  request.bandwidth_Gbps = {10};
  request.periods = {4};
  request.strategies = {"ssgd", "ddp", "dp"};
  request.straggler = 1.5;
  request.jitter_sigma = 0.1;
  const WhatifOutcome outcome = run_whatif_job(request);
  REQUIRE(outcome.failed() == 0);
  for (const WhatifRow& row : outcome.rows) {
    CAPTURE(row.index, row.strategy);
    REQUIRE(row.straggler == 1.5);
    REQUIRE(row.jitter_sigma == 0.1);
    REQUIRE(close(*row.period_s, single_run(request, row, row.strategy, 4).period_s));
  }
  // The straggler slows every synchronous iteration: ssgd is slower than without it.
  WhatifRequest plain = request;
  plain.straggler.reset();
  plain.jitter_sigma.reset();
  REQUIRE(*outcome.rows[0].period_s > *run_whatif_job(plain).rows[0].period_s);
}

TEST_CASE("whatif: --iterations runs whole periods of each point's H", "[whatif]") {
  // 15 iterations of H = 10 counted positions 1-5 twice, and period_s fell
  // below the plan's lower bound. 15 rounds up to 20 at H = 10 and stays 15 at H = 5: each row
  // equals the row of the same sweep asked for 20 (and 15) iterations, and no plan's period_s is
  // below its lower bound (lower_bound_s, the planner's own bound).
  WhatifRequest request = gpt2_request(kBase);
  request.workers = {8};
  request.bandwidth_Gbps = {10};
  request.periods = {10, 5};
  request.strategies = {"flsgd", "dp"};
  request.iterations = 15;
  const WhatifOutcome fifteen = run_whatif_job(request);
  request.iterations = 20;
  const WhatifOutcome twenty = run_whatif_job(request);
  request.iterations = 15;
  request.periods = {5};
  const WhatifOutcome at_five = run_whatif_job(request);
  REQUIRE(fifteen.failed() == 0);
  REQUIRE(fifteen.rows.size() == 4);
  for (int i = 0; i < 2; ++i) {  // H = 10: as 20 iterations
    CAPTURE(i);
    REQUIRE(*fifteen.rows[i].period_s == *twenty.rows[i].period_s);
    REQUIRE(*fifteen.rows[i].iteration_s == *twenty.rows[i].iteration_s);
  }
  for (int i = 0; i < 2; ++i) {  // H = 5: 15 iterations are 3 whole periods, run as asked
    CAPTURE(i);
    REQUIRE(*fifteen.rows[2 + i].period_s == *at_five.rows[i].period_s);
  }
  for (const WhatifRow& row : fifteen.rows)
    if (row.lower_bound_s) REQUIRE(*row.period_s >= *row.lower_bound_s * (1 - 1e-12));
}

TEST_CASE("whatif: bad requests are refused before any point, naming the value", "[whatif]") {
  const auto refused = [](WhatifRequest request, const std::string& field, const std::string& text) {
    try {
      validate_whatif_request(request);
      FAIL("accepted");
    } catch (const FieldError& e) {
      CAPTURE(e.what());
      REQUIRE(e.field() == field);
      REQUIRE(std::string(e.what()).find(text) != std::string::npos);
    }
  };
  WhatifRequest request = gpt2_request(kHierarchical);
  request.strategies = {"ssgd"};
  WhatifRequest bad = request;
  bad.workers = {8, 12};
  refused(bad, "workers", "12 is not a multiple of 8");
  bad = request;
  bad.workers = {};
  refused(bad, "workers", "empty");
  bad = request;
  bad.strategies = {"ssgd", "nope"};
  refused(bad, "strategies", "'nope'");
  bad = request;
  bad.bandwidth_Gbps = {-1};
  refused(bad, "bandwidth_Gbps", "-1");
  bad = request;
  bad.periods = {0};
  refused(bad, "periods", "0");
  bad = request;
  bad.scaling = WhatifScaling::kStrong;
  bad.global_batch = 100;
  refused(bad, "global_batch", "among 8 workers");
  bad = request;
  bad.workers = {8, 64, 8};
  refused(bad, "workers", "8 is given twice");
  bad = request;
  bad.periods = {std::nullopt, 10, std::nullopt};
  refused(bad, "periods", "auto is given twice");
  bad = request;
  bad.strategies = {"ssgd", "ssgd"};
  refused(bad, "strategies", "'ssgd' is given twice");
  bad = request;
  bad.bandwidth_Gbps = {10, 10};
  refused(bad, "bandwidth_Gbps", "10 is given twice");
  bad = request;
  bad.workers = {16777224};  // 2^24 + 8: a multiple of the node size above the cluster cap of 2^24 workers
  refused(bad, "workers", "16777224");
}

// `best` means best. Over the README's sweep (1 to 100,000 workers, 1 to 100
// Gbit/s, H = 10) best's DES period is at most every other strategy's at the same point. Returns
// the settings where best's row beat both its own unfused plans (so the fused one was taken).
int check_best_never_slower(const WhatifRequest& base) {
  WhatifRequest request = base;
  request.workers = {8, 4096, 100000};
  request.bandwidth_Gbps = {1, 10, 100};
  request.periods = {10};
  request.strategies = {"ssgd", "wfbp", "ddp", "mgwfbp", "flsgd", "plsgd-even", "dreamddp", "dp", "search", "best"};
  const WhatifOutcome outcome = run_whatif_job(request, {2, {}});
  REQUIRE(outcome.rows.size() == 90);
  REQUIRE(outcome.failed() == 0);
  int fused_needed = 0;
  for (std::size_t setting = 0; setting < outcome.rows.size(); setting += 10) {
    const WhatifRow& best = outcome.rows[setting + 9];
    REQUIRE(best.strategy == "best");
    for (std::size_t k = setting; k < setting + 9; ++k) {
      const WhatifRow& other = outcome.rows[k];
      CAPTURE(best.workers, best.bandwidth_Gbps, other.strategy, *other.period_s, *best.period_s);
      CHECK(*best.period_s <= *other.period_s * (1 + 1e-12));
    }
    const WhatifRow& row = best;
    if (*row.period_s < single_run(request, row, "dp", 10).period_s * (1 - 1e-9) &&
        *row.period_s < single_run(request, row, "search", 10).period_s * (1 - 1e-9))
      ++fused_needed;
  }
  return fused_needed;
}

// Over a flat ring. Before, best did not fuse buckets and mgwfbp's merged ones beat it 14 times
// over at 100,000 workers, where the ring's start-up term, 2(p - 1) x 50 us per all-reduce, is
// about 10 s: at 100,000 workers at least, fusion decides it.
TEST_CASE("whatif: best is never slower than any other strategy in the same DES", "[whatif]") {
  CHECK(check_best_never_slower(gpt2_request(kBase)) >= 3);
}

// The same under "auto" (the gallery's all-reduce, docs/collectives.md 6), where a bucket's time is
// the cheapest algorithm for its summed bytes, not its members' times less the start-ups saved.
TEST_CASE("whatif: best is never slower than any other strategy under the auto all-reduce", "[whatif]") {
  WhatifRequest request = gpt2_request(kBase);
  request.base.allreduce = AllreduceAlgorithm::kAuto;
  check_best_never_slower(request);
}

TEST_CASE("whatif: a point that fails is reported in its row, the others run", "[whatif]") {
  WhatifRequest request = gpt2_request(kBase);
  request.workers = {8};
  request.bandwidth_Gbps = {0.001, 1e6};  // at 1 Mbit/s no H up to 1000 keeps dp's wait within 0.1%
  request.periods = {std::nullopt};
  request.max_overhead = 0.001;
  request.strategies = {"ssgd", "dp"};
  const WhatifOutcome outcome = run_whatif_job(request);
  REQUIRE(outcome.failed() == 2);
  REQUIRE(outcome.rows[0].status == WhatifStatus::kError);
  REQUIRE(outcome.rows[0].error.rfind("period auto: no period H up to 1000", 0) == 0);
  REQUIRE_FALSE(outcome.rows[0].period_s.has_value());
  REQUIRE(outcome.rows[2].status == WhatifStatus::kOk);
  const Json document = whatif_to_json(outcome);
  REQUIRE(document["summary"]["failed"] == 2);
  REQUIRE(document["summary"]["errors"][0]["index"] == 0);
  // Rows survive the JSON that carries them between ranks.
  for (const WhatifRow& row : outcome.rows) {
    const WhatifRow back = whatif_row_from_json(document["points"][row.index], "test");
    REQUIRE(back.status == row.status);
    REQUIRE(back.period_s == row.period_s);
  }
}

}  // namespace syncplan
