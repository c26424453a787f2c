// The strategies the simulator defines (SPEC section 5's table, docs/des.md section 3), one file
// each in this folder: each file holds its strategy's period-model timing and/or DES program. The
// one table that lists every strategy, with what each supports, is planner/strategy_table.cpp.
#pragma once

#include "simulator/des/sync_program.hpp"
#include "simulator/period_model.hpp"
#include "simulator/sync_times.hpp"

#include <functional>
#include <optional>
#include <vector>

namespace syncplan {

/// The timing of one strategy over a period, and its assignment when it can be written as a plan
/// (ssgd and flsgd sync after compute and cannot).
struct StrategyResult {
  PeriodTiming timing;
  std::optional<Assignment> assignment;
};

// ---- ssgd (strategies/ssgd.cpp) ----------------------------------------------------------------
/// Period model: H (F + B_L + U + sum c). Throws FieldError "period: ..." when period < 1.
StrategyResult run_ssgd(const BackpropTimes& times, int period);
/// S-SGD without overlap: every layer after backprop, every iteration.
SyncProgram ssgd_program(std::size_t layer_count, int period);
/// ssgd_program for the strategy table.
SyncProgram ssgd_des_program(const DesStrategyContext& context, const BackpropTimes& times, int period);

// ---- wfbp (strategies/wfbp.cpp) ----------------------------------------------------------------
/// Every layer in every iteration, overlapped with backprop.
Assignment wfbp_assignment(std::size_t layer_count, int period);

// ---- flsgd (strategies/flsgd.cpp) --------------------------------------------------------------
/// Period model: H (F + B_L + U) + sum c.
StrategyResult run_flsgd(const BackpropTimes& times, int period);
/// Full local SGD: every layer after the update of the period's last iteration.
SyncProgram flsgd_program(std::size_t layer_count, int period);
/// flsgd_program for the strategy table.
SyncProgram flsgd_des_program(const DesStrategyContext& context, const BackpropTimes& times, int period);

// ---- plsgd-even (strategies/plsgd_even.cpp) ----------------------------------------------------
/// Backprop order cut into H contiguous groups of ceil(L/H) layers, group h synced in iteration h
/// (later iterations are empty when H > L).
Assignment plsgd_even_assignment(std::size_t layer_count, int period);

// ---- ddp (strategies/ddp.cpp) ------------------------------------------------------------------
/// PyTorch DDP's gradient buckets, every iteration (docs/des.md "ddp"): layers in backprop order
/// join the open bucket, which closes once it holds at least `bucket_cap_bytes` (the first bucket:
/// `first_bucket_bytes`), as torch.distributed's compute_bucket_assignment_by_size does; a layer
/// is never split. `param_bytes` in backprop order.
SyncProgram ddp_program(const std::vector<double>& param_bytes, int period, double bucket_cap_bytes,
                        double first_bucket_bytes);
/// ddp_program with the context's caps (the first bucket's whatever the cap, as torch 1.13's
/// bucket_size_limits [_DEFAULT_FIRST_BUCKET_BYTES, bucket_cap] do). Throws FieldError
/// "bucket_cap_bytes: ..." when the cap is not > 0, and "strategy ddp: layer 'NAME' has no
/// param_bytes ..." when a layer's size is unknown.
SyncProgram ddp_des_program(const DesStrategyContext& context, const BackpropTimes& times, int period);

// ---- mgwfbp (strategies/mgwfbp.cpp) ------------------------------------------------------------
/// MG-WFBP's merged gradients, every iteration (Shi et al., "MG-WFBP", INFOCOM 2019; docs/des.md
/// "mgwfbp"): walking backprop order, a layer joins the bucket before it when the bucket then
/// ends no later than syncing them separately would, with bucket time `allreduce_s(bytes)`.
/// `param_bytes` and `times` in backprop order. Layers marked in `frozen` (empty: none; else one
/// entry per layer) are in no bucket and take no part in the merge decisions.
SyncProgram mgwfbp_program(const BackpropTimes& times, const std::vector<double>& param_bytes, int period,
                           const std::function<double(double bytes)>& allreduce_s,
                           const std::vector<bool>& frozen = {});
/// mgwfbp_program on the cluster's cost model, or on the link fit's time_s (context.link). Throws
/// FieldError "strategy mgwfbp: ..." when a layer has no param_bytes, and "sync_time: ..." when the
/// sync times are measured without a link fit (they say nothing about the start-up a merge saves).
SyncProgram mgwfbp_des_program(const DesStrategyContext& context, const BackpropTimes& times, int period);

/// `program` without the frozen layers (layers.frozen; docs/formats.md "frozen"): frameworks bucket
/// only parameters that require gradients (torch DDP skips requires_grad false), so a frozen layer
/// is in no bucket; an op left empty is removed. ddp applies it to its buckets (a frozen layer's 0
/// bytes close no bucket, so they are where they would be without it).
SyncProgram without_frozen(SyncProgram program, const DesLayers& layers);

/// The layers' param_bytes (backprop order) for a strategy that fills buckets by size. Throws
/// FieldError "strategy NAME: layer 'LAYER' has no param_bytes in the profile; ..." otherwise.
std::vector<double> required_param_bytes(const DesLayers& layers, const std::string& strategy);

}  // namespace syncplan
