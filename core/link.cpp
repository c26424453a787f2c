// syncplan.link/v1 reading, validation and writing; the link model (LinkModel); the bandwidth
// conventions of nccl-tests.
#include "core/link.hpp"

#include "core/errors.hpp"
#include "core/limits.hpp"
#include "core/units.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
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
    throw InputError(reader.where() + ": field '" + key + "': at most " + format_shortest(kLongestCollective_s) +
                     " (a day), got " + format_shortest(time) + "; not a measurement");
  return time;
}

LinkSample sample_from_json(const Json& value, const std::string& where) {
  ObjectReader reader(value, where);
  LinkSample sample;
  sample.size_bytes = reader.required_integer("size_bytes", 0, limits::kMaxSizeBytes);
  sample.time_s = required_time(reader, "time_s");
  if (sample.time_s > 0 && sample.time_s < limits::kShortestMeasuredTime_s)
    throw InputError(where + ": field 'time_s': " + format_shortest(sample.time_s) +
                     " s is more than 0 and less than 1e-09 s (1 ns); not a measured all-reduce");
  sample.algbw_GBps = required_nonnegative(reader, "algbw_GBps");
  sample.busbw_GBps = required_nonnegative(reader, "busbw_GBps");
  reader.reject_unknown_keys();
  return sample;
}

// A sample the log-log interpolation can use: a size and a time whose logarithms are finite.
bool measured(const LinkSample& sample) { return sample.size_bytes > 0 && sample.time_s > 0; }

// The number of smallest measured sizes the start-up time is taken from (LinkModel::startup_s).
constexpr std::size_t kStartupSizes = 3;

}  // namespace

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

double LinkFit::time_s(double size_bytes) const { return LinkModel(*this).time_s(size_bytes); }

double LinkFit::startup_s() const { return LinkModel(*this).startup_s(); }

LinkModel::LinkModel(const LinkFit& link)
    : points_(link_points(link)), alpha_s_(link.alpha_s), beta_s_per_byte_(link.beta_s_per_byte) {
  if (points_.empty()) {
    startup_s_ = alpha_s_;
    least_s_per_byte_ = beta_s_per_byte_;
    return;
  }
  // docs/link.md: t'_i = min_{j >= i} t_j. An all-reduce of n bytes can always run as one of a
  // larger measured size (padded), and timing noise only adds time.
  for (std::size_t i = points_.size() - 1; i-- > 0;)
    points_[i].time_s = std::min(points_[i].time_s, points_[i + 1].time_s);
  double least_s = std::numeric_limits<double>::infinity();
  for (std::size_t i = 0; i < std::min(points_.size(), kStartupSizes); ++i)
    least_s = std::min(least_s, points_[i].time_s - beta_s_per_byte_ * points_[i].size_bytes);
  // <= t'_1 - beta n_1 <= t'_1: the chord below the first point rises.
  startup_s_ = std::max(least_s, 0.0);
  least_s_per_byte_ = std::numeric_limits<double>::infinity();
  for (const LinkPoint& point : points_) least_s_per_byte_ = std::min(least_s_per_byte_, point.time_s / point.size_bytes);
}

double LinkModel::time_s(double size_bytes) const {
  const double n = size_bytes > 0 ? size_bytes : 0.0;  // negative and NaN count as 0
  if (points_.empty()) return alpha_s_ + beta_s_per_byte_ * n;
  const LinkPoint& first = points_.front();
  const LinkPoint& last = points_.back();
  // Each branch is clamped to its segment's end times, so that rounding never makes the model
  // fall where two formulas meet.
  if (n < first.size_bytes)  // the chord from (0, t_0) to the first point
    return std::min(first.time_s, startup_s_ + (first.time_s - startup_s_) * (n / first.size_bytes));
  if (n > last.size_bytes) return last.time_s * (n / last.size_bytes);  // the largest size's algbw; n / n_P > 1
  const auto above = std::lower_bound(points_.begin(), points_.end(), n,
                                      [](const LinkPoint& point, double size) { return point.size_bytes < size; });
  if (above->size_bytes == n) return above->time_s;  // a measured size
  const LinkPoint& below = *(above - 1);
  // docs/link.md: log t = log t_a + (log n - log n_a) / (log n_b - log n_a) x (log t_b - log t_a).
  const double fraction = std::log(n / below.size_bytes) / std::log(above->size_bytes / below.size_bytes);
  return std::clamp(below.time_s * std::exp(fraction * std::log(above->time_s / below.time_s)), below.time_s,
                    above->time_s);
}

double LinkModel::largest_size_algbw_GBps() const {
  return points_.empty() ? 0.0 : points_.back().size_bytes / points_.back().time_s / units::kBytesPerGB;
}

std::optional<std::string> poor_link_fit_warning(const LinkFit& link, const std::string& origin) {
  if (!(link.r_squared < kPoorFitRSquared)) return std::nullopt;
  return "link " + origin + ": the alpha-beta line fits its samples poorly (R^2 " + format_short(link.r_squared, 3) +
         " < " + format_short(kPoorFitRSquared, 1) + "); all-reduce times come from the samples themselves "
         "(docs/link.md), but check the measurement (a protocol change, a traffic shaper, a congested run)";
}

std::optional<std::string> beyond_sweep_warning(const LinkModel& model, double largest_allreduce_bytes,
                                                const std::string& origin) {
  const double largest_measured = model.largest_size_bytes();
  if (largest_measured == 0 || !(largest_allreduce_bytes > largest_measured)) return std::nullopt;
  char largest[48], measured[48], algbw[32];
  std::snprintf(largest, sizeof largest, "%.0f", largest_allreduce_bytes);
  std::snprintf(measured, sizeof measured, "%.0f", largest_measured);
  std::snprintf(algbw, sizeof algbw, "%.4g", model.largest_size_algbw_GBps());
  return "link " + origin + ": all-reduces up to " + largest + " bytes are beyond the sweep (largest measured size " +
         measured + " bytes); their times are extrapolated at the largest size's bandwidth, algbw " + algbw +
         " GB/s (docs/link.md \"The link model\")";
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
  require_printable(link.source, origin, "source");
  link.alpha_s = required_time(top, "alpha_s");
  link.beta_s_per_byte = required_time(top, "beta_s_per_byte");
  link.r_squared = required_nonnegative(top, "r_squared");
  if (link.r_squared > 1)
    throw InputError(origin + ": field 'r_squared': at most 1, got " + format_shortest(link.r_squared));
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
