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

/// What to do with a layer of the backward file that has no all-reduce time (DreamDDP's LoRA
/// profiles: the backward file lists every module, the all-reduce file only the trainable ones).
enum class MissingCommPolicy {
  kError,   ///< an error naming the layers (default)
  kDrop,    ///< the layer is left out, as DreamDDP's alignment step does: its backward time too
  kFrozen,  ///< the layer is kept with its backward time, `frozen` true and no sync_s
};

/// Options of `syncplan import dreamddp`.
struct DreamddpImportOptions {
  std::optional<std::string> model;       ///< profile's `model`; std::nullopt when not given
  std::optional<std::int64_t> workers;    ///< worker count the all-reduce times were measured at
  NonfinitePolicy nonfinite = NonfinitePolicy::kError;
  MissingCommPolicy missing_comm = MissingCommPolicy::kError;
  /// Tied parameters, "A=B": layer A shares B's parameters (GPT-2: lm_head=transformer.wte).
  std::vector<std::string> tied;
};

/// A profile imported from DreamDDP's files, and what was done to layers without an all-reduce.
struct DreamddpImport {
  Profile profile;
  std::vector<std::string> without_comm;  ///< backward-file layers missing from the all-reduce file,
                                          ///< file order: dropped (kDrop) or frozen (kFrozen)
  /// Under NonfinitePolicy::kZero, one line per file that had non-finite times read as 0 ("PATH:
  /// N non-finite times read as 0 (--nonfinite zero): 'a', 'b', ..."), for the caller to warn
  /// with once the import has succeeded (never printed here: bad input stays one line on stderr).
  std::vector<std::string> zeroed;
};

/// Reads DreamDDP's backward-time file `bp_path` and all-reduce-time file `comm_path` (flat JSON
/// objects {layer name: seconds}, forward order) into a profile with `backward_s` and `sync_s`
/// per layer, in `bp_path`'s order; source "imported:dreamddp". A layer of `bp_path` missing from
/// `comm_path` is handled as options.missing_comm says (docs/formats.md).
/// Throws InputError for: a missing or unparsable file, a value that is not a number, a negative
/// or (under kError) non-finite value (naming file and layer; with several, how many and the
/// first few), a duplicate layer, an empty file, layers of `comm_path` missing from `bp_path`,
/// and layers of `bp_path` missing from `comm_path` under kError (naming them). (kDrop cannot
/// leave no layers: every all-reduce-file layer, at least one, is in `bp_path`.)
DreamddpImport import_dreamddp_files(const std::string& bp_path, const std::string& comm_path,
                                     const DreamddpImportOptions& options);

/// import_dreamddp_files' profile.
Profile import_dreamddp(const std::string& bp_path, const std::string& comm_path,
                        const DreamddpImportOptions& options);

/// Reads DreamDDP's schedule file ({"H": h, "schedule": {layer: iteration or [iterations]}}) into
/// a plan for `profile` (algorithm "imported:dreamddp-schedule", no prediction). Every profile
/// layer must appear exactly once, except that a frozen layer may be absent (it gets iteration 0);
/// iterations must lie in [0, H).
/// Throws InputError naming the file, the field and the layer.
Plan import_dreamddp_schedule(const std::string& schedule_path, const Profile& profile);

}  // namespace syncplan
