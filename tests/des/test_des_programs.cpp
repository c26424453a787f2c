// Sync programs only the DES runs (docs/des.md 3): PyTorch DDP's buckets and MG-WFBP's merges,
// derived by hand; and the programs of ssgd and flsgd.
#include "des_support.hpp"

#include "planner/strategy_table.hpp"
#include "simulator/des/sync_program.hpp"

namespace syncplan {
namespace {

using BucketList = std::vector<std::vector<int>>;

// The buckets of iteration h, checking that every op is issued when its gradient is ready.
BucketList buckets_of(const SyncProgram& program, int h) {
  BucketList buckets;
  for (const SyncOp& op : program.iterations.at(h)) {
    REQUIRE(op.issue == IssuePoint::kGradientReady);
    buckets.push_back(op.layers);
  }
  return buckets;
}

BackpropTimes times_of(const std::vector<double>& backward_s) {
  BackpropTimes times;
  double ready = 0;
  for (std::size_t j = 0; j < backward_s.size(); ++j) {
    times.names.push_back("j" + std::to_string(j));
    times.backward_s.push_back(backward_s[j]);
    times.sync_s.push_back(0);
    ready += backward_s[j];
    times.ready_s.push_back(ready);
  }
  return times;
}

}  // namespace

TEST_CASE("ddp buckets by hand: first bucket cap, cap, a big layer alone, no split", "[des][programs]") {
  // param_bytes in backprop order, first bucket cap 10, cap 25 (bytes); a layer joins the open
  // bucket, which closes once it holds at least its cap (PyTorch's rule):
  //   A: j0 4, j1 8, j2 12 >= 10: closes {0, 1, 2}; B (cap 25): j3 10, j4 40 >= 25: closes {3, 4};
  //   C: j5 5, j6 25 >= 25: closes {5, 6}; D: j7 1, the last layer: {7}.
  const std::vector<double> bytes = {4, 4, 4, 10, 30, 5, 20, 1};
  const SyncProgram program = ddp_program(bytes, 3, 25, 10);
  REQUIRE(program.period() == 3);
  const BucketList expected = {{0, 1, 2}, {3, 4}, {5, 6}, {7}};
  for (int h = 0; h < 3; ++h) REQUIRE(buckets_of(program, h) == expected);

  SECTION("the first layer larger than the first bucket's cap is a bucket of its own") {
    // j0 50 >= 10 closes {0}; j1 3, j2 25 >= 25 closes {1, 2}; j3 1: {3}.
    REQUIRE(buckets_of(ddp_program({50, 3, 22, 1}, 1, 25, 10), 0) == BucketList{{0}, {1, 2}, {3}});
  }
  SECTION("everything fits one bucket") {
    REQUIRE(buckets_of(ddp_program({1, 2, 3}, 1, 25, 10), 0) == BucketList{{0, 1, 2}});
  }
  SECTION("every layer larger than the cap: one bucket each, none split") {
    REQUIRE(buckets_of(ddp_program({40, 30, 26}, 1, 25, 10), 0) == BucketList{{0}, {1}, {2}});
  }
  SECTION("through des_program: the context's caps, the first bucket's even above the cap") {
    const DesLayers layers = des_test::backprop_layers({1, 1, 1, 1, 1, 1, 1, 1}, {}, 0, 0, bytes);
    const Cluster cluster = des_test::cluster_of(des_test::cluster_document(2, 2, 8, 10));
    const Topology topology(cluster);
    const AllreduceModel model(cluster, topology);
    DesStrategyContext context{layers, model, SyncTimeSource::kModel, 25, 10};
    const BackpropTimes times = backprop_times_for_des(context);
    REQUIRE(buckets_of(des_test::des_program("ddp", context, times, 2), 1) == expected);
    // First bucket cap 20 with cap 9 (torch 1.13 keeps the first bucket's limit whatever
    // the cap; it was min(first, cap) before):
    //   j0 4, j1 8, j2 12, j3 22 >= 20: {0, 1, 2, 3}; then cap 9: j4 30: {4}; j5 5, j6 25: {5, 6}; j7: {7}.
    context.bucket_cap_bytes = 9;
    context.first_bucket_bytes = 20;
    REQUIRE(buckets_of(des_test::des_program("ddp", context, times, 1), 0) ==
            BucketList{{0, 1, 2, 3}, {4}, {5, 6}, {7}});
  }
}

TEST_CASE("mgwfbp by hand: merges when start-up dominates, not across a big gap", "[des][programs]") {
  // Cost model: 2 workers in one node, 8 Gbit/s (1e9 bytes/s), 10 us: T(n) = 2e-5 + n * 1e-9 s.
  // Every layer 1000 bytes: T(1000) = 2.1e-5, T(2000) = 2.2e-5, T(3000) = 2.3e-5.
  const Cluster cluster = des_test::cluster_of(des_test::cluster_document(2, 2, 8, 10));
  const Topology topology(cluster);
  const AllreduceModel model(cluster, topology);
  REQUIRE(model.time_s(1000) == des_test::near(2.1e-5));
  const auto allreduce_s = [&](double bytes) { return model.time_s(bytes); };
  const std::vector<double> bytes = {1000, 1000, 1000};

  SECTION("gradients 1 us apart: merge") {
    // b = 1e-6 each: ready at 1e-6, 2e-6, 3e-6.
    // j1: bucket {0} alone ends 1e-6 + 2.1e-5 = 2.2e-5; separately j1 follows: 2.2e-5 + 2.1e-5 = 4.3e-5;
    //     merged {0,1} from 2e-6: 2e-6 + 2.2e-5 = 2.4e-5 <= 4.3e-5: merge.
    // j2: bucket {0,1} ends 2e-6 + 2.2e-5 = 2.4e-5; separately 2.4e-5 + 2.1e-5 = 4.5e-5;
    //     merged from 3e-6: 3e-6 + 2.3e-5 = 2.6e-5 <= 4.5e-5: merge.
    const SyncProgram program = mgwfbp_program(times_of({1e-6, 1e-6, 1e-6}), bytes, 2, allreduce_s);
    REQUIRE(program.period() == 2);
    REQUIRE(buckets_of(program, 0) == BucketList{{0, 1, 2}});
    REQUIRE(buckets_of(program, 1) == BucketList{{0, 1, 2}});
  }
  SECTION("a 1 s gap before the last gradient: no merge across it") {
    // b = 1e-6, 1e-6, 1: ready at 1e-6, 2e-6, 1.000002. j1 merges as above.
    // j2: bucket {0,1} ends 2.4e-5; separately j2 starts at max(1.000002, 2.4e-5): ends
    //     1.000002 + 2.1e-5 = 1.000023; merged: 1.000002 + 2.3e-5 = 1.000025 > 1.000023: no merge.
    const SyncProgram program = mgwfbp_program(times_of({1e-6, 1e-6, 1}), bytes, 1, allreduce_s);
    REQUIRE(buckets_of(program, 0) == BucketList{{0, 1}, {2}});
  }
  SECTION("a gap after the first gradient: the first layer stays alone") {
    // ready at 1e-6, 1.000001, 1.000002. j1: {0} ends 2.2e-5; separately 1.000001 + 2.1e-5 =
    // 1.000022; merged 1.000001 + 2.2e-5 = 1.000023 > 1.000022: new bucket {1}.
    // j2: {1} ends 1.000001 + 2.1e-5 = 1.000022 (link free since 2.2e-5); separately
    //     1.000022 + 2.1e-5 = 1.000043; merged max(1.000002, 2.2e-5) + 2.2e-5 = 1.000024: merge.
    const SyncProgram program = mgwfbp_program(times_of({1e-6, 1, 1e-6}), bytes, 1, allreduce_s);
    REQUIRE(buckets_of(program, 0) == BucketList{{0}, {1, 2}});
  }
  SECTION("through des_program: needs the cost model") {
    const DesLayers layers = des_test::backprop_layers({1e-6, 1e-6, 1}, {1, 1, 1}, 0, 0, bytes);
    DesStrategyContext context{layers, model, SyncTimeSource::kModel};
    const BackpropTimes times = backprop_times_for_des(context);
    REQUIRE(buckets_of(des_test::des_program("mgwfbp", context, times, 1), 0) == BucketList{{0, 1}, {2}});
    DesStrategyContext measured{layers, model, SyncTimeSource::kMeasured};
    REQUIRE_THROWS_AS(des_test::des_program("mgwfbp", measured, times, 1), InputError);
    REQUIRE_THROWS_WITH(des_test::des_program("mgwfbp", measured, times, 1), Catch::Matchers::Contains("cost model"));
  }
}

TEST_CASE("ssgd, flsgd and plan programs: issue points and iterations", "[des][programs]") {
  const SyncProgram ssgd = ssgd_program(3, 2);
  REQUIRE(ssgd.period() == 2);
  for (const auto& ops : ssgd.iterations) {
    REQUIRE(ops.size() == 3);
    for (int j = 0; j < 3; ++j) {
      REQUIRE(ops[j].layers == std::vector<int>{j});
      REQUIRE(ops[j].issue == IssuePoint::kAfterBackward);
    }
  }
  // flsgd: nothing until the period's last iteration, then every layer after the update.
  const SyncProgram flsgd = flsgd_program(3, 4);
  REQUIRE(flsgd.period() == 4);
  for (int h = 0; h < 3; ++h) REQUIRE(flsgd.iterations[h].empty());
  REQUIRE(flsgd.iterations[3].size() == 3);
  for (const SyncOp& op : flsgd.iterations[3]) REQUIRE(op.issue == IssuePoint::kAfterUpdate);
  // A plan: one all-reduce per layer of S_h, at gradient ready.
  Assignment assignment;
  assignment.iterations = {{0, 2}, {1}, {}};
  const SyncProgram plan = program_from_assignment(assignment);
  REQUIRE(plan.period() == 3);
  REQUIRE(buckets_of(plan, 0) == BucketList{{0}, {2}});
  REQUIRE(buckets_of(plan, 1) == BucketList{{1}});
  REQUIRE(plan.iterations[2].empty());
  REQUIRE_THROWS_AS(ssgd_program(3, 0), InputError);
}

TEST_CASE("des_program: ddp and mgwfbp name the layer without param_bytes; unknown names", "[des][programs]") {
  // j1 has no param_bytes (NaN); measured times, so des_layers would not have needed them.
  DesLayers layers = des_test::backprop_layers({1, 1, 1}, {1, 1, 1}, 0, 0, {10, 10, 10});
  layers.param_bytes[1] = std::numeric_limits<double>::quiet_NaN();
  const Cluster cluster = des_test::cluster_of(des_test::cluster_document(2, 2, 8, 10));
  const Topology topology(cluster);
  const AllreduceModel model(cluster, topology);
  DesStrategyContext context{layers, model, SyncTimeSource::kMeasured};
  const BackpropTimes times = backprop_times_for_des(context);
  REQUIRE_THROWS_WITH(des_test::des_program("ddp", context, times, 1), Catch::Matchers::Contains("'j1'"));
  REQUIRE_THROWS_AS(des_test::des_program("ddp", context, times, 1), InputError);
  context.sync_time = SyncTimeSource::kModel;
  REQUIRE_THROWS_WITH(des_test::des_program("mgwfbp", context, times, 1), Catch::Matchers::Contains("'j1'"));
  REQUIRE_THROWS_WITH(des_test::des_program("fastest", context, times, 1), Catch::Matchers::Contains("'fastest'"));
  REQUIRE_THROWS_WITH(des_test::des_program("wfbp", context, times, 0), Catch::Matchers::StartsWith("period: "));
}

}  // namespace syncplan
