// Order statistics of timed samples (medians, quantiles, means), one definition for every module:
// a profile's spread, a simulated run's p90 and compare's p90 mean the same thing
// (docs/formats.md, "Quantiles").
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

namespace syncplan {

/// The median of `samples`: the middle one, or the mean of the two middle ones for an even count
/// (equal to quantile(samples, 0.5) but for the last bit of the rounding). Throws InternalError
/// when empty.
double median(std::vector<double> samples);

/// The p-quantile of `samples`, p in [0, 1], by linear interpolation between order statistics
/// (Hyndman and Fan, "Sample quantiles in statistical packages", The American Statistician 50(4),
/// 1996, definition 7; numpy's and R's default): with x_(0) <= ... <= x_(n-1) sorted and
/// h = (n - 1) p, the quantile is x_(floor h) + (h - floor h) (x_(floor h + 1) - x_(floor h)).
/// So p = 0 is the smallest sample and p = 1 the largest (docs/formats.md, "Quantiles").
/// Throws InternalError when `samples` is empty or p is outside [0, 1].
double quantile(std::vector<double> samples, double p);

/// The arithmetic mean of `samples`. Throws InternalError when empty.
double mean(const std::vector<double>& samples);

/// A statistic of samples (mean, median, a quantile).
using Statistic = std::function<double(const std::vector<double>&)>;

/// The bootstrap standard error of each of `statistics` over `samples` (Efron and Tibshirani, "An
/// Introduction to the Bootstrap", 1993, chapter 6): the sample standard deviation (n - 1) of the
/// statistic over `resamples` resamples, each of n = samples.size() draws with replacement; draw k
/// of resample b is samples[counter_index(seed, b n + k, n)] (core/counter_random.hpp), so the
/// answer is a pure function of the arguments. One entry per statistic, in order; 0 for one
/// sample. Throws InternalError for no samples or fewer than 2 resamples.
std::vector<double> bootstrap_standard_errors(const std::vector<double>& samples,
                                              const std::vector<Statistic>& statistics, int resamples,
                                              std::uint64_t seed);

}  // namespace syncplan
