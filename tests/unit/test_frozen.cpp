// Frozen layers (profile `frozen`, docs/formats.md): read and written, checked, and honoured by
// both engines, bucket fusion, ddp and mgwfbp, the DreamDDP importer and model specs; expected
// numbers derived by hand in the comments.
#include "core/errors.hpp"
#include "core/json_io.hpp"
#include "core/profile.hpp"
#include "model/model_spec.hpp"
#include "planner/strategy_table.hpp"
#include "profiler/import_dreamddp.hpp"
#include "simulator/bucket_fusion.hpp"
#include "simulator/des/engine.hpp"
#include "simulator/strategies/strategies.hpp"
#include "test_support.hpp"

#include <catch2/catch.hpp>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <unistd.h>

namespace syncplan {
namespace {

using Catch::Matchers::Contains;
using test::exactly;

Profile profile_text(const std::string& layers) {
  return profile_from_json(parse_json_text(R"({"format": "syncplan.profile/v1", "source": "estimated:hand",
                                               "workers": 2, "layers": [)" + layers + "]}",
                                           "p.json"),
                           "p.json");
}

// Backprop order j1, j2, j3 (j3 input-most, frozen): b = 0.25, 0.25, 2 s; c = 0.5, 0.75, none.
// param_bytes 1000, 3000 and (frozen, not synced) 8000.
Profile lora_profile() {
  return profile_text(R"({"name": "j3", "backward_s": 2, "param_bytes": 8000, "frozen": true},
                         {"name": "j2", "backward_s": 0.25, "sync_s": 0.75, "param_bytes": 3000},
                         {"name": "j1", "backward_s": 0.25, "sync_s": 0.5, "param_bytes": 1000})");
}

TEST_CASE("frozen: the profile key is read, written only when true, and checked", "[frozen]") {
  const Profile profile = lora_profile();
  CHECK(profile.layers[0].frozen);
  CHECK_FALSE(profile.layers[1].frozen);
  const Json written = profile_to_json(profile);
  CHECK(written["layers"][0]["frozen"] == true);
  CHECK_FALSE(written["layers"][1].contains("frozen"));
  CHECK(profile_from_json(written, "again.json").layers[0].frozen);  // round trip

  CHECK_FALSE(profile_text(R"({"name": "a", "backward_s": 1, "sync_s": 1, "frozen": false})").layers[0].frozen);
  CHECK(profile_text(R"({"name": "a", "backward_s": 1, "sync_s": 0, "frozen": true})").layers[0].frozen);
  CHECK_THROWS_WITH(profile_text(R"({"name": "a", "backward_s": 1, "frozen": "yes"})"),
                    Contains("layer 'a'") && Contains("field 'frozen'") && Contains("expected true or false"));
  CHECK_THROWS_WITH(profile_text(R"({"name": "a", "backward_s": 1, "frozen": null})"),
                    Contains("field 'frozen'") && Contains("null"));
  CHECK_THROWS_WITH(profile_text(R"({"name": "a", "backward_s": 1, "sync_s": 0.5, "frozen": true})"),
                    Contains("layer 'a'") && Contains("'sync_s'") && Contains("frozen"));
  CHECK_THROWS_WITH(profile_text(R"({"name": "a", "backward_s": 1, "sync_s": 0, "frozen": true},
                                    {"name": "b", "backward_s": 1, "sync_s": 1, "tied_to": "a"})"),
                    Contains("layer 'b'") && Contains("trained or frozen together"));
}

TEST_CASE("frozen: the period model keeps the backward time and charges no sync", "[frozen]") {
  const BackpropTimes times = backprop_times(lora_profile(), "p.json");
  // B = 0.25, 0.5, 2.5 s; c = 0.5, 0.75, 0.
  REQUIRE(times.sync_s == std::vector<double>{0.5, 0.75, 0.0});
  CHECK(times.backprop_s() == exactly(2.5));
  CHECK_FALSE(has_allreduce(times, 2));
  // wfbp, H = 1: j1 0.25 -> 0.75, j2 0.75 -> 1.5, j3 nothing: hidden, iteration = B_L = 2.5 s.
  CHECK(time_assignment(times, test::assignment_of({{0, 1, 2}})).period_s == exactly(2.5));
  // ssgd, H = 2: 2 x (2.5 + 1.25) = 7.5 s.
  CHECK(run_ssgd(times, 2).timing.period_s == exactly(7.5));
  // Bucket fusion with alpha 0.5 s: j3 is in no bucket. Apart, j1 0.25 -> 0.75 and j2 0.75 -> 1.5;
  // fused, both start at 0.5 and cost 0.5 + 0 + 0.25: 1.25 < 1.5, so j1 and j2 share one bucket.
  const Buckets buckets = fuse_buckets(times, test::assignment_of({{0, 1, 2}}), 0.5);
  REQUIRE(buckets.iterations[0].size() == 1);
  CHECK(buckets.iterations[0][0] == std::vector<int>{0, 1});
}

TEST_CASE("frozen: no sync-time source needs or charges a frozen layer's all-reduce", "[frozen]") {
  Profile profile = lora_profile();
  profile.layers[0].param_bytes.reset();  // never read for a frozen layer
  for (const SyncTimeSource source : {SyncTimeSource::kMeasured, SyncTimeSource::kModel}) {
    const DesLayers layers = des_layers(profile, "p.json", source);
    CHECK_FALSE(layers.synced[2]);
    CHECK(layers.frozen[2]);
    CHECK(layers.sync_s[2] == 0);
    CHECK(layers.param_bytes[2] == 0);
    CHECK(layers.backward_s[2] == 2);
  }
  // A link fit times every other layer, and leaves the frozen one without sync_s.
  LinkFit link;
  link.workers = 4;  // not the profile's 2: --sync-time auto takes the fit
  link.source = "measured:hand";
  link.alpha_s = 0.125;
  link.beta_s_per_byte = 1e-4;
  link.samples = {{1000, 0.225, 0, 0}, {3000, 0.425, 0, 0}};  // on the line, at the layers' sizes
  SyncTimeInputs inputs;
  inputs.link = link;
  inputs.link_origin = "link.json";
  const SyncTimes choice = choose_sync_times(lora_profile(), "p.json", inputs);
  REQUIRE(choice.link_used);
  CHECK_FALSE(choice.profile.layers[0].sync_s.has_value());
  // j1: 0.125 + 1e-4 x 1000 = 0.225 s; j2: 0.125 + 0.3 = 0.425 s; j3: 0.
  const BackpropTimes times = sync_backprop_times(choice, "p.json");
  CHECK(times.sync_s[0] == exactly(0.225));
  CHECK(times.sync_s[1] == exactly(0.425));
  CHECK(times.sync_s[2] == 0);
}

TEST_CASE("frozen: the DES issues no collective for a frozen layer, and ddp/mgwfbp bucket none", "[frozen]") {
  const Profile profile = lora_profile();
  const DesLayers layers = des_layers(profile, "p.json", SyncTimeSource::kModel);
  const Cluster cluster = cluster_from_json(
      Json{{"format", "syncplan.cluster/v1"}, {"workers", 2},
           {"intra_node", {{"bandwidth_Gbps", 8}, {"latency_us", 10}}}},
      "cluster.json");
  const Topology topology(cluster);
  const AllreduceModel model(cluster, topology);
  const DesStrategyContext context{layers, model, SyncTimeSource::kModel};
  const BackpropTimes times = backprop_times_for_des(context);
  CHECK(times.sync_s[2] == 0);
  CHECK(times.sync_s[0] > 0);

  // ddp with a cap of 1 byte: every trainable layer closes its bucket; j3 is in none (its 0 bytes).
  DesStrategyContext small_buckets = context;
  small_buckets.bucket_cap_bytes = small_buckets.first_bucket_bytes = 1;
  const SyncProgram ddp = strategy_for("ddp", StrategyUse::kDes).des_program(small_buckets, times, 1);
  REQUIRE(ddp.iterations[0].size() == 2);
  CHECK(ddp.iterations[0][0].layers == std::vector<int>{0});
  CHECK(ddp.iterations[0][1].layers == std::vector<int>{1});
  const SyncProgram mgwfbp = strategy_for("mgwfbp", StrategyUse::kDes).des_program(context, times, 1);
  for (const SyncOp& op : mgwfbp.iterations[0])
    CHECK(std::find(op.layers.begin(), op.layers.end(), 2) == op.layers.end());

  // Every layer as its own all-reduce (wfbp): two collectives, 1000 + 3000 bytes, none of j3's.
  DesOptions options;
  options.sync_time = SyncTimeSource::kModel;
  options.trace_workers = 1;
  const DesResult result =
      run_des(layers, cluster, topology, model, program_from_assignment(test::assignment_of({{0, 1, 2}})), options);
  int collectives = 0;
  double bytes = 0;
  for (const DesTraceEvent& event : result.trace)
    if (event.stream > 0) {
      ++collectives;
      bytes += event.bytes;
      CHECK(std::find(event.layers.begin(), event.layers.end(), 2) == event.layers.end());
    }
  CHECK(collectives == 2);
  CHECK(bytes == 4000);
}

// ---------------------------------------------------------------------------------------------
// import dreamddp --missing-comm, and several non-finite layers
// ---------------------------------------------------------------------------------------------

class Files {
 public:
  Files() {
    static std::atomic<int> counter{0};
    folder_ = std::filesystem::temp_directory_path() /
              ("syncplan-frozen-" + std::to_string(::getpid()) + "-" + std::to_string(counter++));
    std::filesystem::create_directories(folder_);
  }
  ~Files() {
    std::error_code ignored;
    std::filesystem::remove_all(folder_, ignored);
  }
  std::string write(const std::string& name, const std::string& text) const {
    const auto path = folder_ / name;
    std::ofstream(path) << text;
    return path.string();
  }

 private:
  std::filesystem::path folder_;
};

TEST_CASE("frozen: import dreamddp --missing-comm error, drop and frozen", "[frozen]") {
  const Files files;
  // LoRA-wrapped projection: the base layer has a backward time and no all-reduce time.
  const std::string bp = files.write("bp.json", R"({"q.base_layer": 0.008, "q.lora_A": 0.001, "q.lora_B": 0.002})");
  const std::string comm = files.write("comm.json", R"({"q.lora_A": 0.003, "q.lora_B": 0.004})");
  DreamddpImportOptions options;
  CHECK_THROWS_WITH(import_dreamddp_files(bp, comm, options),
                    Contains("'q.base_layer'") && Contains("missing from") && Contains("--missing-comm"));

  options.missing_comm = MissingCommPolicy::kDrop;
  const DreamddpImport dropped = import_dreamddp_files(bp, comm, options);
  REQUIRE(dropped.profile.layers.size() == 2);
  CHECK(dropped.profile.layers[0].name == "q.lora_A");
  CHECK(dropped.without_comm == std::vector<std::string>{"q.base_layer"});

  options.missing_comm = MissingCommPolicy::kFrozen;
  const DreamddpImport frozen = import_dreamddp_files(bp, comm, options);
  REQUIRE(frozen.profile.layers.size() == 3);
  CHECK(frozen.profile.layers[0].frozen);
  CHECK(*frozen.profile.layers[0].backward_s == 0.008);
  CHECK_FALSE(frozen.profile.layers[0].sync_s.has_value());
  CHECK(*frozen.profile.layers[2].sync_s == 0.004);
  // Backprop: lora_B (b 2, c 4 ms), lora_A (b 1, c 3 ms), base (b 8 ms). wfbp, H = 1:
  //   frozen: lora_B 2 -> 6, lora_A 6 -> 9, B_L 11: hidden, 11 ms.
  //   drop:   same syncs, B_L 3: wait 6, 9 ms. frozen >= drop.
  const Assignment all = test::assignment_of({{0, 1, 2}});
  CHECK(time_assignment(backprop_times(frozen.profile, "f"), all).period_s == exactly(0.011));
  CHECK(time_assignment(backprop_times(dropped.profile, "d"), test::assignment_of({{0, 1}})).period_s ==
        exactly(0.009));

  // An all-reduce time without a backward time stays an error under every policy.
  const std::string extra = files.write("extra.json", R"({"q.lora_A": 0.003, "q.lora_B": 0.004, "k.lora_A": 1})");
  CHECK_THROWS_WITH(import_dreamddp_files(bp, extra, options), Contains("'k.lora_A'") && Contains("missing from"));
  options.missing_comm = MissingCommPolicy::kDrop;
  CHECK_THROWS_WITH(import_dreamddp_files(bp, extra, options), Contains("'k.lora_A'") && Contains("missing from"));

  // DreamDDP schedules only trainable layers: a frozen one may be left out (iteration 0).
  const std::string schedule = files.write("schedule.json", R"({"H": 2, "schedule": {"q.lora_A": 1, "q.lora_B": 0}})");
  const Plan plan = import_dreamddp_schedule(schedule, frozen.profile);
  CHECK(plan.layers[0].sync_iterations == std::vector<int>{0});
  CHECK_THROWS_WITH(import_dreamddp_schedule(schedule, profile_text(R"({"name": "q.base_layer", "backward_s": 1, "sync_s": 1},
      {"name": "q.lora_A", "backward_s": 1, "sync_s": 1}, {"name": "q.lora_B", "backward_s": 1, "sync_s": 1})")),
                    Contains("'q.base_layer'") && Contains("not in the schedule"));
}

TEST_CASE("frozen: several non-finite times are counted and the first few named", "[frozen][import]") {
  const Files files;
  const std::string comm = files.write("comm.json", R"({"a": 1, "b": 1, "c": 1, "d": 1, "e": 1, "f": 1, "g": 1})");
  // Seven layers, six of them NaN or Infinity: the count, the first five, "and 1 more".
  const std::string bp = files.write(
      "bp.json", R"({"a": NaN, "b": NaN, "c": 0.5, "d": Infinity, "e": NaN, "f": NaN, "g": NaN})");
  CHECK_THROWS_WITH(import_dreamddp(bp, comm, {}),
                    Contains("bp.json: 6 layers have a non-finite time: 'a', 'b', 'd', 'e', 'f' and 1 more") &&
                        Contains("--nonfinite zero"));
  // One alone keeps the one-layer message.
  const std::string one = files.write("one.json", R"({"a": 1, "b": NaN, "c": 1, "d": 1, "e": 1, "f": 1, "g": 1})");
  CHECK_THROWS_WITH(import_dreamddp(one, comm, {}), Contains("layer 'b'") && Contains("non-finite value NaN"));
}

// ---------------------------------------------------------------------------------------------
// Model specs
// ---------------------------------------------------------------------------------------------

Json tiny_gpt_document() {
  return read_json_file((std::filesystem::path(SYNCPLAN_DATA_DIR) / "models" / "tiny-gpt.json").string());
}

TEST_CASE("frozen: a spec's frozen patterns freeze layers, whole tie groups, in the profile", "[frozen][model]") {
  Json document = tiny_gpt_document();
  // The embeddings: wte and wpe match "transformer.w?e"; lm_head is tied to wte, so frozen too.
  document["frozen"] = Json::array({"transformer.w?e"});
  const Model model = expand_model(model_spec_from_json(document, "spec.json"));
  const Profile profile = model_profile_skeleton(model, Dtype::kFp32, "estimated:test");
  std::vector<std::string> frozen;
  for (const LayerProfile& layer : profile.layers)
    if (layer.frozen) frozen.push_back(layer.name);
  CHECK(frozen == std::vector<std::string>{"transformer.wte", "transformer.wpe", "lm_head"});
  validate_profile(profile, "profile");  // the tie group is frozen whole

  // "*" spans dots: every attention module of the 4 blocks (c_attn, attn_dropout, c_proj, resid_dropout).
  document["frozen"] = Json::array({"transformer.h.*.attn.*"});
  int attention = 0;
  for (const ModelLayer& layer : expand_model(model_spec_from_json(document, "spec.json")).layers)
    attention += layer.frozen ? 1 : 0;
  CHECK(attention == 16);

  document["frozen"] = Json::array({"transformer.h.*.attn.*", "model.embed_tokens"});
  CHECK_THROWS_WITH(model_spec_from_json(document, "spec.json"),
                    Contains("spec.json: field 'frozen'") && Contains("'model.embed_tokens' matches no layer"));
  document["frozen"] = "transformer.wte";
  CHECK_THROWS_WITH(model_spec_from_json(document, "spec.json"), Contains("field 'frozen'") && Contains("array"));
  document["frozen"] = Json::array({""});
  CHECK_THROWS_WITH(model_spec_from_json(document, "spec.json"), Contains("frozen'[0]") && Contains("empty"));
  document.erase("frozen");
  for (const ModelLayer& layer : expand_model(model_spec_from_json(document, "spec.json")).layers)
    CHECK_FALSE(layer.frozen);
}

}  // namespace
}  // namespace syncplan
