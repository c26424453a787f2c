// Per-layer profile of a model (syncplan.profile/v1, SPEC section 3, docs/formats.md).
#pragma once

#include "core/json_io.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace syncplan {

inline constexpr const char* kProfileFormat = "syncplan.profile/v1";
/// The longest layer name a profile may hold (characters; docs/formats.md).
inline constexpr std::size_t kLongestLayerName = limits::kLongestLayerName;

/// One layer (module) of the model. std::nullopt means unknown, never zero (SPEC section 3).
struct LayerProfile {
  std::string name;                        ///< unique module name, e.g. "transformer.h.0.attn.c_attn"
  std::optional<std::int64_t> param_count; ///< parameters owned by this layer (count)
  std::optional<std::int64_t> param_bytes; ///< bytes of those parameters as synced (bytes)
  std::optional<double> forward_s;         ///< forward compute time of one iteration (s)
  std::optional<double> backward_s;        ///< backward compute time of one iteration (s)
  std::optional<double> update_s;          ///< optimizer update time of one iteration (s)
  std::optional<double> sync_s;            ///< one all-reduce of its parameters across `workers` (s)
  std::optional<std::string> tied_to;      ///< another layer whose parameters this one shares (GPT-2's
                                           ///< lm_head -> transformer.wte): synced once, with that layer
  bool frozen = false;                     ///< its parameters are not trained (LoRA base weights, requires_grad
                                           ///< false): no all-reduce under any sync-time source, backward_s still
                                           ///< counts; profile key "frozen", absent = false (docs/formats.md)
};

/// Compute of a training iteration that no layer's span covers (functional code outside modules:
/// attention matmuls, residual adds, the loss), as `tools/torch_profile.py` measures it: the whole
/// pass minus the layers' sum. Optional profile key `unattributed` (docs/formats.md); the engines
/// charge it as serial compute, after the last layer's forward and before the first layer's backward (docs/time-model.md,
/// "Unattributed compute").
struct UnattributedTimes {
  std::optional<double> forward_s;   ///< forward compute outside every layer, per iteration (s); null: unknown (0)
  std::optional<double> backward_s;  ///< backward compute outside every layer, per iteration (s); null: unknown (0)
};

/// A whole profile: layers in forward order (input-most first); backprop visits them in reverse.
struct Profile {
  std::optional<std::string> model;   ///< model name, e.g. "gpt2"; std::nullopt when unknown
  std::string source;                 ///< "measured:<device>", "imported:<format>" or "estimated:<method>"
  std::optional<std::int64_t> workers;///< worker count the sync_s values were measured at
  std::vector<LayerProfile> layers;   ///< forward order, unique non-empty names, at least one
  std::optional<UnattributedTimes> unattributed;  ///< key `unattributed`; std::nullopt when absent

  /// Index of the layer called `name` in forward order, or std::nullopt.
  std::optional<std::size_t> find(const std::string& name) const;
};

/// Checks the invariants every profile holds (non-empty, unique non-empty names, finite
/// non-negative times, the unattributed ones included; a frozen layer has no sync_s above 0, and a
/// tie group is frozen as a whole); `origin` names the file in errors. Throws InputError naming the layer.
void validate_profile(const Profile& profile, const std::string& origin);

/// Parses a syncplan.profile/v1 document. Unknown keys, wrong types, negative or non-finite
/// numbers, duplicate, empty or over-long (kLongestLayerName) names and an empty layer list throw
/// InputError naming `origin`,
/// the field and the layer.
Profile profile_from_json(const Json& document, const std::string& origin);

/// Reads a profile file (read_json_file + profile_from_json).
Profile read_profile_file(const std::string& path);

/// The syncplan.profile/v1 document for `profile` (nulls written for unknown values).
Json profile_to_json(const Profile& profile);

}  // namespace syncplan
