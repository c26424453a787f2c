// Helpers shared by the unit tests: profiles written in backprop order, and exact comparisons.
#pragma once

#include "core/errors.hpp"
#include "core/profile.hpp"
#include "simulator/period_model.hpp"

#include <catch2/catch.hpp>

#include <string>
#include <vector>

namespace syncplan::test {

/// A profile given in backprop order (SPEC section 5's j = 1..L, output-most first), as the hand
/// derivations are written. Layer j is named "j<j>"; the profile's forward order is the reverse
/// (j<L> first). `forward_s` and `update_s` (F and U, seconds) sit on the input-most layer; every
/// other layer has them null, so F and U are exactly the values given.
inline Profile backprop_profile(const std::vector<double>& backward_s,
                                const std::vector<double>& sync_s, double forward_s = 0,
                                double update_s = 0) {
  REQUIRE(backward_s.size() == sync_s.size());
  Profile profile;
  profile.model = "hand";
  profile.source = "estimated:hand";
  profile.workers = 2;
  for (std::size_t k = backward_s.size(); k-- > 0;) {
    LayerProfile layer;
    layer.name = "j" + std::to_string(k + 1);
    layer.backward_s = backward_s[k];
    layer.sync_s = sync_s[k];
    profile.layers.push_back(layer);
  }
  if (forward_s != 0) profile.layers.front().forward_s = forward_s;
  if (update_s != 0) profile.layers.front().update_s = update_s;
  return profile;
}

/// BackpropTimes of backprop_profile(...).
inline BackpropTimes backprop_times_of(const std::vector<double>& backward_s,
                                       const std::vector<double>& sync_s, double forward_s = 0,
                                       double update_s = 0) {
  return backprop_times(backprop_profile(backward_s, sync_s, forward_s, update_s), "hand.json");
}

/// The message of the InputError `run` throws; fails the test when it throws nothing.
template <typename Run>
std::string error_of(Run run) {
  try {
    run();
  } catch (const InputError& e) {
    return e.what();
  }
  FAIL("no InputError thrown");
  return "";
}

/// Hand-derived values use binary fractions (halves, quarters), so the model must reproduce them
/// up to rounding of a few additions.
inline Approx exactly(double expected) { return Approx(expected).epsilon(1e-12).margin(1e-12); }

/// Assignment literal: iterations[h] lists backprop indices (0-based: SPEC's j = 1 is index 0).
inline Assignment assignment_of(std::vector<std::vector<int>> iterations) {
  Assignment assignment;
  assignment.iterations = std::move(iterations);
  return assignment;
}

}  // namespace syncplan::test
