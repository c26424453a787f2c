// The report and result documents (core/report.hpp, core/result.hpp) and FieldError
// (core/field_error.hpp): keys in docs/formats.md's order, nulls for ratios that are not numbers,
// and field renaming.
#include "core/field_error.hpp"
#include "core/report.hpp"
#include "core/result.hpp"

#include <catch2/catch.hpp>

#include <cmath>
#include <limits>

namespace syncplan {

namespace {
std::vector<std::string> keys_of(const Json& object) {
  std::vector<std::string> keys;
  for (const auto& [key, value] : object.items()) keys.push_back(key);
  return keys;
}
}  // namespace

TEST_CASE("report: keys in order, optional blocks only when set, non-finite speedups as null", "[report]") {
  PlanReport report;
  report.profile = "p.json";
  report.period = 2;
  // A profile whose times are all zero: 0 / 0 speedups are NaN and must be written as null.
  report.strategies.push_back({"ssgd", 0, 0, 0, std::nan(""), std::numeric_limits<double>::infinity()});
  report.chosen = {"dp", "best", 6.25, 0, 3, std::nullopt};
  report.sync_times = "the profile's sync_s";
  report.search = {1.0, 2, 0.25, 1, "time_limit", 4};
  Json document = report_to_json(report);
  REQUIRE(keys_of(document) == std::vector<std::string>{"format", "model", "profile", "period", "strategies",
                                                        "lower_bound_period_s", "lower_bounds", "chosen", "search",
                                                        "sync_times", "period_chosen_by", "every_iteration"});
  REQUIRE(document["model"].is_null());
  REQUIRE(document["strategies"]["ssgd"]["speedup_over_ssgd"].is_null());
  REQUIRE(document["strategies"]["ssgd"]["speedup_over_flsgd"].is_null());
  REQUIRE(document["chosen"]["extra_syncs"] == 3);
  REQUIRE(document["period_chosen_by"] == "given");  // a value of the document, not a flag
  REQUIRE(document["every_iteration"].is_array());
  REQUIRE(keys_of(document["search"]) ==
          std::vector<std::string>{"time_limit_s", "runs", "elapsed_s", "time_limited_runs", "stopped_by", "rounds"});
  REQUIRE(document["search"]["stopped_by"] == "time_limit");
  REQUIRE(document["search"]["time_limited_runs"] == 1);

  report.cluster = "c.json";
  report.period_automatic = true;
  report.max_overhead = 0.05;
  report.chosen.buckets = ReportBuckets{7e-4, 34, 125, 0.7706, 0.7682};
  document = report_to_json(report);
  REQUIRE(document["cluster"] == "c.json");
  REQUIRE(document["period_chosen_by"] == "auto");
  REQUIRE(document["max_overhead"] == 0.05);
  REQUIRE(document["chosen"]["buckets"]["allreduces"] == 34);
  REQUIRE(keys_of(document).back() == "max_overhead");
}

TEST_CASE("result: the period model's and the DES's documents", "[report]") {
  // Two iterations of 3 s and 3.25 s: mean 6.25 / 2 = 3.125 s.
  PeriodModelResult period{{"m", "p.json", "", "dp"}, 2, 6.25, 0.25, {3, 3.25}, {0, 0.25}, 6.25};
  Json document = result_to_json(period);
  REQUIRE(document["strategy"] == "dp");
  REQUIRE_FALSE(document.contains("plan"));
  REQUIRE(document["engine"] == "period-model");
  REQUIRE(document["period_s"] == 6.25);  // 3 + 3.25, the sum of iteration_s
  REQUIRE(document["mean_iteration_s"] == 3.125);

  DesRunResult des;
  des.subject = {std::nullopt, "p.json", "plan.json", ""};
  des.cluster = "c.json";
  des.period = 2;
  des.iterations = 4;
  des.total_s = 10;
  des.sync_time = "link";
  des.link = "l.json";
  des.link_bytes = {{"node0->node1", 1e6}};
  document = result_to_json(des);
  REQUIRE(document["engine"] == "des");
  REQUIRE(document["plan"] == "plan.json");
  REQUIRE(document["mean_iteration_s"] == 2.5);  // 10 s over 4 iterations
  REQUIRE(document["period_s"] == 5);            // two periods of H = 2 in 10 s: 5 s each
  // 3 iterations of H = 2 in 7.5 s: not a whole number of periods; the mean iteration 2.5 s times H.
  des.iterations = 3;
  des.total_s = 7.5;
  REQUIRE(result_to_json(des)["period_s"] == 5);
  REQUIRE(document["link"] == "l.json");
  REQUIRE(document["link_bytes"][0]["link"] == "node0->node1");
}

TEST_CASE("FieldError: the message starts with the field, renamed replaces it", "[report]") {
  const FieldError error("period", "period: must be >= 1, got 0");
  REQUIRE(error.field() == "period");
  REQUIRE(error.renamed("--period") == "--period: must be >= 1, got 0");
  const FieldError strategy("strategy", "strategy ddp: layer 'x' has no param_bytes");
  REQUIRE(strategy.renamed("--strategy") == "--strategy ddp: layer 'x' has no param_bytes");
  REQUIRE_THROWS_AS(FieldError("period", "H must be >= 1"), InternalError);  // must start with its field
}

}  // namespace syncplan
