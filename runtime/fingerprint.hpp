// The run's fingerprint: a stable 64-bit hash of what every rank must agree on (the plan or
// strategy, the model spec, batch, sequence and rank count), and the collective check that every
// rank has rank 0's (docs/formats.md, "Run fingerprint").
#pragma once

#include "comm/mpi_session.hpp"
#include "core/plan.hpp"
#include "model/model_spec.hpp"

#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <string_view>

namespace syncplan {

/// FNV-1a's 64-bit offset basis and prime (Fowler, Noll and Vo; the constants of
/// draft-eastlake-fnv, section 5): the hash of no bytes is the offset basis.
inline constexpr std::uint64_t kFnv1aOffset = 0xcbf29ce484222325ull;
inline constexpr std::uint64_t kFnv1aPrime = 0x100000001b3ull;

/// FNV-1a 64 over `bytes`, continuing from `hash` (pass a previous result to hash in pieces):
/// for each byte, hash = (hash XOR byte) * prime mod 2^64. Not cryptographic: it detects
/// accidental differences (another plan, a corrupt file), not deliberate ones.
std::uint64_t fnv1a64(std::span<const std::byte> bytes, std::uint64_t hash = kFnv1aOffset);
/// fnv1a64 over the characters of `text` (its UTF-8 bytes).
std::uint64_t fnv1a64(std::string_view text, std::uint64_t hash = kFnv1aOffset);

/// 16 lower-case hex digits with a "0x" prefix, e.g. "0xcbf29ce484222325".
std::string hex64(std::uint64_t value);

/// The canonical text of what the executor runs for `plan`: its period, each layer's sync
/// iterations in the plan's order (and its sync_delays when one is non-zero) and its buckets
/// (alpha and layer lists) when present. The
/// model name, algorithm and prediction are left out: two plans that execute alike are one plan.
std::string schedule_identity(const Plan& plan);
/// The canonical text of a strategy run without a plan file: "strategy NAME period H".
std::string schedule_identity(const std::string& strategy, int period);

/// The canonical text of a model spec: every field of ModelSpec in declaration order, numbers
/// exactly (format_exact), the frozen patterns in the given order; `source` (free text) is left out.
std::string model_identity(const ModelSpec& spec);

/// The three parts of a run's fingerprint, each FNV-1a 64 of a canonical text.
struct RunFingerprint {
  std::uint64_t schedule = 0;  ///< fnv1a64(schedule_identity(...))
  std::uint64_t model = 0;     ///< fnv1a64(model_identity(spec))
  std::uint64_t workload = 0;  ///< fnv1a64("batch B seq S ranks N")

  /// The single hash a checkpoint stores: FNV-1a 64 over the three parts' 8 little-endian bytes
  /// each, in the order schedule, model, workload.
  std::uint64_t combined() const;
  bool operator==(const RunFingerprint&) const = default;
};

/// The fingerprint of a run of `schedule` (schedule_identity's text) on `spec` with `batch`
/// sequences of `seq` tokens on `ranks` ranks. Pure: the same inputs give the same hash on every
/// machine and in every build.
RunFingerprint fingerprint_run(const std::string& schedule, const ModelSpec& spec, std::int64_t batch,
                               std::int64_t seq, int ranks);

/// Collective: every rank's fingerprint is gathered to every rank (one nonblocking all-gather of
/// 24 bytes per rank, tested until `deadline_s` seconds (> 0) have passed, `poll` between tests)
/// and compared with rank 0's. When a rank differs, every rank throws the same InputError, one
/// line with one clause per differing rank naming the parts, e.g. "rank 1's plan differs from
/// rank 0's; rank 3's model and batch/sequence/ranks differ from rank 0's" (the first 8 differing
/// ranks, then "and N more ranks differ"). Throws CommTimeout "bucket 'the run fingerprint
/// check': ..." when a rank does not take part in time (it died or hangs), LibraryError when an
/// MPI call fails.
void require_same_run(const MpiSession& mpi, const RunFingerprint& mine, double deadline_s = 60,
                      const std::function<void()>& poll = {});

/// The parts in which `other` differs from `root`, for messages: "plan", "plan and model",
/// "plan, model and batch/sequence/ranks"; empty when they are equal.
std::string differing_parts(const RunFingerprint& root, const RunFingerprint& other);

/// The message require_same_run throws, from rank 0's fingerprint and the differing ranks' own
/// (pairs of rank and fingerprint, ascending ranks; `more` ranks differ beyond them). Pure, so
/// the wording is tested without MPI.
std::string run_mismatch_message(const RunFingerprint& root,
                                 std::span<const std::pair<int, RunFingerprint>> differing, int more);

}  // namespace syncplan
