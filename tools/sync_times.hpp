// Where a command's per-layer all-reduce times come from: the profile's measured sync_s, a
// cluster's cost model (--cluster), or a measured alpha-beta link fit (--link, SPEC section 7).
#pragma once

#include "core/cluster.hpp"
#include "core/link.hpp"
#include "core/profile.hpp"
#include "simulator/des/engine.hpp"
#include "simulator/period_model.hpp"

#include <optional>
#include <string>

namespace syncplan::cli {

/// The --sync-time, --cluster and --link options of `plan` and `simulate`.
struct SyncTimeOptions {
  std::string cluster_path;     ///< --cluster (empty: none)
  std::string link_path;        ///< --link (empty: none)
  std::string sync_time = "auto";  ///< --sync-time: auto, measured or model
  bool sync_time_given = false;
};

/// The choice made for one command.
struct SyncTimes {
  /// The profile as read, except that with a link fit in use (`link_used`) every layer's sync_s is
  /// the fit's alpha + beta x param_bytes.
  Profile profile;
  std::optional<Cluster> cluster;
  std::optional<LinkFit> link;
  bool link_used = false;        ///< the link fit gives the all-reduce times (not the profile's)
  /// For the DES: kMeasured when `profile`'s sync_s are charged (measured, or from the link fit),
  /// kModel when the cluster's cost model is.
  SyncTimeSource source = SyncTimeSource::kMeasured;
  /// The all-reduce start-up alpha (s): the link fit's, else the cluster's all-reduce time of 0 bytes.
  std::optional<double> alpha_s;
  std::string alpha_text;        ///< where alpha came from, for printouts
  std::string text;              ///< where the times came from, for printouts
};

/// Reads the profile (and the cluster and link when given) and decides, as `--sync-time` says:
/// "measured" keeps the profile's sync_s; "model" uses the link fit when given, else the cluster's
/// cost model; "auto" keeps the profile's sync_s when they were measured at the worker count of
/// the link or cluster (SPEC section 3), the model otherwise. Throws InputError when --sync-time is
/// given without --cluster or --link, when the link fit's workers differ from the cluster's, and
/// (naming the layer) when a layer needed by the link fit has no param_bytes.
SyncTimes read_sync_times(const std::string& profile_path, const SyncTimeOptions& options);
/// The same for a profile already in memory (e.g. made by `plan --model`); `origin` names it.
SyncTimes read_sync_times(Profile profile, const std::string& origin, const SyncTimeOptions& options);

/// BackpropTimes for the period model under `choice`: with a cluster, each layer's all-reduce as
/// the DES charges it (backprop_times_for_des); otherwise backprop_times of choice.profile.
BackpropTimes sync_backprop_times(const SyncTimes& choice, const std::string& profile_path);

/// The --sync-time help text shared by `plan` and `simulate`.
inline constexpr const char* kSyncTimeHelp =
    "with --cluster or --link: all-reduce times from the profile's sync_s ('measured'), the link fit or the "
    "cluster's cost model on param_bytes ('model'), or 'auto': measured when the profile's workers equal the "
    "link's or cluster's (default: auto)";
/// The --link help text shared by `plan` and `simulate`.
inline constexpr const char* kLinkHelp =
    "syncplan.link/v1 file (profile-link, import nccl-tests): its alpha-beta fit replaces the cluster's "
    "nominal all-reduce times, at the worker count it was measured at (see --sync-time)";

}  // namespace syncplan::cli
