// Regression tests of the crashes that fuzzing and the hand-made edge inputs found in the readers
// (docs/fuzzing.md, "Findings"): each input crashed syncplan before its fix.
#include "core/cluster.hpp"
#include "core/errors.hpp"
#include "core/json_io.hpp"
#include "profiler/import_nccl_tests.hpp"
#include "runtime/checkpoint.hpp"

#include <catch2/catch.hpp>

#include <filesystem>
#include <string>

using namespace syncplan;
using Catch::Contains;

namespace {

/// `levels` nested arrays around nothing: "[[...]]".
std::string nested_arrays(int levels) { return std::string(levels, '[') + std::string(levels, ']'); }

/// `text` in a file of the test's working folder; returns its path.
std::string file_of(const std::string& name, const std::string& text) {
  const std::string path = (std::filesystem::current_path() / name).string();
  write_text_file_atomic(path, text);
  return path;
}

}  // namespace

TEST_CASE("regression: a value nested 100,000 levels deep inside an object is refused, not a stack overflow") {
  // Found by tests/fuzz/edge_inputs.py (profile, 'model' nested 100,000 arrays deep: SIGSEGV).
  // nlohmann/json's ordered objects are vectors of (key, value) pairs; adding the third key to the
  // top object grew the vector and copied the deep 'model' value recursively, one stack frame per
  // level. The parser now refuses nesting past kDeepestJson before such a value exists.
  const std::string deep = nested_arrays(100'000);
  const std::string profile = R"({"format": "syncplan.profile/v1", "model": )" + deep +
                              R"(, "source": "estimated:hand", "layers": []})";
  CHECK_THROWS_AS(parse_json_text(profile, "profile.json"), InputError);
  CHECK_THROWS_WITH(parse_json_text(profile, "profile.json"),
                    Contains("profile.json: JSON nested deeper than 512 levels"));
  const std::string cluster = R"({"format": "syncplan.cluster/v1", "name": )" + deep + R"(, "workers": 2})";
  CHECK_THROWS_AS(cluster_from_json(parse_json_text(cluster, "cluster.json"), "cluster.json"), InputError);
  CHECK_THROWS_WITH(cluster_from_json(parse_json_text(cluster, "cluster.json"), "cluster.json"),
                    Contains("cluster.json: JSON nested deeper than 512 levels"));
  const std::string object = R"({"a": 1, "b": )" +
                             std::string(100'000, '[') + "1" + std::string(100'000, ']') + R"(, "c": 2})";
  CHECK_THROWS_AS(parse_json_text(object, "object.json"), InputError);
  CHECK_THROWS_WITH(parse_json_text(object, "object.json"),
                    Contains("nested deeper than 512 levels"));
}

TEST_CASE("regression: the nesting limit is exactly kDeepestJson levels") {
  // A bare array of 512 levels is the deepest value allowed; one more level is refused.
  CHECK(kDeepestJson == 512);
  CHECK_NOTHROW(parse_json_text(nested_arrays(kDeepestJson), "deep.json"));
  CHECK_THROWS_AS(parse_json_text(nested_arrays(kDeepestJson + 1), "deep.json"), InputError);
  CHECK_THROWS_WITH(parse_json_text(nested_arrays(kDeepestJson + 1), "deep.json"),
                    Contains("deep.json: JSON nested deeper than 512 levels"));
  // Objects count like arrays: 513 levels of {"a": ...} are refused.
  std::string objects;
  for (int level = 0; level <= kDeepestJson; ++level) objects += R"({"a": )";
  objects += "1" + std::string(kDeepestJson + 1, '}');
  CHECK_THROWS_AS(parse_json_text(objects, "deep.json"), InputError);
  CHECK_THROWS_WITH(parse_json_text(objects, "deep.json"),
                    Contains("nested deeper than 512 levels"));
}

TEST_CASE("regression: nccl-tests lines of only vertical tabs or form feeds are blank, not a crash") {
  // Found by tests/fuzz/edge_inputs.py (nccl_tests_text, "a line of only vertical tab among the
  // rows": SIGSEGV). trim() keeps \v and \f, so the line was not empty, but it has no words and
  // is_data_row read words[0] of an empty list.
  for (const std::string blank : {"\v\v\v", "\f\f", "\v \f\t\r"}) {
    INFO("blank line " << Json(blank).dump());
    CHECK_THROWS_AS(import_nccl_tests(file_of("blank.log", blank + "\n" + blank + "\n"), {}), InputError);
    CHECK_THROWS_WITH(import_nccl_tests(file_of("blank.log", blank + "\n" + blank + "\n"), {}),
                      Contains("no data rows"));
    // The same line among the rows of a good log changes nothing: the import equals the original's.
    const std::string log = read_text_file(SYNCPLAN_LINK_DATA "/allreduce_8gpu.log");
    const std::size_t first_row = log.find("\n           8 ");
    REQUIRE(first_row != std::string::npos);
    const std::string with_blank = log.substr(0, first_row + 1) + blank + "\n" + log.substr(first_row + 1);
    const NcclTestsImport original = import_nccl_tests(SYNCPLAN_LINK_DATA "/allreduce_8gpu.log", {});
    const NcclTestsImport blanked = import_nccl_tests(file_of("with_blank.log", with_blank), {});
    CHECK(blanked.link.samples.size() == original.link.samples.size());
    CHECK(blanked.link.alpha_s == original.link.alpha_s);
    CHECK(blanked.link.beta_s_per_byte == original.link.beta_s_per_byte);
  }
}

TEST_CASE("regression: a rank checkpoint of 0 parameters decodes to empty arrays") {
  // Found by tests/fuzz/harness/fuzz_checkpoint.cpp on its first seeds (a real rank file of
  // `syncplan run --checkpoint` cut to 0 parameters): read_floats passed the null data() of an
  // empty vector to memcpy, undefined behaviour that UBSan stops at (checkpoint.cpp, "null pointer
  // passed as argument 1"). In this build the call only has to give the state back; the fuzz
  // build (tests/fuzz/run.sh checkpoint) is the one that catches the null pointer.
  TrainingState state;
  state.step = 3;
  state.period_position = 1;
  state.data_cursor = 96;
  state.rng_seed = 1;
  state.rng_counter = 3;
  state.adam_step = 3;
  const CheckpointIdentity identity{{0x11, 0x22, 0x33}, 0, 2};
  const std::string bytes = encode_rank_checkpoint(state, identity);
  const TrainingState again = decode_rank_checkpoint(bytes, "rank-0.ckpt", identity, 3, 0);
  CHECK(again.parameters.empty());
  CHECK(again.adam_m.empty());
  CHECK(again.adam_v.empty());
  CHECK(again.step == 3);
  CHECK(again.period_position == 1);
  CHECK(again.data_cursor == 96);
  CHECK(again.adam_step == 3);
  // The same file against a model of 1 parameter is refused for its count.
  CHECK_THROWS_WITH(decode_rank_checkpoint(bytes, "rank-0.ckpt", identity, 3, 1),
                    Contains("rank-0.ckpt: 0 parameters, the model has 1"));
}
