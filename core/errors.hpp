// Error types shared by every module: bad user input versus broken internal invariants.
#pragma once

#include <stdexcept>
#include <string>

namespace syncplan {

namespace detail {
/// `message` with C0 controls (0x00-0x1F) and DEL as \xNN and C1 controls (UTF-8 0xC2 0x80-0x9F)
/// as \u00NN; everything else as it was.
std::string escaped_message(const std::string& message);
}  // namespace detail

/// Bad user input: a file, field, layer or option value that cannot be used.
/// The message is one line that names where the problem is (file, field, layer) and what was wrong;
/// the command line maps it to exit code 2 (SPEC section 2).
/// Control characters in the message (a quoted name, value or path) are written as \xNN (C1
/// controls as \u00NN): a NUL cut the message where `what()` is read as a C string, and the
/// others reached terminals raw (escaped_message).
class InputError : public std::invalid_argument {
 public:
  explicit InputError(const std::string& message) : std::invalid_argument(detail::escaped_message(message)) {}
};

/// Broken internal invariant (a bug in syncplan, not in the input); exit code 1.
class InternalError : public std::logic_error {
 public:
  explicit InternalError(const std::string& message) : std::logic_error(message) {}
};

/// Always-on invariant check: throws InternalError naming the expression, file and line.
#define SYNCPLAN_CHECK(cond)                                                                 \
  do {                                                                                       \
    if (!(cond)) ::syncplan::detail::check_failed(#cond, __FILE__, __LINE__);                \
  } while (0)

namespace detail {
[[noreturn]] void check_failed(const char* expression, const char* file, int line);
}  // namespace detail

/// Formats a double with enough digits to read it back exactly (17 significant digits).
std::string format_exact(double value);

/// The shortest text that reads back as `value` exactly, %g-style ("0.0009", "5e-324"): numbers in
/// messages as a file wrote them, not format_exact's 17 digits.
std::string format_shortest(double value);

/// Formats a double for people (tables, messages) in a short cell: `decimals` decimals (printf
/// %.*f) when it is 0 or its magnitude is in [10^-decimals, 1e6); otherwise 6 significant digits
/// with an exponent (%g: "1e+200", "2.5e-09"). Not for JSON output, which keeps every digit.
std::string format_short(double value, int decimals);

/// A ratio for people, e.g. a speedup: "1.23x" (2 decimals from 0.01 up), "0.00653x" (3
/// significant digits below 0.01, not format_short's 6), "n/a" when not finite.
std::string format_ratio(double ratio);

/// A count with its noun for messages: "1 worker", "8 workers", "0 workers" (English plural by
/// an added "s"; nouns whose plural is not that are not for this function).
std::string count_text(long long count, const std::string& noun);

}  // namespace syncplan
