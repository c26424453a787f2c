// Counter-based random numbers, a pure function of (seed, element index) compiled for host and
// device alike: dropout masks and the profilers' random tensor contents are the same on the CPU
// and the GPU, so the CUDA kernels can be compared with the CPU reference exactly.
#pragma once

#include <cstdint>

#if defined(__CUDACC__)
#define SYNCPLAN_HOST_DEVICE __host__ __device__
#else
#define SYNCPLAN_HOST_DEVICE
#endif

namespace syncplan {

/// splitmix64's output function (Steele, Lea and Flood, "Fast splittable pseudorandom number
/// generators", OOPSLA 2014): a bijective mix of 64 bits, applied to x + the golden-ratio increment.
SYNCPLAN_HOST_DEVICE inline std::uint64_t splitmix64(std::uint64_t x) {
  std::uint64_t z = x + 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

/// 64 random bits for element `index` of the stream `seed`.
SYNCPLAN_HOST_DEVICE inline std::uint64_t counter_bits(std::uint64_t seed, std::uint64_t index) {
  return splitmix64(seed + index * 0x9E3779B97F4A7C15ull);
}

/// A uniform draw in [0, 1) with 24 bits, exact in float.
SYNCPLAN_HOST_DEVICE inline float counter_uniform(std::uint64_t seed, std::uint64_t index) {
  return static_cast<float>(counter_bits(seed, index) >> 40) * (1.0f / 16777216.0f);  // 2^24
}

/// A uniform draw in [0, 1) with 53 bits, exact in double: the discrete-event simulator's draws
/// from measured compute spreads (docs/des.md, "Compute spread").
SYNCPLAN_HOST_DEVICE inline double counter_unit_double(std::uint64_t seed, std::uint64_t index) {
  return static_cast<double>(counter_bits(seed, index) >> 11) * (1.0 / 9007199254740992.0);  // 2^53
}

/// Whether dropout with probability p keeps element `index` under `seed`: kept when the uniform
/// draw is >= p, so p = 0 keeps everything.
SYNCPLAN_HOST_DEVICE inline bool dropout_keeps(std::uint64_t seed, std::uint64_t index, float p) {
  return counter_uniform(seed, index) >= p;
}

/// A tensor element uniform in [-1, 1): the profilers' random inputs.
SYNCPLAN_HOST_DEVICE inline float counter_signed_uniform(std::uint64_t seed, std::uint64_t index) {
  return 2.0f * counter_uniform(seed, index) - 1.0f;
}

/// An integer in [0, bound) (bound >= 1; the modulo bias, below bound / 2^64, does not matter here).
SYNCPLAN_HOST_DEVICE inline std::int64_t counter_index(std::uint64_t seed, std::uint64_t index, std::int64_t bound) {
  return static_cast<std::int64_t>(counter_bits(seed, index) % static_cast<std::uint64_t>(bound));
}

}  // namespace syncplan
