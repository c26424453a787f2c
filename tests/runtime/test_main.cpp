// Catch2's main for the runtime's unit tests (test_runtime).
#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>
