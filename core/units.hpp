// Named unit conversions: every conversion has a name, never a bare factor (STYLE pattern 3).
#pragma once

namespace syncplan::units {

inline constexpr double kMicrosecondsPerSecond = 1e6;
inline constexpr double kMillisecondsPerSecond = 1e3;
inline constexpr double kBytesPerGB = 1e9;       // nccl-tests' GB (SPEC section 7)
inline constexpr double kBitsPerGigabit = 1e9;    // link speeds: 1 Gbit/s = 1e9 bit/s
inline constexpr double kBitsPerByte = 8;
inline constexpr double kBytesPerMiB = 1024.0 * 1024.0;            // MiB = 2^20 bytes (PyTorch DDP bucket caps)
inline constexpr double kBytesPerGiB = 1024.0 * 1024.0 * 1024.0;   // GiB = 2^30 bytes (memory sizes)

/// Seconds to microseconds (Chrome trace `ts`/`dur` are in microseconds).
inline constexpr double seconds_to_us(double seconds) { return seconds * kMicrosecondsPerSecond; }
/// Seconds to milliseconds, for human-readable tables.
inline constexpr double seconds_to_ms(double seconds) { return seconds * kMillisecondsPerSecond; }

}  // namespace syncplan::units
