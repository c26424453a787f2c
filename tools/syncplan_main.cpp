// The syncplan command line: subcommands, and the mapping of errors to exit codes (SPEC section 2).
#include "core/errors.hpp"
#include "tools/cli_common.hpp"

#include <CLI/CLI.hpp>

#include <cstdio>
#include <exception>
#include <iostream>
#include <string>

namespace {

// Error messages are one line: a newline inside a layer name must not break that.
std::string one_line(std::string message) {
  std::string out;
  for (const char ch : message) {
    if (ch == '\n') out += "\\n";
    else if (ch == '\r') out += "\\r";
    else if (static_cast<unsigned char>(ch) < 0x20 || ch == 0x7f) {  // no terminal control codes
      char escaped[8];
      std::snprintf(escaped, sizeof escaped, "\\x%02x", static_cast<unsigned char>(ch));
      out += escaped;
    } else out += ch;
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"syncplan: plan and simulate communication schedules for data-parallel training "
               "(S-SGD, WFBP, local SGD, partial sync / DreamDDP). Times are in seconds."};
  app.require_subcommand(1);
  app.set_version_flag("--version", "syncplan 0.1.0");
  syncplan::cli::Action action;
  syncplan::cli::add_import_commands(app, action);
  syncplan::cli::add_plan_command(app, action);
  syncplan::cli::add_simulate_command(app, action);
  syncplan::cli::add_profile_command(app, action);
  syncplan::cli::add_profile_link_command(app, action);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == static_cast<int>(CLI::ExitCodes::Success)) return app.exit(e);
    std::cerr << "syncplan: " << one_line(e.what()) << " (see --help)\n";
    return 2;
  }
  try {
    const int code = action ? action() : 2;
    std::cout.flush();
    if (!std::cout) {
      std::cerr << "syncplan: error: cannot write to standard output\n";
      return 1;
    }
    return code;
  } catch (const syncplan::InputError& e) {
    std::cerr << "syncplan: " << one_line(e.what()) << '\n';
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "syncplan: error: " << one_line(e.what()) << '\n';
    return 1;
  }
}
