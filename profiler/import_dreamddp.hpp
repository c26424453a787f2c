// Importers for the DreamDDP artifact's files: per-layer time files into a profile, and its
// schedule files into a plan (SPEC section 2, docs/formats.md).
#pragma once

#include "core/plan.hpp"
#include "core/profile.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace syncplan {

/// What to do with NaN/Infinity in an imported time file.
enum class NonfinitePolicy {
  kError,  ///< an error naming the file and the layer (default)
  kZero,   ///< replaced by 0 s, with a warning line on stderr naming the layer
};

/// Options of `syncplan import dreamddp`.
struct DreamddpImportOptions {
  std::optional<std::string> model;       ///< profile's `model`; std::nullopt when not given
  std::optional<std::int64_t> workers;    ///< worker count the all-reduce times were measured at
  NonfinitePolicy nonfinite = NonfinitePolicy::kError;
  /// Tied parameters, "A=B": layer A shares B's parameters (GPT-2: lm_head=transformer.wte).
  std::vector<std::string> tied;
};

/// Reads DreamDDP's backward-time file `bp_path` and all-reduce-time file `comm_path` (flat JSON
/// objects {layer name: seconds}, forward order) into a profile with `backward_s` and `sync_s`
/// per layer, in `bp_path`'s order; source "imported:dreamddp".
/// Throws InputError for: a missing or unparsable file, a value that is not a number, a negative
/// or (under kError) non-finite value (naming file and layer), a duplicate layer, an empty file,
/// and layers present in one file only (naming them).
Profile import_dreamddp(const std::string& bp_path, const std::string& comm_path,
                        const DreamddpImportOptions& options);

/// Reads DreamDDP's schedule file ({"H": h, "schedule": {layer: iteration or [iterations]}}) into
/// a plan for `profile` (algorithm "imported:dreamddp-schedule", no prediction). Every profile
/// layer must appear exactly once; iterations must lie in [0, H).
/// Throws InputError naming the file, the field and the layer.
Plan import_dreamddp_schedule(const std::string& schedule_path, const Profile& profile);

}  // namespace syncplan
