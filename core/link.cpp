// syncplan.link/v1 reading, validation and writing; the bandwidth conventions of nccl-tests.
#include "core/link.hpp"

#include "core/errors.hpp"
#include "core/limits.hpp"
#include "core/units.hpp"

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

}  // namespace

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
