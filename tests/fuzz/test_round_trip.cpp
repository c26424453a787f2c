// The round-trip rule over the fuzz corpora (docs/fuzzing.md): every corpus input a reader accepts
// is written as the tool writes it (write_json_file_atomic), read back with the tool's file reader,
// and must give the same document; and whatever the input said, the written file says too.
#include "core/cluster.hpp"
#include "core/errors.hpp"
#include "core/json_io.hpp"
#include "core/link.hpp"
#include "core/plan.hpp"
#include "core/profile.hpp"
#include "profiler/import_dreamddp.hpp"
#include "profiler/import_nccl_tests.hpp"
#include "profiler/import_torch_trace.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <unistd.h>

using namespace syncplan;
namespace fs = std::filesystem;

namespace {

const fs::path kCorpora = SYNCPLAN_FUZZ_CORPORA;

/// A path, and a file of `text`, in a folder of this process under the test's working folder (CTest runs the
/// cases side by side, one process each).
std::string path_in_folder(const std::string& name) {
  const fs::path folder = fs::current_path() / ("round_trip_inputs." + std::to_string(::getpid()));
  fs::create_directories(folder);
  return (folder / name).string();
}

std::string write_input(const std::string& name, const std::string& text) {
  const std::string path = path_in_folder(name);
  write_text_file_atomic(path, text);
  return path;
}

/// The corpus files of `corpus`, sorted (a stable order for messages).
std::vector<fs::path> corpus_files(const std::string& corpus) {
  std::vector<fs::path> files;
  for (const auto& entry : fs::directory_iterator(kCorpora / corpus)) files.push_back(entry.path());
  std::sort(files.begin(), files.end());
  REQUIRE_FALSE(files.empty());
  return files;
}

/// The input's two files, split at the first NUL byte as the harnesses split them.
std::pair<std::string, std::string> two_files(const fs::path& input) {
  const std::string text = read_text_file(input.string());
  const std::size_t nul = text.find('\0');
  if (nul == std::string::npos) return {text, ""};
  return {text.substr(0, nul), text.substr(nul + 1)};
}

/// Whatever `input` states, `written` states too: every key of an input object (null meaning
/// absent, SPEC section 3) has an equal value in the written object, arrays element by element;
/// numbers compare by value (1 and 1.0 are equal). A written key the input left out is a default.
/// Returns the first path at which they differ, or std::nullopt.
std::optional<std::string> first_loss(const Json& input, const Json& written, const std::string& path = "") {
  if (input.is_object() && written.is_object()) {
    for (const auto& [key, value] : input.items()) {
      if (value.is_null()) continue;
      if (!written.contains(key)) return path + "/" + key + " (dropped)";
      if (auto loss = first_loss(value, written.at(key), path + "/" + key)) return loss;
    }
    return std::nullopt;
  }
  if (input.is_array() && written.is_array()) {
    if (input.size() != written.size()) return path + " (length)";
    for (std::size_t i = 0; i < input.size(); ++i) {
      if (auto loss = first_loss(input[i], written[i], path + "/" + std::to_string(i))) return loss;
    }
    return std::nullopt;
  }
  if (input.is_number() && written.is_number()) {
    return input.get<double>() == written.get<double>() ? std::nullopt : std::optional(path);
  }
  return input == written ? std::nullopt : std::optional(path);
}

/// Counts of one corpus: inputs read, and inputs whose read-back was checked.
struct Tally {
  int inputs = 0;
  int accepted = 0;
};

/// The round trip of one accepted input: `written` (the writer's JSON) goes to a file, `reread`
/// reads that file as the tool does and returns the writer's JSON of what it read; both must be
/// equal. With `input`, also checks first_loss(input, written).
void check_round_trip(const fs::path& origin, const Json& written, const std::function<Json(const std::string&)>& reread,
                      const std::optional<Json>& input = std::nullopt) {
  INFO("corpus input " << origin.string());
  const std::string path = path_in_folder("written.json");
  write_json_file_atomic(path, written);
  Json again;
  try {
    again = reread(path);
  } catch (const InputError& e) {
    FAIL("the file syncplan wrote is refused on reading back: " << e.what() << "\n" << written.dump(1));
  }
  INFO("written:\n" << written.dump(1) << "\nread back and written again:\n" << again.dump(1));
  CHECK(again == written);
  if (input) {
    const std::optional<std::string> loss = first_loss(*input, written);
    INFO("the input states " << (loss ? *loss : "") << " and the written file does not say the same");
    CHECK_FALSE(loss);
  }
}

/// Runs `read_and_check` on every input of `corpus`; a refusal (InputError) is skipped. Returns the tally.
Tally over_corpus(const std::string& corpus, const std::function<void(const fs::path&)>& read_and_check) {
  Tally tally;
  for (const fs::path& input : corpus_files(corpus)) {
    ++tally.inputs;
    try {
      read_and_check(input);
      ++tally.accepted;
    } catch (const InputError&) {
      // Refused as bad input: nothing was written, nothing to read back.
    }
  }
  WARN(corpus << ": " << tally.accepted << " of " << tally.inputs << " inputs accepted and read back");
  return tally;
}

/// `document` with its sparse compute_slowdown ({"worker": factor}, unnamed workers at 1) written out
/// as the list of one factor per worker that the writer uses (docs/cluster.md): the same cluster.
Json with_slowdown_list(Json document) {
  if (document.contains("compute_slowdown") && document["compute_slowdown"].is_object() && document["workers"].is_number()) {
    Json factors = Json::array();
    for (int w = 0; w < document["workers"].get<int>(); ++w) {
      const std::string key = std::to_string(w);
      factors.push_back(document["compute_slowdown"].contains(key) ? document["compute_slowdown"][key] : Json(1.0));
    }
    document["compute_slowdown"] = factors;
  }
  return document;
}

Json reread_profile(const std::string& path) { return profile_to_json(read_profile_file(path)); }
Json reread_link(const std::string& path) { return link_to_json(read_link_file(path)); }

}  // namespace

// Each corpus holds at least one valid input (its seeds are the project's own examples), so every
// case checks at least one round trip; a corpus that lost its valid inputs fails here.

TEST_CASE("round trip: profiles") {
  const Tally tally = over_corpus("profile", [](const fs::path& input) {
    const Json document = read_json_file(input.string());
    check_round_trip(input, profile_to_json(profile_from_json(document, input.string())), reread_profile, document);
  });
  CHECK(tally.accepted >= 1);
}

TEST_CASE("round trip: plans") {
  const Tally tally = over_corpus("plan", [](const fs::path& input) {
    const auto [profile_text, plan_text] = two_files(input);
    const Profile profile = read_profile_file(write_input("profile.json", profile_text));
    const Json document = parse_json_text(plan_text, input.string());
    const Json written = plan_to_json(plan_from_json(document, input.string(), profile));
    check_round_trip(input, written, [&profile](const std::string& path) {
      return plan_to_json(read_plan_file(path, profile));
    }, document);
  });
  CHECK(tally.accepted >= 1);
}

TEST_CASE("round trip: clusters") {
  const Tally tally = over_corpus("cluster", [](const fs::path& input) {
    const Json document = read_json_file(input.string());
    check_round_trip(input, cluster_to_json(cluster_from_json(document, input.string())), [](const std::string& path) {
      return cluster_to_json(read_cluster_file(path));
    }, with_slowdown_list(document));
  });
  CHECK(tally.accepted >= 1);
}

TEST_CASE("round trip: link fits") {
  const Tally tally = over_corpus("link", [](const fs::path& input) {
    const Json document = read_json_file(input.string());
    check_round_trip(input, link_to_json(link_from_json(document, input.string())), reread_link, document);
  });
  CHECK(tally.accepted >= 1);
}

TEST_CASE("round trip: profiles imported from DreamDDP's time files") {
  const Tally tally = over_corpus("dreamddp", [](const fs::path& input) {
    const auto [bp_text, comm_text] = two_files(input);
    const Profile profile = import_dreamddp(write_input("bp.json", bp_text), write_input("comm.json", comm_text), {});
    check_round_trip(input, profile_to_json(profile), reread_profile);
  });
  CHECK(tally.accepted >= 1);
}

TEST_CASE("round trip: plans imported from DreamDDP's schedules") {
  const Tally tally = over_corpus("dreamddp_schedule", [](const fs::path& input) {
    const auto [profile_text, schedule_text] = two_files(input);
    const Profile profile = read_profile_file(write_input("profile.json", profile_text));
    const Plan plan = import_dreamddp_schedule(write_input("schedule.json", schedule_text), profile);
    check_round_trip(input, plan_to_json(plan), [&profile](const std::string& path) {
      return plan_to_json(read_plan_file(path, profile));
    });
  });
  CHECK(tally.accepted >= 1);
}

TEST_CASE("round trip: link fits imported from nccl-tests") {
  for (const std::string corpus : {"nccl_tests_text", "nccl_tests_json"}) {
    const Tally tally = over_corpus(corpus, [](const fs::path& input) {
      check_round_trip(input, link_to_json(import_nccl_tests(input.string(), {}).link), reread_link);
    });
    CHECK(tally.accepted >= 1);
  }
}

TEST_CASE("round trip: profiles imported from torch traces") {
  const Tally tally = over_corpus("torch_trace", [](const fs::path& input) {
    TorchTraceImportOptions options;
    options.missing_backward = MissingBackwardPolicy::kNull;
    check_round_trip(input, profile_to_json(import_torch_trace(input.string(), options).profile), reread_profile);
  });
  CHECK(tally.accepted >= 1);
}

TEST_CASE("round trip: first_loss finds a value the writer dropped or changed") {
  // The check itself must be able to fail: a dropped key, a changed number, a shorter array.
  const Json input = parse_json_text(R"({"a": 1, "b": [1, 2], "c": null, "d": {"e": "x"}})", "self-test");
  CHECK_FALSE(first_loss(input, parse_json_text(R"({"a": 1.0, "b": [1, 2], "d": {"e": "x"}, "f": 0})", "w")));
  CHECK(first_loss(input, parse_json_text(R"({"a": 1, "b": [1, 2]})", "w")) == "/d (dropped)");
  CHECK(first_loss(input, parse_json_text(R"({"a": 2, "b": [1, 2], "d": {"e": "x"}})", "w")) == "/a");
  CHECK(first_loss(input, parse_json_text(R"({"a": 1, "b": [1], "d": {"e": "x"}})", "w")) == "/b (length)");
}
