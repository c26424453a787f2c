// AdamW's update, element by element in float with the bias corrections in double (as
// torch.optim.AdamW's single-tensor path computes them).
#include "model/adamw.hpp"

#include "core/errors.hpp"
#include "model/require_elements.hpp"

#include <algorithm>
#include <cmath>
#include <string>

namespace syncplan {

namespace {

void require_range(double value, double low, bool low_open, double high, const char* field) {
  const bool ok = (low_open ? value > low : value >= low) && value < high;
  if (!ok)
    throw InputError(std::string("AdamW ") + field + ": " + format_shortest(value) + " outside " + (low_open ? "(" : "[") +
                     format_shortest(low) + ", " + (std::isinf(high) ? "inf" : format_shortest(high)) + ")");
}

}  // namespace

AdamW::AdamW(std::int64_t parameter_count, const AdamWOptions& options) : options_(options) {
  const double inf = HUGE_VAL;
  require_range(options.learning_rate, 0, true, kMaxLearningRate, "learning_rate");
  require_range(options.beta1, 0, false, 1, "beta1");
  require_range(options.beta2, 0, false, 1, "beta2");
  require_range(options.eps, 0, true, inf, "eps");
  require_range(options.weight_decay, 0, false, inf, "weight_decay");
  SYNCPLAN_CHECK(parameter_count >= 0);
  m_.assign(static_cast<std::size_t>(parameter_count), 0.0f);
  v_.assign(static_cast<std::size_t>(parameter_count), 0.0f);
}

void AdamW::step(std::span<float> parameters, std::span<const float> gradients) {
  require_elements(parameters.size(), static_cast<std::int64_t>(m_.size()), "parameters");
  require_elements(gradients.size(), static_cast<std::int64_t>(m_.size()), "gradients");
  ++step_count_;
  const double t = static_cast<double>(step_count_);
  const auto lr = static_cast<float>(options_.learning_rate);
  const auto b1 = static_cast<float>(options_.beta1), b2 = static_cast<float>(options_.beta2);
  const auto eps = static_cast<float>(options_.eps);
  const auto decay = static_cast<float>(1.0 - options_.learning_rate * options_.weight_decay);
  const auto correction1 = static_cast<float>(1.0 - std::pow(options_.beta1, t));
  const auto correction2 = static_cast<float>(1.0 - std::pow(options_.beta2, t));
  for (std::size_t i = 0; i < m_.size(); ++i) {
    const float g = gradients[i];
    m_[i] = b1 * m_[i] + (1.0f - b1) * g;
    v_[i] = b2 * v_[i] + (1.0f - b2) * g * g;
    const float m_hat = m_[i] / correction1, v_hat = v_[i] / correction2;
    parameters[i] = parameters[i] * decay - lr * m_hat / (std::sqrt(v_hat) + eps);
  }
}

void AdamW::restore(std::span<const float> first_moment, std::span<const float> second_moment,
                    std::int64_t step_count) {
  const auto check = [&](std::size_t elements, const char* name) {
    if (elements != m_.size())
      throw InputError(std::string("AdamW state: ") + name + " has " + std::to_string(elements) +
                       " elements, the optimizer " + std::to_string(m_.size()));
  };
  check(first_moment.size(), "first moment");
  check(second_moment.size(), "second moment");
  if (step_count < 0) throw InputError("AdamW state: step count " + std::to_string(step_count) + " is negative");
  std::copy(first_moment.begin(), first_moment.end(), m_.begin());
  std::copy(second_moment.begin(), second_moment.end(), v_.begin());
  step_count_ = step_count;
}

}  // namespace syncplan
