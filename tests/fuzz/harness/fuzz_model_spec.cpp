// libFuzzer harness of the model-spec reader (syncplan.model/v1, docs/models.md) and of what
// `profile` does next with a spec: expanding it into layers and a profile skeleton.
#include "model/model_spec.hpp"
#include "fuzz_support.hpp"
#include "structure_mutator.hpp"

using namespace syncplan;

SYNCPLAN_FUZZ_STRUCTURE_MUTATOR()

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  return fuzz::refused_or_read([&] {
    const ModelSpec spec = model_spec_from_json(parse_json_text(fuzz::text_of(data, size), "fuzz.json"), "fuzz.json");
    const Model model = expand_model(spec);
    (void)model_profile_skeleton(model, Dtype::kBf16, "estimated:fuzz");
  });
}
