// The wording of the late ranks in a timeout line (comm/arrivals.hpp: missing_ranks_text,
// late_ranks_text), by hand; the collective side runs under mpirun (test_arrivals_cases.sh).
#include "comm/arrivals.hpp"

#include <catch2/catch.hpp>

using namespace syncplan;

TEST_CASE("arrivals: the late ranks in words", "[arrivals]") {
  CHECK(missing_ranks_text({}) == "every rank arrived");
  CHECK(missing_ranks_text({1}) == "rank 1 did not arrive");
  CHECK(missing_ranks_text({1, 3}) == "ranks 1 and 3 did not arrive");
  CHECK(missing_ranks_text({1, 2, 3}) == "ranks 1, 2 and 3 did not arrive");
  CHECK(late_ranks_text({}, 1.0) == "every rank arrived and is alive");
  CHECK(late_ranks_text({{1}, {0, 3}, {}}, 1.0) ==
        "rank 1 did not arrive; ranks 0 and 3 did not arrive but are alive, waiting at an earlier bucket");
  CHECK(late_ranks_text({{}, {2}, {1}}, 1.5) ==
        "rank 2 did not arrive but is alive, waiting at an earlier bucket; rank 1 arrived but has given no sign of "
        "life for 1.5 s");
  CHECK(late_ranks_text({{}, {}, {1, 2}}, 1.0) == "ranks 1 and 2 arrived but have given no sign of life for 1 s");
}
