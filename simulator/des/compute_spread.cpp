// Counter-based uniform draws, correlated by a Gaussian copula (simulator/des/compute_spread.hpp).
#include "simulator/des/compute_spread.hpp"

#include "core/counter_random.hpp"
#include "core/errors.hpp"

#include <cmath>
#include <numbers>

namespace syncplan {

namespace {

// A standard normal draw from uniforms 2 k and 2 k + 1 of `stream` (Box-Muller; 1 - u is in (0, 1],
// so its logarithm is finite).
double normal_draw(std::uint64_t stream, std::uint64_t k) {
  const double u1 = counter_unit_double(stream, 2 * k), u2 = counter_unit_double(stream, 2 * k + 1);
  return std::sqrt(-2.0 * std::log1p(-u1)) * std::cos(2.0 * std::numbers::pi * u2);
}

// The standard normal distribution function.
double normal_cdf(double z) { return 0.5 * std::erfc(-z / std::numbers::sqrt2); }

}  // namespace

SpreadDraws::SpreadDraws(std::uint64_t seed, double correlation) : seed_(seed), correlation_(correlation) {
  SYNCPLAN_CHECK(correlation >= 0 && correlation <= 1);
}

double SpreadDraws::uniform(int worker, int iteration, std::uint64_t slot) const {
  const std::uint64_t stream = counter_bits(counter_bits(seed_, static_cast<std::uint64_t>(worker)),
                                            static_cast<std::uint64_t>(iteration));
  if (correlation_ == 0) return counter_unit_double(stream, slot);
  // Normal draw 0 is the iteration's common one; operation `slot` takes draw slot + 1.
  const double z = std::sqrt(correlation_) * normal_draw(stream, 0) +
                   std::sqrt(1 - correlation_) * normal_draw(stream, slot + 1);
  return normal_cdf(z);
}

}  // namespace syncplan
