// `syncplan import nccl-tests` (profiler/import_nccl_tests.hpp, docs/link.md): the sample logs of
// tests/link/data (made by make_logs.py from known alpha-beta models and printed with nccl-tests'
// rounding) fit back to their models; every kind of bad log is refused naming file and line.
#include "profiler/import_nccl_tests.hpp"

#include "core/errors.hpp"
#include "core/json_io.hpp"

#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <regex>
#include <unistd.h>

using namespace syncplan;
using Catch::Contains;

namespace {

const std::string kData = SYNCPLAN_LINK_TEST_DATA;

NcclTestsImport import_sample(const std::string& name, NcclTestsImportOptions options = {}) {
  return import_nccl_tests(kData + "/" + name, options);
}

// This process's folder for the logs it writes, removed when the process ends (each test case is
// a process of its own under CTest: none may leave a folder behind in the temporary directory).
struct ScratchFolder {
  std::filesystem::path path =
      std::filesystem::temp_directory_path() / ("syncplan-link-test-" + std::to_string(::getpid()));
  ScratchFolder() { std::filesystem::create_directories(path); }
  ~ScratchFolder() {
    std::error_code ignored;
    std::filesystem::remove_all(path, ignored);
  }
};

// A log written by the test, for variations of the samples.
std::string write_log(const std::string& name, const std::string& text) {
  static const ScratchFolder folder;
  const std::string path = (folder.path / name).string();
  std::ofstream(path) << text;
  return path;
}

std::string sample_text(const std::string& name) { return read_text_file(kData + "/" + name); }

// The printed times carry 2 decimals of a microsecond (at least 8 us), so the fit recovers alpha
// to a few thousandths of a microsecond and beta, ruled by the large sizes, to a few millionths.
void check_model(const LinkFit& link, double alpha_s, double beta_s_per_byte) {
  CHECK(link.alpha_s == Approx(alpha_s).margin(0.01e-6));
  CHECK(link.beta_s_per_byte == Approx(beta_s_per_byte).epsilon(1e-4));
  CHECK(link.r_squared > 0.99999);
}

// The written samples are recomputed from size and time: algbw and busbw hold to the last bit.
void check_samples_consistent(const LinkFit& link) {
  for (const LinkSample& sample : link.samples) {
    INFO("size " << sample.size_bytes);
    CHECK(sample.algbw_GBps == static_cast<double>(sample.size_bytes) / sample.time_s / 1e9);
    CHECK(sample.busbw_GBps == sample.algbw_GBps * 2.0 * (link.workers - 1) / link.workers);
  }
}

// What every good sample's import says about itself.
void check_import(const NcclTestsImport& imported, const std::string& format, const std::string& program, int workers,
                  std::size_t samples) {
  CHECK(imported.format == format);
  CHECK(imported.program == program);
  CHECK(imported.warnings.empty());
  CHECK(imported.link.workers == workers);
  CHECK(imported.link.source == "imported:nccl-tests");
  CHECK(imported.link.samples.size() == samples);
}

}  // namespace

TEST_CASE("text log, newest layout, 8 ranks", "[nccl-tests]") {
  // allreduce_8gpu.log: out-of-place t = 30 us + 5e-11 s/B x size, in-place 30 us + 4.9e-11 s/B.
  const NcclTestsImport imported = import_sample("allreduce_8gpu.log");
  check_import(imported, "text", "all_reduce_perf", 8, 25);
  CHECK(imported.link.samples.back().size_bytes == 134217728);
  CHECK(imported.link.samples.back().time_s == Approx(6740.89e-6).epsilon(1e-12));
  check_model(imported.link, 30e-6, 5e-11);
  check_samples_consistent(imported.link);

  NcclTestsImportOptions in_place;
  in_place.in_place = true;
  check_model(import_sample("allreduce_8gpu.log", in_place).link, 30e-6, 4.9e-11);
}

TEST_CASE("text log, older layout with NCCL INFO lines, 4 ranks", "[nccl-tests]") {
  // allreduce_4gpu_old.log: no root column, 'error' deviations, t = 12 us + 2.5e-11 s/B x size.
  const NcclTestsImport imported = import_sample("allreduce_4gpu_old.log");
  check_import(imported, "text", "", 4, 23);
  check_model(imported.link, 12e-6, 2.5e-11);
  check_samples_consistent(imported.link);
}

TEST_CASE("rows with N/A times are skipped with a warning", "[nccl-tests]") {
  // allreduce_na.log: -c 0 (#wrong N/A on every row, which is fine) and out-of-place N/A at 8 B,
  // 1 KiB and 1 MiB: 25 - 3 = 22 samples of t = 8 us + size / 90 GB/s.
  const NcclTestsImport imported = import_sample("allreduce_na.log");
  CHECK(imported.link.workers == 2);
  REQUIRE(imported.link.samples.size() == 22);
  REQUIRE(imported.warnings.size() == 3);
  CHECK_THAT(imported.warnings[0], Contains("allreduce_na.log: line 12: size 8:") && Contains("N/A"));
  CHECK_THAT(imported.warnings[1], Contains("size 1024:"));
  CHECK_THAT(imported.warnings[2], Contains("size 1048576:"));
  for (const LinkSample& sample : imported.link.samples) CHECK(sample.size_bytes != 1024);
  check_model(imported.link, 8e-6, 1 / 90e9);
}

TEST_CASE("the -J JSON file, 2 processes x 8 GPUs", "[nccl-tests]") {
  // allreduce_16gpu.json: nthreads 1 x ngpus 8 x 2 devices = 16 ranks; t = 45 us + size / 12 GB/s;
  // the in-place time of 4096 B (results[9]) is "nan".
  const NcclTestsImport imported = import_sample("allreduce_16gpu.json");
  check_import(imported, "json", "./build/all_reduce_perf", 16, 25);
  check_model(imported.link, 45e-6, 1 / 12e9);
  check_samples_consistent(imported.link);

  NcclTestsImportOptions in_place;
  in_place.in_place = true;
  const NcclTestsImport in_place_import = import_sample("allreduce_16gpu.json", in_place);
  CHECK(in_place_import.link.samples.size() == 24);
  REQUIRE(in_place_import.warnings.size() == 1);
  CHECK_THAT(in_place_import.warnings[0], Contains("results[9]") && Contains("N/A"));
}

TEST_CASE("the rank count: from the log, or --workers", "[nccl-tests]") {
  NcclTestsImportOptions options;
  CHECK_THROWS_WITH(import_sample("allreduce_no_ranks.log", options),
                    Contains("allreduce_no_ranks.log") && Contains("--workers"));
  options.workers = 8;
  CHECK(import_sample("allreduce_no_ranks.log", options).link.workers == 8);
  CHECK_THROWS_WITH(import_sample("allreduce_4gpu_old.log", options),
                    Catch::StartsWith("workers 8") && Contains("4 ranks"));
  // busbw = algbw x 2(n-1)/n tells 4 ranks (x 1.5) from 2 (x 1): --workers 2 on a 4-rank table
  // without device lines is caught by the busbw check.
  const std::string text = sample_text("allreduce_4gpu_old.log");
  const std::string no_devices = std::regex_replace(text, std::regex("#   Rank[^\n]*\n"), "");
  options.workers = 2;
  CHECK_THROWS_WITH(import_nccl_tests(write_log("no_devices.log", no_devices), options),
                    Contains("busbw") && Contains("n = 2") && Contains("--workers"));
}

TEST_CASE("variations nccl-tests prints are read", "[nccl-tests]") {
  const std::string text = sample_text("allreduce_8gpu.log");
  SECTION("mpirun --tag-output prefixes") {
    std::string tagged;
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);) tagged += "[1,0]<stdout>:" + line + "\n";
    check_model(import_nccl_tests(write_log("tagged.log", tagged), {}).link, 30e-6, 5e-11);
  }
  SECTION("a row reporting wrong elements is skipped") {
    // The 2 MiB row's out-of-place #wrong becomes 7.
    const std::string wrong = std::regex_replace(
        text, std::regex("(     2097152 .*   134.86   15.55   27.21 )      0"), "$1      7");
    REQUIRE(wrong != text);
    const NcclTestsImport imported = import_nccl_tests(write_log("wrong.log", wrong), {});
    CHECK(imported.link.samples.size() == 24);
    REQUIRE(imported.warnings.size() == 1);
    CHECK_THAT(imported.warnings[0], Contains("7 wrong elements"));
  }
  SECTION("timestamps (-S 1): a date and a time after the in-place columns") {
    std::string stamped = std::regex_replace(text, std::regex("#wrong\n"), "#wrong     timestamp\n");
    stamped = std::regex_replace(stamped, std::regex("(\n +[0-9]+ +[0-9]+ +float[^\n]*)"), "$1  2025-03-04 10:11:12");
    CHECK(import_nccl_tests(write_log("stamped.log", stamped), {}).link.samples.size() == 25);
  }
  SECTION("a missing footer is a warning") {
    const std::string cut = text.substr(0, text.find("# Out of bounds"));
    const NcclTestsImport imported = import_nccl_tests(write_log("no_footer.log", cut), {});
    REQUIRE(imported.warnings.size() == 1);
    CHECK_THAT(imported.warnings[0], Contains("Avg bus bandwidth") && Contains("cut short"));
  }
  SECTION("a data row before the header") {
    const std::string rows_only = text.substr(text.find("           8 "));
    CHECK_THROWS_WITH(import_nccl_tests(write_log("rows_only.log", rows_only), {}),
                      Contains("line 1") && Contains("before the column header"));
  }
}

TEST_CASE("bad nccl-tests logs are refused naming file and line", "[nccl-tests]") {
  struct Case {
    const char* file;
    std::vector<const char*> texts;
  };
  const std::vector<Case> cases = {
      {"allgather_8gpu.log", {"line 2", "all_gather_perf"}},
      {"allgather.json", {"args[0]", "all_gather_perf"}},
      {"allgather_old.log", {"line 12", "redop 'none'"}},
      {"reduce_scatter_old.log", {"line 12", "not count 4 x 4 bytes"}},
      {"allreduce_truncated.log", {"line 33", "expected 13 columns", "line 16", "got 3"}},
      {"allreduce_extra_column.log", {"line 18", "got 14"}},
      {"allreduce_truncated.json", {"invalid JSON"}},
      {"allreduce_header_only.log", {"no data rows"}},
      {"allreduce_all_na.log", {"no usable rows", "25 rows"}},
      {"allreduce_bad_busbw.log", {"busbw", "n = 8"}},
      {"allreduce_bad_number.log", {"line 35", "column 'time'", "8z.43"}},
  };
  for (const Case& bad : cases) {
    INFO(bad.file);
    try {
      import_sample(bad.file);
      FAIL("accepted " << bad.file);
    } catch (const InputError& e) {
      const std::string message = e.what();
      CHECK_THAT(message, Contains(bad.file));
      for (const char* text : bad.texts) CHECK_THAT(message, Contains(text));
    }
  }
}

TEST_CASE("the -J file's version: 1 to 3 are read, others refused naming the field", "[nccl-tests]") {
  // nccl-tests has written JSON_FILE_VERSION 1 (when -J appeared) to 3; the fields read are the same.
  const std::string text = sample_text("allreduce_16gpu.json");
  REQUIRE(text.rfind("{\"version\":2,", 0) == 0);
  const auto with_version = [&](const std::string& version) {
    return write_log("version.json", "{\"version\":" + version + "," + text.substr(std::string("{\"version\":2,").size()));
  };
  for (const char* version : {"1", "3"}) {
    INFO("version " << version);
    CHECK(import_nccl_tests(with_version(version), {}).link.samples.size() == 25);
  }
  for (const char* version : {"9", "0", "\"2\"", "2.5", "null"}) {
    INFO("version " << version);
    CHECK_THROWS_WITH(import_nccl_tests(with_version(version), {}),
                      Contains("version.json: field 'version': " + std::string(version)) && Contains("1 to 3"));
  }
  const std::string unversioned = "{" + text.substr(std::string("{\"version\":2,").size());
  CHECK_THROWS_WITH(import_nccl_tests(write_log("unversioned.json", unversioned), {}),
                    Contains("missing field 'version'") && Contains("1 to 3"));
}

TEST_CASE("the -J file's config: a bad rank field is named; --workers overrides it with a warning",
          "[nccl-tests]") {
  // allreduce_16gpu.json's config: "nthreads":1,"ngpus":8, 2 devices -> 16 ranks.
  const std::string text = sample_text("allreduce_16gpu.json");
  struct Case {
    std::string from, to, expected;
  };
  const std::vector<Case> cases = {
      {"\"ngpus\":8,", "\"ngpus\":0,", "field 'config.ngpus': expected a whole number >= 1, got 0"},
      {"\"ngpus\":8,", "\"ngpus\":-1,", "field 'config.ngpus': expected a whole number >= 1, got -1"},
      {"\"ngpus\":8,", "\"ngpus\":\"8\",", "field 'config.ngpus': expected a whole number >= 1, got \"8\""},
      {"\"ngpus\":8,", "\"ngpus\":1.5,", "field 'config.ngpus': expected a whole number >= 1, got 1.5"},
      {"\"ngpus\":8,", "", "field 'config.ngpus': missing"},
      {"\"nthreads\":1,", "\"nthreads\":0,", "field 'config.nthreads': expected a whole number >= 1, got 0"},
      {"\"devices\":[{", "\"no_devices\":[{", "field 'config.devices': missing"},
      {"\"config\":{", "\"settings\":{", "no field 'config'"},
  };
  for (const Case& bad : cases) {
    INFO(bad.to);
    const auto at = text.find(bad.from);
    REQUIRE(at != std::string::npos);
    const std::string path = write_log("config.json", std::string(text).replace(at, bad.from.size(), bad.to));
    CHECK_THROWS_WITH(import_nccl_tests(path, {}),
                      Contains("config.json: " + bad.expected) && Contains("--workers N gives it"));
    NcclTestsImportOptions options;
    options.workers = 16;
    const NcclTestsImport imported = import_nccl_tests(path, options);
    CHECK(imported.link.workers == 16);
    REQUIRE(imported.warnings.size() == 1);
    CHECK_THAT(imported.warnings[0], Contains(bad.expected) && Contains("using --workers 16"));
  }
  // 8.0 is 8, as a result's "size": 8.0 is (the readers' whole-number rule, whole_number_value).
  const std::string float_gpus = std::regex_replace(text, std::regex("\"ngpus\":8,"), "\"ngpus\":8.0,");
  CHECK(import_nccl_tests(write_log("float_gpus.json", float_gpus), {}).link.workers == 16);
  // An empty device list, and more ranks than --workers allows (2^24 = 16,777,216).
  const auto devices = text.find("\"devices\":[");
  const std::string no_devices = text.substr(0, devices) + "\"devices\":[]}" + text.substr(text.find("]},\"results\"") + 2);
  CHECK_THROWS_WITH(import_nccl_tests(write_log("no_devices.json", no_devices), {}),
                    Contains("field 'config.devices': expected a non-empty array") && Contains("got []"));
  const std::string huge = std::regex_replace(text, std::regex("\"nthreads\":1,"), "\"nthreads\":1000000000000,");
  CHECK_THROWS_WITH(import_nccl_tests(write_log("huge.json", huge), {}),
                    Contains("nthreads 1000000000000 x ngpus 8 x 2 processes is more than 16777216 ranks"));
}

TEST_CASE("text rows with a negative or fractional size are errors, not chatter", "[nccl-tests]") {
  // allreduce_8gpu.log's first row (line 18) is size 8, count 2.
  const std::string text = sample_text("allreduce_8gpu.log");
  const std::string first = "           8             2  ";
  REQUIRE(text.find(first) != std::string::npos);
  for (const auto& [size, count] : std::vector<std::pair<std::string, std::string>>{
           {"          -8", "            -2"}, {"          -8", "             2"}, {"         8.5", "             2"},
           {"          +8", "             2"}, {"        8e+0", "             2"}}) {
    INFO(size << " " << count);
    const std::string bad = std::string(text).replace(text.find(first), first.size(), size + "  " + count + "  ");
    CHECK_THROWS_WITH(import_nccl_tests(write_log("bad_size.log", bad), {}),
                      Contains("bad_size.log: line 18: column 'size'") && Contains(size.substr(size.find_first_not_of(" "))));
  }
  // Lines that open with something other than a number stay chatter between rows.
  std::string chatty = text;
  chatty.insert(chatty.find("          16 "),
                "node-a01:41000:41000 [0] NCCL INFO Channel 00/02 : 0 1 2 3\n"
                "2025-03-04 10:11:12 rank 0 alive\n"
                "-- warning: 8 slow rows\n");
  CHECK(import_nccl_tests(write_log("chatty.log", chatty), {}).link.samples.size() == 25);
}

TEST_CASE("size and count must agree even for a count of 0; a zero-size row is a sample", "[nccl-tests]") {
  const std::string text = sample_text("allreduce_8gpu.log");
  const std::string first = "           8             2  ";
  const std::string zero_count = std::string(text).replace(text.find(first), first.size(),
                                                           "           8             0  ");
  CHECK_THROWS_WITH(import_nccl_tests(write_log("zero_count.log", zero_count), {}),
                    Contains("line 18: size 8 bytes is not count 0 x 4 bytes"));
  // all_reduce_perf -b 0 starts at 0 bytes: its time is the model's alpha, 30 us, and algbw 0.
  const std::string zero_row = "           0             0     float     sum      -1    30.00    0.00    0.00       0"
                               "    30.00    0.00    0.00       0\n";
  std::string with_zero = text;
  with_zero.insert(with_zero.find(first), zero_row);
  const NcclTestsImport imported = import_nccl_tests(write_log("zero_size.log", with_zero), {});
  REQUIRE(imported.link.samples.size() == 26);
  CHECK(imported.link.samples.front().size_bytes == 0);
  check_model(imported.link, 30e-6, 5e-11);
}

TEST_CASE("empty files, two runs in one log and incomplete device lists", "[nccl-tests]") {
  for (const char* blank : {"", "  \n\t\n"})
    CHECK_THROWS_WITH(import_nccl_tests(write_log("blank.log", blank), {}), Contains("blank.log: the file is empty"));
  // Two runs appended: the second header (line 64) is refused, naming the first (line 16).
  const std::string text = sample_text("allreduce_8gpu.log");
  CHECK_THROWS_WITH(import_nccl_tests(write_log("twice.log", text + text), {}),
                    Contains("twice.log: line 64: a second column header") && Contains("line 16"));
  // Rank 3's device line missing: ranks 0-2 and 4-7 are no rank count; --workers gives it, said in a warning.
  const std::string gap = std::regex_replace(text, std::regex("#  Rank  3 [^\n]*\n"), "");
  REQUIRE(gap != text);
  const std::string path = write_log("gap.log", gap);
  CHECK_THROWS_WITH(import_nccl_tests(path, {}),
                    Contains("gap.log: the device list") && Contains("incomplete") && Contains("--workers N"));
  NcclTestsImportOptions options;
  options.workers = 8;
  const NcclTestsImport imported = import_nccl_tests(path, options);
  REQUIRE(imported.warnings.size() == 1);
  CHECK_THAT(imported.warnings[0], Contains("incomplete") && Contains("using --workers 8"));
  check_model(imported.link, 30e-6, 5e-11);
}

TEST_CASE("a one-rank log has no link cost to fit", "[nccl-tests]") {
  // allreduce_1gpu.log: one '#  Rank  0' line, busbw 0 on every row (local copies at 675 GB/s).
  CHECK_THROWS_WITH(import_sample("allreduce_1gpu.log"),
                    Contains("allreduce_1gpu.log") && Contains("one-rank run") && Contains("no link cost to fit"));
  // The same with the count given instead of read.
  NcclTestsImportOptions options;
  options.workers = 1;
  CHECK_THROWS_WITH(import_sample("allreduce_no_ranks.log", options), Contains("one-rank run") && Contains("--workers"));
}

TEST_CASE("launcher rank prefixes are read, and a warning says one was found", "[nccl-tests]") {
  // allreduce_8gpu.log with "[0] " (-prepend-rank) and "[1,0]<stdout>:" (--tag-output) on every
  // line: the same fit as the plain log (alpha 30 us, beta 5e-11 s/B), and one warning each.
  for (const char* name : {"allreduce_prepend_rank.log", "allreduce_tag_output.log", "allreduce_srun_label.log"}) {
    INFO(name);
    const NcclTestsImport imported = import_sample(name);
    check_model(imported.link, 30e-6, 5e-11);
    REQUIRE(imported.link.samples.size() == 25);
    REQUIRE(imported.warnings.size() == 1);
    CHECK_THAT(imported.warnings[0], Contains(name) && Contains("rank prefix") && Contains("first on line 1"));
  }
  CHECK_THAT(import_sample("allreduce_prepend_rank.log").warnings[0], Contains("'[0]'"));
  CHECK_THAT(import_sample("allreduce_tag_output.log").warnings[0], Contains("'[1,0]<stdout>:'"));
  CHECK_THAT(import_sample("allreduce_srun_label.log").warnings[0], Contains("'0:'"));
  CHECK(import_sample("allreduce_8gpu.log").warnings.empty());
}

TEST_CASE("a poor fit (R^2 < 0.9) warns and names the worst sizes", "[nccl-tests]") {
  // allreduce_poor_fit.log: 40 us below 1 MiB, 4 ms from it. An independent weighted fit (Python)
  // gives R^2 0.33 and the line's worst relative errors at 1, 2 and 4 MiB (-98%, -97%, -95%).
  const NcclTestsImport imported = import_sample("allreduce_poor_fit.log");
  REQUIRE(imported.link.r_squared < 0.9);
  REQUIRE(imported.warnings.size() == 1);
  CHECK_THAT(imported.warnings[0], Contains("allreduce_poor_fit.log") && Contains("R^2 0.33") &&
                                       Contains("1048576 B (-98") && Contains("2097152 B") && Contains("4194304 B"));
  // A good fit says nothing.
  CHECK(import_sample("allreduce_16gpu.json").warnings.size() == 0);
}

TEST_CASE("nan beside a measured time keeps the row and warns naming the row and the column", "[nccl-tests]") {
  // allreduce_nan_columns.log is allreduce_8gpu.log with the 8 B row's algbw and the 16 B row's
  // #wrong printed nan: the fit is the good log's (both rows kept), and each nan is said once.
  const NcclTestsImport imported = import_sample("allreduce_nan_columns.log");
  check_model(imported.link, 30e-6, 5e-11);
  REQUIRE(imported.link.samples.size() == 25);
  REQUIRE(imported.warnings.size() == 2);
  CHECK_THAT(imported.warnings[0], Contains("line 18: size 8: out-of-place algbw is nan") && Contains("row kept"));
  CHECK_THAT(imported.warnings[1], Contains("line 19: size 16: out-of-place #wrong is nan") && Contains("row kept"));
  // The -J file's "nan" the same way (its in-place "nan" time is in a column not chosen: no word).
  const NcclTestsImport json = import_sample("allreduce_nan_busbw.json");
  REQUIRE(json.link.samples.size() == 25);
  REQUIRE(json.warnings.size() == 1);
  CHECK_THAT(json.warnings[0], Contains("results[0]: size 8: out-of-place bus_bw is nan"));
}

TEST_CASE("a -J file whose result has an unknown data type is refused naming it", "[nccl-tests]") {
  CHECK_THROWS_WITH(import_sample("allreduce_unknown_type.json"),
                    Contains("allreduce_unknown_type.json: results[0]") && Contains("field 'type'") &&
                        Contains("\"complex64\""));
}
