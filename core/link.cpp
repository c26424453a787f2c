// syncplan.link/v1 reading, validation and writing; the bandwidth conventions of nccl-tests.
#include "core/link.hpp"

#include "core/errors.hpp"
#include "core/limits.hpp"
#include "core/units.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace syncplan {

namespace {

double required_nonnegative(ObjectReader& reader, const std::string& key) {
  return read_nonnegative_number(reader.required(key), reader.where() + ": field '" + key + "'");
}

// A number in [0, kLongestCollective_s]: seconds, or seconds per byte for beta.
double required_time(ObjectReader& reader, const std::string& key) {
  const double time = required_nonnegative(reader, key);
  if (time > kLongestCollective_s)
    throw InputError(reader.where() + ": field '" + key + "': at most " + format_exact(kLongestCollective_s) +
                     " (a day), got " + format_exact(time) + "; not a measurement");
  return time;
}

LinkSample sample_from_json(const Json& value, const std::string& where) {
  ObjectReader reader(value, where);
  LinkSample sample;
  sample.size_bytes = reader.required_integer("size_bytes", 0, limits::kMaxSizeBytes);
  sample.time_s = required_time(reader, "time_s");
  sample.algbw_GBps = required_nonnegative(reader, "algbw_GBps");
  sample.busbw_GBps = required_nonnegative(reader, "busbw_GBps");
  reader.reject_unknown_keys();
  return sample;
}

// A sample the log-log interpolation can use: a size and a time whose logarithms are finite.
bool measured(const LinkSample& sample) { return sample.size_bytes > 0 && sample.time_s > 0; }

// The measured sizes that bracket a size: the largest at or below it and the smallest at or above
// it, each with the sum and count of its samples' times (a repeated size is its mean).
struct Bracket {
  double below_bytes = -1, below_sum_s = 0;
  int below_count = 0;
  double above_bytes = std::numeric_limits<double>::infinity(), above_sum_s = 0;
  int above_count = 0;

  void add(const LinkSample& sample, double size_bytes) {
    const double size = static_cast<double>(sample.size_bytes);
    if (size <= size_bytes && size >= below_bytes) {
      if (size > below_bytes) below_sum_s = 0, below_count = 0, below_bytes = size;
      below_sum_s += sample.time_s;
      ++below_count;
    }
    if (size >= size_bytes && size <= above_bytes) {
      if (size < above_bytes) above_sum_s = 0, above_count = 0, above_bytes = size;
      above_sum_s += sample.time_s;
      ++above_count;
    }
  }
};

// The number of smallest measured sizes the start-up time is taken from (LinkFit::startup_s).
constexpr std::size_t kStartupSizes = 3;

}  // namespace

double LinkFit::time_s(double size_bytes) const {
  const double line_s = alpha_s + beta_s_per_byte * (size_bytes > 0 ? size_bytes : 0.0);
  if (!(size_bytes > 0)) return line_s;
  Bracket bracket;
  for (const LinkSample& sample : samples)
    if (measured(sample)) bracket.add(sample, size_bytes);
  if (bracket.below_count == 0 || bracket.above_count == 0) return line_s;  // outside the measured sizes
  const double below_s = bracket.below_sum_s / bracket.below_count;
  if (bracket.below_bytes == bracket.above_bytes) return below_s;           // a measured size
  const double above_s = bracket.above_sum_s / bracket.above_count;
  // docs/link.md: log t = log t_a + (log n - log n_a) / (log n_b - log n_a) x (log t_b - log t_a).
  const double fraction = std::log(size_bytes / bracket.below_bytes) / std::log(bracket.above_bytes / bracket.below_bytes);
  return below_s * std::exp(fraction * std::log(above_s / below_s));
}

std::vector<LinkPoint> link_points(const LinkFit& link) {
  std::vector<LinkSample> sorted;
  for (const LinkSample& sample : link.samples)
    if (measured(sample)) sorted.push_back(sample);
  std::stable_sort(sorted.begin(), sorted.end(),
                   [](const LinkSample& a, const LinkSample& b) { return a.size_bytes < b.size_bytes; });
  std::vector<LinkPoint> points;
  for (std::size_t i = 0; i < sorted.size();) {
    std::size_t end = i;
    double sum_s = 0;
    for (; end < sorted.size() && sorted[end].size_bytes == sorted[i].size_bytes; ++end) sum_s += sorted[end].time_s;
    points.push_back({static_cast<double>(sorted[i].size_bytes), sum_s / static_cast<double>(end - i)});
    i = end;
  }
  return points;
}

double LinkFit::startup_s() const {
  const std::vector<LinkPoint> points = link_points(*this);
  if (points.empty()) return alpha_s;
  double least_s = std::numeric_limits<double>::infinity();
  for (std::size_t i = 0; i < std::min(points.size(), kStartupSizes); ++i)
    least_s = std::min(least_s, points[i].time_s - beta_s_per_byte * points[i].size_bytes);
  return std::max(least_s, 0.0);
}

double algbw_GBps(std::int64_t size_bytes, double time_s) {
  return time_s > 0 ? static_cast<double>(size_bytes) / time_s / units::kBytesPerGB : 0.0;
}

double allreduce_busbw_GBps(double algbw, int workers) {
  SYNCPLAN_CHECK(workers >= 1);
  // nccl-tests doc/PERFORMANCE.md: busBw = algBw * 2(n-1)/n for all-reduce.
  return algbw * 2.0 * (workers - 1) / workers;
}

LinkSample allreduce_sample(std::int64_t size_bytes, double time_s, int workers) {
  LinkSample sample;
  sample.size_bytes = size_bytes;
  sample.time_s = time_s;
  sample.algbw_GBps = algbw_GBps(size_bytes, time_s);
  sample.busbw_GBps = allreduce_busbw_GBps(sample.algbw_GBps, workers);
  return sample;
}

LinkFit link_from_json(const Json& document, const std::string& origin) {
  ObjectReader top(document, origin);
  top.require_format(kLinkFormat);
  LinkFit link;
  link.collective = top.required_string("collective");
  if (link.collective != kAllreduceCollective)
    throw InputError(origin + ": field 'collective': expected \"" + kAllreduceCollective + "\", got \"" +
                     link.collective + "\"");
  link.workers = static_cast<int>(top.required_integer("workers", 1, limits::kMaxWorkers));
  link.source = top.required_string("source");
  link.alpha_s = required_time(top, "alpha_s");
  link.beta_s_per_byte = required_time(top, "beta_s_per_byte");
  link.r_squared = required_nonnegative(top, "r_squared");
  if (link.r_squared > 1)
    throw InputError(origin + ": field 'r_squared': at most 1, got " + format_exact(link.r_squared));
  const Json& samples = top.required("samples");
  if (!samples.is_array())
    throw InputError(origin + ": field 'samples': expected an array, got " + json_type_name(samples));
  if (samples.empty()) throw InputError(origin + ": field 'samples': no samples (empty array)");
  top.reject_unknown_keys();
  for (std::size_t i = 0; i < samples.size(); ++i)
    link.samples.push_back(sample_from_json(samples[i], origin + ": samples[" + std::to_string(i) + "]"));
  return link;
}

LinkFit read_link_file(const std::string& path) { return link_from_json(read_json_file(path), path); }

Json link_to_json(const LinkFit& link) {
  Json document;
  document["format"] = kLinkFormat;
  document["collective"] = link.collective;
  document["workers"] = link.workers;
  document["source"] = link.source;
  document["alpha_s"] = link.alpha_s;
  document["beta_s_per_byte"] = link.beta_s_per_byte;
  document["r_squared"] = link.r_squared;
  Json samples = Json::array();
  for (const LinkSample& sample : link.samples)
    samples.push_back(Json{{"size_bytes", sample.size_bytes},
                           {"time_s", sample.time_s},
                           {"algbw_GBps", sample.algbw_GBps},
                           {"busbw_GBps", sample.busbw_GBps}});
  document["samples"] = std::move(samples);
  return document;
}

}  // namespace syncplan
