// Checkpoints of `syncplan run` (docs/formats.md, "Checkpoint"): each rank's training state in
// its own file, written whole or not at all, a manifest that makes a step complete once every
// rank's file is in place, and the checks that refuse to resume from another run's folder.
#pragma once

#include "comm/mpi_session.hpp"
#include "runtime/fingerprint.hpp"
#include "runtime/rank_agreement.hpp"

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace syncplan {

inline constexpr const char* kCheckpointManifestFormat = "syncplan.checkpoint/v1";
inline constexpr const char* kCheckpointRankFormat = "syncplan.checkpoint-rank/v1";

/// Everything one rank needs to continue training exactly where it stopped. The RNG is counter
/// based (core/counter_random.hpp: every draw is a pure function of a seed and an index), so a
/// 64-bit seed and a 64-bit counter are its whole state.
struct TrainingState {
  std::int64_t step = 0;             ///< optimizer steps done (iterations completed), >= 0
  std::int64_t period_position = 0;  ///< h of the next iteration in the period, >= 0
  std::int64_t data_cursor = 0;      ///< ByteShard::cursor() before the next batch, >= 0
  std::uint64_t rng_seed = 0;        ///< the run's seed
  std::uint64_t rng_counter = 0;     ///< draws (or steps) the RNG has advanced by
  std::int64_t adam_step = 0;        ///< AdamW's step counter t, >= 0
  std::vector<float> parameters;     ///< the parameter arena (CpuGraph::parameters()), P elements
  std::vector<float> adam_m;         ///< AdamW's first moment, P elements
  std::vector<float> adam_v;         ///< AdamW's second moment, P elements
};

/// Which run a checkpoint belongs to: it resumes only into the same fingerprint and rank count.
struct CheckpointIdentity {
  RunFingerprint fingerprint;  ///< fingerprint_run of the run
  int rank = 0;                ///< this rank, 0 .. ranks - 1
  int ranks = 1;               ///< ranks of the run
  /// The command-line settings behind the fingerprint as people read them, flag -> value text
  /// ({"--batch", "4"}, {"--seq", "32"}, {"--model", "tiny-gpt"}, {"--strategy", "flsgd"},
  /// {"--period", "4"} or {"--plan", "plan.json"}): kept in the manifest so that a resume into
  /// another run names the setting that differs ("--seq: 16 in the checkpoint, 32 in this run")
  /// rather than two hashes. Empty: the hashes only.
  std::vector<std::pair<std::string, std::string>> settings{};
};

/// The steps of the step folders in `dir` (names `step-<digits>`, complete or not), ascending;
/// empty when `dir` does not exist or holds none. Throws nothing.
std::vector<std::int64_t> checkpoint_steps(const std::filesystem::path& dir);

/// DIR/step-NNNNNNNN (the step zero-padded to 8 digits; longer when larger).
std::filesystem::path checkpoint_step_folder(const std::filesystem::path& dir, std::int64_t step);
/// DIR/step-NNNNNNNN/rank-R.ckpt
std::filesystem::path checkpoint_rank_file(const std::filesystem::path& dir, std::int64_t step, int rank);
/// DIR/step-NNNNNNNN/manifest.json
std::filesystem::path checkpoint_manifest_file(const std::filesystem::path& dir, std::int64_t step);

/// A rank file's bytes: one JSON header line (format, byte order, rank, ranks, step, fingerprint,
/// the scalar fields, P), the three float32 arrays of P elements in host byte order, then the
/// FNV-1a 64 of everything before it as 8 little-endian bytes. The arrays must have one length.
std::string encode_rank_checkpoint(const TrainingState& state, const CheckpointIdentity& identity);

/// Reads a rank file's bytes back; `origin` names it in messages. Throws InputError "ORIGIN:
/// truncated (N bytes, expected M)", "ORIGIN: corrupt (...)" (no header, a checksum that does
/// not match, an unreadable header), "ORIGIN: written by rank R of N, this is rank R' of N'",
/// "ORIGIN: step S, the manifest says S'", "ORIGIN: another plan/model/... (...)" when its
/// fingerprint is not `expected`'s, "ORIGIN: P parameters, the model has P'".
TrainingState decode_rank_checkpoint(const std::string& bytes, const std::string& origin,
                                     const CheckpointIdentity& expected, std::int64_t step,
                                     std::int64_t parameter_count);

/// Writes `bytes` to `path` durably and whole or not at all: PATH.tmp, fsync, rename over PATH,
/// fsync of the folder. Throws InputError "PATH: cannot write file (REASON)" and removes the
/// temporary file on failure.
void write_file_durably(const std::filesystem::path& path, const std::string& bytes);

/// This rank's part of a checkpoint: creates DIR/step-N (and DIR, as `mkdir -p`) and writes its
/// rank file durably. Throws InputError "FOLDER: cannot write file (REASON)" when a folder cannot
/// be made, or write_file_durably's.
void write_rank_checkpoint(const std::filesystem::path& dir, const TrainingState& state,
                           const CheckpointIdentity& identity);
/// Rank 0's part, once every rank's file is in place: the manifest of step `step`, durably.
void write_checkpoint_manifest(const std::filesystem::path& dir, std::int64_t step, const CheckpointIdentity& identity);

/// The latest complete step in `dir` (the largest N with a readable manifest), checked against
/// `expected`: throws InputError "DIR: no such checkpoint folder", "DIR: no complete checkpoint
/// (no step-*/manifest.json)", "MANIFEST: written by N ranks, this run has M", "MANIFEST: from
/// another run: --seq 16 in the checkpoint, 32 in this run" (each setting of `expected.settings`
/// the manifest's "settings" holds another value for), else "MANIFEST: from another plan (0x...
/// in the checkpoint, 0x... in this run)" (or model, batch/sequence/ranks), or a manifest's own
/// format error.
std::int64_t latest_complete_checkpoint(const std::filesystem::path& dir, const CheckpointIdentity& expected);

/// Reads and checks this rank's file of step `step` (decode_rank_checkpoint; a missing file is
/// "PATH: cannot read file (...)").
TrainingState read_rank_checkpoint(const std::filesystem::path& dir, std::int64_t step, const CheckpointIdentity& expected,
                                   std::int64_t parameter_count);

/// Collective: every rank writes its file; once all are in place (agreed through `mpi`), rank 0
/// writes the manifest, then the files of complete steps older than the newest `keep` (>= 1) are
/// removed (each rank its own, rank 0 the manifests). A failure on any rank (a full disk, a
/// missing folder) throws the same InputError on every rank and leaves no manifest for this step.
/// Each agreement must complete within `deadline_s` seconds (the run's --timeout-s), else
/// CommTimeout "bucket 'checkpoint of step N': ..." (a rank died or hangs: end the job); `poll`
/// runs while an agreement is in flight (the trainer's Arrivals heartbeat).
void save_checkpoint(const MpiSession& mpi, const std::filesystem::path& dir, const TrainingState& state,
                     const CheckpointIdentity& identity, double deadline_s, int keep = 2,
                     const WhileWaiting& poll = {});

/// Collective: the state of the latest complete checkpoint in `dir` for this rank. Rank 0 finds
/// the step (latest_complete_checkpoint) and tells the others; each rank reads its own file. Any
/// refusal (see latest_complete_checkpoint and decode_rank_checkpoint) throws the same one-line
/// InputError on every rank; an agreement not complete within `deadline_s` seconds, CommTimeout.
TrainingState load_checkpoint(const MpiSession& mpi, const std::filesystem::path& dir, const CheckpointIdentity& expected,
                              std::int64_t parameter_count, double deadline_s, const WhileWaiting& poll = {});

}  // namespace syncplan
