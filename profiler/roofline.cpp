// data/gpus.json reading and the roofline time of each op (docs/models.md section 4).
#include "profiler/roofline.hpp"
#include "core/field_error.hpp"

#include "core/errors.hpp"

#include <algorithm>
#include <set>
#include <vector>

namespace syncplan {

namespace {

constexpr double kFlopsPerTflops = 1e12;  // the catalog states peaks in TFLOP/s
constexpr double kBytesPerGB = 1e9;       // and bandwidths in GB/s (GB = 1e9 bytes, as vendors count)

double required_positive(ObjectReader& reader, const std::string& key, double scale) {
  const double value = read_nonnegative_number(reader.required(key), reader.where() + ": field '" + key + "'");
  if (value <= 0) throw InputError(reader.where() + ": field '" + key + "': must be > 0, got " + format_shortest(value));
  return value * scale;
}

double required_fraction(ObjectReader& reader, const std::string& key) {
  const double value = required_positive(reader, key, 1);
  if (value > 1)
    throw InputError(reader.where() + ": field '" + key + "': must be at most 1, got " + format_shortest(value));
  return value;
}

}  // namespace

namespace {

// ASCII lower case: GPU names are ASCII ("H100-SXM"), and a locale must not change the match.
std::string lower_ascii(std::string text) {
  for (char& ch : text)
    if (ch >= 'A' && ch <= 'Z') ch = static_cast<char>(ch - 'A' + 'a');
  return text;
}

std::string names_text(const std::vector<const GpuSpec*>& specs) {
  std::string text;
  for (const GpuSpec* gpu : specs) text += (text.empty() ? "" : ", ") + gpu->name;
  return text;
}

}  // namespace

const GpuSpec& GpuCatalog::find(const std::string& name) const {
  for (const GpuSpec& gpu : gpus)
    if (gpu.name == name) return gpu;
  // Else the one GPU whose name equals `name` or starts with it, ignoring case ("h100" -> H100-SXM).
  const std::string wanted = lower_ascii(name);
  std::vector<const GpuSpec*> exact, prefixed, all;
  for (const GpuSpec& gpu : gpus) {
    const std::string candidate = lower_ascii(gpu.name);
    if (candidate == wanted) exact.push_back(&gpu);
    else if (!wanted.empty() && candidate.rfind(wanted, 0) == 0) prefixed.push_back(&gpu);
    all.push_back(&gpu);
  }
  if (exact.size() == 1) return *exact.front();
  if (exact.empty() && prefixed.size() == 1) return *prefixed.front();
  if (exact.size() + prefixed.size() > 1) {
    exact.insert(exact.end(), prefixed.begin(), prefixed.end());
    throw FieldError("gpu", "gpu '" + name + "': ambiguous in " + origin + ", matches " + names_text(exact) +
                                " (give more of the name)");
  }
  throw FieldError("gpu", "gpu '" + name + "': not in " + origin + " (known: " + names_text(all) + ")");
}

GpuCatalog gpu_catalog_from_json(const Json& document, const std::string& origin) {
  ObjectReader top(document, origin);
  top.require_format(kGpuCatalogFormat);
  GpuCatalog catalog;
  catalog.origin = origin;
  top.optional_string("notes");
  catalog.compute_efficiency = required_fraction(top, "compute_efficiency");
  catalog.memory_efficiency = required_fraction(top, "memory_efficiency");
  const Json& gpus = top.required("gpus");
  if (!gpus.is_array() || gpus.empty())
    throw InputError(origin + ": field 'gpus': expected a non-empty array, got " + json_type_name(gpus));
  top.reject_unknown_keys();

  std::set<std::string> names;
  for (std::size_t i = 0; i < gpus.size(); ++i) {
    std::string where = origin + ": gpus[" + std::to_string(i) + "]";
    if (gpus[i].is_object() && gpus[i].contains("name") && gpus[i]["name"].is_string())
      where = origin + ": gpu '" + gpus[i]["name"].get<std::string>() + "'";
    ObjectReader reader(gpus[i], where);
    GpuSpec gpu;
    gpu.name = reader.required_string("name");
    if (gpu.name.empty()) throw InputError(where + ": field 'name': empty GPU name");
    if (!names.insert(gpu.name).second) throw InputError(where + ": duplicate GPU name");
    gpu.datasheet = reader.required_string("datasheet");
    gpu.fp32_flops_per_s = required_positive(reader, "fp32_TFLOPS", kFlopsPerTflops);
    if (reader.optional("bf16_TFLOPS") != nullptr)
      gpu.bf16_flops_per_s = required_positive(reader, "bf16_TFLOPS", kFlopsPerTflops);
    gpu.memory_bandwidth_Bps = required_positive(reader, "memory_bandwidth_GBps", kBytesPerGB);
    reader.reject_unknown_keys();
    catalog.gpus.push_back(std::move(gpu));
  }
  return catalog;
}

GpuCatalog read_gpu_catalog_file(const std::string& path) { return gpu_catalog_from_json(read_json_file(path), path); }

RooflineMachine roofline_machine(const GpuCatalog& catalog, const GpuSpec& gpu, Dtype dtype) {
  RooflineMachine machine;
  machine.vector_flops_per_s = gpu.fp32_flops_per_s;
  machine.matmul_flops_per_s = gpu.fp32_flops_per_s;
  if (dtype == Dtype::kBf16) {
    if (!gpu.bf16_flops_per_s)
      throw FieldError("gpu", "gpu '" + gpu.name + "': no bf16 peak in " + catalog.origin +
                                " (the GPU has no bf16 tensor cores); use dtype fp32");
    machine.matmul_flops_per_s = *gpu.bf16_flops_per_s;
  }
  machine.memory_bandwidth_Bps = gpu.memory_bandwidth_Bps;
  machine.compute_efficiency = catalog.compute_efficiency;
  machine.memory_efficiency = catalog.memory_efficiency;
  return machine;
}

double roofline_time_s(const PassWork& work, const RooflineMachine& machine) {
  const double compute_s =
      (work.matmul_flops / machine.matmul_flops_per_s + work.vector_flops / machine.vector_flops_per_s) /
      machine.compute_efficiency;
  const double memory_s = work.bytes / (machine.memory_efficiency * machine.memory_bandwidth_Bps);
  return std::max(compute_s, memory_s);
}

LayerTimes roofline_layer_times(const ModelLayer& layer, const Workload& workload, const RooflineMachine& machine) {
  LayerTimes times;
  for (const LayerOp& op : layer.ops) {
    const StepWork work = op_work(op, workload);
    times.forward_s += roofline_time_s(work.forward, machine);
    times.backward_s += roofline_time_s(work.backward, machine);
  }
  return times;
}

}  // namespace syncplan
