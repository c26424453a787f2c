// nccl-tests all_reduce_perf importer: the text table (every layout since the first releases,
// read by its column header) and the -J JSON file, checked and fitted into a link.
#include "profiler/import_nccl_tests.hpp"
#include "core/field_error.hpp"

#include "core/errors.hpp"
#include "core/limits.hpp"
#include "core/units.hpp"

#include <algorithm>
#include <charconv>
#include <cctype>
#include <limits>
#include <cmath>
#include <cstdlib>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <cstring>

namespace syncplan {

namespace {

// ---------------------------------------------------------------------------------------------
// What both formats are read into

/// One half of a result row (out-of-place or in-place). std::nullopt: N/A, nan, or not printed.
struct Measurement {
  std::optional<double> time_us;
  std::optional<double> algbw_GBps;
  std::optional<double> busbw_GBps;
  std::optional<double> wrong_elements;  ///< "#wrong"/"nwrong"; nullopt for N/A and old "error" columns
  /// The columns (algbw, busbw, #wrong; JSON alg_bw, bus_bw, nwrong) that printed nan: a failed
  /// computation, not nccl-tests' N/A (not measured). Beside a usable time it is said in a warning.
  std::vector<std::string> nan_columns;
};

struct ResultRow {
  std::string where;  ///< "line 14" or "results[3]"
  std::int64_t size_bytes = 0;
  std::int64_t count = 0;
  std::string type, redop;                     ///< redop "" when the layout has no such column
  std::optional<std::int64_t> root;            ///< absent in layouts before the root column
  std::optional<Measurement> out_of_place, in_place;
};

struct ParsedLog {
  std::string format;                                       ///< "text" or "json"
  std::vector<std::pair<std::string, std::string>> programs;  ///< (where, program name)
  std::optional<int> ranks;
  std::string ranks_where;                                  ///< what the rank count was read from
  std::string ranks_problem;  ///< why the log's rank count is unusable ("" when absent or read)
  bool cputime = false;                                     ///< times are host-side (-C 1)
  bool complete = true;                                     ///< the text footer was seen
  std::vector<ResultRow> rows;
  std::vector<std::string> warnings;
};

// The most ranks a log may describe, as --workers allows.
constexpr std::int64_t kMaxRanks = limits::kMaxWorkers;

// Bytes per element of nccl-tests' type names (src/common.cu); others are not size-checked.
const std::map<std::string, std::int64_t>& type_sizes() {
  static const std::map<std::string, std::int64_t> sizes = {
      {"int8", 1},  {"uint8", 1},  {"char", 1},   {"int32", 4},    {"uint32", 4},   {"int", 4},
      {"int64", 8}, {"uint64", 8}, {"half", 2},   {"float", 4},    {"double", 8},   {"bfloat16", 2},
      {"f8e4m3", 1}, {"f8e5m2", 1}, {"fp8_e4m3", 1}, {"fp8_e5m2", 1}};
  return sizes;
}

std::string type_names_text() {
  std::string names;
  for (const auto& [name, bytes] : type_sizes()) names += (names.empty() ? "" : ", ") + name;
  return names;
}

std::string trim(const std::string& text) {
  const auto first = text.find_first_not_of(" \t\r");
  if (first == std::string::npos) return "";
  return text.substr(first, text.find_last_not_of(" \t\r") - first + 1);
}

std::vector<std::string> split_words(const std::string& line) {
  std::istringstream in(line);
  std::vector<std::string> words;
  for (std::string word; in >> word;) words.push_back(word);
  return words;
}

bool all_digits(const std::string& text) {
  return !text.empty() && text.find_first_not_of("0123456789") == std::string::npos;
}

// A decimal number as printf writes one, sign and exponent allowed (-8, 2.5, 1e+06); not nan/inf/hex.
// libstdc++'s std::regex recurses once per character matched, so it is given only short words and
// lines (kLongestRegexInput): a longer one is no number and no header line nccl-tests writes.
constexpr std::size_t kLongestRegexInput = 1024;

bool is_decimal_number(const std::string& text) {
  static const std::regex number(R"([-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?)");
  return text.size() <= kLongestRegexInput && std::regex_match(text, number);
}

// The length of a launcher's rank tag at the start of `line` (after any blanks): "[R]" or "[A,B]",
// followed by "<stdout>:", "<stderr>:" or a blank, which is included, or by anything else; or
// Slurm's `srun --label` "R: " (the helper's re-check: its log read as "a data row before the column
// header"). 0 when there is none. Parsed by hand, not with std::regex, so that a 100,000-character
// line cannot overflow the stack.
std::size_t tag_prefix_length(const std::string& line) {
  std::size_t i = 0;
  while (i < line.size() && std::isspace(static_cast<unsigned char>(line[i]))) ++i;
  const auto digits = [&] {
    const std::size_t start = i;
    while (i < line.size() && std::isdigit(static_cast<unsigned char>(line[i]))) ++i;
    return i > start;
  };
  if (i < line.size() && std::isdigit(static_cast<unsigned char>(line[i]))) {
    // srun --label: "R: " (a data row opens with a number too, but never with a colon after it).
    if (digits() && i + 1 < line.size() && line[i] == ':' && line[i + 1] == ' ') return i + 2;
    return 0;
  }
  if (i == line.size() || line[i] != '[') return 0;
  ++i;
  if (!digits()) return 0;
  if (i < line.size() && line[i] == ',') {
    ++i;
    if (!digits()) return 0;
  }
  if (i == line.size() || line[i] != ']') return 0;
  ++i;
  for (const char* tag : {"<stdout>:", "<stderr>:"})
    if (line.compare(i, std::strlen(tag), tag) == 0) return i + std::strlen(tag);
  if (i < line.size() && std::isspace(static_cast<unsigned char>(line[i]))) return i + 1;
  return i;
}

// Every layout starts with the size and count columns: a line that opens with an unsigned integer,
// with two numbers of any sign, or with a word starting with a digit before a whole number (a size
// in hex, 0x100000, or with a stray byte, 1048576<NUL>) is a data row (and an error when it is not
// a good one), never chatter to skip (the helper's re-check: such rows were dropped unsaid). NCCL's
// own lines open with a host name and a rank tag ("host:12:34 [0] NCCL INFO"), never a number.
bool is_data_row(const std::vector<std::string>& words) {
  // No words: a line of only whitespace that trim() keeps (\v, \f), which read words[0] past the end.
  if (words.empty()) return false;
  if (all_digits(words[0])) return true;
  if (words.size() < 2) return false;
  if (is_decimal_number(words[0]) && is_decimal_number(words[1])) return true;
  return std::isdigit(static_cast<unsigned char>(words[0][0])) && all_digits(words[1]);
}

std::int64_t parse_whole(const std::string& token, const std::string& where) {
  std::int64_t value = 0;
  const auto [end, error] = std::from_chars(token.data(), token.data() + token.size(), value);
  if (all_digits(token) && error == std::errc::result_out_of_range)
    throw InputError(where + ": '" + token + "' is out of range (at most " +
                     std::to_string(std::numeric_limits<std::int64_t>::max()) + ")");
  if (!all_digits(token) || error != std::errc() || end != token.data() + token.size())
    throw InputError(where + ": expected a whole number >= 0, got '" + token + "'");
  return value;
}

/// What a measured column holds, for parse_measured.
enum class MeasuredColumn {
  kTime,                 ///< a time: an infinite one is refused
  kValue,                ///< a bandwidth or #wrong: an infinite one is refused
  kValueBesideZeroTime,  ///< a bandwidth of a row whose time printed as 0 (nccl-tests divided by it; the
                         ///< row is skipped): an infinite one reads as nullopt
};

/// A printed measured number.
struct MeasuredToken {
  std::optional<double> value;  ///< nullopt: N/A, nan, or infinite beside a zero time
  bool nan = false;             ///< it printed nan (a failed computation; N/A is "not measured")
};

// A printed number as printf writes one: N/A and nan (printf's spelling of a failed measurement)
// are no value. An infinite value in any spelling (inf, INF, Infinity, -inf, or 1e400 past double)
// is refused: no failed measurement but an impossible one, as 1e300 is (the helper's re-checks: an
// "inf", then an "Infinity", time was skipped; an infinite algbw, busbw or #wrong was read as N/A
// and the row kept). Hex floats (0x1p3), which strtod takes but printf's %g never writes, are refused.
MeasuredToken parse_measured(const std::string& token, const std::string& where, MeasuredColumn column) {
  if (token == "N/A") return {};
  char* end = nullptr;
  const double value = std::strtod(token.c_str(), &end);
  const bool decimal = is_decimal_number(token) || std::isnan(value) || std::isinf(value);
  if (token.empty() || end != token.c_str() + token.size() || !decimal)
    throw InputError(where + ": expected a decimal number or N/A, got '" + token + "'");
  if (std::isinf(value) && column != MeasuredColumn::kValueBesideZeroTime)
    throw InputError(where + ": '" + token + "' is no measured " + (column == MeasuredColumn::kTime ? "time" : "value") +
                     " (a failed measurement prints N/A or nan)");
  if (std::isnan(value)) return {std::nullopt, true};
  if (!std::isfinite(value)) return {};
  if (value < 0) throw InputError(where + ": negative value " + token);
  return {value, false};
}

// ---------------------------------------------------------------------------------------------
// The text table

/// Where one measurement's columns are in a row.
struct ColumnGroup {
  std::size_t time = 0, algbw = 0, busbw = 0;
  std::optional<std::size_t> wrong;  ///< "#wrong" (a count) only; the old "error" column is a deviation
};

/// A root column's value: a decimal integer within int64 (nccl-tests writes a rank, or -1 for an
/// all-reduce); nullopt when it is not one. A value past int64 is refused as written, not
/// saturated to 9223372036854775807 as strtoll would.
std::optional<std::int64_t> parse_root(const std::string& text) {
  std::int64_t value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || error != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return value;
}

/// The layout of data rows, read from the column header ("# size count type redop root time ...").
struct Columns {
  std::string header_where;
  std::size_t tokens = 0;  ///< words per data row
  std::size_t size = 0, count = 0, type = 0;
  std::optional<std::size_t> redop, root;
  ColumnGroup out_of_place;
  std::optional<ColumnGroup> in_place;
  bool cputime = false;
};

std::optional<std::size_t> find_name(const std::vector<std::string>& names, const std::string& name) {
  for (std::size_t i = 0; i < names.size(); ++i)
    if (names[i] == name) return i;
  return std::nullopt;
}

// A header is the line naming size, count and algbw; anything else starting with '#' is not one.
std::optional<Columns> columns_from_header(const std::vector<std::string>& names, const std::string& where) {
  if (!find_name(names, "size") || !find_name(names, "count") || !find_name(names, "algbw")) return std::nullopt;
  Columns columns;
  columns.header_where = where;
  columns.size = *find_name(names, "size");
  columns.count = *find_name(names, "count");
  const auto type = find_name(names, "type");
  if (!type) throw InputError(where + ": column header without a 'type' column");
  columns.type = *type;
  columns.redop = find_name(names, "redop");
  columns.root = find_name(names, "root");
  // The timestamp column (-S 1) prints a date and a time: two words under one name.
  columns.tokens = names.size() + (find_name(names, "timestamp") ? 1 : 0);
  std::vector<ColumnGroup> groups;
  for (std::size_t i = 0; i < names.size(); ++i) {
    if (names[i] != "time" && names[i] != "cputime") continue;
    columns.cputime = names[i] == "cputime";
    if (i + 2 >= names.size() || names[i + 1] != "algbw" || names[i + 2] != "busbw")
      throw InputError(where + ": column header: '" + names[i] + "' is not followed by 'algbw busbw'");
    ColumnGroup group{i, i + 1, i + 2, std::nullopt};
    if (i + 3 < names.size() && names[i + 3] == "#wrong") group.wrong = i + 3;
    groups.push_back(group);
  }
  if (groups.empty() || groups.size() > 2)
    throw InputError(where + ": column header: expected 'time algbw busbw' once or twice (out-of-place, in-place), "
                     "found it " + std::to_string(groups.size()) + " times");
  columns.out_of_place = groups[0];
  if (groups.size() == 2) columns.in_place = groups[1];
  return columns;
}

Measurement measurement_from_words(const std::vector<std::string>& words, const ColumnGroup& group,
                                   const std::string& where) {
  Measurement measurement;
  measurement.time_us = parse_measured(words[group.time], where + ": column 'time'", MeasuredColumn::kTime).value;
  const MeasuredColumn bandwidth = measurement.time_us && *measurement.time_us == 0 ? MeasuredColumn::kValueBesideZeroTime
                                                                                   : MeasuredColumn::kValue;
  const auto read = [&](std::size_t index, const char* name, MeasuredColumn column) {
    MeasuredToken token = parse_measured(words[index], where + ": column '" + name + "'", column);
    if (token.nan) measurement.nan_columns.push_back(name);
    return token.value;
  };
  measurement.algbw_GBps = read(group.algbw, "algbw", bandwidth);
  measurement.busbw_GBps = read(group.busbw, "busbw", bandwidth);
  if (group.wrong) {
    measurement.wrong_elements = read(*group.wrong, "#wrong", MeasuredColumn::kValue);
    // A count of elements (the helper's re-check: 0.5 was "0.5 wrong elements; row skipped").
    if (measurement.wrong_elements && *measurement.wrong_elements != std::floor(*measurement.wrong_elements))
      throw InputError(where + ": column '#wrong': '" + words[*group.wrong] + "' is no whole count of wrong elements");
  }
  return measurement;
}

ResultRow row_from_words(const std::vector<std::string>& words, const Columns& columns, const std::string& where) {
  if (words.size() != columns.tokens)
    throw InputError(where + ": expected " + std::to_string(columns.tokens) + " columns as the header on " +
                     columns.header_where + " names, got " + std::to_string(words.size()) +
                     " (a truncated or mixed-up log?)");
  ResultRow row;
  row.where = where;
  row.size_bytes = parse_whole(words[columns.size], where + ": column 'size'");
  row.count = parse_whole(words[columns.count], where + ": column 'count'");
  row.type = words[columns.type];
  // As in a -J file (parse_json): nccl-tests prints its own type names; another is another program's row.
  if (type_sizes().count(row.type) == 0)
    throw InputError(where + ": column 'type': unknown data type '" + row.type + "' (nccl-tests' types: " +
                     type_names_text() + ")");
  if (columns.redop) row.redop = words[*columns.redop];
  if (columns.root) {
    const std::string& root = words[*columns.root];
    row.root = parse_root(root);
    if (!row.root) throw InputError(where + ": column 'root': expected a rank or -1, got '" + root + "'");
  }
  row.out_of_place = measurement_from_words(words, columns.out_of_place, where);
  if (columns.in_place) row.in_place = measurement_from_words(words, *columns.in_place, where);
  return row;
}

ParsedLog parse_text(const std::string& text, const std::string& path) {
  // Launchers that tag each line with its rank: Open MPI's mpirun --tag-output ("[1,0]<stdout>:"),
  // MPICH/Intel MPI's -prepend-rank ("[0] "). A line that opens with one is read without it.
  std::string prefix_where, prefix_text;
  static const std::regex rank_line(R"(^#\s*Rank\s+(\d+)\b)");
  static const std::regex program_line(R"(^#\s*Collective test starting:\s*(\S+))");
  ParsedLog log;
  log.format = "text";
  log.complete = false;
  std::optional<Columns> columns;
  std::set<int> ranks;
  bool ranks_truncated = false;
  std::string first_rank_where;
  std::istringstream in(text);
  std::string raw;
  for (int number = 1; std::getline(in, raw); ++number) {
    const std::string where = path + ": line " + std::to_string(number);
    std::string untagged = raw;
    if (const std::size_t tag = tag_prefix_length(raw)) {
      if (prefix_where.empty()) prefix_where = "line " + std::to_string(number), prefix_text = trim(raw.substr(0, tag));
      untagged = raw.substr(tag);
    }
    const std::string line = trim(untagged);
    if (line.empty()) continue;
    if (line[0] == '#') {
      if (line.size() > kLongestRegexInput) continue;  // no header line nccl-tests writes is this long
      std::smatch match;
      if (std::regex_search(line, match, program_line)) {
        log.programs.emplace_back(where, match[1].str());
      } else if (std::regex_search(line, match, rank_line)) {
        ranks.insert(std::stoi(match[1].str().substr(0, 9)));
        if (first_rank_where.empty()) first_rank_where = "line " + std::to_string(number);
        // The device report is cut at 2,048 bytes per process and then ends in "...".
        if (line.size() >= 3 && line.compare(line.size() - 3, 3, "...") == 0) ranks_truncated = true;
      } else if (line.find("Avg bus bandwidth") != std::string::npos) {
        log.complete = true;
      } else {
        std::vector<std::string> names = split_words(line.substr(1));
        if (auto header = columns_from_header(names, "line " + std::to_string(number))) {
          // all_reduce_perf prints one header per run (-d all and -o all included); a second one is a
          // second run, or the tables of several processes of a build without MPI run under mpirun.
          if (columns)
            throw InputError(where + ": a second column header (the first is on " + columns->header_where +
                             "): two runs in one log (or several processes of a build without MPI, each "
                             "printing its own table); import one run at a time");
          columns = std::move(header);
          log.cputime = columns->cputime;
        }
      }
      continue;
    }
    const std::vector<std::string> words = split_words(line);
    if (!is_data_row(words)) continue;  // NCCL INFO/WARN lines and other chatter between rows
    if (!columns) throw InputError(where + ": a data row before the column header ('# size count type ...')");
    log.rows.push_back(row_from_words(words, *columns, where));
    log.rows.back().where = "line " + std::to_string(number);
  }
  if (!ranks.empty()) {
    const bool numbered = *ranks.begin() == 0 && *ranks.rbegin() == static_cast<int>(ranks.size()) - 1;
    if (ranks_truncated || !numbered) {
      log.ranks_problem = "the device list ('#  Rank' lines from " + first_rank_where +
                          ") is incomplete (cut at 2,048 bytes per process, or ranks missing)";
    } else {
      log.ranks = static_cast<int>(ranks.size());
      log.ranks_where = "the " + std::to_string(ranks.size()) + " '# Rank' lines from " + first_rank_where;
    }
  }
  if (!prefix_where.empty())
    log.warnings.push_back(path + ": lines carry a launcher's rank prefix ('" + prefix_text + "', first on " +
                           prefix_where + "); read without it");
  if (!log.rows.empty() && !log.complete)
    log.warnings.push_back(path + ": no '# Avg bus bandwidth' footer after the table: the log may be cut short; "
                           "using the " + std::to_string(log.rows.size()) + " rows read");
  return log;
}

// ---------------------------------------------------------------------------------------------
// The -J JSON file: {"version", "args", "config": {"nthreads", "ngpus", "devices": [...]},
// "results": [{"size", "count", "type", "redop", "root", "out_of_place": {"time", "alg_bw",
// "bus_bw", "nwrong"}, "in_place": {...}}, ...], ...}. Other keys are left alone: the file is
// nccl-tests', and it grows keys from release to release.

// A -J measured field: null, absent or "N/A" is no value; "nan" (nccl-tests writes NaN as that
// string, or a NaN token) is no value and is listed in `nan_columns` under `key`.
std::optional<double> json_measured(const Json& object, const std::string& key, const std::string& where,
                                    std::vector<std::string>& nan_columns) {
  const auto it = object.find(key);
  if (it == object.end() || it->is_null()) return std::nullopt;
  if (it->is_string() && !is_nonfinite_token(*it)) {
    const std::string& text = it->get_ref<const std::string&>();
    if (text == "N/A") return std::nullopt;
    if (text == "nan" || text == "-nan") {
      nan_columns.push_back(key);
      return std::nullopt;
    }
    throw InputError(where + ": field '" + key + "': expected a number, got \"" + text + "\"");
  }
  if (is_nonfinite_token(*it)) {
    nan_columns.push_back(key);
    return std::nullopt;
  }
  return read_nonnegative_number(*it, where + ": field '" + key + "'");
}

std::optional<Measurement> json_measurement(const Json& result, const std::string& key, const std::string& where) {
  const auto it = result.find(key);
  if (it == result.end() || it->is_null()) return std::nullopt;
  const std::string inner = where + ": field '" + key + "'";
  if (!it->is_object()) throw InputError(inner + ": expected an object, got " + json_type_name(*it));
  Measurement measurement;
  const std::string time_key = it->contains("cpu_time") ? "cpu_time" : "time";
  if (const auto time = it->find(time_key); time != it->end() && is_nonfinite_token(*time) &&
                                            time->get_ref<const std::string&>().find("nfinity") != std::string::npos)
    throw InputError(inner + ": field '" + time_key + "': Infinity is no measured time (a failed one is \"nan\" or \"N/A\")");
  std::vector<std::string> time_nan;  // a nan time skips the row with its own warning
  measurement.time_us = json_measured(*it, time_key, inner, time_nan);
  measurement.algbw_GBps = json_measured(*it, "alg_bw", inner, measurement.nan_columns);
  measurement.busbw_GBps = json_measured(*it, "bus_bw", inner, measurement.nan_columns);
  measurement.wrong_elements = json_measured(*it, "nwrong", inner, measurement.nan_columns);
  if (measurement.wrong_elements && *measurement.wrong_elements != std::floor(*measurement.wrong_elements))
    throw InputError(inner + ": field 'nwrong': " + format_shortest(*measurement.wrong_elements) +
                     " is no whole count of wrong elements");
  return measurement;
}

// The -J format versions read here: JSON_FILE_VERSION of nccl-tests' src/util.cu, 1 when -J
// appeared and 3 in the 2025 releases. Their results[] and config fields read here are the same.
constexpr std::int64_t kFirstJsonVersion = 1;
constexpr std::int64_t kLastJsonVersion = 3;

void check_json_version(const Json& document, const std::string& path) {
  const std::string known = "nccl-tests -J versions " + std::to_string(kFirstJsonVersion) + " to " +
                            std::to_string(kLastJsonVersion) + " are read";
  const auto version = document.find("version");
  if (version == document.end())
    throw InputError(path + ": missing field 'version' (every nccl-tests -J file has one; " + known + ")");
  const auto number = integer_value(*version);
  if (!number || *number < kFirstJsonVersion || *number > kLastJsonVersion)
    throw InputError(path + ": field 'version': " + version->dump() + " is not a format this reader knows (" +
                     known + ")");
}

// Ranks from config: nthreads x ngpus per process, one config.devices entry per process (each
// lists its first rank only). Sets log.ranks, or log.ranks_problem naming the field at fault.
void read_json_ranks(const Json& document, ParsedLog& log) {
  const auto config = document.find("config");
  if (config == document.end() || !config->is_object()) {
    log.ranks_problem = config == document.end() ? "no field 'config'"
                                                 : "field 'config': expected an object, got " + json_type_name(*config);
    return;
  }
  std::int64_t per_process = 1;  // nthreads x ngpus, each capped at kMaxRanks so that it cannot overflow
  std::string factors;           // "nthreads 1 x ngpus 8"
  for (const char* key : {"nthreads", "ngpus"}) {
    const auto it = config->find(key);
    const auto value = it == config->end() ? std::nullopt : whole_number_value(*it);  // 8.0 as results' 8.0
    if (!value || *value < 1) {
      log.ranks_problem = "field 'config." + std::string(key) + "': " +
                          (it == config->end() ? std::string("missing") : "expected a whole number >= 1, got " + it->dump());
      return;
    }
    // Capped again after the product, so that the product with the device count (below) stays far
    // from overflowing: (2^24 + 1) x a JSON array's length.
    per_process = std::min(per_process * std::min(*value, kMaxRanks), kMaxRanks + 1);
    factors += (factors.empty() ? "" : " x ") + std::string(key) + " " + std::to_string(*value);
  }
  const auto devices = config->find("devices");
  if (devices == config->end() || !devices->is_array() || devices->empty()) {
    log.ranks_problem = "field 'config.devices': " +
                        (devices == config->end() ? std::string("missing")
                                                  : "expected a non-empty array (one entry per process), got " +
                                                        std::string(devices->is_array() ? "[]" : json_type_name(*devices)));
    return;
  }
  const std::int64_t ranks = per_process * static_cast<std::int64_t>(devices->size());
  log.ranks_where = "config: " + factors + " x " + std::to_string(devices->size()) + " processes";
  if (ranks > kMaxRanks) {
    log.ranks_problem = log.ranks_where + " is more than " + std::to_string(kMaxRanks) + " ranks";
    return;
  }
  log.ranks = static_cast<int>(ranks);
}

ParsedLog parse_json(const Json& document, const std::string& path) {
  ParsedLog log;
  log.format = "json";
  if (!document.is_object()) throw InputError(path + ": expected a JSON object (nccl-tests -J), got " +
                                              json_type_name(document));
  check_json_version(document, path);
  if (const auto args = document.find("args"); args != document.end() && args->is_array() && !args->empty() &&
                                               (*args)[0].is_string())
    log.programs.emplace_back(path + ": args[0]", (*args)[0].get<std::string>());
  read_json_ranks(document, log);
  const auto results = document.find("results");
  if (results == document.end()) throw InputError(path + ": missing field 'results' (not an nccl-tests -J file?)");
  if (!results->is_array()) throw InputError(path + ": field 'results': expected an array, got " +
                                             json_type_name(*results));
  for (std::size_t i = 0; i < results->size(); ++i) {
    const std::string where = path + ": results[" + std::to_string(i) + "]";
    ObjectReader reader((*results)[i], where);
    ResultRow row;
    row.where = "results[" + std::to_string(i) + "]";
    row.size_bytes = reader.required_integer("size", 0);
    row.count = reader.required_integer("count", 0);
    row.type = reader.required_string("type");
    // The -J writer spells nccl-tests' own type names; another name is another program's file.
    if (type_sizes().count(row.type) == 0)
      throw InputError(where + ": field 'type': unknown data type \"" + row.type + "\" (nccl-tests' types: " +
                       type_names_text() + ")");
    row.redop = trim(reader.required_string("redop"));
    const Json& root = reader.required("root");
    const std::string root_text = root.is_string() ? trim(root.get<std::string>()) : root.dump();
    row.root = parse_root(root_text);
    if (!row.root)
      throw InputError(where + ": field 'root': expected a rank or -1, got " + root.dump());
    row.out_of_place = json_measurement((*results)[i], "out_of_place", where);
    row.in_place = json_measurement((*results)[i], "in_place", where);
    log.rows.push_back(std::move(row));
  }
  return log;
}

// ---------------------------------------------------------------------------------------------
// Checks and the fit

// Printed bandwidths have 2 decimals (6 in JSON); 2% more covers older releases' float rounding.
bool roughly_equal(double printed, double expected) {
  return std::fabs(printed - expected) <= 0.02 + 0.02 * std::fabs(expected);
}

std::string number_text(double value) {
  std::ostringstream out;
  out << value;
  return out.str();
}

void check_program(const std::string& where, const std::string& program) {
  const std::string name = program.substr(program.find_last_of('/') == std::string::npos ? 0
                                                                                          : program.find_last_of('/') + 1);
  // Every nccl-tests program is called <collective>_perf[_mpi]; names it does not use pass here and
  // the row checks judge them.
  if (name.find("_perf") != std::string::npos && name.rfind("all_reduce_perf", 0) != 0)
    throw InputError(where + ": the log is from " + name + ", not all_reduce_perf; a link fit describes all-reduce");
}

void check_allreduce_row(const ResultRow& row, const std::string& path) {
  const std::string where = path + ": " + row.where;
  // The link format's limit (docs/formats.md, Limits): a larger row would be written into a link
  // file that `simulate --link` then refuses (2^60 bytes was once imported).
  if (row.size_bytes > limits::kMaxSizeBytes)
    throw InputError(where + ": size " + std::to_string(row.size_bytes) + " bytes: at most " +
                     std::to_string(limits::kMaxSizeBytes) + " (1 PiB; docs/formats.md, Limits)");
  if (row.redop == "none")
    throw InputError(where + ": redop 'none': a collective without reduction (all_gather, broadcast, alltoall, ...), "
                     "not an all-reduce");
  if (row.root && *row.root != -1)
    throw InputError(where + ": root " + std::to_string(*row.root) +
                     ": a rooted collective (reduce, broadcast), not an all-reduce (root -1)");
  const auto type_size = type_sizes().find(row.type);
  std::int64_t count_bytes = 0;
  // A count whose product with the type's size overflows 64 bits cannot be the row's size (it once
  // wrapped to a small number that matched).
  if (type_size != type_sizes().end() &&
      (__builtin_mul_overflow(row.count, static_cast<std::int64_t>(type_size->second), &count_bytes) ||
       row.size_bytes != count_bytes))
    throw InputError(where + ": size " + std::to_string(row.size_bytes) + " bytes is not count " +
                     std::to_string(row.count) + " x " + std::to_string(type_size->second) + " bytes (" + row.type +
                     (row.count > 0 ? "): the layout of all_gather or reduce_scatter, not an all-reduce"
                                    : "): a row of no elements moves no bytes"));
}

// The log's rank count, or --workers when the log has none or an unusable one (said in `warnings`).
int resolve_workers(const ParsedLog& log, const NcclTestsImportOptions& options, const std::string& path,
                    std::vector<std::string>& warnings) {
  if (log.ranks && options.workers && *log.ranks != *options.workers)
    throw FieldError("workers", "workers " + std::to_string(*options.workers) + ": " + path + " was run on " +
                     std::to_string(*log.ranks) + " ranks (" + log.ranks_where + ")");
  if (log.ranks) return *log.ranks;
  if (options.workers) {
    if (!log.ranks_problem.empty())
      warnings.push_back(path + ": " + log.ranks_problem + "; using --workers " + std::to_string(*options.workers));
    return *options.workers;
  }
  if (!log.ranks_problem.empty())
    throw InputError(path + ": " + log.ranks_problem + ", so the rank count is unknown; --workers N gives it");
  throw InputError(path + ": the log does not say how many ranks ran (no '#  Rank' lines); give --workers N");
}

}  // namespace

namespace {

// Row `row`'s sample of the link at `workers` ranks (the chosen placement's time), or nullopt with a
// warning for a row without a usable time (N/A, 0, wrong elements). Throws InputError naming the
// line for a time outside the link format's limits, and for bandwidths that are not size / time
// and algbw x 2(n-1)/n (columns out of place, a wrong rank count, not an all-reduce).
std::optional<LinkSample> row_sample(const ResultRow& row, const ParsedLog& log, const NcclTestsImportOptions& options,
                                     int workers, const std::string& workers_from, const std::string& path,
                                     std::vector<std::string>& warnings) {
  const char* placement = options.in_place ? "in-place" : "out-of-place";
  check_allreduce_row(row, path);
  const std::string where = path + ": " + row.where;
  const std::optional<Measurement>& chosen = options.in_place ? row.in_place : row.out_of_place;
  if (!chosen) {
    warnings.push_back(where + ": no " + std::string(placement) + " result; row skipped");
    return std::nullopt;
  }
  const std::string at_size = where + ": size " + std::to_string(row.size_bytes);
  if (!chosen->time_us || *chosen->time_us <= 0) {
    warnings.push_back(at_size + ": " + placement + " time is " + (chosen->time_us ? "0" : "N/A") +
                              "; row skipped");
    return std::nullopt;
  }
  if (chosen->wrong_elements && *chosen->wrong_elements > 0) {
    warnings.push_back(at_size + ": " + number_text(*chosen->wrong_elements) + " wrong elements (" +
                              placement + "); row skipped");
    return std::nullopt;
  }
  // A nan beside a usable time: nccl-tests computes the bandwidths from the time, so they cannot
  // be checked (the helper's re-check: the row was kept without a word).
  for (const std::string& column : chosen->nan_columns)
    warnings.push_back(at_size + ": " + placement + " " + column + " is nan" +
                              (column == "#wrong" || column == "nwrong" ? ": the row's correctness is unknown; row kept"
                                                                        : ": not checked against size / time; row kept"));
  const double time_s = *chosen->time_us / units::kMicrosecondsPerSecond;
  // Over a day, as the link fit refuses it, but named by its line (the helper's re-check: the
  // fit named its sample index).
  if (time_s > limits::kLongestTime_s)
    throw InputError(at_size + ": " + placement + " time " + number_text(*chosen->time_us) +
                     " us is over a day; not a measured all-reduce");
  if (time_s < limits::kShortestMeasuredTime_s)
    throw InputError(at_size + ": " + placement + " time " + number_text(*chosen->time_us) +
                     " us is less than 1 ns; not a measured all-reduce");
  const LinkSample sample = allreduce_sample(row.size_bytes, time_s, workers);
  // Host-side times (-C 1) need not match the bandwidths, which nccl-tests derives from GPU time.
  if (chosen->algbw_GBps && !log.cputime && !roughly_equal(*chosen->algbw_GBps, sample.algbw_GBps))
    throw InputError(at_size + ": algbw " + number_text(*chosen->algbw_GBps) + " GB/s is not size / time = " +
                     number_text(sample.algbw_GBps) + " GB/s (columns out of place?)");
  if (chosen->algbw_GBps && chosen->busbw_GBps) {
    const double expected = allreduce_busbw_GBps(*chosen->algbw_GBps, workers);
    if (!roughly_equal(*chosen->busbw_GBps, expected))
      throw InputError(at_size + ": busbw " + number_text(*chosen->busbw_GBps) + " GB/s is not algbw x 2(n-1)/n = " +
                       number_text(expected) + " GB/s for n = " + std::to_string(workers) + " ranks (from " +
                       workers_from + "): a wrong rank count, or not an all-reduce");
  }
  return sample;
}

}  // namespace

NcclTestsImport import_nccl_tests(const std::string& path, const NcclTestsImportOptions& options) {
  const std::string text = read_text_file(path);
  const auto first = text.find_first_not_of(" \t\r\n");
  if (first == std::string::npos)
    throw InputError(path + ": the file is empty (expected all_reduce_perf's output or its -J JSON file)");
  const ParsedLog log = text[first] == '{' ? parse_json(parse_json_text(text, path), path) : parse_text(text, path);
  for (const auto& [where, program] : log.programs) check_program(where, program);
  if (log.rows.empty())
    throw InputError(path + ": no data rows (expected all_reduce_perf's table: size count type redop root time "
                     "algbw busbw ...)");
  NcclTestsImport result;
  result.format = log.format;
  result.warnings = log.warnings;
  const int workers = resolve_workers(log, options, path, result.warnings);
  const std::string workers_from = log.ranks ? log.ranks_where : "--workers";
  if (workers == 1)
    throw InputError(path + ": a one-rank run (" + workers_from + "): its all-reduce moves nothing between ranks "
                     "(busbw 0; the times are local memory copies), so there is no link cost to fit; import a run "
                     "on 2 or more ranks");

  for (const auto& [where, program] : log.programs) result.program = program;
  std::vector<LinkSample> samples;
  const char* placement = options.in_place ? "in-place" : "out-of-place";
  for (const ResultRow& row : log.rows)
    if (auto sample = row_sample(row, log, options, workers, workers_from, path, result.warnings))
      samples.push_back(*sample);
  if (samples.empty())
    throw InputError(path + ": no usable rows: all " + std::to_string(log.rows.size()) + " rows lack an " + placement +
                     " time (N/A) or report wrong elements");

  const AlphaBetaFit fit = fit_alpha_beta(samples, options.fit_errors, path);
  if (auto poor = poor_fit_warning(fit, samples, path)) result.warnings.push_back(std::move(*poor));
  result.through_origin = fit.through_origin;
  result.link = fitted_link(std::move(samples), workers, "imported:nccl-tests", fit);
  return result;
}

}  // namespace syncplan
