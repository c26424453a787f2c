// Roofline estimate of per-layer compute time from a GPU's datasheet peaks (data/gpus.json,
// docs/models.md section 4). Its profiles say `estimated:roofline:<gpu>`, never measured.
#pragma once

#include "core/json_io.hpp"
#include "model/model_layers.hpp"

#include <optional>
#include <string>
#include <vector>

namespace syncplan {

inline constexpr const char* kGpuCatalogFormat = "syncplan.gpus/v1";

/// One GPU's dense (no sparsity) peaks from its vendor datasheet.
struct GpuSpec {
  std::string name;                        ///< e.g. "H100-SXM", the --gpu value
  std::string datasheet;                   ///< the vendor document the numbers come from
  double fp32_flops_per_s = 0;             ///< FP32 on CUDA cores (FLOP/s)
  std::optional<double> bf16_flops_per_s;  ///< BF16 tensor cores, dense, FP32 accumulate (FLOP/s); none on V100
  double memory_bandwidth_Bps = 0;         ///< device memory bandwidth (bytes/s)
};

/// The GPUs of data/gpus.json and the efficiency factors every estimate applies.
struct GpuCatalog {
  std::string origin;              ///< the file read, for messages
  double compute_efficiency = 0;   ///< fraction of peak FLOP/s a kernel reaches, in (0, 1]
  double memory_efficiency = 0;    ///< fraction of peak bandwidth a kernel reaches, in (0, 1]
  std::vector<GpuSpec> gpus;

  /// The GPU called `name`, or else the one whose name equals it or starts with it ignoring ASCII
  /// case ("h100" -> "H100-SXM"). Throws FieldError "gpu 'X': not in FILE (known: ...)", or
  /// "gpu 'X': ambiguous in FILE, matches A, B (...)" when several names match.
  const GpuSpec& find(const std::string& name) const;
};

/// Parses a syncplan.gpus/v1 document; strict like every reader (docs/formats.md, "GPU catalog").
GpuCatalog gpu_catalog_from_json(const Json& document, const std::string& origin);

/// read_json_file + gpu_catalog_from_json.
GpuCatalog read_gpu_catalog_file(const std::string& path);

/// The rates a roofline uses for one GPU and dtype (docs/models.md section 4).
struct RooflineMachine {
  double matmul_flops_per_s = 0;    ///< peak for matrix products in the dtype (FP32, or BF16 tensor cores)
  double vector_flops_per_s = 0;    ///< peak for elementwise math: FP32 (bf16 elementwise math runs in FP32)
  double memory_bandwidth_Bps = 0;  ///< peak device memory bandwidth (bytes/s)
  double compute_efficiency = 0;    ///< applied to both FLOP rates
  double memory_efficiency = 0;     ///< applied to the bandwidth
};

/// The machine for `gpu` in `dtype`. Throws InputError "--gpu 'V100-SXM2': no bf16 peak ..." when
/// the GPU has no rate for the dtype.
RooflineMachine roofline_machine(const GpuCatalog& catalog, const GpuSpec& gpu, Dtype dtype);

/// One kernel's time (s): max((matmul / matmul peak + vector / vector peak) / compute efficiency,
/// bytes / (memory efficiency x bandwidth)).
double roofline_time_s(const PassWork& work, const RooflineMachine& machine);

/// Forward and backward seconds of one layer.
struct LayerTimes {
  double forward_s = 0;
  double backward_s = 0;
};

/// A layer's times: the sum of roofline_time_s over its ops (each op one kernel).
LayerTimes roofline_layer_times(const ModelLayer& layer, const Workload& workload, const RooflineMachine& machine);

}  // namespace syncplan
