// Golden case: the GPT-2 spec expands into exactly the 125 module names of DreamDDP's measured
// profile (SPEC section 6), each once, so estimated and measured profiles line up by name. The order
// differs by design: the spec lists modules in forward call order, bp.json in HF's registration
// order (docs/models.md section 2), and the importer keeps the file's.
#include <catch2/catch.hpp>

#include "reference_data.hpp"

#include "model/model_spec.hpp"

#include <algorithm>
#include <filesystem>
#include <set>
#include <string>
#include <vector>

namespace syncplan::golden {
namespace {

TEST_CASE("the GPT-2 spec's layers are bp.json's modules, same names and count", "[layer_names]") {
  const Json bp = read_json_file((gpt2_folder() / "bp.json").string());
  std::vector<std::string> measured;
  for (const auto& item : bp.items()) measured.push_back(item.key());

  const Model model = expand_model(
      read_model_spec_file((std::filesystem::path(SYNCPLAN_DATA_DIR) / "models" / "gpt2.json").string()));
  std::vector<std::string> expanded;
  for (const ModelLayer& layer : model.layers) expanded.push_back(layer.name);

  CHECK(expanded.size() == 125);
  CHECK(measured.size() == 125);
  const std::set<std::string> spec_names(expanded.begin(), expanded.end()), bp_names(measured.begin(), measured.end());
  CHECK(spec_names.size() == expanded.size());  // every name once
  // The names in one and not the other, printed, are the evidence when this fails.
  std::vector<std::string> only_spec, only_bp;
  std::set_difference(spec_names.begin(), spec_names.end(), bp_names.begin(), bp_names.end(),
                      std::back_inserter(only_spec));
  std::set_difference(bp_names.begin(), bp_names.end(), spec_names.begin(), spec_names.end(),
                      std::back_inserter(only_bp));
  for (const std::string& name : only_spec) FAIL_CHECK("in the spec, not in bp.json: " << name);
  for (const std::string& name : only_bp) FAIL_CHECK("in bp.json, not in the spec: " << name);
  // The profile's own import of the same files keeps bp.json's names, in bp.json's order.
  const Profile& imported = gpt2_case().profile;
  REQUIRE(imported.layers.size() == measured.size());
  for (std::size_t i = 0; i < measured.size(); ++i) CHECK(imported.layers[i].name == measured[i]);
}

}  // namespace
}  // namespace syncplan::golden
