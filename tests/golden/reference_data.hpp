// Where the golden tests find the reference data (SPEC section 6) and how they read it.
#pragma once

#include "core/json_io.hpp"
#include "core/profile.hpp"
#include "simulator/period_model.hpp"

#include <filesystem>
#include <string>

namespace syncplan::golden {

/// Exit code of a run whose data is absent; CTest's SKIP_RETURN_CODE.
inline constexpr int kSkipExitCode = 77;

/// The data root: $SYNCPLAN_SHARED_DATA when set and non-empty, else the CMake cache variable
/// SYNCPLAN_SHARED_DATA_DIR compiled in (by default ../shared/data beside the checkout).
std::filesystem::path shared_data_root();

/// The GPT-2 case: <root>/dreamddp/gpt2-8workers-10gbit.
std::filesystem::path gpt2_folder();

/// True when every file the golden tests read is in gpt2_folder(); otherwise `missing` names the
/// first absent one.
bool gpt2_data_present(std::string& missing);

/// The GPT-2 case, read once: the imported profile, its backprop times and expected.json.
struct Gpt2Case {
  std::filesystem::path folder;
  Profile profile;
  BackpropTimes times;
  Json expected;
};
const Gpt2Case& gpt2_case();

}  // namespace syncplan::golden
