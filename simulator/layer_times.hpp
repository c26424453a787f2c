// Per-layer inputs of both engines, read once from a profile in backprop order, and the one rule
// for tied parameters (docs/time-model.md section 11): the period model's BackpropTimes and the
// DES are built from these.
#pragma once

#include "core/profile.hpp"

#include <optional>
#include <string>
#include <vector>

namespace syncplan {

/// Tied parameters (profile `tied_to`; docs/time-model.md section 11), by backprop index: the
/// group's owner (the layer others are tied to) and carrier (the group's latest-ready layer, whose
/// sync averages the shared parameters once). Untied layers are their own owner and carrier.
struct TieGroups {
  std::vector<int> owner;
  std::vector<int> carrier;
};
TieGroups tie_groups(const Profile& profile);

/// The tied-layer rule, for any per-layer quantity of the sync (time, bytes), backprop order: the
/// owner's value moves to its tie group's carrier, every other member gets 0.
std::vector<double> carried_by_ties(const TieGroups& ties, const std::vector<double>& own);

/// Per-layer inputs of the DES (and of BackpropTimes), in backprop order (index 0 = output-most).
/// sync_s and param_bytes are after the tied-layer rule (carried_by_ties) and the frozen rule: a
/// frozen layer (profile `frozen`, docs/formats.md) keeps its compute times, has sync_s = 0 and
/// param_bytes = 0 and is not synced, so no engine issues or counts an all-reduce for it.
struct DesLayers {
  std::vector<std::string> names;
  std::vector<double> forward_s;     ///< 0 when unknown
  std::vector<double> backward_s;
  std::vector<double> update_s;      ///< 0 when unknown
  std::vector<double> sync_s;        ///< measured all-reduce time; NaN when unknown
  std::vector<double> param_bytes;   ///< NaN when unknown
  std::vector<bool> synced;          ///< false for a tied layer whose parameters another layer's sync carries,
                                     ///< and for a frozen layer
  std::vector<bool> frozen;          ///< the profile's `frozen`: parameters not trained, in no bucket
  std::vector<int> carrier;          ///< the layer whose sync carries this one's parameters (itself when untied)
  /// The profile's `unattributed` compute (s, 0 when absent or null): serial compute after the last
  /// layer's forward, and before the first (output-most) layer's backward (docs/time-model.md,
  /// "Unattributed compute").
  double unattributed_forward_s = 0;
  double unattributed_backward_s = 0;
  /// The profile's spreads of forward_s, backward_s and update_s over the timed repeats, backprop
  /// order (std::nullopt where the profile has none; the vectors may be left empty: none at all).
  /// The DES draws from them under a cluster's jitter "measured" (docs/des.md, "Compute spread").
  std::vector<std::optional<TimeSpread>> forward_spread{}, backward_spread{}, update_spread{};
  std::size_t size() const { return names.size(); }
};

/// Where each all-reduce's time comes from (docs/des.md).
enum class SyncTimeSource {
  kMeasured,  ///< the profile's sync_s (bucket: fused_sync_s of its layers' with DesOptions::bucket_alpha_s)
  kModel,     ///< the cluster's cost model on param_bytes (docs/collectives.md)
};

/// Whether a collective is issued at all: frameworks skip buckets with nothing to average
/// (parameterless modules), so under kModel one of `bytes` == 0 summed parameter bytes, and under
/// kMeasured one whose measured time `measured_s` is 0, runs no all-reduce (docs/des.md). The one
/// rule for the DES engine and the period model's per-layer times (backprop_times_for_des).
inline bool issues_allreduce(SyncTimeSource source, double bytes, double measured_s) {
  return source == SyncTimeSource::kModel ? bytes != 0 : measured_s != 0;
}

/// Which per-layer fields a caller needs, for the error message naming the missing one.
enum class LayerTimesUser {
  kPeriodModel,  ///< backward_s and sync_s ("the period model needs it")
  kSimulator,    ///< backward_s, and sync_s (kMeasured) or param_bytes (kModel) ("the simulator needs it")
};

/// Checks that `profile` holds what the DES draws compute times from under a cluster whose jitter
/// is "measured" (docs/des.md, "Compute spread"): the spread of every layer's forward, backward and
/// update whose time is above 0. Throws InputError "ORIGIN: layer 'NAME': field 'backward_spread' is
/// absent; the jitter "measured" of CLUSTER draws ..." for the first layer without one.
void require_compute_spreads(const Profile& profile, const std::string& origin, const std::string& cluster_origin);

/// Builds DesLayers from a profile; every layer needs `backward_s`, and every layer that is not
/// frozen `sync_s` (kMeasured) or `param_bytes` (kModel). Throws InputError naming `origin`, the
/// layer and the field.
DesLayers des_layers(const Profile& profile, const std::string& origin, SyncTimeSource source,
                     LayerTimesUser user = LayerTimesUser::kSimulator);

}  // namespace syncplan
