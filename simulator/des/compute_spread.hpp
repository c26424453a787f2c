// The discrete-event simulator's random compute times (docs/des.md, sections 1 and 6): one draw per
// worker, iteration and compute operation, a pure function of the cluster's seed and those indices
// (core/counter_random.hpp), so no per-worker state is kept and the order of events changes
// nothing. The lognormal and normal jitter draw a factor on the profile's time (JitterFactors); the
// "measured" jitter a uniform number, correlated within a worker's iteration by a Gaussian copula,
// and the time at that quantile of the layer's spread (SpreadDraws).
#pragma once

#include "core/cluster.hpp"
#include "core/profile.hpp"

#include <cstddef>
#include <cstdint>

namespace syncplan {

/// Which operation of an iteration a draw is for, with L layers in backprop order: the forward of
/// layer j is slot j, its backward slot L + j, and the whole optimizer update slot 2 L (one draw for
/// every layer's share: the profiler times the update whole and apportions it).
inline std::uint64_t forward_slot(std::size_t j) { return j; }
inline std::uint64_t backward_slot(std::size_t layers, std::size_t j) { return layers + j; }
inline std::uint64_t update_slot(std::size_t layers) { return 2 * layers; }
/// The profile's unattributed forward and backward compute (docs/time-model.md, "Unattributed
/// compute"): slots 2 L + 1 and 2 L + 2.
inline std::uint64_t unattributed_forward_slot(std::size_t layers) { return 2 * layers + 1; }
inline std::uint64_t unattributed_backward_slot(std::size_t layers) { return 2 * layers + 2; }

/// The random stream of `worker`'s iteration `iteration` under `seed`:
/// counter_bits(counter_bits(seed, worker), iteration). Every draw of that worker-iteration is
/// taken from it by its slot.
std::uint64_t worker_iteration_stream(std::uint64_t seed, int worker, int iteration);

/// The lognormal and normal jitter's factors (core/cluster.hpp JitterSpec, docs/cluster.md): for
/// operation `slot` of a worker-iteration's stream, z is a standard normal draw (the ziggurat of
/// Boost.Random's normal_distribution, Marsaglia and Tsang, J. Stat. Software 5(8), 2000) fed by
/// the 64-bit words counter_bits(stream, slot + n 2^32), n = 0, 1, ...; the factor is
/// exp(sigma z - sigma^2 / 2) (lognormal: mean 1) or max(0, 1 + sigma z) (normal).
class JitterFactors {
 public:
  /// Throws InternalError for the "measured" distribution (SpreadDraws draws those).
  explicit JitterFactors(const JitterSpec& spec);

  /// The factor of operation `slot` of the worker-iteration whose stream is `stream`
  /// (worker_iteration_stream), >= 0.
  double factor(std::uint64_t stream, std::uint64_t slot) const;

  /// The factors of operations first_slot .. first_slot + count - 1 of `stream` into out[0..count):
  /// the same numbers as `factor`, drawn in one pass (the normal draws first, then the exponentials,
  /// independent calls that the processor overlaps). `out` holds `count` doubles.
  void factors(std::uint64_t stream, std::uint64_t first_slot, std::size_t count, double* out) const;

 private:
  bool lognormal_;
  double sigma_;
  double log_shift_;  // sigma^2 / 2: the lognormal's mean-1 shift
};

/// The uniform numbers of the "measured" jitter (core/cluster.hpp, JitterSpec).
class SpreadDraws {
 public:
  /// `seed`: the cluster's jitter seed; `correlation` in [0, 1]: the copula's correlation between
  /// two operations of one worker's iteration. Throws InternalError for a correlation outside [0, 1].
  SpreadDraws(std::uint64_t seed, double correlation);

  /// The quantile, in [0, 1], at which operation `slot` of `worker`'s iteration `iteration` runs.
  /// Correlation 0: u = counter_unit_double(stream, slot), with stream = counter_bits(counter_bits(
  /// seed, worker), iteration), so every operation, worker and iteration draws on its own.
  /// Correlation r > 0: u = Phi(sqrt(r) z_common + sqrt(1 - r) z_slot), with z_common and z_slot
  /// standard normal (Box-Muller on two uniforms of the stream: z_common the iteration's, z_slot
  /// the operation's) and Phi the standard normal distribution function; r = 1 puts every operation
  /// of the iteration at one quantile (docs/des.md, "Compute spread").
  double uniform(int worker, int iteration, std::uint64_t slot) const {
    return uniform(worker_iteration_stream(seed_, worker, iteration), slot);
  }
  /// The same, from the worker-iteration's stream (worker_iteration_stream of this seed).
  double uniform(std::uint64_t stream, std::uint64_t slot) const;

 private:
  std::uint64_t seed_;
  double correlation_;
};

}  // namespace syncplan
