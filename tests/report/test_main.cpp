// The Catch2 main of test_report, compiled once so the test files rebuild quickly.
#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>
