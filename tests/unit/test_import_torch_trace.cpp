// `syncplan import torch-trace` on small hand-written traces (docs/torch.md): which events become
// layers, how iterations are split, medians, backward linking by annotations and by sequence
// numbers, and the missing-backward policies. Expected figures are derived by hand in comments.
#include "profiler/import_torch_trace.hpp"

#include "core/errors.hpp"
#include "core/units.hpp"

#include <catch2/catch.hpp>

#include <string>
#include <vector>

using namespace syncplan;
using Catch::Contains;

namespace {

// A complete event in the format of torch builds without Kineto (bare array, pid "CPU functions").
std::string legacy_event(const std::string& name, int ts_us, int dur_us) {
  return R"({"name": ")" + name + R"(", "ph": "X", "ts": )" + std::to_string(ts_us) + R"(, "dur": )" +
         std::to_string(dur_us) + R"(, "tid": 1, "pid": "CPU functions", "args": {}})";
}

Json legacy_trace(const std::vector<std::string>& events) {
  std::string text = "[";
  for (std::size_t i = 0; i < events.size(); ++i) text += (i ? ", " : "") + events[i];
  return parse_json_text(text + "]", "trace.json");
}

// Layers a and b, three whole iterations and a fourth cut after its forward (times in us):
//   iteration 0: forward a 0+10, block 10+35 enclosing forward b 12+20; backward b 40+30, a 72+8
//   iteration 1: forward a 100+12, b 114+22; backward b 140+34, a 176+6
//   iteration 2: forward a 200+11, b 213+21; backward b 240+32, a 274+10
//   iteration 3: forward a 300+50, b 352+50, then the trace ends: incomplete, left out.
// "block" encloses b, so it is a container, not a layer; its backward range is ignored.
// Medians over iterations 0..2: forward a {10, 12, 11} -> 11 us, b {20, 22, 21} -> 21 us;
// backward a {8, 6, 10} -> 8 us, b {30, 34, 32} -> 32 us.
std::vector<std::string> three_iterations() {
  return {
      legacy_event("syncplan.forward:a", 0, 10),     legacy_event("syncplan.forward:block", 10, 35),
      legacy_event("aten::addmm", 13, 18),           legacy_event("syncplan.forward:b", 12, 20),
      legacy_event("syncplan.backward:block", 39, 32), legacy_event("syncplan.backward:b", 40, 30),
      legacy_event("syncplan.backward:a", 72, 8),    legacy_event("syncplan.forward:a", 100, 12),
      legacy_event("syncplan.forward:b", 114, 22),   legacy_event("syncplan.backward:b", 140, 34),
      legacy_event("syncplan.backward:a", 176, 6),   legacy_event("syncplan.forward:a", 200, 11),
      legacy_event("syncplan.forward:b", 213, 21),   legacy_event("syncplan.backward:b", 240, 32),
      legacy_event("syncplan.backward:a", 274, 10),  legacy_event("syncplan.forward:a", 300, 50),
      legacy_event("syncplan.forward:b", 352, 50),
  };
}

constexpr double kUs = 1 / units::kMicrosecondsPerSecond;  // seconds per microsecond, for expected values

}  // namespace

TEST_CASE("torch-trace: annotations give layers in forward order and medians over whole iterations") {
  TorchTraceImportOptions options;
  options.model = "toy";
  const TorchTraceImport imported = torch_trace_to_profile(legacy_trace(three_iterations()), "trace.json", options);
  CHECK(imported.convention == TorchTraceConvention::kAnnotations);
  CHECK(imported.backward == TorchTraceBackward::kAnnotations);
  CHECK(imported.iterations == 3);
  CHECK(imported.incomplete_iterations == 1);
  const Profile& profile = imported.profile;
  CHECK(profile.model == "toy");
  CHECK(profile.source == "imported:torch-trace");
  REQUIRE(profile.layers.size() == 2);
  CHECK(profile.layers[0].name == "a");
  CHECK(profile.layers[1].name == "b");
  CHECK(*profile.layers[0].forward_s == Approx(11 * kUs));
  CHECK(*profile.layers[1].forward_s == Approx(21 * kUs));
  CHECK(*profile.layers[0].backward_s == Approx(8 * kUs));
  CHECK(*profile.layers[1].backward_s == Approx(32 * kUs));
  CHECK_FALSE(profile.layers[0].param_count);  // a trace does not know parameters: unknown
  CHECK_FALSE(profile.layers[0].sync_s);
}

TEST_CASE("torch-trace: the object form with traceEvents reads like the bare array") {
  std::string text = R"({"schemaVersion": 1, "traceEvents": [)";
  const auto events = three_iterations();
  for (std::size_t i = 0; i < events.size(); ++i) text += (i ? ", " : "") + events[i];
  const Json trace = parse_json_text(text + "]}", "trace.json");
  const Profile profile = torch_trace_to_profile(trace, "trace.json", {}).profile;
  REQUIRE(profile.layers.size() == 2);
  CHECK(*profile.layers[1].backward_s == Approx(32 * kUs));
}

TEST_CASE("torch-trace: a layer without backward events is an error, or null, or zero") {
  // Layer c runs forward only (one iteration: a 0+10, c 10+5; backward a 20+7).
  const Json trace = legacy_trace({legacy_event("syncplan.forward:a", 0, 10), legacy_event("syncplan.forward:c", 10, 5),
                                   legacy_event("syncplan.backward:a", 20, 7)});
  TorchTraceImportOptions options;
  CHECK_THROWS_WITH(torch_trace_to_profile(trace, "trace.json", options),
                    Contains("trace.json") && Contains("layer 'c'") && Contains("no backward"));
  options.missing_backward = MissingBackwardPolicy::kNull;
  Profile profile = torch_trace_to_profile(trace, "trace.json", options).profile;
  CHECK_FALSE(profile.layers[1].backward_s);
  CHECK(*profile.layers[0].backward_s == Approx(7 * kUs));
  options.missing_backward = MissingBackwardPolicy::kZero;
  profile = torch_trace_to_profile(trace, "trace.json", options).profile;
  CHECK(*profile.layers[1].backward_s == 0.0);
}

TEST_CASE("torch-trace: forward annotations only give forward times under --missing-backward null") {
  const Json trace = legacy_trace({legacy_event("syncplan.forward:a", 0, 10), legacy_event("syncplan.forward:a", 50, 14)});
  CHECK_THROWS_WITH(torch_trace_to_profile(trace, "trace.json", {}), Contains("no backward events"));
  TorchTraceImportOptions options;
  options.missing_backward = MissingBackwardPolicy::kNull;
  const TorchTraceImport imported = torch_trace_to_profile(trace, "trace.json", options);
  CHECK(imported.backward == TorchTraceBackward::kNone);
  CHECK(imported.iterations == 2);
  CHECK(*imported.profile.layers[0].forward_s == Approx(12 * kUs));  // median of {10, 14}
  CHECK_FALSE(imported.profile.layers[0].backward_s);
}

// A Kineto trace (torch.profiler with with_stack=True) of Linear -> ReLU -> Linear inside a
// container module, one iteration, times in us. Forward ops carry "Sequence number" with
// "Fwd thread id" 0; autograd nodes run in backward carry the creating op's number and "Fwd thread
// id" 1. Linking (the latest op to start with a number owns it):
//   5 -> aten::t at 1013 in Linear_0; 6 -> aten::addmm in Linear_0; 7 -> aten::relu in ReLU_0;
//   8 -> aten::t at 1062 (after aten::linear at 1061) in Linear_1; 9 -> aten::addmm in Linear_1;
//   10 -> aten::sum of the loss, outside every module: SumBackward0 belongs to no layer.
// The backward-phase aten::mm carries number 11 and "Fwd thread id" 0 but lies in no forward range.
// Expected: forward Linear_0 30, ReLU_0 10, Linear_1 30 us; backward Linear_0 35 + 1 = 36,
// ReLU_0 10, Linear_1 40 + 2 = 42 us. TinyNet_0 encloses the others: a container, not a layer.
// The gpu_user_annotation copy of a module range is device time and is ignored.
TEST_CASE("torch-trace: nn.Module events with backward linked by sequence numbers") {
  const Json trace = parse_json_text(R"({"schemaVersion": 1, "traceEvents": [
    {"ph": "X", "cat": "python_function", "name": "nn.Module: TinyNet_0", "pid": 7, "tid": 7, "ts": 1000, "dur": 100},
    {"ph": "X", "cat": "python_function", "name": "nn.Module: Linear_0", "pid": 7, "tid": 7, "ts": 1010, "dur": 30},
    {"ph": "X", "cat": "cpu_op", "name": "aten::linear", "pid": 7, "tid": 7, "ts": 1011, "dur": 28,
     "args": {"External id": 1, "Sequence number": 5, "Fwd thread id": 0}},
    {"ph": "X", "cat": "cpu_op", "name": "aten::t", "pid": 7, "tid": 7, "ts": 1013, "dur": 2,
     "args": {"External id": 2, "Sequence number": 5, "Fwd thread id": 0}},
    {"ph": "X", "cat": "cpu_op", "name": "aten::addmm", "pid": 7, "tid": 7, "ts": 1016, "dur": 20,
     "args": {"External id": 3, "Sequence number": 6, "Fwd thread id": 0}},
    {"ph": "X", "cat": "python_function", "name": "nn.Module: ReLU_0", "pid": 7, "tid": 7, "ts": 1045, "dur": 10},
    {"ph": "X", "cat": "cpu_op", "name": "aten::relu", "pid": 7, "tid": 7, "ts": 1046, "dur": 8,
     "args": {"External id": 4, "Sequence number": 7, "Fwd thread id": 0}},
    {"ph": "X", "cat": "python_function", "name": "nn.Module: Linear_1", "pid": 7, "tid": 7, "ts": 1060, "dur": 30},
    {"ph": "X", "cat": "gpu_user_annotation", "name": "nn.Module: Linear_1", "pid": 0, "tid": 7, "ts": 1060, "dur": 900},
    {"ph": "X", "cat": "cpu_op", "name": "aten::linear", "pid": 7, "tid": 7, "ts": 1061, "dur": 28,
     "args": {"External id": 5, "Sequence number": 8, "Fwd thread id": 0}},
    {"ph": "X", "cat": "cpu_op", "name": "aten::t", "pid": 7, "tid": 7, "ts": 1062, "dur": 2,
     "args": {"External id": 6, "Sequence number": 8, "Fwd thread id": 0}},
    {"ph": "X", "cat": "cpu_op", "name": "aten::addmm", "pid": 7, "tid": 7, "ts": 1065, "dur": 20,
     "args": {"External id": 7, "Sequence number": 9, "Fwd thread id": 0}},
    {"ph": "X", "cat": "cpu_op", "name": "aten::sum", "pid": 7, "tid": 7, "ts": 1101, "dur": 5,
     "args": {"External id": 8, "Sequence number": 10, "Fwd thread id": 0}},
    {"ph": "X", "cat": "cpu_op", "name": "autograd::engine::evaluate_function: SumBackward0", "pid": 7, "tid": 7,
     "ts": 1120, "dur": 6, "args": {"External id": 9}},
    {"ph": "X", "cat": "cpu_op", "name": "SumBackward0", "pid": 7, "tid": 7, "ts": 1120, "dur": 5,
     "args": {"External id": 10, "Sequence number": 10, "Fwd thread id": 1}},
    {"ph": "X", "cat": "cpu_op", "name": "AddmmBackward0", "pid": 7, "tid": 7, "ts": 1130, "dur": 40,
     "args": {"External id": 11, "Sequence number": 9, "Fwd thread id": 1}},
    {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 7, "tid": 7, "ts": 1131, "dur": 30,
     "args": {"External id": 12, "Sequence number": 11, "Fwd thread id": 0}},
    {"ph": "X", "cat": "cpu_op", "name": "TBackward0", "pid": 7, "tid": 7, "ts": 1172, "dur": 2,
     "args": {"External id": 13, "Sequence number": 8, "Fwd thread id": 1}},
    {"ph": "X", "cat": "cpu_op", "name": "ReluBackward0", "pid": 7, "tid": 7, "ts": 1176, "dur": 10,
     "args": {"External id": 14, "Sequence number": 7, "Fwd thread id": 1}},
    {"ph": "X", "cat": "cpu_op", "name": "AddmmBackward0", "pid": 7, "tid": 7, "ts": 1190, "dur": 35,
     "args": {"External id": 15, "Sequence number": 6, "Fwd thread id": 1}},
    {"ph": "X", "cat": "cpu_op", "name": "TBackward0", "pid": 7, "tid": 7, "ts": 1226, "dur": 1,
     "args": {"External id": 16, "Sequence number": 5, "Fwd thread id": 1}},
    {"ph": "s", "id": 1, "pid": 7, "tid": 7, "ts": 1065, "cat": "fwdbwd", "name": "fwdbwd"},
    {"ph": "f", "id": 1, "pid": 7, "tid": 7, "ts": 1130, "cat": "fwdbwd", "name": "fwdbwd", "bp": "e"},
    {"name": "Record Window End", "ph": "i", "s": "g", "pid": "", "tid": "", "ts": 1300}
  ], "traceName": "trace.json"})",
                                     "kineto.json");
  const TorchTraceImport imported = torch_trace_to_profile(trace, "kineto.json", {});
  CHECK(imported.convention == TorchTraceConvention::kModuleEvents);
  CHECK(imported.backward == TorchTraceBackward::kSequenceNumbers);
  const Profile& profile = imported.profile;
  REQUIRE(profile.layers.size() == 3);
  CHECK(profile.layers[0].name == "Linear_0");
  CHECK(profile.layers[1].name == "ReLU_0");
  CHECK(profile.layers[2].name == "Linear_1");
  CHECK(*profile.layers[0].forward_s == Approx(30 * kUs));
  CHECK(*profile.layers[1].forward_s == Approx(10 * kUs));
  CHECK(*profile.layers[2].forward_s == Approx(30 * kUs));
  CHECK(*profile.layers[0].backward_s == Approx(36 * kUs));
  CHECK(*profile.layers[1].backward_s == Approx(10 * kUs));
  CHECK(*profile.layers[2].backward_s == Approx(42 * kUs));
}

TEST_CASE("torch-trace: a module whose forward created no autograd node has backward 0") {
  // Dropout_0 runs in eval mode: its aten::dropout (ts 10) peeks sequence number 3 without
  // creating a node; Linear_0's aten::addmm (ts 22), the latest op with number 3, creates node 3.
  // So Linear_0 owns 3 and Dropout_0 owns nothing: its backward_s is 0, not missing.
  const Json trace = parse_json_text(R"({"traceEvents": [
    {"ph": "X", "cat": "python_function", "name": "nn.Module: Dropout_0", "pid": 1, "tid": 1, "ts": 9, "dur": 4},
    {"ph": "X", "cat": "cpu_op", "name": "aten::dropout", "pid": 1, "tid": 1, "ts": 10, "dur": 1,
     "args": {"Sequence number": 3, "Fwd thread id": 0}},
    {"ph": "X", "cat": "python_function", "name": "nn.Module: Linear_0", "pid": 1, "tid": 1, "ts": 20, "dur": 15},
    {"ph": "X", "cat": "cpu_op", "name": "aten::addmm", "pid": 1, "tid": 1, "ts": 22, "dur": 10,
     "args": {"Sequence number": 3, "Fwd thread id": 0}},
    {"ph": "X", "cat": "cpu_op", "name": "AddmmBackward0", "pid": 1, "tid": 1, "ts": 50, "dur": 25,
     "args": {"Sequence number": 3, "Fwd thread id": 1}}
  ]})",
                                     "eval.json");
  const Profile profile = torch_trace_to_profile(trace, "eval.json", {}).profile;
  REQUIRE(profile.layers.size() == 2);
  CHECK(*profile.layers[0].backward_s == 0.0);
  CHECK(*profile.layers[1].backward_s == Approx(25 * kUs));
}

TEST_CASE("torch-trace: bad traces are errors that name the file, the event and the field") {
  const auto rejects = [](const std::string& text, const std::vector<std::string>& expected) {
    const Json trace = parse_json_text(text, "bad.json");
    try {
      torch_trace_to_profile(trace, "bad.json", {});
      FAIL("accepted: " << text);
    } catch (const InputError& error) {
      const std::string message = error.what();
      for (const std::string& part : expected) CHECK_THAT(message, Contains(part));
    }
  };
  rejects(R"("hello")", {"bad.json", "traceEvents"});
  rejects(R"({"events": []})", {"bad.json", "missing field 'traceEvents'"});
  rejects(R"({"traceEvents": {"a": 1}})", {"bad.json", "'traceEvents'", "expected an array"});
  rejects(R"([42])", {"traceEvents[0]", "expected an event object"});
  rejects(R"([{"name": "aten::mm", "ph": "X", "ts": 1, "dur": 2}])", {"no module annotations found"});
  rejects(R"([{"name": "syncplan.forward:a", "ph": "X", "ts": 1}])", {"traceEvents[0]", "'syncplan.forward:a'", "'dur'"});
  rejects(R"([{"name": "syncplan.forward:a", "ph": "X", "ts": 1, "dur": -3}])", {"traceEvents[0]", "'dur'", "negative"});
  rejects(R"([{"name": "syncplan.forward:a", "ph": "X", "ts": "soon", "dur": 3}])", {"traceEvents[0]", "'ts'"});
  rejects(R"([{"name": "syncplan.forward:", "ph": "X", "ts": 1, "dur": 3}])", {"traceEvents[0]", "empty layer name"});
  rejects(R"([{"name": "syncplan.backward:a", "ph": "X", "ts": 1, "dur": 3}])", {"no 'syncplan.forward:' ones"});
  rejects(R"([{"name": "syncplan.forward:a", "ph": "X", "ts": 1, "dur": 3},
              {"name": "syncplan.backward:z", "ph": "X", "ts": 9, "dur": 3}])",
          {"layer 'z'", "no 'syncplan.forward:' ones"});
  // A layer name with a control character (here DEL, found by the torch_trace fuzzer: the import
  // wrote a profile its own reader refused) is refused at the event, naming the byte: "syncplan.forward:"
  // is 17 bytes, so the DEL after "a" is byte 18.
  rejects("[{\"name\": \"syncplan.forward:a\\u007f\", \"ph\": \"X\", \"ts\": 1, \"dur\": 3}]",
          {"bad.json: traceEvents[0]: field 'name'", "control character U+007F at byte 18"});
  rejects("[{\"name\": \"nn.Module: a\\nb\", \"ph\": \"X\", \"ts\": 1, \"dur\": 3}]",
          {"traceEvents[0]: field 'name'", "control character U+000A"});
}

TEST_CASE("torch-trace: a duration over a day or not finite is an error naming the event") {
  // Two iterations of layers a and b (us): forward a 0+10, b 20+DUR, backward b 40+5, a 50+6;
  // forward a 100+10, b 120+12, backward b 140+5, a 150+6. With DUR 1e308 b's first range would
  // enclose a's second one, so b would pass for a container and drop out of the profile unseen.
  const auto with_b_duration = [](const std::string& duration_us) {
    return parse_json_text(R"([{"name": "syncplan.forward:a", "ph": "X", "ts": 0, "dur": 10},
      {"name": "syncplan.forward:b", "ph": "X", "ts": 20, "dur": )" + duration_us + R"(},
      {"name": "syncplan.backward:b", "ph": "X", "ts": 40, "dur": 5},
      {"name": "syncplan.backward:a", "ph": "X", "ts": 50, "dur": 6},
      {"name": "syncplan.forward:a", "ph": "X", "ts": 100, "dur": 10},
      {"name": "syncplan.forward:b", "ph": "X", "ts": 120, "dur": 12},
      {"name": "syncplan.backward:b", "ph": "X", "ts": 140, "dur": 5},
      {"name": "syncplan.backward:a", "ph": "X", "ts": 150, "dur": 6}])",
                           "long.json");
  };
  // The trace itself is fine: with DUR 12 both layers come out, b's forward the median of {12, 12}.
  const Profile profile = torch_trace_to_profile(with_b_duration("12"), "long.json", {}).profile;
  REQUIRE(profile.layers.size() == 2);
  CHECK(*profile.layers[1].forward_s == Approx(12 * kUs));
  for (const auto& [duration_us, complaint] : std::vector<std::pair<std::string, std::string>>{
           {"1e308", "over a day"}, {"86400000001", "over a day"}, {"Infinity", "non-finite"}, {"NaN", "non-finite"}}) {
    INFO("dur " << duration_us);
    CHECK_THROWS_WITH(torch_trace_to_profile(with_b_duration(duration_us), "long.json", {}),
                      Contains("long.json: traceEvents[1] 'syncplan.forward:b'") && Contains("'dur'") &&
                          Contains(complaint));
  }
  // A day (86400 s = 8.64e10 us) itself is still a duration: one layer, one iteration.
  const Json day = parse_json_text(R"([{"name": "syncplan.forward:a", "ph": "X", "ts": 0, "dur": 86400000000},
    {"name": "syncplan.backward:a", "ph": "X", "ts": 86400000000, "dur": 7}])",
                                   "day.json");
  CHECK(*torch_trace_to_profile(day, "day.json", {}).profile.layers[0].forward_s == Approx(86400.0));
}

// The helper's new-user check: a layer's range inside another range of the same name on the same
// thread (20 us holding 5 us) was counted twice (25 us); it is the outer range's 20 us. Two names
// with the same range on one thread were told apart by their alphabetical order (the first became
// a container, silently); now refused, naming both.
TEST_CASE("torch-trace: nested ranges of one name count once; equal ranges of two names are refused") {
  std::vector<std::string> events = three_iterations();
  // Iteration 1: a second forward:b inside b's 114+22 (as a module reentered would be).
  events.push_back(legacy_event("syncplan.forward:b", 120, 5));
  const TorchTraceImport imported = torch_trace_to_profile(legacy_trace(events), "trace.json", {});
  REQUIRE(imported.profile.layers.size() == 2);
  CHECK(*imported.profile.layers[1].forward_s == Approx(21 * kUs));  // medians {20, 22, 21}: unchanged
  // The same nesting in every iteration would otherwise read {25, 27, 26}: check the sum directly.
  std::vector<std::string> each = three_iterations();
  for (const int start : {14, 116, 215}) each.push_back(legacy_event("syncplan.forward:b", start, 5));
  CHECK(*torch_trace_to_profile(legacy_trace(each), "trace.json", {}).profile.layers[1].forward_s == Approx(21 * kUs));

  std::vector<std::string> twins = three_iterations();
  twins.push_back(legacy_event("syncplan.forward:twin", 213, 21));  // b's range in iteration 2, exactly
  CHECK_THROWS_WITH(torch_trace_to_profile(legacy_trace(twins), "trace.json", {}),
                    Contains("trace.json: 'b' and 'twin' have the same range on one thread"));
}
