// ddp: PyTorch DistributedDataParallel's gradient buckets (docs/des.md "ddp"); DES only, since
// buckets are filled by parameter bytes and charged by the cluster.
#include "simulator/strategies/strategies.hpp"

#include "core/field_error.hpp"

#include <cmath>

namespace syncplan {

std::vector<double> required_param_bytes(const DesLayers& layers, const std::string& strategy) {
  for (std::size_t j = 0; j < layers.size(); ++j)
    if (std::isnan(layers.param_bytes[j]))
      throw FieldError("strategy", "strategy " + strategy + ": layer '" + layers.names[j] +
                                       "' has no param_bytes in the profile; buckets are filled by size");
  return layers.param_bytes;
}

SyncProgram without_frozen(SyncProgram program, const DesLayers& layers) {
  if (std::none_of(layers.frozen.begin(), layers.frozen.end(), [](bool frozen) { return frozen; })) return program;
  for (auto& ops : program.iterations) {
    for (SyncOp& op : ops)
      std::erase_if(op.layers, [&](int j) { return static_cast<bool>(layers.frozen[j]); });
    std::erase_if(ops, [](const SyncOp& op) { return op.layers.empty(); });
  }
  return program;
}

SyncProgram ddp_program(const std::vector<double>& param_bytes, int period, double bucket_cap_bytes,
                        double first_bucket_bytes) {
  // As PyTorch's compute_bucket_assignment_by_size: a layer joins the open bucket, and the bucket
  // closes once it holds at least its cap (so its last layer may take it past the cap).
  std::vector<std::vector<int>> buckets(1);
  double filled = 0;
  for (int j = 0; j < static_cast<int>(param_bytes.size()); ++j) {
    buckets.back().push_back(j);
    filled += param_bytes[j];
    const double cap = buckets.size() == 1 ? first_bucket_bytes : bucket_cap_bytes;
    if (filled >= cap && j + 1 < static_cast<int>(param_bytes.size())) {
      buckets.emplace_back();
      filled = 0;
    }
  }
  return every_iteration_program(buckets, period);
}

SyncProgram ddp_des_program(const DesStrategyContext& context, const BackpropTimes&, int period) {
  if (!(context.bucket_cap_bytes > 0))
    throw FieldError("bucket_cap_bytes", "bucket_cap_bytes: must be > 0, got " + format_shortest(context.bucket_cap_bytes));
  // A frozen layer adds 0 bytes (des_layers), so the buckets close where they would without it.
  // torch 1.13's DDP passes bucket_size_limits [_DEFAULT_FIRST_BUCKET_BYTES, cap]: the first bucket
  // holds 1 MiB whatever the cap, even a cap below it (docs/des.md "ddp").
  return without_frozen(ddp_program(required_param_bytes(context.layers, "ddp"), period, context.bucket_cap_bytes,
                                    context.first_bucket_bytes),
                        context.layers);
}

}  // namespace syncplan
