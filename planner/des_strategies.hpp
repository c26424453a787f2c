// Every strategy and planning algorithm as a sync program for the DES (docs/des.md): the period
// model's strategies and plans, plus PyTorch DDP's buckets (`ddp`) and MG-WFBP (`mgwfbp`).
#pragma once

#include "simulator/des/engine.hpp"
#include "simulator/period_model.hpp"

#include <string>

namespace syncplan {

/// PyTorch DDP's defaults (torch.nn.parallel.DistributedDataParallel: bucket_cap_mb = 25, and a
/// first bucket of 1 MiB, torch.distributed's _DEFAULT_FIRST_BUCKET_BYTES).
inline constexpr double kBytesPerMiB = 1024.0 * 1024.0;
inline constexpr double kDdpBucketCapMiB = 25;
inline constexpr double kDdpFirstBucketMiB = 1;

/// What the DES strategies need besides the layers.
struct DesStrategyContext {
  const DesLayers& layers;
  const AllreduceModel& model;
  SyncTimeSource sync_time;
  double bucket_cap_bytes = kDdpBucketCapMiB * kBytesPerMiB;   ///< ddp's bucket cap (bytes)
  double first_bucket_bytes = kDdpFirstBucketMiB * kBytesPerMiB;
};

/// The period model's view of the DES inputs: backward times, and as c_j each layer's all-reduce
/// alone as the DES charges it (measured or cost model), so that plans are made for this cluster.
BackpropTimes backprop_times_for_des(const DesStrategyContext& context);

/// The sync program of strategy `name` over `period` iterations: ssgd, flsgd, ddp, mgwfbp, and every
/// name run_strategy accepts (wfbp, plsgd-even, dreamddp, dp, best), planned on `times`.
/// Throws InputError for an unknown name, and for ddp/mgwfbp when a layer has no param_bytes.
SyncProgram des_program(const std::string& name, const DesStrategyContext& context, const BackpropTimes& times,
                        int period);

/// All names des_program accepts, comma-separated.
std::string des_strategy_names_text();

}  // namespace syncplan
