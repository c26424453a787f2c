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
#include "runtime/compare.hpp"
#include "runtime/trace.hpp"
#include "runtime/trainer.hpp"

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

TEST_CASE("round trip: a run log as `run` writes it reads back with its iteration times") {
  // log_line of 2 ranks x 2 iterations; rank 0 takes 50 then 20 ms, rank 1 40 then 35 ms. By hand
  // (docs/compare.md section 2: the latest end over the ranks minus the previous latest end): the
  // ranks end at 50 and 40 ms, then 70 and 75 ms, so the iterations take 50 and 75 - 50 = 25 ms.
  const double times_s[2][2] = {{0.050, 0.020}, {0.040, 0.035}};  // [rank][iteration]
  std::string text;
  for (int iteration = 0; iteration < 2; ++iteration)
    for (int rank = 0; rank < 2; ++rank) {
      IterationRecord record;
      record.iteration = iteration;
      record.rank = rank;
      record.loss = 5.5 - iteration;
      record.iteration_s = times_s[rank][iteration];
      record.compute_s = 0.8 * record.iteration_s;
      record.wait_s = 0.2 * record.iteration_s;
      record.buckets = {{"head"}, {"embed", "wpe"}};
      text += log_line(record, std::nullopt).dump() + "\n";
    }
  const std::string path = write_input("run.jsonl", text);
  const Timeline timeline = read_timeline(path);
  CHECK(timeline.kind == TimelineKind::kRunLog);
  CHECK(timeline.ranks == 2);
  CHECK(timeline.first_iteration == 0);
  REQUIRE(timeline.iteration_s.size() == 2);
  CHECK(timeline.iteration_s[0] == Approx(0.050).margin(1e-12));
  CHECK(timeline.iteration_s[1] == Approx(0.025).margin(1e-12));
}

TEST_CASE("round trip: a measured trace as `run` writes it reads back with its iteration times and all-reduces") {
  // Two ranks, layers a, b; seconds since the run's start. Rank 0: iteration 0 forward a 1..3 ms,
  // backward b 3..4 ms, all-reduce [b] 4..7 ms; iteration 1 forward a 10..12 ms, all-reduce [b, a]
  // 12..13 ms. Rank 1: forward a 1.5..5.5 ms, then 11..15 ms. By hand (docs/compare.md section 2):
  // iteration 0 spans 1 ms (earliest start) to 7 ms (latest end): 6 ms; iteration 1 ends at 15 ms:
  // 8 ms. Rank 0's all-reduces from its own iteration's start (1 ms, then 10 ms): 3..6 ms, 2..3 ms.
  const std::vector<std::string> names = {"a", "b"};
  MeasuredTrace rank0, rank1;
  rank0.record({EventKind::kForward, 0, {0}, 0.001, 0.002, 0});
  rank0.record({EventKind::kBackward, 0, {1}, 0.003, 0.001, 0});
  rank0.record({EventKind::kAllreduce, 0, {1}, 0.004, 0.003, 4096});
  rank0.record({EventKind::kForward, 1, {0}, 0.010, 0.002, 0});
  rank0.record({EventKind::kAllreduce, 1, {1, 0}, 0.012, 0.001, 8192});
  rank1.record({EventKind::kForward, 0, {0}, 0.0015, 0.004, 0});
  rank1.record({EventKind::kForward, 1, {0}, 0.011, 0.004, 0});
  Json events = measured_trace_events(rank0, 0, names);
  for (Json& event : measured_trace_events(rank1, 1, names)) events.push_back(std::move(event));
  const std::string path = path_in_folder("trace.json");
  write_json_file_atomic(path, measured_trace_document(std::move(events), Json{{"source", "measured"}, {"period", 1}}));
  const Timeline timeline = read_timeline(path);
  CHECK(timeline.kind == TimelineKind::kMeasuredTrace);
  CHECK(timeline.ranks == 2);
  CHECK(timeline.period == 1);
  REQUIRE(timeline.iteration_s.size() == 2);
  CHECK(timeline.iteration_s[0] == Approx(0.006).margin(1e-9));
  CHECK(timeline.iteration_s[1] == Approx(0.008).margin(1e-9));
  REQUIRE(timeline.allreduces);
  REQUIRE(timeline.allreduces->size() == 2);
  const TimedAllreduce& first = (*timeline.allreduces)[0];
  const TimedAllreduce& second = (*timeline.allreduces)[1];
  CHECK(first.iteration == 0);
  CHECK(first.layers == std::vector<std::string>{"b"});
  CHECK(first.start_s == Approx(0.003).margin(1e-9));
  CHECK(first.end_s == Approx(0.006).margin(1e-9));
  CHECK(second.iteration == 1);
  CHECK(second.layers == std::vector<std::string>{"b", "a"});  // backprop order, as written
  CHECK(second.start_s == Approx(0.002).margin(1e-9));
  CHECK(second.end_s == Approx(0.003).margin(1e-9));
}

TEST_CASE("round trip: the run logs and traces of the compare corpus, written by `run`, read back") {
  // The seeds run_log*.jsonl and run_trace*.json are `syncplan run --log --trace` outputs
  // (tests/fuzz/corpus/compare); every one must be accepted, with one time per logged iteration.
  int files = 0;
  for (const fs::path& input : corpus_files("compare")) {
    const std::string name = input.filename().string();
    if (!name.starts_with("run_")) continue;
    INFO("corpus input " << input.string());
    ++files;
    const Timeline timeline = read_timeline(input.string());
    CHECK((timeline.kind == TimelineKind::kRunLog || timeline.kind == TimelineKind::kMeasuredTrace));
    CHECK_FALSE(timeline.iteration_s.empty());
    for (double t : timeline.iteration_s) CHECK(t > 0);
  }
  CHECK(files >= 4);
}

TEST_CASE("round trip: the comparisons that `compare --json` writes read back, with a number in every time") {
  // Each accepted pair of the compare corpus (PREDICTED, NUL byte, MEASURED): the report is written
  // as the tool writes it and must read back to the same document; every time and error is a
  // number (JSON has no NaN: nlohmann/json would have written null).
  const Tally tally = over_corpus("compare", [](const fs::path& input) {
    const auto [predicted, measured] = two_files(input);
    if (measured.empty()) throw InputError("one file, not a pair");
    CompareOptions options;
    options.skip = 0;
    const CompareReport report = compare_files(
        {{write_input("predicted.json", predicted), write_input("measured.json", measured)}}, options);
    const Json written = compare_to_json(report);
    check_round_trip(input, written, [](const std::string& path) { return read_json_file(path); });
    for (const Json& pair : written["pairs"]) {
      for (const char* key : {"mape_percent", "mean_predicted_s", "mean_measured_s"}) CHECK(pair[key].is_number());
      for (const char* statistic : {"mean", "median", "p90"})
        for (const char* key : {"predicted_s", "measured_s", "error_s", "error_percent", "noise_floor_percent"})
          CHECK(pair["statistics"][statistic][key].is_number());
      for (const char* key : {"median_mape_percent", "p90_over_median"}) CHECK(pair["noise_floor"][key].is_number());
      for (const Json& row : pair["iterations"])
        for (const char* key : {"predicted_s", "measured_s", "error_s", "error_percent"}) CHECK(row[key].is_number());
    }
  });
  CHECK(tally.accepted >= 5);
}

TEST_CASE("round trip: first_loss finds a value the writer dropped or changed") {
  // The check itself must be able to fail: a dropped key, a changed number, a shorter array.
  const Json input = parse_json_text(R"({"a": 1, "b": [1, 2], "c": null, "d": {"e": "x"}})", "self-test");
  CHECK_FALSE(first_loss(input, parse_json_text(R"({"a": 1.0, "b": [1, 2], "d": {"e": "x"}, "f": 0})", "w")));
  CHECK(first_loss(input, parse_json_text(R"({"a": 1, "b": [1, 2]})", "w")) == "/d (dropped)");
  CHECK(first_loss(input, parse_json_text(R"({"a": 2, "b": [1, 2], "d": {"e": "x"}})", "w")) == "/a");
  CHECK(first_loss(input, parse_json_text(R"({"a": 1, "b": [1], "d": {"e": "x"}})", "w")) == "/b (length)");
}
