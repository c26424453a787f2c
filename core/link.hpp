// Measured link fit (syncplan.link/v1, SPEC section 7, docs/formats.md, docs/link.md): one
// collective's time at one group size, from its samples made nondecreasing (LinkModel).
#pragma once

#include "core/json_io.hpp"

#include <cstdint>
#include <optional>
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

/// Below this R^2 the single alpha-beta line describes the samples poorly (docs/link.md "Fitting"):
/// the importers, the sweep and the commands that take `--link` warn. The samples are still the
/// model (LinkModel), so nothing is refused.
inline constexpr double kPoorFitRSquared = 0.9;

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

  /// Predicted time of one collective on `size_bytes` bytes per rank, in seconds: LinkModel(*this)
  /// .time_s(size_bytes) (SPEC section 7, docs/link.md "The link model"). Builds the model on every
  /// call (sorts the samples, allocates): code that times many sizes builds one LinkModel instead.
  double time_s(double size_bytes) const;

  /// The all-reduce start-up time that bucket fusion saves per merged all-reduce (s, >= 0):
  /// LinkModel(*this).startup_s() (docs/link.md "The start-up time").
  double startup_s() const;
};

/// One point of the link model: a measured size and its (mean) time.
struct LinkPoint {
  double size_bytes = 0;  ///< > 0
  double time_s = 0;      ///< > 0
};

/// The measured points of `link`: the samples with size and time > 0, sorted by size, each size
/// once with the mean of its times (as measured: LinkModel::points() are these made nondecreasing).
std::vector<LinkPoint> link_points(const LinkFit& link);

/// The link model of a LinkFit, prepared once for timing many sizes (docs/link.md "The link
/// model"; SPEC section 7 says the line is the model outside the measured sizes, docs/link.md says
/// why this model differs). With points p_1 < ... < p_P (link_points, each time lowered to the
/// least time of its size and every larger one: t'_i = min_{j >= i} t_j) and the start-up time
/// t_0 = startup_s() <= t'_1, the time of n bytes is
///   n <= 0 (or NaN):  t_0
///   0 < n < n_1:      t_0 + (t'_1 - t_0) n / n_1              (the chord from the start-up time)
///   n_1 <= n <= n_P:  t'_a (n / n_a)^(log(t'_b / t'_a) / log(n_b / n_a)), a, b the nearest points
///   n > n_P:          t'_P n / n_P                             (the largest size's algbw)
/// and alpha_s + beta_s_per_byte n for a file without points. Nondecreasing in n, continuous for
/// n > 0; every measured size whose mean time is at most every larger size's gives back that time.
class LinkModel {
 public:
  /// Prepares the model of `link` (O(samples log samples)). `link` may go away afterwards.
  explicit LinkModel(const LinkFit& link);

  /// Time of one collective on `size_bytes` bytes per rank, in seconds (the formulas above).
  /// O(log points), no allocation.
  double time_s(double size_bytes) const;

  /// The start-up time (s, >= 0, at most the first point's time): the least of t'_i - beta n_i over
  /// the three smallest points (timing noise only adds time), at least 0; alpha_s without points
  /// (docs/link.md "The start-up time").
  double startup_s() const { return startup_s_; }

  /// The least time per byte: time_s(n) >= this x n for every n >= 0 (s/byte): the least t'_i / n_i
  /// over the points (docs/link.md "Buckets under a link" proves it), beta_s_per_byte without them.
  double least_s_per_byte() const { return least_s_per_byte_; }

  /// The points the model interpolates between: link_points with nondecreasing times t'_i.
  const std::vector<LinkPoint>& points() const { return points_; }

  /// The largest measured size n_P (bytes); 0 without points: then every size is on the line.
  double largest_size_bytes() const { return points_.empty() ? 0.0 : points_.back().size_bytes; }

  /// The algorithm bandwidth sizes above the largest are timed at, n_P / t'_P in GB/s (1 GB = 1e9 B);
  /// 0 without points.
  double largest_size_algbw_GBps() const;

 private:
  std::vector<LinkPoint> points_;  // nondecreasing times t'_i
  double startup_s_ = 0;           // t_0
  double least_s_per_byte_ = 0;
  double alpha_s_ = 0, beta_s_per_byte_ = 0;  // the fitted line, for a file without points
};

/// One line (no "warning:" prefix) when `link`'s alpha-beta fit is poor (r_squared <
/// kPoorFitRSquared): it names `origin` and the R^2; std::nullopt otherwise.
std::optional<std::string> poor_link_fit_warning(const LinkFit& link, const std::string& origin);

/// One line (no "warning:" prefix) when all-reduces of up to `largest_allreduce_bytes` lie beyond
/// the largest measured size of `model` (read from `origin`), naming both sizes and the algbw they
/// are extrapolated at; std::nullopt when they do not, or when the model has no points.
std::optional<std::string> beyond_sweep_warning(const LinkModel& model, double largest_allreduce_bytes,
                                                const std::string& origin);

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
