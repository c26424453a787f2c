// Measured link fit (syncplan.link/v1, SPEC section 7, docs/formats.md, docs/link.md): one
// collective's time at one group size, interpolated from its samples, alpha-beta outside them.
#pragma once

#include "core/json_io.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace syncplan {

inline constexpr const char* kLinkFormat = "syncplan.link/v1";
/// The one collective link fits describe so far (SPEC section 7).
inline constexpr const char* kAllreduceCollective = "allreduce";

/// The longest collective a link file may describe: `alpha_s`, each sample's `time_s`, and
/// `beta_s_per_byte` x 1 byte are at most a day (s); a longer one is no measurement (the same bound
/// as fit_alpha_beta's samples, profiler/alpha_beta_fit.hpp).
inline constexpr double kLongestCollective_s = limits::kLongestTime_s;

/// One measured point of a sweep: the time of one collective on `size_bytes` bytes per rank.
struct LinkSample {
  std::int64_t size_bytes = 0;  ///< bytes per rank (the all-reduce's buffer), >= 0
  double time_s = 0;            ///< one collective, seconds (max over ranks of the mean), >= 0
  double algbw_GBps = 0;        ///< size_bytes / time_s, in GB/s (1 GB = 1e9 B), >= 0
  double busbw_GBps = 0;        ///< algbw x 2(workers-1)/workers for all-reduce, GB/s, >= 0
};

/// A measured link: the samples of a collective across `workers` ranks, and the alpha-beta line
/// alpha_s + beta_s_per_byte n fitted to them (docs/link.md, "The link model").
struct LinkFit {
  std::string collective = kAllreduceCollective;  ///< "allreduce"
  int workers = 1;                    ///< ranks in the group it was measured on, >= 1
  std::string source;                 ///< "measured:mpi", "measured:nccl", "imported:nccl-tests"
  double alpha_s = 0;                 ///< latency term, seconds, >= 0
  double beta_s_per_byte = 0;         ///< inverse bandwidth, seconds per byte, >= 0
  double r_squared = 0;               ///< goodness of the fit on `samples`, in [0, 1] (docs/link.md)
  std::vector<LinkSample> samples;    ///< at least one, in any order; sizes may repeat

  /// Predicted time of one collective on `size_bytes` bytes per rank, in seconds (SPEC section 7,
  /// docs/link.md "The link model"). The measured points are the samples with size_bytes > 0 and
  /// time_s > 0, one per size (repeated sizes: the mean of their times). Between the smallest and
  /// the largest measured size the time is interpolated linearly in log(size)-log(time) between
  /// the two nearest measured sizes, so a measured size gives back its (mean) time; outside that
  /// range, at size 0, or without measured points: alpha_s + beta_s_per_byte x size_bytes.
  /// Negative or NaN sizes count as 0. O(samples), no allocation.
  double time_s(double size_bytes) const;

  /// The all-reduce start-up time that bucket fusion saves per merged all-reduce (s, >= 0): the
  /// least of t - beta_s_per_byte x n over the three smallest measured sizes n (mean time t each;
  /// the least rather than the mean because timing noise only adds time), at least 0; alpha_s when
  /// there is no measured point (docs/link.md "The start-up time").
  double startup_s() const;
};

/// One point of the link model: a measured size and its (mean) time.
struct LinkPoint {
  double size_bytes = 0;  ///< > 0
  double time_s = 0;      ///< > 0
};

/// The measured points of `link` that LinkFit::time_s interpolates between: the samples with
/// size and time > 0, sorted by size, each size once with the mean of its times.
std::vector<LinkPoint> link_points(const LinkFit& link);

/// Algorithm bandwidth of one collective on `size_bytes` taking `time_s`: size / time in GB/s
/// (1 GB = 1e9 B), as nccl-tests' doc/PERFORMANCE.md defines it; 0 when time_s is 0.
double algbw_GBps(std::int64_t size_bytes, double time_s);

/// All-reduce bus bandwidth: algbw x 2(workers-1)/workers (nccl-tests' doc/PERFORMANCE.md,
/// SPEC section 7); 0 for one worker. `workers` >= 1.
double allreduce_busbw_GBps(double algbw_GBps, int workers);

/// The sample of an all-reduce on `size_bytes` that took `time_s` across `workers` ranks, with its
/// algbw and busbw computed by the two functions above.
LinkSample allreduce_sample(std::int64_t size_bytes, double time_s, int workers);

/// Parses a syncplan.link/v1 document. Unknown keys, wrong types, a collective other than
/// "allreduce", workers < 1 (or > 16,777,216), negative or non-finite numbers, times over
/// kLongestCollective_s, r_squared above 1 and an empty sample list throw InputError naming
/// `origin` and the field (and the sample index).
LinkFit link_from_json(const Json& document, const std::string& origin);

/// Reads a link file (read_json_file + link_from_json).
LinkFit read_link_file(const std::string& path);

/// The syncplan.link/v1 document for `link`.
Json link_to_json(const LinkFit& link);

}  // namespace syncplan
