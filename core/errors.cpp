// Error helpers: the single reporter behind SYNCPLAN_CHECK.
#include "core/errors.hpp"

#include <cstdio>

namespace syncplan {

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

}  // namespace syncplan
