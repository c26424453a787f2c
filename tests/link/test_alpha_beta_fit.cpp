// The alpha-beta fit (profiler/alpha_beta_fit.hpp, docs/link.md "Fitting"): exact models come back
// exactly; noisy samples agree with the closed-form normal equations, written out here by hand.
#include "profiler/alpha_beta_fit.hpp"

#include "core/errors.hpp"

#include <catch2/catch.hpp>

#include <cmath>

using namespace syncplan;
using Catch::Contains;

namespace {

std::vector<LinkSample> samples_of(const std::vector<double>& sizes, const std::vector<double>& times) {
  std::vector<LinkSample> samples;
  for (std::size_t i = 0; i < sizes.size(); ++i)
    samples.push_back(allreduce_sample(static_cast<std::int64_t>(sizes[i]), times[i], 2));
  return samples;
}

// Weighted least squares by the closed-form normal equations, an independent method from the
// QR solve under test: with S = sum w, Sx = sum w x, Sy = sum w y, Sxx = sum w x^2, Sxy = sum w x y,
//   beta = (S Sxy - Sx Sy) / (S Sxx - Sx^2),  alpha = (Sy - beta Sx) / S.
struct ClosedForm {
  double alpha, beta, r_squared;
};
ClosedForm normal_equations(const std::vector<double>& x, const std::vector<double>& y, bool relative) {
  double s = 0, sx = 0, sy = 0, sxx = 0, sxy = 0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    const double w = relative ? 1 / (y[i] * y[i]) : 1;
    s += w, sx += w * x[i], sy += w * y[i], sxx += w * x[i] * x[i], sxy += w * x[i] * y[i];
  }
  const double beta = (s * sxy - sx * sy) / (s * sxx - sx * sx);
  const double alpha = (sy - beta * sx) / s;
  double residual = 0, total = 0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    const double w = relative ? 1 / (y[i] * y[i]) : 1;
    residual += w * std::pow(y[i] - alpha - beta * x[i], 2);
    total += w * std::pow(y[i] - sy / s, 2);
  }
  return {alpha, beta, 1 - residual / total};
}

}  // namespace

TEST_CASE("exact alpha-beta samples are fitted back exactly", "[fit]") {
  // alpha = 25 us, beta = 1 / (10 GB/s) = 1e-10 s/byte, sizes 8 B .. 128 MiB x2: every residual is
  // 0, so both weightings return the model and R^2 = 1.
  const double alpha_s = 25e-6, beta_s_per_byte = 1e-10;
  std::vector<double> sizes, times;
  for (double size = 8; size <= 134217728; size *= 2) {
    sizes.push_back(size);
    times.push_back(alpha_s + beta_s_per_byte * size);
  }
  for (const FitErrors errors : {FitErrors::kRelative, FitErrors::kAbsolute}) {
    const AlphaBetaFit fit = fit_alpha_beta(samples_of(sizes, times), errors, "test");
    CHECK(fit.alpha_s == Approx(alpha_s).epsilon(1e-9));
    CHECK(fit.beta_s_per_byte == Approx(beta_s_per_byte).epsilon(1e-9));
    CHECK(fit.r_squared == Approx(1).margin(1e-12));
    CHECK_FALSE(fit.through_origin);
  }
}

TEST_CASE("noisy samples agree with the normal equations", "[fit]") {
  // x = 1e3, 1e4, 1e5, 1e6 bytes; y = 26, 25.5, 36, 124 us (about 25 us + 1e-10 s/B, with noise).
  // Absolute errors (w = 1), by hand: S = 4, Sx = 1,111,000, Sy = 211.5e-6,
  //   Sxx = 1,010,101,000,000, Sxy = 127.881e-6 x 1e6 = 127.881 (byte-seconds):
  //   beta = (4 x 127.881 - 1,111,000 x 211.5e-6) / (4 x 1.010101e12 - 1,111,000^2)
  //        = (511.524 - 234.9765) / (4.040404e12 - 1.234321e12) = 276.5475 / 2.806083e12
  //        = 9.8553e-11 s/byte;  alpha = (211.5e-6 - 9.8553e-11 x 1,111,000) / 4 = 25.502 us;
  //   R^2 = 0.99977.
  // Relative errors (w = 1/y^2): alpha = 25.358 us, beta = 9.9297e-11 s/byte, R^2 = 0.99700
  //   (the same formulas with the weights; computed below, and these literals by Python).
  const std::vector<double> x = {1e3, 1e4, 1e5, 1e6}, y = {26.0e-6, 25.5e-6, 36.0e-6, 124.0e-6};
  struct Case {
    FitErrors errors;
    double alpha, beta, r_squared;
  };
  for (const Case& expected : {Case{FitErrors::kAbsolute, 25.501943634596693e-6, 9.855285820127202e-11, 0.9997724403553194},
                               Case{FitErrors::kRelative, 25.358278815909783e-6, 9.92974693559616e-11, 0.9969993971339317}}) {
    const ClosedForm closed = normal_equations(x, y, expected.errors == FitErrors::kRelative);
    const AlphaBetaFit fit = fit_alpha_beta(samples_of(x, y), expected.errors, "test");
    INFO("errors " << to_string(expected.errors));
    CHECK(fit.alpha_s == Approx(closed.alpha).epsilon(1e-9));
    CHECK(fit.beta_s_per_byte == Approx(closed.beta).epsilon(1e-9));
    CHECK(fit.r_squared == Approx(closed.r_squared).epsilon(1e-9));
    CHECK(fit.alpha_s == Approx(expected.alpha).epsilon(1e-9));
    CHECK(fit.beta_s_per_byte == Approx(expected.beta).epsilon(1e-9));
    CHECK(fit.r_squared == Approx(expected.r_squared).epsilon(1e-9));
  }
}

TEST_CASE("a negative alpha is refitted through the origin", "[fit]") {
  // t = -5 us + 1e-9 n at n = 1e4, 1e5, 1e6: 5, 95, 995 us. The free fit is exact with alpha = -5 us,
  // no latency; with alpha = 0 the least-squares beta is sum w n t / sum w n^2 with w = 1/t^2:
  //   w n t = n / t = 2e9, 1.0526e9, 1.0050e9;  w n^2 = (n/t)^2 = 4e18, 1.1080e18, 1.0101e18
  //   beta = 4.0576e9 / 6.1181e18 = 6.6322e-10 s/byte (Python: 6.632207556724551e-10), R^2 0.83609.
  const AlphaBetaFit fit = fit_alpha_beta(samples_of({1e4, 1e5, 1e6}, {5e-6, 95e-6, 995e-6}), FitErrors::kRelative,
                                          "test");
  CHECK(fit.through_origin);
  CHECK(fit.alpha_s == 0);
  CHECK(fit.beta_s_per_byte == Approx(6.632207556724551e-10).epsilon(1e-9));
  CHECK(fit.r_squared == Approx(0.836093901411873).epsilon(1e-9));
  CHECK_THAT(describe_fit(fit, FitErrors::kRelative), Contains("alpha = 0"));
}

TEST_CASE("the fit refuses what it cannot fit", "[fit]") {
  SECTION("fewer than 2 distinct sizes") {
    CHECK_THROWS_WITH(fit_alpha_beta(samples_of({4096, 4096}, {1e-5, 1.1e-5}), FitErrors::kRelative, "sweep.log"),
                      Contains("sweep.log") && Contains("2 or more distinct sizes, got 1 (4096 bytes)"));
    CHECK_THROWS_AS(fit_alpha_beta({}, FitErrors::kAbsolute, "x"), InputError);
  }
  SECTION("a zero time cannot carry a relative weight") {
    const auto samples = samples_of({8, 1024}, {0, 1e-5});
    CHECK_THROWS_WITH(fit_alpha_beta(samples, FitErrors::kRelative, "x"), Contains("8 bytes") && Contains("> 0"));
    CHECK_NOTHROW(fit_alpha_beta(samples, FitErrors::kAbsolute, "x"));
  }
  SECTION("times that fall as sizes grow") {
    // 20 us at 1 KB, 10 us at 1 MB: beta < 0 (and alpha > 0), which no link is.
    CHECK_THROWS_WITH(fit_alpha_beta(samples_of({1e3, 1e6}, {20e-6, 10e-6}), FitErrors::kRelative, "x"),
                      Contains("beta is negative"));
  }
}

TEST_CASE("equal times fit with beta 0 and R^2 1", "[fit]") {
  // Constant 10 us: beta = 0, alpha = 10 us, every residual 0; SS_tot is 0 too, and R^2 is 1 by convention.
  const AlphaBetaFit fit = fit_alpha_beta(samples_of({8, 64, 512}, {1e-5, 1e-5, 1e-5}), FitErrors::kRelative, "x");
  CHECK(fit.alpha_s == Approx(1e-5).epsilon(1e-12));
  CHECK(fit.beta_s_per_byte == Approx(0).margin(1e-20));
  CHECK(fit.r_squared == 1);
}
