// Least-squares fit of the alpha-beta model time = alpha + beta x size to measured collective
// times (SPEC section 7; the choices are explained in docs/link.md).
#pragma once

#include "core/link.hpp"

#include <optional>
#include <string>
#include <vector>

namespace syncplan {

/// Which residuals the fit minimizes (docs/link.md, "Fitting").
enum class FitErrors {
  kRelative,  ///< sum of ((t_i - alpha - beta n_i) / t_i)^2: every size counts alike (default)
  kAbsolute,  ///< sum of (t_i - alpha - beta n_i)^2: ordinary least squares, ruled by the largest sizes
};

/// "relative" or "absolute".
std::string to_string(FitErrors errors);

/// The fitted model and how well it fits.
struct AlphaBetaFit {
  double alpha_s = 0;           ///< latency, seconds, >= 0
  double beta_s_per_byte = 0;   ///< inverse bandwidth, seconds per byte, >= 0
  double r_squared = 0;         ///< 1 - SS_res / SS_tot with the fit's weights, in [0, 1]
  bool through_origin = false;  ///< the free fit had alpha < 0; refitted with alpha = 0
};

/// Fits time_s = alpha_s + beta_s_per_byte x size_bytes to `samples` by weighted least squares
/// (weights 1/t_i^2 for kRelative, 1 for kAbsolute), solved with Eigen's column-pivoting QR on the
/// weighted design matrix [1, n_i]. A negative alpha is not a latency: then the fit is redone
/// with alpha fixed at 0 (beta = sum w n t / sum w n^2), which is the least-squares optimum under
/// the constraint alpha >= 0, and `through_origin` is set.
/// R^2 = 1 - sum w (t - fit)^2 / sum w (t - mean_w t)^2 (1 when every time is equal and fitted).
/// Throws InputError prefixed by `origin` when fewer than 2 distinct sizes are given, when a time
/// is 0 under kRelative (it cannot be weighted), or when the fitted beta is negative (the times
/// fall as the size grows: no link model).
AlphaBetaFit fit_alpha_beta(const std::vector<LinkSample>& samples, FitErrors errors, const std::string& origin);

/// When fit.r_squared < kPoorFitRSquared (core/link.hpp), one line for people (no "warning:"
/// prefix), prefixed by `origin`: the R^2 and the (up to) three sample sizes whose times the line
/// alpha + beta n misses most in relative terms, with their errors; std::nullopt for a good fit.
/// Samples of time 0 are not ranked (no relative error).
std::optional<std::string> poor_fit_warning(const AlphaBetaFit& fit, const std::vector<LinkSample>& samples,
                                            const std::string& origin);

/// One line for people: "alpha 25.00 us, beta 1.0000e-10 s/byte (10.000 GB/s), R^2 0.99990
/// (relative errors)", with a note when alpha was fixed at 0.
std::string describe_fit(const AlphaBetaFit& fit, FitErrors errors);

/// The link file contents for `fit` of `samples` (collective "allreduce").
LinkFit fitted_link(std::vector<LinkSample> samples, int workers, std::string source, const AlphaBetaFit& fit);

}  // namespace syncplan
