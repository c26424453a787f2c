// The lowest failing rank's message, broadcast from it to every rank.
#include "runtime/rank_agreement.hpp"

#include "core/errors.hpp"

#include <algorithm>
#include <array>

namespace syncplan {

void agree_on_error(const MpiSession& mpi, const std::optional<std::string>& error) {
  const int failing = mpi.first_failing_rank(!error.has_value());
  if (failing < 0) return;
  std::array<char, kAgreedMessageBytes> text{};
  if (mpi.rank() == failing)
    std::copy_n(error->data(), std::min(error->size(), text.size() - 1), text.data());
  mpi.broadcast(text.data(), kAgreedMessageBytes, failing);
  text.back() = '\0';
  throw InputError(text.data());
}

void run_agreed(const MpiSession& mpi, const std::function<void()>& work) {
  std::optional<std::string> error;
  try {
    work();
  } catch (const InputError& failure) {
    error = failure.what();
  }
  agree_on_error(mpi, error);
}

}  // namespace syncplan
