// The main() of the Catch2 test programs (as Catch2's own CATCH_CONFIG_MAIN writes it): run the
// session on the command line (tests/CMakeLists.txt, syncplan_catch_main).
#include "catch_session.hpp"

int main(int argc, char* argv[]) { return syncplan::testing::run_catch_session(argc, argv); }
