// check_close: element-by-element comparison of float vectors for the kernel tests, naming the
// first element that differs.
#pragma once

#include <catch2/catch.hpp>

#include <vector>

/// REQUIREs equal sizes, then CHECKs |actual - expected| <= margin for every element.
inline void check_close(const std::vector<float>& actual, const std::vector<float>& expected, double margin) {
  REQUIRE(actual.size() == expected.size());
  for (std::size_t i = 0; i < actual.size(); ++i) {
    INFO("element " << i);
    CHECK(actual[i] == Approx(expected[i]).margin(margin));
  }
}
