// Checkpoints without MPI (runtime/checkpoint.hpp): a rank file round trip bit for bit, every
// refusal (truncated, corrupt, another rank, run or model size), the latest complete step, and
// AdamW restored from its saved moments continuing bit-identically. The collective save and
// resume run under mpirun in test_arrivals_cases.sh (checkpoint case).
#include "core/errors.hpp"
#include "model/adamw.hpp"
#include "runtime/checkpoint.hpp"

#include <catch2/catch.hpp>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <unistd.h>

using namespace syncplan;
namespace fs = std::filesystem;

namespace {

struct TempFolder {
  fs::path path;
  TempFolder() {
    char pattern[] = "/tmp/syncplan-checkpoint-XXXXXX";
    path = mkdtemp(pattern);
  }
  ~TempFolder() { fs::remove_all(path); }
};

// A state whose every field differs from the defaults, with values that are not round in float.
TrainingState sample_state(std::int64_t step) {
  TrainingState state;
  state.step = step;
  state.period_position = 3;
  state.data_cursor = 4096;
  state.rng_seed = 0xfedcba9876543210ull;
  state.rng_counter = 77;
  state.adam_step = step;
  for (int i = 0; i < 5; ++i) {
    state.parameters.push_back(0.1f * static_cast<float>(i) - 0.333f);
    state.adam_m.push_back(1e-7f * static_cast<float>(i + 1));
    state.adam_v.push_back(3.5e-12f / static_cast<float>(i + 1));
  }
  return state;
}

CheckpointIdentity sample_identity(int rank = 1) {
  return {RunFingerprint{0x1111, 0x2222, 0x3333}, rank, 2};
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

}  // namespace

TEST_CASE("checkpoint: a rank file reads back bit for bit", "[checkpoint]") {
  const TrainingState state = sample_state(40);
  const std::string bytes = encode_rank_checkpoint(state, sample_identity());
  // Size: the header line, 3 arrays of 5 float32 (60 bytes) and the 8-byte checksum.
  CHECK(bytes.size() == bytes.find('\n') + 1 + 60 + 8);
  const TrainingState back = decode_rank_checkpoint(bytes, "f.ckpt", sample_identity(), 40, 5);
  CHECK(back.step == 40);
  CHECK(back.period_position == 3);
  CHECK(back.data_cursor == 4096);
  CHECK(back.rng_seed == 0xfedcba9876543210ull);
  CHECK(back.rng_counter == 77);
  CHECK(back.adam_step == 40);
  CHECK(same_bits(back.parameters, state.parameters));
  CHECK(same_bits(back.adam_m, state.adam_m));
  CHECK(same_bits(back.adam_v, state.adam_v));
}

TEST_CASE("checkpoint: truncated, corrupt and foreign rank files are refused in one line", "[checkpoint]") {
  const std::string bytes = encode_rank_checkpoint(sample_state(40), sample_identity());
  const CheckpointIdentity me = sample_identity();
  const std::size_t full = bytes.size();
  CHECK_THROWS_WITH(decode_rank_checkpoint(bytes.substr(0, full - 1), "f.ckpt", me, 40, 5),
                    "f.ckpt: truncated (" + std::to_string(full - 1) + " bytes, expected " + std::to_string(full) + ")");
  CHECK_THROWS_WITH(decode_rank_checkpoint(bytes + "x", "f.ckpt", me, 40, 5), Catch::StartsWith("f.ckpt: corrupt ("));
  CHECK_THROWS_WITH(decode_rank_checkpoint("", "f.ckpt", me, 40, 5), "f.ckpt: corrupt (no header line in its first 0 bytes)");
  CHECK_THROWS_WITH(decode_rank_checkpoint("{oops\n", "f.ckpt", me, 40, 5), "f.ckpt: corrupt (its header line is not JSON)");
  std::string flipped = bytes;
  flipped[bytes.find('\n') + 9] ^= 0x01;  // one bit of the second parameter
  CHECK_THROWS_WITH(decode_rank_checkpoint(flipped, "f.ckpt", me, 40, 5), Catch::StartsWith("f.ckpt: corrupt (checksum 0x"));
  CHECK_THROWS_WITH(decode_rank_checkpoint(bytes, "f.ckpt", sample_identity(0), 40, 5),
                    "f.ckpt: written by rank 1 of 2, this is rank 0 of 2");
  CHECK_THROWS_WITH(decode_rank_checkpoint(bytes, "f.ckpt", me, 30, 5), "f.ckpt: step 40, its folder says 30");
  CheckpointIdentity other_plan = me;
  other_plan.fingerprint.schedule = 0x9999;
  CHECK_THROWS_WITH(decode_rank_checkpoint(bytes, "f.ckpt", other_plan, 40, 5),
                    "f.ckpt: from another plan (0x0000000000001111 in the checkpoint, 0x0000000000009999 in this run)");
  CheckpointIdentity other_model = me;
  other_model.fingerprint.model = 0x9999;
  CHECK_THROWS_WITH(decode_rank_checkpoint(bytes, "f.ckpt", other_model, 40, 5), Catch::StartsWith("f.ckpt: from another model ("));
  CHECK_THROWS_WITH(decode_rank_checkpoint(bytes, "f.ckpt", me, 40, 6), "f.ckpt: 5 parameters, the model has 6");
  // AdamW's t past the step (a forged 2^63 - 1 overflowed the counter on resume): refused; the
  // writer's own file (t = step) is read above.
  TrainingState ahead = sample_state(40);
  ahead.adam_step = 41;
  CHECK_THROWS_WITH(decode_rank_checkpoint(encode_rank_checkpoint(ahead, me), "f.ckpt", me, 40, 5),
                    "f.ckpt: field 'adam_step': 41 is more than the step 40 (AdamW steps once per optimizer step)");
}

TEST_CASE("checkpoint folder: the latest step with a manifest is the one resumed", "[checkpoint]") {
  const TempFolder dir;
  const CheckpointIdentity rank0{sample_identity().fingerprint, 0, 2}, rank1 = sample_identity();
  CHECK_THROWS_WITH(latest_complete_checkpoint(dir.path / "absent", rank0),
                    (dir.path / "absent").string() + ": no such checkpoint folder");
  CHECK_THROWS_WITH(latest_complete_checkpoint(dir.path, rank0),
                    dir.path.string() + ": no complete checkpoint (no step-*/manifest.json)");
  // Steps 10 and 20 complete; step 30 has rank 0's file only (rank 1 died before writing): not complete.
  for (std::int64_t step : {10, 20, 30}) {
    write_rank_checkpoint(dir.path, sample_state(step), rank0);
    if (step == 30) continue;
    write_rank_checkpoint(dir.path, sample_state(step), rank1);
    write_checkpoint_manifest(dir.path, step, rank0);
  }
  CHECK(fs::exists(dir.path / "step-00000020" / "rank-1.ckpt"));
  CHECK_FALSE(fs::exists(dir.path / "step-00000020" / "rank-1.ckpt.tmp"));
  CHECK(latest_complete_checkpoint(dir.path, rank0) == 20);
  const TrainingState back = read_rank_checkpoint(dir.path, 20, rank1, 5);
  CHECK(same_bits(back.parameters, sample_state(20).parameters));

  // The same folder seen by a run of 4 ranks, or of another plan: refused naming the manifest.
  const std::string manifest = (dir.path / "step-00000020" / "manifest.json").string();
  CHECK_THROWS_WITH(latest_complete_checkpoint(dir.path, {rank0.fingerprint, 0, 4}),
                    manifest + ": written by 2 ranks, this run has 4");
  CheckpointIdentity other = rank0;
  other.fingerprint.workload = 0x4444;
  CHECK_THROWS_WITH(latest_complete_checkpoint(dir.path, other),
                    manifest + ": from another batch/sequence/ranks (0x0000000000003333 in the checkpoint, "
                               "0x0000000000004444 in this run)");
  // With the settings in the manifest, the one that differs is named (two hashes
  // told a user nothing); equal settings (another plan file's contents under the same name) keep
  // the hashes.
  const TempFolder named;
  CheckpointIdentity saved{rank0.fingerprint, 0, 2, {{"--batch", "4"}, {"--seq", "16"}, {"--plan", "p.json"}}};
  write_rank_checkpoint(named.path, sample_state(10), saved);
  write_checkpoint_manifest(named.path, 10, saved);
  const std::string named_manifest = (named.path / "step-00000010" / "manifest.json").string();
  CheckpointIdentity longer = saved;
  longer.fingerprint.workload = 0x4444;
  longer.settings[1].second = "32";
  CHECK_THROWS_WITH(latest_complete_checkpoint(named.path, longer),
                    named_manifest + ": from another run: --seq 16 in the checkpoint, 32 in this run");
  longer.settings[0].second = "8";
  CHECK_THROWS_WITH(latest_complete_checkpoint(named.path, longer),
                    named_manifest + ": from another run: --batch 4 in the checkpoint, 8 in this run; --seq 16 in the "
                                     "checkpoint, 32 in this run");
  CheckpointIdentity same_names = saved;
  same_names.fingerprint.schedule = 0x9999;
  CHECK_THROWS_WITH(latest_complete_checkpoint(named.path, same_names), Catch::StartsWith(named_manifest + ": from another plan (0x"));
  CHECK(latest_complete_checkpoint(named.path, saved) == 10);

  // A rank file cut short after its manifest was written (a disk that lost its tail).
  const fs::path file = dir.path / "step-00000020" / "rank-1.ckpt";
  fs::resize_file(file, fs::file_size(file) - 3);
  CHECK_THROWS_WITH(read_rank_checkpoint(dir.path, 20, rank1, 5), Catch::StartsWith(file.string() + ": truncated ("));
  fs::remove(file);
  CHECK_THROWS_WITH(read_rank_checkpoint(dir.path, 20, rank1, 5),
                    file.string() + ": cannot read file (No such file or directory)");
}

TEST_CASE("checkpoint: a write that cannot be made fails whole, leaving nothing", "[checkpoint]") {
  const TempFolder dir;
  // A missing DIR is made (mkdir -p); one under a regular file cannot be.
  write_rank_checkpoint(dir.path / "new", sample_state(10), sample_identity());
  CHECK(fs::is_regular_file(dir.path / "new" / "step-00000010" / "rank-1.ckpt"));
  std::ofstream(dir.path / "file") << "not a folder";
  CHECK_THROWS_WITH(write_rank_checkpoint(dir.path / "file", sample_state(10), sample_identity()),
                    Catch::StartsWith((dir.path / "file" / "step-00000010").string() + ": cannot write file ("));
  CHECK_THROWS_WITH(write_file_durably(dir.path / "absent" / "x", "text"),
                    (dir.path / "absent" / "x").string() + ": cannot write file (No such file or directory)");
  CHECK_FALSE(fs::exists(dir.path / "absent"));
  CHECK(fs::file_size(dir.path / "file") == 12);
}

TEST_CASE("AdamW restored from its saved moments and step continues bit-identically", "[checkpoint][adamw]") {
  // Two optimizers on the same 3 parameters and gradients: one steps 4 times; the other steps
  // twice, its state goes through a rank file, and a fresh AdamW restored from it steps twice more.
  const std::vector<std::vector<float>> gradients = {{0.5f, -1.0f, 2.0f}, {0.25f, 0.75f, -0.125f},
                                                     {-0.3f, 0.1f, 0.9f}, {1.5f, -0.5f, 0.05f}};
  AdamW straight(3);
  std::vector<float> p_straight = {1.0f, -2.0f, 0.5f};
  for (const auto& g : gradients) straight.step(p_straight, g);

  AdamW first(3);
  std::vector<float> p = {1.0f, -2.0f, 0.5f};
  first.step(p, gradients[0]);
  first.step(p, gradients[1]);
  TrainingState state;
  state.step = 2;
  state.adam_step = first.step_count();
  state.parameters = p;
  state.adam_m.assign(first.first_moment().begin(), first.first_moment().end());
  state.adam_v.assign(first.second_moment().begin(), first.second_moment().end());
  const CheckpointIdentity identity{RunFingerprint{1, 2, 3}, 0, 1};
  const TrainingState back = decode_rank_checkpoint(encode_rank_checkpoint(state, identity), "f", identity, 2, 3);
  AdamW resumed(3);
  resumed.restore(back.adam_m, back.adam_v, back.adam_step);
  std::vector<float> p_resumed = back.parameters;
  resumed.step(p_resumed, gradients[2]);
  resumed.step(p_resumed, gradients[3]);
  CHECK(resumed.step_count() == 4);
  CHECK(same_bits(p_resumed, p_straight));
  CHECK(same_bits({resumed.first_moment().begin(), resumed.first_moment().end()},
                  {straight.first_moment().begin(), straight.first_moment().end()}));

  // Resumed without the moments (a fresh optimizer, the torchft mistake) it ends elsewhere.
  AdamW forgetful(3);
  std::vector<float> p_forgetful = back.parameters;
  forgetful.step(p_forgetful, gradients[2]);
  forgetful.step(p_forgetful, gradients[3]);
  CHECK_FALSE(same_bits(p_forgetful, p_straight));

  CHECK_THROWS_WITH(resumed.restore(std::vector<float>(2), back.adam_v, 2),
                    "AdamW state: first moment has 2 elements, the optimizer 3");
  CHECK_THROWS_WITH(resumed.restore(back.adam_m, back.adam_v, -1), "AdamW state: step count -1 is negative");
}
