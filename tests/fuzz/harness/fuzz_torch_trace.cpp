// libFuzzer harness of the PyTorch profiler trace importer (`import torch-trace`, docs/torch.md):
// the profile it gives must read back (round trip).
#include "profiler/import_torch_trace.hpp"
#include "fuzz_support.hpp"
#include "structure_mutator.hpp"

using namespace syncplan;

SYNCPLAN_FUZZ_STRUCTURE_MUTATOR()

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  TorchTraceImportOptions options;
  options.missing_backward = static_cast<MissingBackwardPolicy>(size % 3);  // every policy
  return fuzz::refused_or_read([&] {
    const TorchTraceImport imported =
        torch_trace_to_profile(parse_json_text(fuzz::text_of(data, size), "trace.json"), "trace.json", options);
    fuzz::expect_round_trip(profile_to_json(imported.profile), [](const std::string& text) {
      return profile_to_json(profile_from_json(parse_json_text(text, "again.json"), "again.json"));
    }, "imported profile");
  });
}
