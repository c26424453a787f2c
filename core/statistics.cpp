// Medians, quantiles and means of samples (core/statistics.hpp).
#include "core/statistics.hpp"

#include "core/counter_random.hpp"
#include "core/errors.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace syncplan {

double median(std::vector<double> samples) {
  SYNCPLAN_CHECK(!samples.empty());
  const std::size_t middle = samples.size() / 2;
  std::nth_element(samples.begin(), samples.begin() + static_cast<std::ptrdiff_t>(middle), samples.end());
  const double upper = samples[middle];
  if (samples.size() % 2 == 1) return upper;
  const double lower = *std::max_element(samples.begin(), samples.begin() + static_cast<std::ptrdiff_t>(middle));
  return (lower + upper) / 2;
}

double quantile(std::vector<double> samples, double p) {
  SYNCPLAN_CHECK(!samples.empty() && p >= 0 && p <= 1);
  const double h = static_cast<double>(samples.size() - 1) * p;
  const std::size_t below = static_cast<std::size_t>(std::floor(h));
  const auto at = samples.begin() + static_cast<std::ptrdiff_t>(below);
  std::nth_element(samples.begin(), at, samples.end());
  const double lower = *at;
  if (below + 1 == samples.size()) return lower;
  // The next order statistic is the smallest of those after x_(floor h).
  const double upper = *std::min_element(at + 1, samples.end());
  return lower + (h - static_cast<double>(below)) * (upper - lower);
}

double mean(const std::vector<double>& samples) {
  SYNCPLAN_CHECK(!samples.empty());
  return std::accumulate(samples.begin(), samples.end(), 0.0) / static_cast<double>(samples.size());
}

std::vector<double> bootstrap_standard_errors(const std::vector<double>& samples,
                                              const std::vector<Statistic>& statistics, int resamples,
                                              std::uint64_t seed) {
  SYNCPLAN_CHECK(!samples.empty() && resamples >= 2);
  const std::size_t n = samples.size();
  // Welford's running mean and sum of squared deviations of each statistic over the resamples.
  std::vector<double> running_mean(statistics.size(), 0.0), squares(statistics.size(), 0.0);
  std::vector<double> resample(n);
  for (int b = 0; b < resamples; ++b) {
    for (std::size_t k = 0; k < n; ++k)
      resample[k] = samples[static_cast<std::size_t>(
          counter_index(seed, static_cast<std::uint64_t>(b) * n + k, static_cast<std::int64_t>(n)))];
    for (std::size_t s = 0; s < statistics.size(); ++s) {
      const double value = statistics[s](resample);
      const double delta = value - running_mean[s];
      running_mean[s] += delta / (b + 1);
      squares[s] += delta * (value - running_mean[s]);
    }
  }
  std::vector<double> errors;
  for (const double sum : squares) errors.push_back(std::sqrt(std::max(0.0, sum) / (resamples - 1)));
  return errors;
}

}  // namespace syncplan
