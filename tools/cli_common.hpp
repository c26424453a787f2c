// Pieces shared by the syncplan subcommands: registration, output checks, table printing.
#pragma once

#include "comm/mpi_session.hpp"
#include "core/field_error.hpp"
#include "core/profile.hpp"
#include "simulator/period_model.hpp"
#include "simulator/sync_times.hpp"

#include <CLI/CLI.hpp>

#include <functional>
#include <initializer_list>
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
/// Registers `syncplan run` (tools/cmd_run.cpp).
void add_run_command(CLI::App& app, Action& action);

/// Runs an MPI command's `job` on this rank and maps its errors as every rank must: bad input
/// (InputError, found alike on every rank or agreed on) is printed by rank 0 alone, here, before
/// the caller's MpiSession finalizes MPI, and 2 returned; the other ranks wait 1.5 s (so that
/// mpirun, which ends the job when the first rank exits non-zero, does not end rank 0 before its
/// line is out) and return 2. Any other error on a rank
/// of several is printed with the rank's number and ends the job (MPI_Abort, exit 1), since the
/// others may be waiting for this rank in a collective; on one rank it is rethrown.
int run_on_every_rank(const MpiSession& mpi, const std::function<int()>& job);

/// `message` on one line: newlines as "\n", carriage returns as "\r", other control codes as
/// "\xNN" (a newline inside a layer name must not break the one-line error of SPEC section 2).
std::string one_line(std::string message);

/// Registers `syncplan compare` (tools/cmd_compare.cpp).
void add_compare_command(CLI::App& app, Action& action);
/// Registers `syncplan report` (tools/cmd_report.cpp).
void add_report_command(CLI::App& app, Action& action);
/// Registers `syncplan whatif` (tools/cmd_whatif.cpp).
void add_whatif_command(CLI::App& app, Action& action);

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

/// Names for help texts: "a", "a and b", "a, b and c".
std::string join_names(const std::vector<std::string>& names);

/// Prints rows of cells as left-aligned columns separated by two spaces.
void print_table(std::ostream& out, const std::vector<std::vector<std::string>>& rows);

/// Reads the --period text as H: a whole number in [1, kMaxPeriod]. Throws InputError
/// "--period: ..." quoting the text otherwise (also when it is too large for any integer type).
int checked_period(const std::string& text);


/// A library request's field and the flag that sets it, e.g. {"period", "--period"}.
struct FieldFlag {
  const char* field;
  const char* flag;
};

/// Runs `job`; a FieldError about one of `flags`' fields comes out as an InputError that names the
/// flag instead ("period: must be >= 1" -> "--period: must be >= 1"); other errors pass unchanged.
template <class Job>
auto with_flags(std::initializer_list<FieldFlag> flags, Job&& job) -> decltype(job()) {
  try {
    return job();
  } catch (const FieldError& e) {
    for (const FieldFlag& flag : flags)
      if (e.field() == flag.field) throw InputError(e.renamed(flag.flag));
    throw;
  }
}

/// The --sync-time, --cluster and --link options of `plan` and `simulate`.
struct SyncTimeOptions {
  std::string cluster_path;     ///< --cluster (empty: none)
  std::string link_path;        ///< --link (empty: none)
  std::string sync_time = "auto";  ///< --sync-time: auto, measured or model
  bool sync_time_given = false;
  /// The algorithm of a cluster file that names none: "ring" (docs/cluster.md), "auto" with --model.
  AllreduceAlgorithm unnamed_allreduce = AllreduceAlgorithm::kRing;
};

/// Reads the profile, and the cluster and link files when given, and lets choose_sync_times
/// decide. Throws InputError when --sync-time is given without --cluster or --link.
SyncTimes read_sync_times(const std::string& profile_path, const SyncTimeOptions& options);
/// The same for a profile already in memory (e.g. made by `plan --model`); `origin` names it.
SyncTimes read_sync_times(Profile profile, const std::string& origin, const SyncTimeOptions& options);

/// Prints on stderr, once per command, the warnings about the link fit of `choice` (docs/link.md
/// "Warnings"), one line each: its alpha-beta fit is poor (r_squared < kPoorFitRSquared), and, when
/// the link times the all-reduces (choice.link_used), all-reduces of up to `largest_allreduce_bytes`
/// lie beyond its largest measured size. Nothing without a link fit. Never refuses: the samples
/// are still the model.
void warn_about_link(const SyncTimes& choice, double largest_allreduce_bytes);

/// A warning for stderr ("warning: LINE"), held until the command has finished: main prints the
/// held warnings (flush_warnings) when the command returns 0, and drops them when it ends in an error,
/// so that bad input stays one line on stderr (a warning before a failed write made it two; the
/// command-line fuzzer, docs/fuzzing.md).
void warn(const std::string& line);

/// Prints the held warnings to stderr, one "warning: ..." line each, and forgets them.
void flush_warnings();

/// The --sync-time help text shared by `plan` and `simulate`.
inline constexpr const char* kSyncTimeHelp =
    "with --cluster or --link: all-reduce times from the profile's sync_s ('measured'), the link fit or the "
    "cluster's cost model on param_bytes ('model'), or 'auto': measured when every layer has a sync_s and the "
    "profile's workers equal the link's or cluster's (default: auto)";
/// The --link help text shared by `plan` and `simulate`.
inline constexpr const char* kLinkHelp =
    "syncplan.link/v1 file (profile-link, import nccl-tests): its samples (interpolated, made nondecreasing; "
    "above the largest size at its bandwidth, docs/link.md) replace the cluster's nominal all-reduce times, a "
    "bucket's on its summed bytes, at the worker count it was measured at (see --sync-time)";

}  // namespace syncplan::cli
