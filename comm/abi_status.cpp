// Exceptions into AbiStatus codes on a backend's side of a C ABI, and back into exceptions on
// the caller's side.
#include "comm/abi_status.hpp"

#include "core/errors.hpp"
#include "core/library_check.hpp"

#include <cstring>
#include <exception>
#include <string>

namespace syncplan {

namespace detail {

void capture_current_exception(AbiStatus* status) noexcept {
  const auto keep = [status](int code, const char* message) {
    status->code = code;
    std::strncpy(status->message, message, kAbiMessageBytes - 1);
    status->message[kAbiMessageBytes - 1] = '\0';
  };
  try {
    throw;
  } catch (const InputError& e) {
    keep(kAbiInputError, e.what());
  } catch (const LibraryError& e) {
    keep(kAbiLibraryError, e.what());
  } catch (const std::exception& e) {
    keep(kAbiInternalError, e.what());
  } catch (...) {
    keep(kAbiInternalError, "an exception of unknown type");
  }
}

}  // namespace detail

void throw_abi_status(const AbiStatus& status, const char* what, const std::string& context) {
  const std::string message = context + std::string(status.message, strnlen(status.message, kAbiMessageBytes));
  switch (status.code) {
    case kAbiOk: return;
    case kAbiInputError: throw InputError(message);
    case kAbiLibraryError: throw LibraryError(message);
    default: throw InternalError(std::string(what) + ": " + message);
  }
}

}  // namespace syncplan
