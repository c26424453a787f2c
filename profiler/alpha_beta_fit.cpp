// Weighted least-squares alpha-beta fit with Eigen (docs/link.md, "Fitting").
#include "profiler/alpha_beta_fit.hpp"

#include "core/errors.hpp"
#include "core/report.hpp"
#include "core/units.hpp"

#include <Eigen/Dense>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <set>

namespace syncplan {

std::string to_string(FitErrors errors) { return errors == FitErrors::kRelative ? "relative" : "absolute"; }

namespace {

// Sums of the weighted residuals of (alpha, beta): SS_res and SS_tot of R^2.
double r_squared(const Eigen::ArrayXd& sizes, const Eigen::ArrayXd& times, const Eigen::ArrayXd& weights,
                 double alpha, double beta) {
  const double mean = (weights * times).sum() / weights.sum();
  const double residual = (weights * (times - alpha - beta * sizes).square()).sum();
  const double total = (weights * (times - mean).square()).sum();
  // Equal times: nothing to explain; the fit is perfect when it leaves only rounding behind.
  if (total == 0) return residual <= 1e-20 * (weights * times.square()).sum() ? 1.0 : 0.0;
  return std::clamp(1.0 - residual / total, 0.0, 1.0);
}

}  // namespace

AlphaBetaFit fit_alpha_beta(const std::vector<LinkSample>& samples, FitErrors errors, const std::string& origin) {
  std::set<std::int64_t> distinct;
  for (const LinkSample& sample : samples) distinct.insert(sample.size_bytes);
  if (distinct.size() < 2)
    throw InputError(origin + ": the alpha-beta fit needs samples at 2 or more distinct sizes, got " +
                     std::to_string(distinct.size()) +
                     (distinct.empty() ? "" : " (" + std::to_string(*distinct.begin()) + " bytes)"));

  // An all-reduce over a day long is no measurement; such values would also overflow the sums.
  for (std::size_t i = 0; i < samples.size(); ++i)
    if (!(samples[i].time_s <= kLongestCollective_s))
      throw InputError(origin + ": sample " + std::to_string(i) + " (" + std::to_string(samples[i].size_bytes) +
                       " bytes): time " + format_shortest(samples[i].time_s) + " s is over a day; not a measurement");

  const Eigen::Index count = static_cast<Eigen::Index>(samples.size());
  Eigen::ArrayXd sizes(count), times(count), weights(count);
  for (Eigen::Index i = 0; i < count; ++i) {
    const LinkSample& sample = samples[static_cast<std::size_t>(i)];
    sizes(i) = static_cast<double>(sample.size_bytes);
    times(i) = sample.time_s;
    if (errors == FitErrors::kRelative && !(sample.time_s > 0))
      throw InputError(origin + ": sample of " + std::to_string(sample.size_bytes) + " bytes: time " +
                       format_shortest(sample.time_s) + " s cannot be weighted by relative error (it must be > 0)");
    weights(i) = errors == FitErrors::kRelative ? 1.0 / (sample.time_s * sample.time_s) : 1.0;
  }

  // Weighted design matrix sqrt(w) [1, n / n_max]: sizes span 8 B to GBs, so the size column is
  // scaled to [0, 1] for a well-conditioned QR, and beta unscaled afterwards.
  const double size_scale = sizes.maxCoeff();
  const Eigen::ArrayXd root_weights = weights.sqrt();
  Eigen::MatrixXd design(count, 2);
  design.col(0) = root_weights.matrix();
  design.col(1) = (root_weights * sizes / size_scale).matrix();
  const Eigen::VectorXd rhs = (root_weights * times).matrix();
  const Eigen::Vector2d solution = design.colPivHouseholderQr().solve(rhs);

  AlphaBetaFit fit;
  fit.alpha_s = solution(0);
  fit.beta_s_per_byte = solution(1) / size_scale;
  if (fit.alpha_s < 0) {
    // Minimizing sum w (t - beta n)^2 over beta alone.
    fit.alpha_s = 0;
    fit.beta_s_per_byte = (weights * sizes * times).sum() / (weights * sizes * sizes).sum();
    fit.through_origin = true;
  }
  SYNCPLAN_CHECK(std::isfinite(fit.alpha_s) && std::isfinite(fit.beta_s_per_byte));
  // A slope that changes the largest time by less than rounding is 0 (equal times give -1e-27).
  if (fit.beta_s_per_byte < 0 && -fit.beta_s_per_byte * size_scale <= 1e-9 * times.maxCoeff()) fit.beta_s_per_byte = 0;
  if (fit.beta_s_per_byte < 0)
    throw InputError(origin + ": the fitted beta is negative (" + format_shortest(fit.beta_s_per_byte) +
                     " s/byte): the times fall as the size grows, so no alpha-beta link fits them; "
                     "measure larger sizes");
  fit.r_squared = r_squared(sizes, times, weights, fit.alpha_s, fit.beta_s_per_byte);
  if (!std::isfinite(fit.r_squared))
    throw InputError(origin + ": the alpha-beta fit's R^2 is not a number: the times are out of any meaningful range");
  return fit;
}

std::optional<std::string> poor_fit_warning(const AlphaBetaFit& fit, const std::vector<LinkSample>& samples,
                                            const std::string& origin) {
  if (!(fit.r_squared < kPoorFitRSquared)) return std::nullopt;
  std::vector<std::pair<double, std::int64_t>> errors;  // (relative error of the line, size)
  for (const LinkSample& sample : samples)
    if (sample.time_s > 0)
      errors.emplace_back((fit.alpha_s + fit.beta_s_per_byte * static_cast<double>(sample.size_bytes)) / sample.time_s - 1,
                          sample.size_bytes);
  std::stable_sort(errors.begin(), errors.end(),
                   [](const auto& a, const auto& b) { return std::fabs(a.first) > std::fabs(b.first); });
  std::string worst;
  for (std::size_t i = 0; i < std::min<std::size_t>(errors.size(), 3); ++i)
    worst += (i ? ", " : "") + std::to_string(errors[i].second) + " B (" + (errors[i].first >= 0 ? "+" : "") +
             format_percent(errors[i].first) + ")";
  return origin + ": the alpha-beta line fits the samples poorly (R^2 " + format_short(fit.r_squared, 3) + " < " +
         format_short(kPoorFitRSquared, 1) + "); worst sizes: " + worst +
         "; --link times from the samples themselves (docs/link.md), but check the measurement";
}

std::string describe_fit(const AlphaBetaFit& fit, FitErrors errors) {
  const std::string bandwidth = fit.beta_s_per_byte > 0
                                    ? format_short(1.0 / fit.beta_s_per_byte / units::kBytesPerGB, 3) + " GB/s"
                                    : "unbounded bandwidth";
  char beta[32];
  std::snprintf(beta, sizeof beta, "%.4e", fit.beta_s_per_byte);  // at most 11 characters
  return "alpha " + format_short(units::seconds_to_us(fit.alpha_s), 2) + " us, beta " + beta + " s/byte (" +
         bandwidth + "), R^2 " + format_short(fit.r_squared, 5) + " (" + to_string(errors) + " errors)" +
         (fit.through_origin ? "; the free fit's alpha was negative, refitted with alpha = 0" : "");
}

LinkFit fitted_link(std::vector<LinkSample> samples, int workers, std::string source, const AlphaBetaFit& fit) {
  LinkFit link;
  link.collective = kAllreduceCollective;
  link.workers = workers;
  link.source = std::move(source);
  link.alpha_s = fit.alpha_s;
  link.beta_s_per_byte = fit.beta_s_per_byte;
  link.r_squared = fit.r_squared;
  link.samples = std::move(samples);
  return link;
}

}  // namespace syncplan
