// Catch2's implementation, compiled once for every test program (tests/CMakeLists.txt): each copy
// took about 35 CPU-seconds, a dozen of them a fifth of the suite's build on 2 cores. No main():
// catch_main.cpp has the usual one, tests/golden/golden_main.cpp its own (a skip without data).
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include "catch_session.hpp"

namespace syncplan::testing {
int run_catch_session(int argc, char* argv[]) { return Catch::Session().run(argc, argv); }
}  // namespace syncplan::testing
