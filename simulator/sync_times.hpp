// Where the per-layer all-reduce times come from: the profile's measured sync_s, a cluster's cost
// model, or a measured alpha-beta link fit (SPEC sections 3 and 7); and the period model's view of
// the times the DES charges.
#pragma once

#include "core/cluster.hpp"
#include "core/link.hpp"
#include "core/profile.hpp"
#include "core/units.hpp"
#include "simulator/collectives.hpp"
#include "simulator/layer_times.hpp"
#include "simulator/period_model.hpp"

#include <optional>
#include <string>

namespace syncplan {

/// PyTorch DDP's defaults (torch.nn.parallel.DistributedDataParallel: bucket_cap_mb = 25, and a
/// first bucket of 1 MiB, torch.distributed's _DEFAULT_FIRST_BUCKET_BYTES).
inline constexpr double kDdpBucketCapMiB = 25;
inline constexpr double kDdpFirstBucketMiB = 1;

/// What the DES's strategies need besides the layers.
struct DesStrategyContext {
  const DesLayers& layers;
  const AllreduceModel& model;
  SyncTimeSource sync_time;
  double bucket_cap_bytes = kDdpBucketCapMiB * units::kBytesPerMiB;   ///< ddp's bucket cap (bytes), > 0
  double first_bucket_bytes = kDdpFirstBucketMiB * units::kBytesPerMiB;  ///< ddp's first bucket (bytes)
  /// The model of the link fit in use (SyncTimes::link_used), else null: all-reduces cost
  /// link->time_s(bytes).
  const LinkModel* link = nullptr;
};

/// The period model's view of the DES inputs: backward times, and as c_j each layer's all-reduce
/// alone as the DES charges it (measured or cost model), so that plans are made for this cluster.
/// A layer whose parameters another's sync carries, or that issues no all-reduce
/// (issues_allreduce), has c_j = 0. Built by backprop_times(layers, sync_s, origin): `origin`
/// names the profile in its errors (times that add up past a double).
BackpropTimes backprop_times_for_des(const DesStrategyContext& context, const std::string& origin = "the profile");

/// How to choose the all-reduce times when a cluster or a link fit is given.
enum class SyncTimeMode {
  kAuto,      ///< the profile's sync_s when every layer has one and `workers` is the cluster's or link's, else kModel
  kMeasured,  ///< the profile's sync_s
  kModel,     ///< the link fit when given, else the cluster's cost model on param_bytes
};

/// The inputs of the choice; `*_origin` name the files in messages.
struct SyncTimeInputs {
  std::optional<Cluster> cluster;
  std::string cluster_origin;
  std::optional<LinkFit> link;
  std::string link_origin;
  SyncTimeMode mode = SyncTimeMode::kAuto;
};

/// The choice made.
struct SyncTimes {
  /// The profile as read, except that with a link fit in use (`link_used`) every layer's sync_s is
  /// the link model's time of its param_bytes (LinkFit::time_s; 0 for a layer of 0 bytes).
  Profile profile;
  std::optional<Cluster> cluster;
  std::optional<LinkFit> link;
  bool link_used = false;        ///< the link fit gives the all-reduce times (not the profile's)
  /// For the DES: kMeasured when `profile`'s sync_s are charged (measured, or from the link fit),
  /// kModel when the cluster's cost model is.
  SyncTimeSource source = SyncTimeSource::kMeasured;
  /// The all-reduce start-up alpha (s): the link fit's LinkFit::startup_s (from its smallest
  /// sizes), else the cluster's all-reduce time of 0 bytes.
  std::optional<double> alpha_s;
  std::string alpha_text;        ///< where alpha came from, for printouts
  /// Where the times came from, for printouts; under a cluster's cost model with 1 worker it says
  /// that every all-reduce costs nothing (a group of one).
  std::string text;
  std::string cluster_origin;    ///< the cluster's file (inputs.cluster_origin)
  std::string link_origin;       ///< the link fit's file (inputs.link_origin)
};

/// Decides, as `inputs.mode` says, where the all-reduce times come from (see SyncTimeMode; SPEC
/// section 3: measured times hold for the worker count they were measured at). `origin` names the
/// profile. Throws InputError when the link fit's workers differ from the cluster's, and (naming
/// the layer) when a layer needed by the link fit has no param_bytes.
SyncTimes choose_sync_times(Profile profile, const std::string& origin, SyncTimeInputs inputs);

/// BackpropTimes for the period model under `choice`: with a cluster's cost model, each layer's
/// all-reduce as the DES charges it (backprop_times_for_des); otherwise backprop_times of
/// choice.profile; with a link fit in use, also the link and the bytes that charge a fused bucket
/// link.time_s(its summed bytes) (charge_buckets_by_link). `origin` names the profile.
BackpropTimes sync_backprop_times(const SyncTimes& choice, const std::string& origin);

/// With a link fit in use (choice.link_used): sets times.link and times.sync_bytes (layers'
/// param_bytes, backprop order, after the tied-layer rule), so that bucket fusion charges a bucket
/// link.time_s(its summed bytes) (docs/link.md); otherwise leaves `times` alone.
void charge_buckets_by_link(BackpropTimes& times, const SyncTimes& choice, const DesLayers& layers);

/// The cluster the DES runs on with a link fit and no cluster file (ddp, mgwfbp with --link alone):
/// link.workers identical workers, one per node, on links of the fit's bandwidth 1/beta and no
/// latency. Its links only count bytes: all-reduce times are the link fit's (kMeasured).
Cluster link_cluster(const LinkFit& link);

}  // namespace syncplan
