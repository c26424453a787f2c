// Counter-based jitter factors and uniform draws, the latter correlated by a Gaussian copula
// (simulator/des/compute_spread.hpp).
#include "simulator/des/compute_spread.hpp"

#include "core/counter_random.hpp"
#include "core/errors.hpp"

#include <boost/random/normal_distribution.hpp>

#if defined(__x86_64__) && defined(__GLIBC__)
#include <emmintrin.h>
// glibc's libmvec (linked as -lmvec): exp of two doubles, the x86-64 vector function ABI's SSE
// variant, within 4 ulp of exp (glibc manual, "Errors in Math Functions"; measured here: at most
// 2 ulp, so no change of distribution). About 1.5 ns per value on the machine of docs/des.md
// section 5, against 5 ns for a call of exp: the jittered 100,000-worker run draws 250 million.
extern "C" __m128d _ZGVbN2v_exp(__m128d);
#define SYNCPLAN_HAVE_LIBMVEC 1
#endif

#include <algorithm>
#include <cmath>
#include <limits>
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

// A uniform random bit generator (C++ [rand.req.urng]) over one operation's words of a
// counter-based stream: word n of operation `slot` is counter_bits(stream, slot + n 2^32) (slots
// stay below 2^32, and n beyond 0 only when the ziggurat rejects). 16 bytes, made per draw, so
// nothing is kept per worker.
struct CounterEngine {
  using result_type = std::uint64_t;
  static constexpr result_type min() { return 0; }
  static constexpr result_type max() { return std::numeric_limits<result_type>::max(); }
  result_type operator()() {
    const std::uint64_t bits = counter_bits(stream, index);
    index += std::uint64_t{1} << 32;
    return bits;
  }
  std::uint64_t stream;
  std::uint64_t index;
};

}  // namespace

std::uint64_t worker_iteration_stream(std::uint64_t seed, int worker, int iteration) {
  return counter_bits(counter_bits(seed, static_cast<std::uint64_t>(worker)), static_cast<std::uint64_t>(iteration));
}

JitterFactors::JitterFactors(const JitterSpec& spec)
    : lognormal_(spec.distribution == JitterSpec::Distribution::kLognormal), sigma_(spec.sigma),
      log_shift_(0.5 * spec.sigma * spec.sigma) {
  SYNCPLAN_CHECK(spec.distribution != JitterSpec::Distribution::kMeasured);
}

namespace {

// out[k] = exp(out[k] - shift) for k < count: libmvec's exp two at a time where there is one (the
// last odd value alone in a pair of equal lanes, so every value is libmvec's, whatever the count),
// else std::exp.
void shifted_exps(double* out, std::size_t count, double shift) {
#ifdef SYNCPLAN_HAVE_LIBMVEC
  const __m128d shifts = _mm_set1_pd(shift);
  std::size_t k = 0;
  for (; k + 2 <= count; k += 2) _mm_storeu_pd(out + k, _ZGVbN2v_exp(_mm_sub_pd(_mm_loadu_pd(out + k), shifts)));
  if (k < count) out[k] = _mm_cvtsd_f64(_ZGVbN2v_exp(_mm_set1_pd(out[k] - shift)));
#else
  for (std::size_t k = 0; k < count; ++k) out[k] = std::exp(out[k] - shift);
#endif
}

// The standard normal draw of operation `slot` of `stream`.
double slot_normal(std::uint64_t stream, std::uint64_t slot) {
  CounterEngine engine{stream, slot};
  return boost::random::normal_distribution<double>(0.0, 1.0)(engine);
}

}  // namespace

double JitterFactors::factor(std::uint64_t stream, std::uint64_t slot) const {
  double factor = 0;
  factors(stream, slot, 1, &factor);
  return factor;
}

void JitterFactors::factors(std::uint64_t stream, std::uint64_t first_slot, std::size_t count, double* out) const {
  for (std::size_t k = 0; k < count; ++k) out[k] = sigma_ * slot_normal(stream, first_slot + k);
  if (lognormal_)
    shifted_exps(out, count, log_shift_);
  else
    for (std::size_t k = 0; k < count; ++k) out[k] = std::max(0.0, 1.0 + out[k]);
}

SpreadDraws::SpreadDraws(std::uint64_t seed, double correlation) : seed_(seed), correlation_(correlation) {
  SYNCPLAN_CHECK(correlation >= 0 && correlation <= 1);
}

double SpreadDraws::uniform(std::uint64_t stream, std::uint64_t slot) const {
  if (correlation_ == 0) return counter_unit_double(stream, slot);
  // Normal draw 0 is the iteration's common one; operation `slot` takes draw slot + 1.
  const double z = std::sqrt(correlation_) * normal_draw(stream, 0) +
                   std::sqrt(1 - correlation_) * normal_draw(stream, slot + 1);
  return normal_cdf(z);
}

}  // namespace syncplan
