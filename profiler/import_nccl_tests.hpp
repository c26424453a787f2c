// Importer for NVIDIA nccl-tests' all_reduce_perf results, the text table and the -J JSON file,
// into an alpha-beta link fit (syncplan.link/v1; docs/link.md, "Importing nccl-tests").
#pragma once

#include "core/link.hpp"
#include "profiler/alpha_beta_fit.hpp"

#include <optional>
#include <string>
#include <vector>

namespace syncplan {

/// Options of `syncplan import nccl-tests`.
struct NcclTestsImportOptions {
  std::optional<int> workers;              ///< --workers: ranks, when the log does not list them
  bool in_place = false;                   ///< use the in-place columns instead of the out-of-place ones
  FitErrors fit_errors = FitErrors::kRelative;
};

/// What an import produced, and what it had to leave out.
struct NcclTestsImport {
  LinkFit link;                        ///< source "imported:nccl-tests"
  std::string format;                  ///< "text" or "json"
  std::string program;                 ///< the nccl-tests program the log names, or "" when it does not
  bool through_origin = false;         ///< the fit's alpha was negative and refitted at 0
  /// One line each (for stderr; the library prints nothing): rows skipped, a missing footer, a
  /// launcher's rank prefix found on the lines, a poor fit (R^2 < kPoorFitRSquared, naming the worst sizes).
  std::vector<std::string> warnings;
};

/// Reads an all_reduce_perf result file: JSON when its first non-blank character is '{' (the -J
/// output, format versions 1 to 3), else the text table that all_reduce_perf prints. A text line
/// opening with an unsigned integer or with two numbers is a data row (the size and count columns
/// lead every layout), so a bad row is an error, never skipped as chatter. The rank count comes
/// from the log ("#  Rank" lines; in JSON config.nthreads x config.ngpus x the device list) or from
/// options.workers; both given must agree; options.workers replaces an unusable count in the log
/// (an incomplete device list, a bad config field) with a warning. Samples use the out-of-place
/// time (or in-place with options.in_place); rows whose time is N/A or nan, or that report wrong
/// elements, are skipped with a warning. Lines that open with a launcher's rank tag ("[1,0]<stdout>:"
/// of mpirun --tag-output, "[0] " of -prepend-rank) are read without it, with a warning.
/// Throws InputError naming `path` (and the line, result index or field) for: an unreadable or
/// empty file, invalid or truncated JSON, a JSON 'version' other than 1 to 3, a text row cut short
/// or with the wrong number of columns, a size or count that is not a whole number >= 0, a negative
/// time or bandwidth, a data row before the column header, a second column header (two runs in one
/// log), a log of another collective (all_gather_perf, ...; or rows whose redop is none, whose root
/// is not -1, or whose size is not count x type size), algbw not size/time or busbw not algbw x
/// 2(n-1)/n (loosely, for the printed rounding), no usable rank count (naming the field or lines at
/// fault) without options.workers, a one-rank run (nothing crosses a link: no link cost to fit), a
/// JSON result whose 'type' is not one of nccl-tests' data types, no usable row, and the fit's own
/// errors (fit_alpha_beta).
NcclTestsImport import_nccl_tests(const std::string& path, const NcclTestsImportOptions& options);

}  // namespace syncplan
