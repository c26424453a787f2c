// libFuzzer harness of the GPU catalog reader (data/gpus.json, syncplan.gpus/v1) and of the
// roofline machine built from each of its GPUs.
#include "profiler/roofline.hpp"
#include "fuzz_support.hpp"
#include "structure_mutator.hpp"

using namespace syncplan;

SYNCPLAN_FUZZ_STRUCTURE_MUTATOR()

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  return fuzz::refused_or_read([&] {
    const GpuCatalog catalog = gpu_catalog_from_json(parse_json_text(fuzz::text_of(data, size), "gpus.json"), "gpus.json");
    for (const GpuSpec& gpu : catalog.gpus) {
      (void)catalog.find(gpu.name);
      for (const Dtype dtype : {Dtype::kFp32, Dtype::kBf16}) {
        fuzz::refused_or_read([&] { (void)roofline_machine(catalog, gpu, dtype); });
      }
    }
  });
}
