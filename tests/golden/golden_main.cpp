// Catch2 runner of the golden tests: exits 77 (skipped) with a message when the reference data is
// absent, so a checkout without ../shared still passes its test suite.
#include "catch_session.hpp"

#include "reference_data.hpp"

#include <iostream>

int main(int argc, char** argv) {
  std::string missing;
  if (!syncplan::golden::gpt2_data_present(missing)) {
    std::cout << "SKIP: reference data not found at " << syncplan::golden::gpt2_folder().string()
              << " (missing " << missing << "; set SYNCPLAN_SHARED_DATA or -DSYNCPLAN_SHARED_DATA_DIR "
              << "to the folder holding dreamddp/)\n";
    return syncplan::golden::kSkipExitCode;
  }
  return syncplan::testing::run_catch_session(argc, argv);
}
