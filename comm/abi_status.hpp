// The status a C-ABI call of a backend table returns (comm's NCCL backend, the GPU backend
// library): exceptions never cross a dlopen boundary, so a backend catches them into a code and a
// one-line message, and the caller's side throws them again as the same error types.
#pragma once

#include <cstddef>
#include <string>

namespace syncplan {

extern "C" {

/// What a backend call returns: kAbiOk, or the kind of error with its message.
enum AbiCode : int {
  kAbiOk = 0,
  kAbiLibraryError = 1,  ///< a CUDA, cuBLAS, NCCL or MPI call failed (LibraryError; exit 1)
  kAbiInputError = 2,    ///< bad input: no device, too large for memory, ... (InputError; exit 2)
  kAbiInternalError = 3, ///< a broken invariant or an unexpected exception (InternalError; exit 1)
};

inline constexpr std::size_t kAbiMessageBytes = 1024;

/// A call's outcome; `message` is a NUL-terminated line, empty for kAbiOk.
struct AbiStatus {
  int code = kAbiOk;
  char message[kAbiMessageBytes] = {};
};

}  // extern "C"

/// Runs `body` and returns kAbiOk, or catches what it throws into `status` (InputError ->
/// kAbiInputError, LibraryError -> kAbiLibraryError, anything else -> kAbiInternalError) and
/// returns that code. For the backend's side of a table: nothing escapes.
template <class Body>
int abi_call(AbiStatus* status, Body&& body) noexcept;

/// Throws the error `status` holds (the types abi_call caught), its message after `context`
/// (e.g. "bucket 'b': "); returns when it is kAbiOk. `what` also prefixes the message of internal
/// errors, e.g. "GPU backend".
void throw_abi_status(const AbiStatus& status, const char* what, const std::string& context = "");

namespace detail {
/// Fills `status` from the exception being handled (inside a catch block only).
void capture_current_exception(AbiStatus* status) noexcept;
}  // namespace detail

template <class Body>
int abi_call(AbiStatus* status, Body&& body) noexcept {
  try {
    body();
    status->code = kAbiOk;
    status->message[0] = '\0';
  } catch (...) {
    detail::capture_current_exception(status);
  }
  return status->code;
}

}  // namespace syncplan
