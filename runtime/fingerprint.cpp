// FNV-1a 64 over canonical texts of the plan, the model spec and the workload, and the
// collective check that every rank runs rank 0's.
#include "runtime/fingerprint.hpp"

#include "runtime/rank_agreement.hpp"

#include "core/errors.hpp"
#include "core/json_io.hpp"

#include <algorithm>
#include <array>
#include <cstdio>
#include <vector>

namespace syncplan {

std::uint64_t fnv1a64(std::span<const std::byte> bytes, std::uint64_t hash) {
  for (const std::byte byte : bytes) {
    hash ^= static_cast<std::uint64_t>(byte);
    hash *= kFnv1aPrime;
  }
  return hash;
}

std::uint64_t fnv1a64(std::string_view text, std::uint64_t hash) {
  return fnv1a64(std::as_bytes(std::span<const char>(text.data(), text.size())), hash);
}

std::string hex64(std::uint64_t value) {
  char text[19];
  std::snprintf(text, sizeof text, "0x%016llx", static_cast<unsigned long long>(value));
  return text;
}

// Canonical texts are compact JSON (nlohmann's dump: keys in insertion order, strings escaped),
// with every floating-point number as format_exact's text so that no float printing differs.
std::string schedule_identity(const Plan& plan) {
  Json layers = Json::array();
  for (const LayerSchedule& layer : plan.layers) {
    Json entry = Json::array({layer.name, layer.sync_iterations});
    // Delays only where one is non-zero, so that a plan without them (or with every one 0, which
    // executes alike) keeps the identity it had before delayed averaging.
    if (std::any_of(layer.sync_delays.begin(), layer.sync_delays.end(), [](int d) { return d > 0; }))
      entry.push_back(layer.sync_delays);
    layers.push_back(std::move(entry));
  }
  Json identity = {{"plan_period", plan.period}, {"layers", layers}};
  if (plan.buckets) identity["buckets"] = {{"alpha_s", format_exact(plan.buckets->alpha_s)},
                                           {"iterations", plan.buckets->iterations}};
  return json_text(identity);
}

std::string schedule_identity(const std::string& strategy, int period) {
  return "strategy " + strategy + " period " + std::to_string(period);
}

std::string model_identity(const ModelSpec& spec) {
  const Json identity = {
      {"name", spec.name},
      {"architecture", architecture_name(spec.architecture)},
      {"vocab_size", spec.vocab_size},
      {"max_position_embeddings", spec.max_position_embeddings},
      {"hidden_size", spec.hidden_size},
      {"num_hidden_layers", spec.num_hidden_layers},
      {"num_attention_heads", spec.num_attention_heads},
      {"num_key_value_heads", spec.num_key_value_heads},
      {"intermediate_size", spec.intermediate_size},
      {"tie_word_embeddings", spec.tie_word_embeddings},
      {"norm_eps", format_exact(spec.norm_eps)},
      {"rope_theta", format_exact(spec.rope_theta)},
      {"embd_pdrop", format_exact(spec.embd_pdrop)},
      {"attn_pdrop", format_exact(spec.attn_pdrop)},
      {"resid_pdrop", format_exact(spec.resid_pdrop)},
      {"frozen", spec.frozen},
  };
  return json_text(identity);
}

std::uint64_t RunFingerprint::combined() const {
  std::array<std::byte, 24> bytes{};
  const std::uint64_t parts[] = {schedule, model, workload};
  for (std::size_t p = 0; p < 3; ++p)
    for (std::size_t b = 0; b < 8; ++b) bytes[8 * p + b] = static_cast<std::byte>((parts[p] >> (8 * b)) & 0xff);
  return fnv1a64(bytes);
}

RunFingerprint fingerprint_run(const std::string& schedule, const ModelSpec& spec, std::int64_t batch,
                               std::int64_t seq, int ranks) {
  return {fnv1a64(schedule), fnv1a64(model_identity(spec)),
          fnv1a64("batch " + std::to_string(batch) + " seq " + std::to_string(seq) + " ranks " +
                  std::to_string(ranks))};
}

namespace {
constexpr std::size_t kNamedRanks = 8;  // ranks a mismatch message names before it counts the rest
}  // namespace

std::string differing_parts(const RunFingerprint& root, const RunFingerprint& other) {
  std::vector<std::string> parts;
  if (other.schedule != root.schedule) parts.emplace_back("plan");
  if (other.model != root.model) parts.emplace_back("model");
  if (other.workload != root.workload) parts.emplace_back("batch/sequence/ranks");
  std::string text;
  for (std::size_t i = 0; i < parts.size(); ++i) text += (i == 0 ? "" : i + 1 == parts.size() ? " and " : ", ") + parts[i];
  return text;
}

std::string run_mismatch_message(const RunFingerprint& root,
                                 std::span<const std::pair<int, RunFingerprint>> differing, int more) {
  SYNCPLAN_CHECK(!differing.empty());
  std::string message;
  for (const auto& [rank, fingerprint] : differing) {
    if (!message.empty()) message += "; ";
    const std::string parts = differing_parts(root, fingerprint);
    SYNCPLAN_CHECK(!parts.empty());
    const bool one = parts.find(" and ") == std::string::npos;
    message += "rank " + std::to_string(rank) + "'s " + parts + (one ? " differs" : " differ") + " from rank 0's";
  }
  if (more > 0) message += "; and " + std::to_string(more) + " more rank" + (more == 1 ? "" : "s") + " differ";
  return message;
}

void require_same_run(const MpiSession& mpi, const RunFingerprint& mine, double deadline_s,
                      const std::function<void()>& poll) {
  // The hashes travel as int64 bit patterns (MPI has no portable uint64 type for MPI_Iallgather's
  // count-based form here): the cast back restores them exactly.
  const std::vector<std::int64_t> parts{static_cast<std::int64_t>(mine.schedule), static_cast<std::int64_t>(mine.model),
                                        static_cast<std::int64_t>(mine.workload)};
  const std::vector<std::int64_t> all = allgather_within(mpi, parts, "the run fingerprint check", deadline_s, poll);
  const auto at = [&](int rank) {
    const std::size_t i = 3 * static_cast<std::size_t>(rank);
    return RunFingerprint{static_cast<std::uint64_t>(all[i]), static_cast<std::uint64_t>(all[i + 1]),
                          static_cast<std::uint64_t>(all[i + 2])};
  };
  const RunFingerprint root = at(0);
  std::vector<std::pair<int, RunFingerprint>> differing;
  int more = 0;
  for (int rank = 1; rank < mpi.size(); ++rank) {
    if (at(rank) == root) continue;
    if (differing.size() < kNamedRanks) differing.emplace_back(rank, at(rank));
    else ++more;
  }
  if (!differing.empty()) throw InputError(run_mismatch_message(root, differing, more));
}

}  // namespace syncplan
