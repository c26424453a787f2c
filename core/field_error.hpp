// FieldError: bad input in a named field of a library request, so that each front end (the
// command line, a what-if sweep, the runtime) can say where the value came from.
#pragma once

#include "core/errors.hpp"

#include <string>

namespace syncplan {

/// An InputError whose message starts with the request field it is about, e.g. field "period" and
/// message "period: must be >= 1, got 0". The command line rewrites the leading field as its flag
/// ("--period: must be >= 1, got 0", rename_field); library code never names a flag.
class FieldError : public InputError {
 public:
  /// `message` must start with `field` (checked: an InternalError otherwise).
  FieldError(std::string field, const std::string& message);

  const std::string& field() const { return field_; }

  /// The same message with the leading field replaced by `name` (e.g. the flag "--period").
  std::string renamed(const std::string& name) const;

 private:
  std::string field_;
};

}  // namespace syncplan
