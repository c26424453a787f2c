// Rank files (a JSON header line, three float32 arrays, an FNV-1a 64 checksum), their durable
// writes, the manifest, and the collective save and resume.
#include "runtime/checkpoint.hpp"

#include "core/errors.hpp"
#include "core/json_io.hpp"
#include "runtime/rank_agreement.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstring>

namespace syncplan {

namespace fs = std::filesystem;

namespace {

constexpr std::size_t kChecksumBytes = 8;
constexpr std::size_t kLongestHeader = 64 * 1024;  // a header line is a few hundred bytes

const char* host_byte_order() { return std::endian::native == std::endian::little ? "little" : "big"; }

Json fingerprint_json(const RunFingerprint& fingerprint) {
  return {{"schedule", hex64(fingerprint.schedule)}, {"model", hex64(fingerprint.model)},
          {"workload", hex64(fingerprint.workload)}};
}

// "0x" and 16 hex digits, as hex64 writes them.
std::uint64_t read_hex64(ObjectReader& reader, const std::string& key) {
  const std::string text = reader.required_string(key);
  const bool shaped = text.size() == 18 && text.starts_with("0x") &&
                      std::all_of(text.begin() + 2, text.end(), [](char c) { return std::isxdigit(static_cast<unsigned char>(c)); });
  if (!shaped) throw InputError(reader.where() + ": field '" + key + "': expected \"0x\" and 16 hex digits, got \"" + text + "\"");
  return std::stoull(text.substr(2), nullptr, 16);
}

RunFingerprint read_fingerprint(const Json& value, const std::string& where) {
  ObjectReader reader(value, where + ": field 'fingerprint'");
  RunFingerprint fingerprint;
  fingerprint.schedule = read_hex64(reader, "schedule");
  fingerprint.model = read_hex64(reader, "model");
  fingerprint.workload = read_hex64(reader, "workload");
  reader.reject_unknown_keys();
  return fingerprint;
}

// "ORIGIN: from another run: --seq 16 in the checkpoint, 32 in this run; ..." for each of
// `expected`'s settings that `found` (a manifest's "settings") holds with another value; else
// "ORIGIN: from another plan (0x... in the checkpoint, 0x... in this run)": the first differing
// part's hashes.
void require_fingerprint(const RunFingerprint& found, const RunFingerprint& expected, const std::string& origin,
                         const std::vector<std::pair<std::string, std::string>>& found_settings = {},
                         const std::vector<std::pair<std::string, std::string>>& expected_settings = {}) {
  if (found == expected) return;
  std::string differing;
  for (const auto& [flag, value] : expected_settings)
    for (const auto& [found_flag, found_value] : found_settings)
      if (flag == found_flag && value != found_value)
        differing += (differing.empty() ? "" : "; ") + flag + " " + found_value + " in the checkpoint, " + value +
                     " in this run";
  if (!differing.empty()) throw InputError(origin + ": from another run: " + differing);
  const auto [mine, theirs] = found.schedule != expected.schedule ? std::pair{found.schedule, expected.schedule}
                              : found.model != expected.model     ? std::pair{found.model, expected.model}
                                                                  : std::pair{found.workload, expected.workload};
  throw InputError(origin + ": from another " + differing_parts(expected, found) + " (" + hex64(mine) +
                   " in the checkpoint, " + hex64(theirs) + " in this run)");
}

std::uint64_t little_endian_u64(const char* bytes) {
  std::uint64_t value = 0;
  for (std::size_t b = 0; b < 8; ++b) value |= static_cast<std::uint64_t>(static_cast<unsigned char>(bytes[b])) << (8 * b);
  return value;
}

void append_floats(std::string& out, const std::vector<float>& values) {
  out.append(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(float));
}

std::vector<float> read_floats(const char* from, std::int64_t count) {
  std::vector<float> values(static_cast<std::size_t>(count));
  // No copy of 0 floats: an empty vector's data() may be null, which memcpy must not get.
  if (!values.empty()) std::memcpy(values.data(), from, values.size() * sizeof(float));
  return values;
}

[[noreturn]] void cannot_write(const fs::path& path, const std::string& reason) {
  throw InputError(path.string() + ": cannot write file (" + reason + ")");
}

}  // namespace

std::vector<std::int64_t> checkpoint_steps(const fs::path& dir) {
  std::vector<std::int64_t> steps;
  std::error_code error;
  for (const fs::directory_entry& entry : fs::directory_iterator(dir, error)) {
    const std::string name = entry.path().filename().string();
    if (!name.starts_with("step-") || name.size() == 5 || name.size() > 5 + 18 ||
        !std::all_of(name.begin() + 5, name.end(), [](char c) { return c >= '0' && c <= '9'; }))
      continue;
    steps.push_back(std::stoll(name.substr(5)));
  }
  std::sort(steps.begin(), steps.end());
  return steps;
}

fs::path checkpoint_step_folder(const fs::path& dir, std::int64_t step) {
  char name[32];
  std::snprintf(name, sizeof name, "step-%08lld", static_cast<long long>(step));
  return dir / name;
}

fs::path checkpoint_rank_file(const fs::path& dir, std::int64_t step, int rank) {
  return checkpoint_step_folder(dir, step) / ("rank-" + std::to_string(rank) + ".ckpt");
}

fs::path checkpoint_manifest_file(const fs::path& dir, std::int64_t step) {
  return checkpoint_step_folder(dir, step) / "manifest.json";
}

std::string encode_rank_checkpoint(const TrainingState& state, const CheckpointIdentity& identity) {
  SYNCPLAN_CHECK(state.adam_m.size() == state.parameters.size() && state.adam_v.size() == state.parameters.size());
  const Json header = {
      {"format", kCheckpointRankFormat},
      {"byte_order", host_byte_order()},
      {"rank", identity.rank},
      {"ranks", identity.ranks},
      {"step", state.step},
      {"fingerprint", fingerprint_json(identity.fingerprint)},
      {"period_position", state.period_position},
      {"data_cursor", state.data_cursor},
      {"rng_seed", hex64(state.rng_seed)},
      {"rng_counter", hex64(state.rng_counter)},
      {"adam_step", state.adam_step},
      {"parameters", state.parameters.size()},
  };
  std::string out = json_text(header) + "\n";
  out.reserve(out.size() + 3 * state.parameters.size() * sizeof(float) + kChecksumBytes);
  append_floats(out, state.parameters);
  append_floats(out, state.adam_m);
  append_floats(out, state.adam_v);
  const std::uint64_t checksum = fnv1a64(std::as_bytes(std::span<const char>(out)));
  for (std::size_t b = 0; b < kChecksumBytes; ++b) out.push_back(static_cast<char>((checksum >> (8 * b)) & 0xff));
  return out;
}

TrainingState decode_rank_checkpoint(const std::string& bytes, const std::string& origin,
                                     const CheckpointIdentity& expected, std::int64_t step,
                                     std::int64_t parameter_count) {
  const std::size_t newline = bytes.find('\n');
  if (newline == std::string::npos || newline > kLongestHeader)
    throw InputError(origin + ": corrupt (no header line in its first " + std::to_string(std::min(bytes.size(), kLongestHeader)) +
                     " bytes)");
  Json header;
  try {
    header = parse_json_text(bytes.substr(0, newline), origin);
  } catch (const InputError&) {
    throw InputError(origin + ": corrupt (its header line is not JSON)");
  }
  ObjectReader reader(header, origin);
  reader.require_format(kCheckpointRankFormat);
  const std::int64_t count = reader.required_integer("parameters", 0, INT64_MAX / 16);
  // The size first: a truncated file is the likely failure, and its checksum would only say "corrupt".
  const std::size_t expected_bytes = newline + 1 + 3 * static_cast<std::size_t>(count) * sizeof(float) + kChecksumBytes;
  if (bytes.size() < expected_bytes)
    throw InputError(origin + ": truncated (" + std::to_string(bytes.size()) + " bytes, expected " +
                     std::to_string(expected_bytes) + ")");
  if (bytes.size() > expected_bytes)
    throw InputError(origin + ": corrupt (" + std::to_string(bytes.size()) + " bytes, expected " +
                     std::to_string(expected_bytes) + ")");
  const std::size_t body = expected_bytes - kChecksumBytes;
  const std::uint64_t stored = little_endian_u64(bytes.data() + body);
  const std::uint64_t computed = fnv1a64(std::as_bytes(std::span<const char>(bytes.data(), body)));
  if (stored != computed)
    throw InputError(origin + ": corrupt (checksum " + hex64(stored) + ", its contents hash to " + hex64(computed) + ")");

  const std::string order = reader.required_string("byte_order");
  if (order != host_byte_order())
    throw InputError(origin + ": written on a " + order + "-endian machine, this one is " + host_byte_order() + "-endian");
  const auto rank = static_cast<int>(reader.required_integer("rank", 0, INT32_MAX));
  const auto ranks = static_cast<int>(reader.required_integer("ranks", 1, INT32_MAX));
  if (rank != expected.rank || ranks != expected.ranks)
    throw InputError(origin + ": written by rank " + std::to_string(rank) + " of " + std::to_string(ranks) +
                     ", this is rank " + std::to_string(expected.rank) + " of " + std::to_string(expected.ranks));
  TrainingState state;
  state.step = reader.required_integer("step", 0);
  if (state.step != step)
    throw InputError(origin + ": step " + std::to_string(state.step) + ", its folder says " + std::to_string(step));
  require_fingerprint(read_fingerprint(reader.required("fingerprint"), origin), expected.fingerprint, origin);
  if (count != parameter_count)
    throw InputError(origin + ": " + std::to_string(count) + " parameters, the model has " + std::to_string(parameter_count));
  state.period_position = reader.required_integer("period_position", 0);
  state.data_cursor = reader.required_integer("data_cursor", 0);
  state.rng_seed = read_hex64(reader, "rng_seed");
  state.rng_counter = read_hex64(reader, "rng_counter");
  // AdamW steps once per optimizer step: its t never passes the step (a forged 2^63 - 1 overflowed
  // the counter on resume and was written back negative).
  state.adam_step = reader.required_integer("adam_step", 0);
  if (state.adam_step > state.step)
    throw InputError(origin + ": field 'adam_step': " + std::to_string(state.adam_step) + " is more than the step " +
                     std::to_string(state.step) + " (AdamW steps once per optimizer step)");
  reader.reject_unknown_keys();
  const char* arrays = bytes.data() + newline + 1;
  const std::size_t array_bytes = static_cast<std::size_t>(count) * sizeof(float);
  state.parameters = read_floats(arrays, count);
  state.adam_m = read_floats(arrays + array_bytes, count);
  state.adam_v = read_floats(arrays + 2 * array_bytes, count);
  return state;
}

void write_file_durably(const fs::path& path, const std::string& bytes) {
  const fs::path temporary = path.string() + ".tmp";
  const int fd = ::open(temporary.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) cannot_write(path, std::strerror(errno));
  const auto fail = [&](int code) {
    ::close(fd);
    std::error_code ignored;
    fs::remove(temporary, ignored);
    cannot_write(path, std::strerror(code));
  };
  std::size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t wrote = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (wrote < 0 && errno == EINTR) continue;
    if (wrote < 0) fail(errno);
    done += static_cast<std::size_t>(wrote);
  }
  if (::fsync(fd) != 0) fail(errno);
  if (::close(fd) != 0) {
    const int code = errno;
    std::error_code ignored;
    fs::remove(temporary, ignored);
    cannot_write(path, std::strerror(code));
  }
  if (::rename(temporary.c_str(), path.c_str()) != 0) {
    const int code = errno;
    std::error_code ignored;
    fs::remove(temporary, ignored);
    cannot_write(path, std::strerror(code));
  }
  // The rename itself is durable once the folder's entry is on disk.
  const fs::path folder = path.has_parent_path() ? path.parent_path() : fs::path(".");
  const int folder_fd = ::open(folder.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (folder_fd >= 0) {
    ::fsync(folder_fd);
    ::close(folder_fd);
  }
}

void write_rank_checkpoint(const fs::path& dir, const TrainingState& state, const CheckpointIdentity& identity) {
  std::error_code error;
  const fs::path folder = checkpoint_step_folder(dir, state.step);
  fs::create_directories(folder, error);  // DIR too, as `mkdir -p`
  if (error) cannot_write(folder, error.message());
  write_file_durably(checkpoint_rank_file(dir, state.step, identity.rank), encode_rank_checkpoint(state, identity));
}

void write_checkpoint_manifest(const fs::path& dir, std::int64_t step, const CheckpointIdentity& identity) {
  Json files = Json::array();
  for (int r = 0; r < identity.ranks; ++r) files.push_back(checkpoint_rank_file(dir, step, r).filename().string());
  Json manifest = {{"format", kCheckpointManifestFormat},
                         {"step", step},
                         {"ranks", identity.ranks},
                         {"fingerprint", fingerprint_json(identity.fingerprint)},
                         {"files", files}};
  Json& settings = manifest["settings"] = Json::object();
  for (const auto& [flag, value] : identity.settings) settings[flag] = value;
  write_file_durably(checkpoint_manifest_file(dir, step), json_text(manifest, 1) + "\n");
}

std::int64_t latest_complete_checkpoint(const fs::path& dir, const CheckpointIdentity& expected) {
  std::error_code error;
  if (!fs::is_directory(dir, error)) throw InputError(dir.string() + ": no such checkpoint folder");
  const std::vector<std::int64_t> steps = checkpoint_steps(dir);
  for (auto step = steps.rbegin(); step != steps.rend(); ++step) {
    const fs::path path = checkpoint_manifest_file(dir, *step);
    if (!fs::exists(path, error)) continue;  // a step some rank never finished: not complete
    const std::string origin = path.string();
    const Json manifest = read_json_file(origin);  // the reader keeps a reference to it
    ObjectReader reader(manifest, origin);
    reader.require_format(kCheckpointManifestFormat);
    const std::int64_t written = reader.required_integer("step", 0);
    if (written != *step)
      throw InputError(origin + ": field 'step': " + std::to_string(written) + ", its folder says " + std::to_string(*step));
    const std::int64_t ranks = reader.required_integer("ranks", 1, INT32_MAX);
    if (ranks != expected.ranks)
      throw InputError(origin + ": written by " + std::to_string(ranks) + " ranks, this run has " +
                       std::to_string(expected.ranks));
    // Optional (manifests before it have none): {"--seq": "32", ...}, strings only.
    std::vector<std::pair<std::string, std::string>> settings;
    if (const Json* written_settings = reader.optional("settings")) {
      if (!written_settings->is_object())
        throw InputError(origin + ": field 'settings': expected an object of strings, got " + written_settings->type_name());
      for (const auto& [flag, value] : written_settings->items()) {
        if (!value.is_string())
          throw InputError(origin + ": field 'settings': '" + flag + "': expected a string, got " + value.type_name());
        settings.emplace_back(flag, value.get<std::string>());
      }
    }
    require_fingerprint(read_fingerprint(reader.required("fingerprint"), origin), expected.fingerprint, origin, settings,
                        expected.settings);
    reader.required("files");
    reader.reject_unknown_keys();
    return *step;
  }
  throw InputError(dir.string() + ": no complete checkpoint (no step-*/manifest.json)");
}

TrainingState read_rank_checkpoint(const fs::path& dir, std::int64_t step, const CheckpointIdentity& expected,
                                   std::int64_t parameter_count) {
  const fs::path path = checkpoint_rank_file(dir, step, expected.rank);
  return decode_rank_checkpoint(read_text_file(path.string()), path.string(), expected, step, parameter_count);
}

void save_checkpoint(const MpiSession& mpi, const fs::path& dir, const TrainingState& state,
                     const CheckpointIdentity& identity, double deadline_s, int keep, const WhileWaiting& poll) {
  SYNCPLAN_CHECK(keep >= 1 && identity.rank == mpi.rank() && identity.ranks == mpi.size());
  const std::string what = "checkpoint of step " + std::to_string(state.step);
  run_agreed(mpi, what, deadline_s, [&] { write_rank_checkpoint(dir, state, identity); }, poll);
  run_agreed(mpi, what, deadline_s, [&] {
    if (mpi.is_root()) write_checkpoint_manifest(dir, state.step, identity);
  }, poll);
  // The oldest step to keep: rank 0 sees the manifests, every rank removes its own older files.
  std::int64_t oldest_kept = -1;
  if (mpi.is_root()) {
    std::vector<std::int64_t> complete;
    std::error_code error;
    for (std::int64_t step : checkpoint_steps(dir))
      if (fs::exists(checkpoint_manifest_file(dir, step), error)) complete.push_back(step);
    if (complete.size() > static_cast<std::size_t>(keep)) oldest_kept = complete[complete.size() - keep];
  }
  oldest_kept = broadcast_within(mpi, oldest_kept, 0, what, deadline_s, poll);
  for (std::int64_t step : checkpoint_steps(dir)) {
    if (step >= oldest_kept) break;
    std::error_code ignored;  // a file already gone, or another rank's folder: nothing to undo
    if (mpi.is_root()) fs::remove(checkpoint_manifest_file(dir, step), ignored);
    fs::remove(checkpoint_rank_file(dir, step, identity.rank), ignored);
    fs::remove(checkpoint_step_folder(dir, step), ignored);  // only once it is empty
  }
}

TrainingState load_checkpoint(const MpiSession& mpi, const fs::path& dir, const CheckpointIdentity& expected,
                              std::int64_t parameter_count, double deadline_s, const WhileWaiting& poll) {
  SYNCPLAN_CHECK(expected.rank == mpi.rank() && expected.ranks == mpi.size());
  const std::string what = "resume from " + dir.string();
  std::int64_t step = -1;
  run_agreed(mpi, what, deadline_s, [&] {
    if (mpi.is_root()) step = latest_complete_checkpoint(dir, expected);
  }, poll);
  step = broadcast_within(mpi, step, 0, what, deadline_s, poll);
  TrainingState state;
  run_agreed(mpi, what, deadline_s, [&] { state = read_rank_checkpoint(dir, step, expected, parameter_count); }, poll);
  return state;
}

}  // namespace syncplan
