// libFuzzer harness of the compare inputs' reader (`syncplan compare`, docs/compare.md): one file
// (a simulate result, a Chrome trace or a run log) read by parse_timeline, or two joined by a NUL
// byte (PREDICTED, MEASURED) then compared and written as syncplan.compare/v1.
#include "runtime/compare.hpp"
#include "fuzz_support.hpp"
#include "structure_mutator.hpp"

#include <cmath>

using namespace syncplan;

namespace {

// What every accepted timeline promises (runtime/compare.hpp): at least one iteration, each time
// finite and >= 0, ranks >= 1, a repeating one's period equal to its count.
void check_timeline(const Timeline& timeline) {
  if (timeline.iteration_s.empty()) fuzz::fail("a timeline without iterations was accepted");
  for (double t : timeline.iteration_s)
    if (!std::isfinite(t) || t < 0) fuzz::fail("an iteration time of " + std::to_string(t) + " s was accepted");
  if (timeline.ranks < 1) fuzz::fail("a timeline of " + std::to_string(timeline.ranks) + " ranks was accepted");
  if (timeline.repeats && timeline.period && *timeline.period != static_cast<int>(timeline.iteration_s.size()))
    fuzz::fail("a repeating timeline whose period differs from its iteration count");
}

}  // namespace

SYNCPLAN_FUZZ_STRUCTURE_MUTATOR()

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const auto [first, second] = fuzz::split_at_nul(fuzz::text_of(data, size));
  return fuzz::refused_or_read([&, &first = first, &second = second] {
    const Timeline predicted = parse_timeline(first, "predicted.json");
    check_timeline(predicted);
    if (second.empty()) return;
    const Timeline measured = parse_timeline(second, "measured.json");
    check_timeline(measured);
    CompareOptions options;
    options.skip = static_cast<int>(size % 3);
    CompareReport report;
    report.skip = options.skip;
    report.pairs.push_back(compare_timelines(predicted, measured, options));
    const PairComparison& pair = report.pairs.back();
    if (!std::isfinite(pair.mape_percent) || pair.mape_percent < 0 || pair.compared < 1)
      fuzz::fail("a comparison with MAPE " + std::to_string(pair.mape_percent) + "% over " +
                 std::to_string(pair.compared) + " iterations");
    report.ranking = rank_runs({{pair.mean_predicted_s, pair.mean_measured_s}, {pair.mean_measured_s, pair.mean_predicted_s}});
    (void)compare_to_json(report).dump(1);  // as write_json_file_atomic writes it
  });
}
