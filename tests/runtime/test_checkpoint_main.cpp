// The Catch2 main of test_runtime_faults (the runtime's data, checkpoint, fingerprint and
// fatal-signal unit tests), compiled once so the test files rebuild quickly.
#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>
