// FieldError's constructor and renaming (core/field_error.hpp).
#include "core/field_error.hpp"

namespace syncplan {

FieldError::FieldError(std::string field, const std::string& message) : InputError(message), field_(std::move(field)) {
  SYNCPLAN_CHECK(!field_.empty() && message.compare(0, field_.size(), field_) == 0);
}

std::string FieldError::renamed(const std::string& name) const {
  return name + std::string(what()).substr(field_.size());
}

}  // namespace syncplan
