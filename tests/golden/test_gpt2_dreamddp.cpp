// Golden case: DreamDDP's measured GPT-2 profile (125 modules, 8 workers, 10 Gbit/s; SPEC section 6).
// Every figure of expected.json, computed by an independent implementation, is reproduced to 1e-9
// relative, and the orderings the planner promises hold on the real profile.
#include <catch2/catch.hpp>

#include "reference_data.hpp"

#include "core/errors.hpp"
#include "planner/strategy_table.hpp"
#include "planner/lower_bound.hpp"
#include "profiler/import_dreamddp.hpp"
#include "simulator/strategies/strategies.hpp"

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace syncplan::golden {
namespace {

constexpr double kGoldenTolerance = 1e-9;     // relative, against expected.json
constexpr double kRoundingTolerance = 1e-12;  // relative, between two timings of this project

double relative_difference(double actual, double expected) {
  const double scale = std::max(std::fabs(actual), std::fabs(expected));
  return scale == 0 ? 0.0 : std::fabs(actual - expected) / scale;
}

// The blocks of expected.json ("H5", "H10", ...): everything but "notes".
std::vector<std::string> expected_blocks() {
  std::vector<std::string> names;
  for (const auto& item : gpt2_case().expected.items())
    if (item.key() != "notes") names.push_back(item.key());
  return names;
}

std::filesystem::path schedule_path(int period) {
  return gpt2_case().folder / ("dreamddp_schedule_H" + std::to_string(period) + ".json");
}

double period_of(const Assignment& assignment) {
  return time_assignment(gpt2_case().times, assignment).period_s;
}

// DreamDDP's published schedule for `period`, imported and timed under SPEC section 5.
double published_schedule_period_s(int period) {
  const Plan plan = import_dreamddp_schedule(schedule_path(period).string(), gpt2_case().profile);
  REQUIRE(plan.period == period);
  return period_of(assignment_from_plan(plan, gpt2_case().times));
}

// How this project computes each figure of expected.json, by the figure's key (see its "notes").
using Figure = std::function<double(const BackpropTimes&, int period)>;
const std::map<std::string, Figure>& figures() {
  static const std::map<std::string, Figure> table = {
      {"layers", [](const BackpropTimes& t, int) { return static_cast<double>(t.size()); }},
      {"backprop_s", [](const BackpropTimes& t, int) { return t.backprop_s(); }},
      {"sync_total_s", [](const BackpropTimes& t, int) { return t.sync_total_s(); }},
      // One iteration of ssgd / wfbp; every iteration of a period is the same.
      {"ssgd_nooverlap_iteration_s",
       [](const BackpropTimes& t, int h) { return run_ssgd(t, h).timing.iteration_s.at(0); }},
      {"wfbp_iteration_s",
       [](const BackpropTimes& t, int h) { return run_strategy("wfbp", t, h).timing.iteration_s.at(0); }},
      {"flsgd_period_s", [](const BackpropTimes& t, int h) { return run_flsgd(t, h).timing.period_s; }},
      {"plsgd_even_period_s",
       [](const BackpropTimes& t, int h) { return run_strategy("plsgd-even", t, h).timing.period_s; }},
      {"dp_contiguous_period_s",
       [](const BackpropTimes& t, int h) { return period_of(plan_dp(t, h).assignment); }},
      {"lower_bound_period_s", [](const BackpropTimes& t, int h) { return spec_lower_bound_s(t, h); }},
      {"dreamddp_published_schedule_period_s",
       [](const BackpropTimes&, int h) { return published_schedule_period_s(h); }},
  };
  return table;
}

// The figures every block must hold (the schedule's only where its file exists), so that a block
// losing a key fails instead of passing with fewer checks.
std::set<std::string> required_figures(int period) {
  std::set<std::string> names = {"layers", "backprop_s", "sync_total_s", "ssgd_nooverlap_iteration_s",
                                 "wfbp_iteration_s", "flsgd_period_s", "plsgd_even_period_s",
                                 "dp_contiguous_period_s", "lower_bound_period_s"};
  std::error_code ec;
  if (std::filesystem::is_regular_file(schedule_path(period), ec))
    names.insert("dreamddp_published_schedule_period_s");
  return names;
}

int block_period(const std::string& block) {
  const Json& figures_json = gpt2_case().expected.at(block);
  REQUIRE(figures_json.contains("period"));
  const int period = figures_json.at("period").get<int>();
  std::string name = "H";  // built in two steps: GCC 12 warns falsely (-Wrestrict) on "H" + string
  name += std::to_string(period);
  REQUIRE(block == name);
  return period;
}

TEST_CASE("GPT-2 reference: the profile imports whole", "[figures]") {
  const Gpt2Case& data = gpt2_case();
  CHECK(data.profile.source == "imported:dreamddp");
  CHECK(data.profile.layers.front().name == "transformer.wte");  // forward order: input-most first
  CHECK(data.times.names.front() == data.profile.layers.back().name);  // backprop order reversed
  for (const LayerProfile& layer : data.profile.layers) {
    INFO("layer " << layer.name);
    CHECK(layer.backward_s.has_value());
    CHECK(layer.sync_s.has_value());
  }
}

TEST_CASE("GPT-2 reference: every figure of expected.json is reproduced to 1e-9", "[figures]") {
  const std::vector<std::string> blocks = expected_blocks();
  REQUIRE(blocks.size() >= 2);  // H5 and H10
  CHECK(std::count(blocks.begin(), blocks.end(), "H5") == 1);
  CHECK(std::count(blocks.begin(), blocks.end(), "H10") == 1);
  int checked = 0;
  for (const std::string& block : blocks) {
    const int period = block_period(block);
    const Json& expected = gpt2_case().expected.at(block);
    for (const std::string& name : required_figures(period)) {
      INFO(block << ": figure '" << name << "' is missing from expected.json");
      CHECK(expected.contains(name));
    }
    for (const auto& item : expected.items()) {
      if (item.key() == "period") continue;
      INFO(block << " (H = " << period << "): figure '" << item.key() << "'");
      const auto figure = figures().find(item.key());
      if (figure == figures().end()) {
        FAIL_CHECK("no check for this figure: add it to figures()");
        continue;
      }
      REQUIRE(item.value().is_number());
      const double want = item.value().get<double>();
      const double got = figure->second(gpt2_case().times, period);
      INFO("expected " << format_exact(want) << ", got " << format_exact(got)
                       << ", relative difference " << relative_difference(got, want)
                       << " (tolerance " << kGoldenTolerance << ")");
      CHECK(relative_difference(got, want) <= kGoldenTolerance);
      ++checked;
    }
  }
  CHECK(checked >= 19);  // 9 figures for H5, 10 for H10
}

TEST_CASE("GPT-2 reference: ssgd and wfbp periods are H identical iterations", "[figures]") {
  for (const std::string& block : expected_blocks()) {
    const int period = block_period(block);
    const Json& expected = gpt2_case().expected.at(block);
    INFO(block);
    const PeriodTiming ssgd = run_ssgd(gpt2_case().times, period).timing;
    const PeriodTiming wfbp = run_strategy("wfbp", gpt2_case().times, period).timing;
    REQUIRE(ssgd.iteration_s.size() == static_cast<std::size_t>(period));
    REQUIRE(wfbp.iteration_s.size() == static_cast<std::size_t>(period));
    const double ssgd_iteration = expected.at("ssgd_nooverlap_iteration_s").get<double>();
    const double wfbp_iteration = expected.at("wfbp_iteration_s").get<double>();
    for (int h = 0; h < period; ++h) {
      INFO("iteration " << h);
      CHECK(relative_difference(ssgd.iteration_s[h], ssgd_iteration) <= kGoldenTolerance);
      CHECK(relative_difference(wfbp.iteration_s[h], wfbp_iteration) <= kGoldenTolerance);
    }
    CHECK(relative_difference(ssgd.period_s, period * ssgd_iteration) <= kGoldenTolerance);
    CHECK(relative_difference(wfbp.period_s, period * wfbp_iteration) <= kGoldenTolerance);
  }
}

// The periods of every strategy and plan this project produces for `period`, by name.
std::map<std::string, double> all_periods(int period) {
  const BackpropTimes& times = gpt2_case().times;
  std::map<std::string, double> periods;
  for (const std::string& name : compared_strategy_names())
    periods[name] = run_strategy(name, times, period).timing.period_s;
  periods["best"] = period_of(plan_best(times, period).assignment);
  std::error_code ec;
  if (std::filesystem::is_regular_file(schedule_path(period), ec))
    periods["dreamddp-published"] = published_schedule_period_s(period);
  return periods;
}

// Periods of expected.json's blocks, and a sweep around them.
std::vector<int> invariant_periods() {
  std::set<int> periods;
  for (const std::string& block : expected_blocks()) periods.insert(block_period(block));
  for (int h = 1; h <= 32; ++h) periods.insert(h);
  for (const int h : {64, 125, 126, 200}) periods.insert(h);  // around and beyond L = 125
  return {periods.begin(), periods.end()};
}

TEST_CASE("GPT-2 reference: dp is never worse than plsgd-even or dreamddp", "[invariants]") {
  for (const int period : invariant_periods()) {
    const std::map<std::string, double> periods = all_periods(period);
    const double dp = periods.at("dp");
    for (const char* other : {"plsgd-even", "dreamddp", "dreamddp-published"}) {
      if (!periods.count(other)) continue;
      INFO("H = " << period << ": dp " << format_exact(dp) << " vs " << other << " "
                  << format_exact(periods.at(other)));
      CHECK(dp <= periods.at(other) * (1 + kRoundingTolerance));
    }
  }
}

TEST_CASE("GPT-2 reference: no strategy or plan beats the lower bound", "[invariants]") {
  for (const int period : invariant_periods()) {
    const double bound = spec_lower_bound_s(gpt2_case().times, period);
    for (const auto& [name, value] : all_periods(period)) {
      INFO("H = " << period << ": " << name << " " << format_exact(value) << " vs lower bound "
                  << format_exact(bound));
      CHECK(value >= bound * (1 - kRoundingTolerance));
    }
  }
}

TEST_CASE("GPT-2 reference: best is the least of dp, dreamddp, plsgd-even and search", "[invariants]") {
  for (const int period : invariant_periods()) {
    const BackpropTimes& times = gpt2_case().times;
    const PlanCandidate best = plan_best(times, period);
    const std::vector<std::pair<std::string, double>> candidates = {
        {"dp", period_of(plan_dp(times, period).assignment)},
        {"dreamddp", period_of(plan_dreamddp(times, period).assignment)},
        {"plsgd-even", period_of(plsgd_even_assignment(times.size(), period))},
        {"search", period_of(plan_search(times, period, {}).assignment)}};
    // Ties, periods within a relative kBestTieRelative (rounding), go to the first in this order
    // (docs/time-model.md section 3).
    auto winner = candidates.begin();
    for (auto it = candidates.begin(); it != candidates.end(); ++it)
      if (it->second < winner->second * (1 - kBestTieRelative)) winner = it;
    INFO("H = " << period << ": best " << best.algorithm << " " << format_exact(period_of(best.assignment))
                << ", least " << winner->first << " " << format_exact(winner->second));
    CHECK(period_of(best.assignment) == winner->second);
    CHECK(best.algorithm == winner->first);
  }
}

TEST_CASE("GPT-2 reference: the published H = 10 schedule is a valid plan of the profile", "[invariants]") {
  const Plan plan = import_dreamddp_schedule(schedule_path(10).string(), gpt2_case().profile);
  CHECK(plan.period == 10);
  REQUIRE(plan.layers.size() == gpt2_case().profile.layers.size());
  for (std::size_t i = 0; i < plan.layers.size(); ++i) {
    INFO("layer " << plan.layers[i].name);
    CHECK(plan.layers[i].name == gpt2_case().profile.layers[i].name);
    CHECK(!plan.layers[i].sync_iterations.empty());
  }
}

}  // namespace
}  // namespace syncplan::golden
