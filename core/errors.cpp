// Error helpers: the single reporter behind SYNCPLAN_CHECK.
#include "core/errors.hpp"

#include "core/printable.hpp"

#include <charconv>
#include <cmath>
#include <cstdio>

namespace syncplan {

namespace detail {
std::string escaped_message(const std::string& message) { return printable_text(message, false); }
}  // namespace detail


namespace detail {
void check_failed(const char* expression, const char* file, int line) {
  throw InternalError(std::string("internal check failed: ") + expression + " at " + file + ":" +
                      std::to_string(line));
}
}  // namespace detail

std::string format_exact(double value) {
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, "%.17g", value);
  return buffer;
}

std::string format_shortest(double value) {
  char text[32];
  const auto written = std::to_chars(text, text + sizeof text, value, std::chars_format::general);
  return std::string(text, written.ptr);
}

std::string format_short(double value, int decimals) {
  // Beyond 1e6 a fixed cell grows by a digit per power of ten (1e300 would take 300 characters).
  constexpr double kLargestFixed = 1e6;
  const double magnitude = std::fabs(value);
  const bool fixed = value == 0 || (magnitude >= std::pow(10.0, -decimals) && magnitude < kLargestFixed);
  char buffer[64];
  if (fixed) std::snprintf(buffer, sizeof buffer, "%.*f", decimals, value);
  else std::snprintf(buffer, sizeof buffer, "%.6g", value);
  return buffer;
}

std::string format_ratio(double ratio) {
  if (!std::isfinite(ratio)) return "n/a";  // e.g. a profile whose times are all zero
  if (ratio == 0 || std::fabs(ratio) >= 0.01) return format_short(ratio, 2) + "x";
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.3g", ratio);
  return std::string(buffer) + "x";
}

std::string count_text(long long count, const std::string& noun) {
  return std::to_string(count) + " " + noun + (count == 1 ? "" : "s");
}

}  // namespace syncplan
