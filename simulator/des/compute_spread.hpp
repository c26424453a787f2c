// The discrete-event simulator's draws from measured compute spreads (docs/des.md, "Compute
// spread"): one uniform number per worker, iteration and compute operation, a pure function of
// the seed and those indices (core/counter_random.hpp), correlated within a worker's iteration by
// a Gaussian copula, and the time at that quantile of the layer's spread.
#pragma once

#include "core/profile.hpp"

#include <cstdint>

namespace syncplan {

/// Which operation of an iteration a draw is for, with L layers in backprop order: the forward of
/// layer j is slot j, its backward slot L + j, and the whole optimizer update slot 2 L (one draw for
/// every layer's share: the profiler times the update whole and apportions it).
inline std::uint64_t forward_slot(std::size_t j) { return j; }
inline std::uint64_t backward_slot(std::size_t layers, std::size_t j) { return layers + j; }
inline std::uint64_t update_slot(std::size_t layers) { return 2 * layers; }

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
  double uniform(int worker, int iteration, std::uint64_t slot) const;

 private:
  std::uint64_t seed_;
  double correlation_;
};

}  // namespace syncplan
