// libFuzzer harness of the checkpoint readers (`run --resume`, docs/formats.md "Checkpoint"): a
// rank file decoded by decode_rank_checkpoint and, after a NUL byte, a manifest read by
// latest_complete_checkpoint from a temporary folder. Neither calls MPI.
#include "runtime/checkpoint.hpp"
#include "fuzz_support.hpp"
#include "structure_mutator.hpp"

#include <cstring>

using namespace syncplan;

namespace {

// The identity a rank file states in its header, so that the decoder gets past its checks to the
// arrays (a fixed identity would refuse nearly every input at the rank or fingerprint check); a
// fixed one (rank 0 of 2, step 0, no parameters) when the header is not readable.
struct Expected {
  CheckpointIdentity identity{{1, 2, 3}, 0, 2};
  std::int64_t step = 0, parameters = 0;
};

Expected expected_from_header(const std::string& bytes) {
  Expected expected;
  try {
    const Json header = parse_json_text(bytes.substr(0, bytes.find('\n')), "header");
    const auto number = [&](const char* key, std::int64_t fallback) {
      const auto it = header.find(key);
      if (it == header.end()) return fallback;
      const auto value = integer_value(*it);
      return value ? *value : fallback;
    };
    const auto hex = [&](const Json& object, const char* key, std::uint64_t fallback) {
      const auto it = object.find(key);
      if (it == object.end() || !it->is_string() || it->get<std::string>().size() != 18) return fallback;
      try {
        return static_cast<std::uint64_t>(std::stoull(it->get<std::string>().substr(2), nullptr, 16));
      } catch (const std::exception&) {
        return fallback;
      }
    };
    expected.identity.rank = static_cast<int>(number("rank", 0));
    expected.identity.ranks = static_cast<int>(number("ranks", 2));
    expected.step = number("step", 0);
    expected.parameters = number("parameters", 0);
    if (const auto it = header.find("fingerprint"); it != header.end() && it->is_object()) {
      RunFingerprint& f = expected.identity.fingerprint;
      f = {hex(*it, "schedule", f.schedule), hex(*it, "model", f.model), hex(*it, "workload", f.workload)};
    }
  } catch (const std::exception&) {
  }
  return expected;
}

bool same_floats(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0);
}

void decode_rank_file(std::string bytes, bool fix_checksum) {
  // Half the inputs get a correct checksum, so that mutations reach the header checks and arrays.
  if (fix_checksum && bytes.size() >= 8) {
    const std::size_t body = bytes.size() - 8;
    const std::uint64_t checksum = fnv1a64(std::string_view(bytes.data(), body));
    for (std::size_t b = 0; b < 8; ++b) bytes[body + b] = static_cast<char>((checksum >> (8 * b)) & 0xff);
  }
  const Expected expected = expected_from_header(bytes);
  const TrainingState state =
      decode_rank_checkpoint(bytes, "rank-0.ckpt", expected.identity, expected.step, expected.parameters);
  // The round trip: what the decoder read, encoded as the trainer writes it, decodes to the same state.
  TrainingState again;
  try {
    again = decode_rank_checkpoint(encode_rank_checkpoint(state, expected.identity), "again.ckpt", expected.identity,
                                   expected.step, expected.parameters);
  } catch (const InputError& e) {
    fuzz::fail(std::string("a rank file written by syncplan is refused on reading back: ") + e.what());
  }
  const bool same = again.step == state.step && again.period_position == state.period_position &&
                    again.data_cursor == state.data_cursor && again.rng_seed == state.rng_seed &&
                    again.rng_counter == state.rng_counter && again.adam_step == state.adam_step &&
                    same_floats(again.parameters, state.parameters) && same_floats(again.adam_m, state.adam_m) &&
                    same_floats(again.adam_v, state.adam_v);
  if (!same) fuzz::fail("a rank file read back differs from the one written");
}

// The fuzzer's checkpoint folder, removed when the process ends (libFuzzer exits normally at the
// end of a run), so that no run leaves it in the temporary directory.
struct ScratchCheckpoint {
  std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("syncplan-fuzz-" + std::to_string(::getpid()) + "-checkpoint");
  ~ScratchCheckpoint() {
    std::error_code ignored;
    std::filesystem::remove_all(dir, ignored);
  }
};

// A manifest as DIR/step-00000000/manifest.json, found by latest_complete_checkpoint.
void read_manifest(const std::string& text) {
  static const ScratchCheckpoint scratch;
  const std::filesystem::path& dir = scratch.dir;
  std::filesystem::create_directories(checkpoint_step_folder(dir, 0));
  {
    std::ofstream out(checkpoint_manifest_file(dir, 0), std::ios::binary | std::ios::trunc);
    out << text;
    if (!out) fuzz::fail("cannot write " + checkpoint_manifest_file(dir, 0).string());
  }
  const CheckpointIdentity identity{{1, 2, 3}, 0, 2};
  fuzz::refused_or_read([&] {
    if (latest_complete_checkpoint(dir, identity) != 0) fuzz::fail("a manifest of step 0 gave another step");
  });
}

}  // namespace

SYNCPLAN_FUZZ_STRUCTURE_MUTATOR()

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text = fuzz::text_of(data, size);
  // The rank file may hold NULs (its arrays): the manifest is what follows the last NUL, when the
  // input ends with "\0M" followed by a manifest; otherwise the whole input is a rank file.
  const std::size_t marker = text.rfind(std::string("\0M", 2));
  const std::string rank_file = marker == std::string::npos ? text : text.substr(0, marker);
  fuzz::refused_or_read([&] { decode_rank_file(rank_file, size % 2 == 0); });
  if (marker != std::string::npos) read_manifest(text.substr(marker + 2));
  return 0;
}
