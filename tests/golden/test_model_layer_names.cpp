// Golden case: the GPT-2 spec expands into exactly the 125 module names, in exactly the order, of
// DreamDDP's measured profile (SPEC section 6), so estimated and measured profiles line up.
#include <catch2/catch.hpp>

#include "reference_data.hpp"

#include "model/model_spec.hpp"

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

namespace syncplan::golden {
namespace {

TEST_CASE("the GPT-2 spec's layers are bp.json's modules, in bp.json's order", "[layer_names]") {
  const Json bp = read_json_file((gpt2_folder() / "bp.json").string());
  std::vector<std::string> measured;
  for (const auto& item : bp.items()) measured.push_back(item.key());

  const Model model = expand_model(
      read_model_spec_file((std::filesystem::path(SYNCPLAN_DATA_DIR) / "models" / "gpt2.json").string()));
  std::vector<std::string> expanded;
  for (const ModelLayer& layer : model.layers) expanded.push_back(layer.name);

  // The first difference, printed, is the evidence when this fails.
  const auto [spec_it, bp_it] = std::mismatch(expanded.begin(), expanded.end(), measured.begin(), measured.end());
  if (spec_it != expanded.end() || bp_it != measured.end())
    FAIL_CHECK("first difference at index " << (spec_it - expanded.begin()) << ": spec '"
               << (spec_it == expanded.end() ? "(end)" : *spec_it) << "', bp.json '"
               << (bp_it == measured.end() ? "(end)" : *bp_it) << "'");
  CHECK(expanded.size() == 125);
  CHECK(measured.size() == 125);
  // The profile's own import of the same files has the same names in the same order.
  const Profile& imported = gpt2_case().profile;
  REQUIRE(imported.layers.size() == model.layers.size());
  for (std::size_t i = 0; i < model.layers.size(); ++i) CHECK(imported.layers[i].name == model.layers[i].name);
}

}  // namespace
}  // namespace syncplan::golden
