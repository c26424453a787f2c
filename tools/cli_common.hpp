// Pieces shared by the syncplan subcommands: registration, output checks, table printing.
#pragma once

#include "core/profile.hpp"
#include "simulator/period_model.hpp"

#include <CLI/CLI.hpp>

#include <functional>
#include <string>
#include <vector>

namespace syncplan::cli {

/// A subcommand's action, run after parsing; returns the exit code.
using Action = std::function<int()>;

/// Registers `syncplan import ...`; sets `action` when one of its subcommands is chosen.
void add_import_commands(CLI::App& app, Action& action);
/// Registers `syncplan plan`.
void add_plan_command(CLI::App& app, Action& action);
/// Registers `syncplan simulate`.
void add_simulate_command(CLI::App& app, Action& action);
/// Registers `syncplan profile` (tools/cmd_profile.cpp).
void add_profile_command(CLI::App& app, Action& action);
/// Registers `syncplan profile-link` (tools/cmd_profile_link.cpp).
void add_profile_link_command(CLI::App& app, Action& action);

/// An option and the path given to it, e.g. {"-o", "plan.json"}; an empty path is "not given".
struct NamedPath {
  std::string option;
  std::string path;
};

/// Checks, before a command reads or writes anything, the inputs as check_input_paths does, and
/// that every given output can be written: its folder exists, it is not a folder, it is not the
/// same file as an input or another output. Throws InputError naming the option and the path.
void check_output_paths(const std::vector<NamedPath>& outputs, const std::vector<NamedPath>& inputs);

/// Checks, before a command reads anything, that every given input (a path an option names) is a
/// readable regular file (a FIFO or device could block or never end; core/json_io.cpp reads only
/// regular files). Throws InputError "OPTION: PATH: ..." saying it is missing, a directory, not a
/// regular file or unreadable.
void check_input_paths(const std::vector<NamedPath>& inputs);

/// The one-line description of a profile printed above tables.
std::string describe_profile(const Profile& profile, const std::string& path);

/// Seconds for tables: 6 decimals, or 6 significant digits with an exponent when huge or tiny
/// (format_short).
std::string seconds_text(double seconds);

/// Prints rows of cells as left-aligned columns separated by two spaces.
void print_table(std::ostream& out, const std::vector<std::vector<std::string>>& rows);

/// Reads the --period text as H: a whole number in [1, kMaxPeriod]. Throws InputError
/// "--period: ..." quoting the text otherwise (also when it is too large for any integer type).
int checked_period(const std::string& text);

}  // namespace syncplan::cli
