// Shared command-line helpers.
#include "tools/cli_common.hpp"

#include "core/printable.hpp"

#include "core/errors.hpp"
#include "core/limits.hpp"
#include "core/plan.hpp"

#include <algorithm>
#include <chrono>
#include <iostream>
#include <thread>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <unistd.h>
#include <cstdlib>
#include <cstdio>
#include <fstream>
#include <ostream>

namespace syncplan::cli {

std::string one_line(std::string message) {
  std::string out;
  for (const char ch : message) {
    if (ch == '\n') out += "\\n";
    else if (ch == '\r') out += "\\r";
    else out += ch;
  }
  // Other control characters, C1 included, and bytes that are not UTF-8 as core/printable.hpp
  // escapes them (the helper's re-check: CLI11's messages and warnings printed C2 9B and 0xFF raw).
  return printable_text(out, false);
}

int run_on_every_rank(const MpiSession& mpi, const std::function<int()>& job) {
  // How long the other ranks wait before exiting after bad input, so that rank 0's message is out.
  constexpr std::chrono::milliseconds kReportGrace{1500};
  try {
    return job();
  } catch (const InputError& e) {
    // A barrier could hang on an error found by one rank alone: a grace period instead.
    if (!mpi.is_root()) {
      std::this_thread::sleep_for(kReportGrace);
      return 2;
    }
    // Printed here, before MPI_Finalize: the ranks leave it together, and mpirun ends the job as
    // soon as a rank exits non-zero, so a line printed after it was lost now and then on a busy
    // machine (runtime.run.delayed under ctest -j2 beside a build).
    std::cerr << "syncplan: " << one_line(e.what()) << std::endl;
    return 2;
  } catch (const std::exception& e) {
    // A failed MPI/CUDA/NCCL call may strike one rank while the others wait in a collective.
    if (mpi.size() > 1) {
      std::cerr << "syncplan: error: rank " << mpi.rank() << ": " << e.what() << '\n';
      mpi.abort(1);
    }
    throw;
  }
}

namespace {
// Two paths name the same file (existing or not): equal after resolving links, a link to a file
// not yet made included (output_target), and "..". An unresolvable path is no match here: the
// output checks refuse it by name.
bool same_file(const std::string& a, const std::string& b) {
  try {
    return output_target(a, a) == output_target(b, b);
  } catch (const InputError&) {
    return false;
  }
}

// An output's folder exists and takes new files, and the path is no folder (check_output_paths).
// Through a link, the folder is that of the file it names (it may point at nothing yet).
void check_output_folder(const std::string& option, const std::string& given) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const std::string path = fs::is_symlink(fs::symlink_status(given, ec)) ? output_target(given, option + ": " + given).string()
                                                                          : given;
  fs::path folder = fs::path(path).parent_path();
  if (folder.empty()) folder = ".";
  if (!fs::is_directory(folder, ec))
    throw InputError(option + ": " + given + ": folder " + folder.string() + " does not exist");
  if (fs::is_directory(path, ec)) throw InputError(option + ": " + given + ": is a directory");
  require_file_name_fits(path, option + ": " + given);
  // A folder may exist and still refuse new files (/proc, a read-only mount, permissions):
  // probe it with a file of our own now, so that a long job does not fail at its very end.
  // An existing non-regular target (/dev/null, a FIFO) is written directly, with no new file.
  if (!fs::exists(path, ec) || fs::is_regular_file(path, ec)) {
    std::string probe = (folder / ".syncplan-write-probe-XXXXXX").string();
    const int fd = mkstemp(probe.data());
    if (fd < 0)
      throw InputError(option + ": " + given + ": cannot create a file in folder " + folder.string() + " (" +
                       std::strerror(errno) + ")");
    close(fd);
    std::remove(probe.c_str());
  }
}
}  // namespace

void check_output_paths(const std::vector<NamedPath>& outputs, const std::vector<NamedPath>& inputs) {
  check_input_paths(inputs);
  for (std::size_t i = 0; i < outputs.size(); ++i) {
    const auto& [option, path] = outputs[i];
    if (path.empty()) continue;
    // The standard output or error as a path is written through its descriptor, whatever it is
    // (a pipe, a terminal, a regular file): no folder to probe (the helper's re-check: /dev/fd/1
    // with stdout a regular file was refused as "cannot create a file in folder /dev/fd").
    if (standard_descriptor(path) < 0) check_output_folder(option, path);
    for (const NamedPath& input : inputs)
      if (!input.path.empty() && same_file(path, input.path))
        throw InputError(option + ": " + path + ": same file as " + input.option + "; it would be overwritten");
    for (std::size_t k = 0; k < i; ++k)
      if (!outputs[k].path.empty() && same_file(path, outputs[k].path))
        throw InputError(option + ": " + path + ": same file as " + outputs[k].option);
  }
}

void check_input_paths(const std::vector<NamedPath>& inputs) {
  namespace fs = std::filesystem;
  for (const auto& [option, path] : inputs) {
    if (path.empty()) continue;
    std::error_code ec;
    const fs::file_status status = fs::status(path, ec);
    if (!fs::exists(status))
      throw InputError(option + ": " + path + ": " +
                       (ec && ec != std::errc::no_such_file_or_directory ? "cannot read file (" + ec.message() + ")"
                                                                          : std::string("no such file")));
    if (fs::is_directory(status)) throw InputError(option + ": " + path + ": is a directory, not a file");
    if (!fs::is_regular_file(status)) throw InputError(option + ": " + path + ": not a regular file");
    if (!std::ifstream(path))
      throw InputError(option + ": " + path + ": cannot read file (" + std::strerror(errno) + ")");
  }
}

std::string describe_profile(const Profile& profile, const std::string& path) {
  std::string text = profile.model.value_or("(unnamed model)") + ", " +
                     count_text(static_cast<long long>(profile.layers.size()), "layer") + ", " + profile.source;
  if (profile.workers) text += ", " + count_text(*profile.workers, "worker");
  return text + " (" + path + ")";
}

std::string seconds_text(double seconds) { return format_short(seconds, 6); }

std::string join_names(const std::vector<std::string>& names) {
  std::string text;
  for (std::size_t i = 0; i < names.size(); ++i)
    text += (i == 0 ? "" : i + 1 == names.size() ? " and " : ", ") + names[i];
  return text;
}

void print_table(std::ostream& out, const std::vector<std::vector<std::string>>& rows) {
  std::vector<std::size_t> widths;
  for (const auto& row : rows)
    for (std::size_t i = 0; i < row.size(); ++i) {
      if (widths.size() <= i) widths.push_back(0);
      widths[i] = std::max(widths[i], row[i].size());
    }
  for (const auto& row : rows) {
    std::string line;
    for (std::size_t i = 0; i < row.size(); ++i) {
      line += row[i];
      if (i + 1 < row.size()) line += std::string(widths[i] - row[i].size() + 2, ' ');
    }
    out << line << '\n';
  }
}

int checked_period(const std::string& text) {
  std::size_t digits = text.size() > 0 && (text[0] == '-' || text[0] == '+') ? 1 : 0;
  const bool whole = digits < text.size() &&
                     text.find_first_not_of("0123456789", digits) == std::string::npos;
  if (!whole) throw InputError("--period: expected a whole number of iterations, got '" + text + "'");
  if (text[0] == '-' || text.find_first_not_of('0', digits) == std::string::npos)
    throw InputError("--period: must be >= 1, got " + text);
  const std::string significant = text.substr(text.find_first_not_of('0', digits));
  if (significant.size() > 9 || std::stol(significant) > kMaxPeriod)
    throw InputError("--period: at most " + std::to_string(kMaxPeriod) + ", got " + text);
  return static_cast<int>(std::stol(significant));
}

SyncTimes read_sync_times(const std::string& profile_path, const SyncTimeOptions& options) {
  if (options.sync_time_given && options.cluster_path.empty() && options.link_path.empty())
    throw InputError("--sync-time: needs --cluster or --link (without them the profile's sync_s are used)");
  return read_sync_times(read_profile_file(profile_path), profile_path, options);
}

SyncTimes read_sync_times(Profile profile, const std::string& origin, const SyncTimeOptions& options) {
  if (options.sync_time_given && options.cluster_path.empty() && options.link_path.empty())
    throw InputError("--sync-time: needs --cluster or --link (without them the profile's sync_s are used)");
  SyncTimeInputs inputs;
  if (!options.cluster_path.empty()) inputs.cluster = read_cluster_file(options.cluster_path, options.unnamed_allreduce);
  if (!options.link_path.empty()) inputs.link = read_link_file(options.link_path);
  inputs.cluster_origin = options.cluster_path;
  inputs.link_origin = options.link_path;
  inputs.mode = options.sync_time == "measured" ? SyncTimeMode::kMeasured
                : options.sync_time == "model"  ? SyncTimeMode::kModel
                                                : SyncTimeMode::kAuto;
  return choose_sync_times(std::move(profile), origin, std::move(inputs));
}

namespace {
std::vector<std::string>& pending_warnings() {
  static std::vector<std::string> warnings;
  return warnings;
}
}  // namespace

void warn(const std::string& line) { pending_warnings().push_back(line); }

void flush_warnings() {
  for (const std::string& line : pending_warnings()) std::cerr << "warning: " << one_line(line) << '\n';
  pending_warnings().clear();
}

void warn_about_link(const SyncTimes& choice, double largest_allreduce_bytes) {
  if (!choice.link) return;
  if (const auto poor = poor_link_fit_warning(*choice.link, choice.link_origin))
    warn(*poor);
  if (!choice.link_used) return;
  if (const auto beyond = beyond_sweep_warning(LinkModel(*choice.link), largest_allreduce_bytes, choice.link_origin))
    warn(*beyond);
}

}  // namespace syncplan::cli
