// Locating and reading the reference data of the golden tests.
#include "reference_data.hpp"

#include "profiler/import_dreamddp.hpp"

#include <cstdlib>

namespace syncplan::golden {

std::filesystem::path shared_data_root() {
  const char* override_root = std::getenv("SYNCPLAN_SHARED_DATA");
  if (override_root != nullptr && *override_root != '\0') return override_root;
  return SYNCPLAN_SHARED_DATA_DIR;
}

std::filesystem::path gpt2_folder() { return shared_data_root() / "dreamddp" / "gpt2-8workers-10gbit"; }

bool gpt2_data_present(std::string& missing) {
  for (const char* name : {"bp.json", "comm.json", "dreamddp_schedule_H10.json", "expected.json"}) {
    std::error_code ec;
    if (!std::filesystem::is_regular_file(gpt2_folder() / name, ec)) {
      missing = (gpt2_folder() / name).string();
      return false;
    }
  }
  return true;
}

const Gpt2Case& gpt2_case() {
  static const Gpt2Case loaded = [] {
    Gpt2Case data;
    data.folder = gpt2_folder();
    DreamddpImportOptions options;
    options.model = "gpt2";
    options.workers = 8;
    data.profile = import_dreamddp((data.folder / "bp.json").string(),
                                   (data.folder / "comm.json").string(), options);
    data.times = backprop_times(data.profile, "gpt2 profile");
    data.expected = read_json_file((data.folder / "expected.json").string());
    return data;
  }();
  return loaded;
}

}  // namespace syncplan::golden
