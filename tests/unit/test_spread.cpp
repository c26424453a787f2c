// Compute spread: quantiles and a profile's spread fields by hand, their strict
// reading, the inverse distribution function the DES draws through, its uniform draws, and the
// bootstrap behind compare's noise floors (compare's own cases: tests/runtime/compare_test.cpp).
#include "core/errors.hpp"
#include "core/profile.hpp"
#include "core/statistics.hpp"
#include "simulator/des/compute_spread.hpp"

#include "test_support.hpp"

#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <numbers>
#include <string>
#include <vector>

using namespace syncplan;
using Catch::Contains;
using test::error_of;

namespace {

/// A one-layer profile document whose layer "fc" has backward_s 4 ms and `spread` as its
/// backward_spread.
Json profile_with_backward_spread(const Json& spread) {
  return Json{{"format", "syncplan.profile/v1"},
              {"model", "hand"},
              {"source", "measured:cpu"},
              {"workers", nullptr},
              {"layers", Json::array({Json{{"name", "fc"}, {"param_count", 2}, {"param_bytes", 8},
                                           {"forward_s", 0.002}, {"backward_s", 0.004}, {"update_s", nullptr},
                                           {"sync_s", nullptr}, {"backward_spread", spread}}})}};
}

/// The spread of the hand examples: min 1, p10 2, p90 8, max 10 ms around a median of 4 ms.
Json hand_spread() { return Json{{"samples", 5}, {"min_s", 0.001}, {"p10_s", 0.002}, {"p90_s", 0.008}, {"max_s", 0.010}}; }

}  // namespace

TEST_CASE("quantiles by linear interpolation, by hand", "[spread]") {
  // Sorted 1, 2, 3, 4, 5 (n = 5, h = 4 p): p10 at h = 0.4 is 1 + 0.4 (2 - 1) = 1.4; p90 at h = 3.6 is
  // 4 + 0.6 (5 - 4) = 4.6; p0 the smallest, p1 the largest, p50 the middle one.
  const std::vector<double> five = {5, 1, 4, 2, 3};
  CHECK(quantile(five, 0.1) == Approx(1.4));
  CHECK(quantile(five, 0.9) == Approx(4.6));
  CHECK(quantile(five, 0) == 1);
  CHECK(quantile(five, 1) == 5);
  CHECK(quantile(five, 0.5) == 3);
  CHECK(median(five) == 3);
  CHECK(mean(five) == 3);
  // An even count 1, 2, 3, 4 (h = 3 p): p10 = 1 + 0.3 = 1.3, p90 = 3 + 0.7 = 3.7, the median the
  // mean of the middle two, 2.5, whichever way it is computed.
  const std::vector<double> four = {4, 3, 2, 1};
  CHECK(quantile(four, 0.1) == Approx(1.3));
  CHECK(quantile(four, 0.9) == Approx(3.7));
  CHECK(quantile(four, 0.5) == 2.5);
  CHECK(median(four) == 2.5);
  // One sample is every quantile.
  CHECK(quantile({7}, 0.9) == 7);
  CHECK_THROWS_AS(quantile({}, 0.5), InternalError);
  CHECK_THROWS_AS(quantile({1, 2}, 1.5), InternalError);
}

TEST_CASE("a spread of repeats: five numbers around the median, scaled with the time", "[spread]") {
  // Repeats of 5, 1, 4, 2, 3 ms: min 1, p10 1.4, (median 3), p90 4.6, max 5 ms, 5 samples.
  const TimeSpread spread = time_spread({0.005, 0.001, 0.004, 0.002, 0.003});
  CHECK(spread.samples == 5);
  CHECK(spread.min_s == 0.001);
  CHECK(spread.p10_s == Approx(0.0014));
  CHECK(spread.p90_s == Approx(0.0046));
  CHECK(spread.max_s == 0.005);
  // Twice the batch, twice every time (whatif's strong scaling).
  const TimeSpread doubled = spread.scaled(2);
  CHECK(doubled.samples == 5);
  CHECK(doubled.min_s == 0.002);
  CHECK(doubled.p90_s == Approx(0.0092));
  CHECK(doubled.max_s == 0.010);
  // A pass that never ran (dropout p = 0) has a spread of zeros.
  const TimeSpread idle = time_spread({0, 0, 0});
  CHECK((idle.min_s == 0 && idle.p10_s == 0 && idle.p90_s == 0 && idle.max_s == 0));
}

TEST_CASE("the inverse distribution function through the knots, by hand", "[spread]") {
  // Knots (0, 1), (0.1, 2), (0.5, 4), (0.9, 8), (1, 10) ms:
  //   u = 0.05: halfway in [0, 0.1]    -> 1 + 0.5 (2 - 1)  = 1.5 ms
  //   u = 0.3:  halfway in [0.1, 0.5]  -> 2 + 0.5 (4 - 2)  = 3 ms
  //   u = 0.7:  halfway in [0.5, 0.9]  -> 4 + 0.5 (8 - 4)  = 6 ms
  //   u = 0.95: halfway in [0.9, 1]    -> 8 + 0.5 (10 - 8) = 9 ms
  //   and the knots themselves at u = 0, 0.1, 0.5, 0.9, 1.
  const TimeSpread spread{5, 1, 2, 8, 10};
  const double median_s = 4;
  CHECK(spread_quantile_s(spread, median_s, 0.05) == Approx(1.5));
  CHECK(spread_quantile_s(spread, median_s, 0.3) == Approx(3));
  CHECK(spread_quantile_s(spread, median_s, 0.7) == Approx(6));
  CHECK(spread_quantile_s(spread, median_s, 0.95) == Approx(9));
  CHECK(spread_quantile_s(spread, median_s, 0) == 1);
  CHECK(spread_quantile_s(spread, median_s, 0.1) == Approx(2));
  CHECK(spread_quantile_s(spread, median_s, 0.5) == Approx(4));
  CHECK(spread_quantile_s(spread, median_s, 0.9) == Approx(8));
  CHECK(spread_quantile_s(spread, median_s, 1) == 10);
  CHECK_THROWS_AS(spread_quantile_s(spread, median_s, 1.5), InternalError);
}

TEST_CASE("a profile's spreads are read, written back as read, and absent when not given", "[spread]") {
  const Json document = profile_with_backward_spread(hand_spread());
  const Profile profile = profile_from_json(document, "spread.json");
  const LayerProfile& layer = profile.layers.front();
  REQUIRE(layer.backward_spread.has_value());
  CHECK(layer.backward_spread->samples == 5);
  CHECK(layer.backward_spread->p90_s == 0.008);
  CHECK_FALSE(layer.forward_spread.has_value());
  CHECK_FALSE(layer.update_spread.has_value());
  const Json written = profile_to_json(profile);
  CHECK(written["layers"][0]["backward_spread"] == hand_spread());
  CHECK(profile_to_json(profile_from_json(written, "written.json")) == written);
  // Without spreads nothing is written: such profiles are byte for byte what they were.
  Json plain = document;
  plain["layers"][0].erase("backward_spread");
  const Json plain_written = profile_to_json(profile_from_json(plain, "plain.json"));
  CHECK_FALSE(plain_written["layers"][0].contains("backward_spread"));
  CHECK_FALSE(plain_written["layers"][0].contains("forward_spread"));
}

TEST_CASE("bad spreads are refused with the file, the layer and the field", "[spread]") {
  const auto error_for = [](const Json& spread) {
    return error_of([&] { profile_from_json(profile_with_backward_spread(spread), "bad.json"); });
  };
  const auto with = [](const char* key, const Json& value) {
    Json spread = hand_spread();
    spread[key] = value;
    return spread;
  };
  const std::string prefix = "bad.json: layer 'fc': field 'backward_spread'";
  // Unknown and missing keys, and wrong types.
  Json extra = hand_spread();
  extra["p50_s"] = 0.004;
  CHECK_THAT(error_for(extra), Contains(prefix) && Contains("unknown key 'p50_s'"));
  Json missing = hand_spread();
  missing.erase("p90_s");
  CHECK_THAT(error_for(missing), Contains(prefix) && Contains("p90_s"));
  CHECK_THAT(error_for(nullptr), Contains(prefix) && Contains("null"));
  CHECK_THAT(error_for(Json::array({1, 2})), Contains(prefix));
  // Numbers: negative, over a day, a bad sample count.
  CHECK_THAT(error_for(with("min_s", -0.001)), Contains(prefix) && Contains("'min_s'"));
  CHECK_THAT(error_for(with("max_s", 1e6)), Contains(prefix) && Contains("'max_s'"));
  CHECK_THAT(error_for(with("samples", 0)), Contains(prefix) && Contains("'samples'"));
  CHECK_THAT(error_for(with("samples", 2.5)), Contains(prefix) && Contains("'samples'"));
  // Order around the median 4 ms: each broken pair is named.
  CHECK_THAT(error_for(with("p10_s", 0.005)),
             Contains(prefix) && Contains("'p10_s' 0.005 is above 'backward_s' (the median) 0.004"));
  CHECK_THAT(error_for(with("p90_s", 0.003)),
             Contains(prefix) && Contains("'backward_s' (the median) 0.004 is above 'p90_s' 0.003"));
  CHECK_THAT(error_for(with("min_s", 0.0025)), Contains(prefix) && Contains("'min_s' 0.0025 is above 'p10_s'"));
  CHECK_THAT(error_for(with("max_s", 0.007)), Contains(prefix) && Contains("'p90_s' 0.008 is above 'max_s' 0.007"));
  // One sample: all five numbers are that sample.
  CHECK_THAT(error_for(with("samples", 1)), Contains(prefix) && Contains("1 sample"));
  // A spread needs its time (the median).
  Json no_time = profile_with_backward_spread(hand_spread());
  no_time["layers"][0]["backward_s"] = nullptr;
  CHECK_THAT(error_of([&] { profile_from_json(no_time, "bad.json"); }),
             Contains(prefix) && Contains("'backward_s' is null or absent"));
}

TEST_CASE("draws: a pure function of seed, worker, iteration and operation, uniform", "[spread]") {
  const SpreadDraws draws(7, 0);
  CHECK(draws.uniform(3, 11, 5) == SpreadDraws(7, 0).uniform(3, 11, 5));
  CHECK(draws.uniform(3, 11, 5) != draws.uniform(3, 11, 6));
  CHECK(draws.uniform(3, 11, 5) != draws.uniform(4, 11, 5));
  CHECK(draws.uniform(3, 11, 5) != draws.uniform(3, 12, 5));
  CHECK(draws.uniform(3, 11, 5) != SpreadDraws(8, 0).uniform(3, 11, 5));
  // K = 40,000 draws: the share below q is binomial, sd sqrt(q (1 - q) / K) <= 0.0025; 5 sd apart
  // (0.0125) is a chance of about 6e-7 per share for a correct generator.
  constexpr int kDraws = 40000;
  for (const double r : {0.0, 0.5}) {
    const SpreadDraws correlated(7, r);
    int below[3] = {0, 0, 0};
    for (int i = 0; i < kDraws; ++i) {
      const double u = correlated.uniform(0, i, 1);
      REQUIRE((u >= 0 && u <= 1));
      below[0] += u < 0.1;
      below[1] += u < 0.5;
      below[2] += u < 0.9;
    }
    INFO("correlation " << r);
    CHECK(below[0] / double(kDraws) == Approx(0.1).margin(0.0125));
    CHECK(below[1] / double(kDraws) == Approx(0.5).margin(0.0125));
    CHECK(below[2] / double(kDraws) == Approx(0.9).margin(0.0125));
  }
}

TEST_CASE("draws: the copula's correlation between two operations of an iteration", "[spread]") {
  // With correlation 1 every operation of a worker's iteration runs at one quantile.
  const SpreadDraws together(3, 1);
  CHECK(together.uniform(2, 9, 0) == together.uniform(2, 9, 17));
  // With a Gaussian copula of correlation r the uniforms' correlation (Spearman's rho) is
  // (6 / pi) asin(r / 2): r = 0.5 gives 0.4826, r = 0 gives 0. Over K = 40,000 iterations the
  // sample correlation's standard error is about (1 - rho^2) / sqrt(K) <= 0.005; 5 of them is 0.025.
  constexpr int kDraws = 40000;
  for (const auto& [r, rho] : {std::pair{0.0, 0.0}, std::pair{0.5, 6 / std::numbers::pi * std::asin(0.25)}}) {
    const SpreadDraws draws(3, r);
    double sx = 0, sy = 0, sxx = 0, syy = 0, sxy = 0;
    for (int i = 0; i < kDraws; ++i) {
      const double x = draws.uniform(0, i, 2), y = draws.uniform(0, i, 3);
      sx += x, sy += y, sxx += x * x, syy += y * y, sxy += x * y;
    }
    const double n = kDraws;
    const double correlation = (sxy - sx * sy / n) / std::sqrt((sxx - sx * sx / n) * (syy - sy * sy / n));
    INFO("copula correlation " << r);
    CHECK(correlation == Approx(rho).margin(0.025));
  }
}

TEST_CASE("jitter factors: a pure function of stream and operation, one batch equal to single draws", "[spread]") {
  const JitterFactors lognormal(JitterSpec{JitterSpec::Distribution::kLognormal, 0.2, 7});
  const std::uint64_t stream = worker_iteration_stream(7, 3, 11);
  CHECK(stream == worker_iteration_stream(7, 3, 11));
  CHECK(stream != worker_iteration_stream(7, 4, 11));
  CHECK(stream != worker_iteration_stream(7, 3, 12));
  CHECK(stream != worker_iteration_stream(8, 3, 11));
  CHECK(lognormal.factor(stream, 5) == lognormal.factor(stream, 5));
  CHECK(lognormal.factor(stream, 5) != lognormal.factor(stream, 6));
  CHECK(lognormal.factor(stream, 5) != lognormal.factor(worker_iteration_stream(7, 4, 11), 5));
  // A batch of an odd count from an odd first slot: the same numbers as one draw at a time (the
  // engine draws a worker-iteration's layers in one batch and its update alone).
  for (const auto distribution : {JitterSpec::Distribution::kLognormal, JitterSpec::Distribution::kNormal}) {
    const JitterFactors factors(JitterSpec{distribution, 0.2, 7});
    std::vector<double> batch(7);
    factors.factors(stream, 3, batch.size(), batch.data());
    for (std::size_t k = 0; k < batch.size(); ++k) CHECK(batch[k] == factors.factor(stream, 3 + k));
  }
  // "measured" jitter draws through SpreadDraws, not here.
  CHECK_THROWS_AS(JitterFactors(JitterSpec{JitterSpec::Distribution::kMeasured, 0, 7}), InternalError);
}

TEST_CASE("jitter factors: lognormal of mean 1 and log-sd sigma, normal cut at 0", "[spread]") {
  // K = 40,000 worker-iterations, one draw each (operation 4). Under the lognormal jitter
  // log f = sigma z - sigma^2 / 2, z standard normal: with sigma = 0.2 the sample mean of log f has
  // standard error sigma / sqrt(K) = 0.001 around -0.02, its sample sd about sigma / sqrt(2 K) =
  // 0.0007 around 0.2, and the share of z = (log f + sigma^2 / 2) / sigma below -1.6449 (the 5%
  // quantile) sqrt(0.05 x 0.95 / K) = 0.0011 around 0.05; 5 standard errors apart is a chance of
  // about 6e-7 each for a correct generator. The mean of f is exp(0) = 1, its standard error
  // sqrt(exp(sigma^2) - 1) / sqrt(K) = 0.001.
  constexpr int kDraws = 40000;
  constexpr double kSigma = 0.2;
  const JitterFactors lognormal(JitterSpec{JitterSpec::Distribution::kLognormal, kSigma, 9});
  double sum = 0, sum_log = 0, sum_log2 = 0;
  int below = 0;
  for (int i = 0; i < kDraws; ++i) {
    const double f = lognormal.factor(worker_iteration_stream(9, 0, i), 4);
    REQUIRE(f > 0);
    sum += f;
    sum_log += std::log(f);
    sum_log2 += std::log(f) * std::log(f);
    below += (std::log(f) + kSigma * kSigma / 2) / kSigma < -1.6449;
  }
  const double mean_log = sum_log / kDraws;
  CHECK(sum / kDraws == Approx(1.0).margin(0.005));
  CHECK(mean_log == Approx(-kSigma * kSigma / 2).margin(0.005));
  CHECK(std::sqrt(sum_log2 / kDraws - mean_log * mean_log) == Approx(kSigma).margin(0.0035));
  CHECK(below / double(kDraws) == Approx(0.05).margin(0.0055));
  // The normal jitter max(0, 1 + sigma z) with sigma = 0.5 is 0 when z <= -2: a share Phi(-2) =
  // 0.02275, standard error sqrt(0.02275 x 0.97725 / K) = 0.00075 (5 of them 0.0037); its mean
  // above 0 is E[max(0, 1 + 0.5 z)] = 1 Phi(2) + 0.5 phi(2) = 0.97725 + 0.5 x 0.05399 = 1.00425,
  // standard error below 0.5 / sqrt(K) = 0.0025 (5 of them 0.0125).
  const JitterFactors normal(JitterSpec{JitterSpec::Distribution::kNormal, 0.5, 9});
  int zeros = 0;
  sum = 0;
  for (int i = 0; i < kDraws; ++i) {
    const double f = normal.factor(worker_iteration_stream(9, 0, i), 4);
    REQUIRE(f >= 0);
    zeros += f == 0;
    sum += f;
  }
  CHECK(zeros / double(kDraws) == Approx(0.02275).margin(0.0037));
  CHECK(sum / kDraws == Approx(1.00425).margin(0.0125));
}

TEST_CASE("bootstrap standard errors: the mean's by formula, none for constant samples", "[spread]") {
  // The bootstrap standard error of a mean is the population standard deviation over sqrt(n).
  // Samples 0, 1, ..., 399: population variance (n^2 - 1) / 12 = 13333.25, sd 115.47, over
  // sqrt(400) = 20: 5.7735. With 1,000 resamples the estimate's own relative spread is about
  // 1 / sqrt(2 x 1000) = 2.2 %; 10 % is 4.5 of those.
  std::vector<double> samples;
  for (int i = 0; i < 400; ++i) samples.push_back(i);
  const std::vector<Statistic> statistics = {[](const std::vector<double>& x) { return mean(x); }};
  const double error = bootstrap_standard_errors(samples, statistics, 1000, 1).front();
  CHECK(error == Approx(5.7735).epsilon(0.1));
  // The same arguments, the same answer.
  CHECK(bootstrap_standard_errors(samples, statistics, 1000, 1).front() == error);
  CHECK(bootstrap_standard_errors({2, 2, 2}, statistics, 100, 1).front() == 0);
  CHECK(bootstrap_standard_errors({2}, statistics, 100, 1).front() == 0);
}
