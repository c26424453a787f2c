// The Catch2 session of a test program, compiled once in catch_impl.cpp (Catch::Session is declared
// only beside Catch2's implementation).
#pragma once

namespace syncplan::testing {

/// Runs the Catch2 test cases linked into the program as its command line selects; returns the
/// exit status (the number of failed test cases, at most 255).
int run_catch_session(int argc, char* argv[]);

}  // namespace syncplan::testing
