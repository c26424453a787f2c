// The kernels' shape check, shared by the CPU and CUDA kernels, the layer graphs and AdamW.
#pragma once

#include "core/errors.hpp"

#include <cstddef>
#include <cstdint>
#include <string>

namespace syncplan {

/// Throws InternalError "kernel tensor 'NAME' has N elements, expected M" unless actual ==
/// expected (a wrong length is a bug in the caller, not bad user input).
inline void require_elements(std::size_t actual, std::int64_t expected, const char* name) {
  if (expected < 0 || actual != static_cast<std::size_t>(expected))
    throw InternalError(std::string("kernel tensor '") + name + "' has " + std::to_string(actual) +
                        " elements, expected " + std::to_string(expected));
}

}  // namespace syncplan
