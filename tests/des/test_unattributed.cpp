// The profile's `unattributed` compute (docs/time-model.md, "Unattributed compute") in the reader
// and in both engines, on a two-layer case derived by hand; times are binary fractions (exact sums).
#include "des_support.hpp"

#include "simulator/des/sync_program.hpp"
#include "simulator/period_model.hpp"
#include "simulator/strategies/strategies.hpp"

namespace syncplan {
namespace {

using des_test::near;

// Forward order: "embed" (input-most), "head" (output-most). Backprop order j0 = head (b 1, c 2),
// j1 = embed (b 1, c 0.5). Layer forward times 0.5 in all; unattributed forward 0.25, backward 1.5.
Json two_layer_profile(bool with_unattributed) {
  Json document{{"format", "syncplan.profile/v1"}, {"source", "measured:test"}, {"workers", 2},
                {"layers", Json::array({
                               Json{{"name", "embed"}, {"forward_s", 0.5}, {"backward_s", 1.0}, {"sync_s", 0.5}},
                               Json{{"name", "head"}, {"forward_s", 0.0}, {"backward_s", 1.0}, {"sync_s", 2.0}},
                           })}};
  if (with_unattributed) document["unattributed"] = Json{{"forward_s", 0.25}, {"backward_s", 1.5}};
  return document;
}

Assignment every_layer(int period) {
  Assignment assignment;
  assignment.iterations.assign(period, std::vector<int>{0, 1});
  return assignment;
}

DesResult des_run(const Profile& profile, const SyncProgram& program, int iterations) {
  DesOptions options;
  options.iterations = iterations;
  options.trace_workers = 1;
  const Cluster cluster = des_test::cluster_of(des_test::cluster_document(2, 2, 8, 10));
  return run_des(des_layers(profile, "profile.json", SyncTimeSource::kMeasured), cluster, program, options);
}

}  // namespace

TEST_CASE("unattributed: read, validated and written back", "[des][unattributed]") {
  const Profile profile = profile_from_json(two_layer_profile(true), "profile.json");
  REQUIRE(profile.unattributed.has_value());
  REQUIRE(*profile.unattributed->forward_s == 0.25);
  REQUIRE(*profile.unattributed->backward_s == 1.5);
  REQUIRE(profile_to_json(profile)["unattributed"] == Json{{"forward_s", 0.25}, {"backward_s", 1.5}});
  REQUIRE_FALSE(profile_from_json(two_layer_profile(false), "profile.json").unattributed.has_value());
  REQUIRE_FALSE(profile_to_json(profile_from_json(two_layer_profile(false), "p.json")).contains("unattributed"));

  Json negative = two_layer_profile(true);
  negative["unattributed"]["backward_s"] = -1.0;
  REQUIRE_THROWS_WITH(profile_from_json(negative, "p.json"),
                      Catch::Matchers::Contains("p.json: field 'unattributed'") &&
                          Catch::Matchers::Contains("backward_s"));
  Json unknown = two_layer_profile(true);
  unknown["unattributed"]["update_s"] = 1.0;
  REQUIRE_THROWS_WITH(profile_from_json(unknown, "p.json"), Catch::Matchers::Contains("unknown key 'update_s'"));
  Json not_object = two_layer_profile(true);
  not_object["unattributed"] = 3;
  REQUIRE_THROWS_AS(profile_from_json(not_object, "p.json"), InputError);
  // null means unknown: charged as 0.
  Json unknown_times = two_layer_profile(true);
  unknown_times["unattributed"] = Json{{"forward_s", nullptr}, {"backward_s", nullptr}};
  const BackpropTimes plain = backprop_times(profile_from_json(two_layer_profile(false), "p.json"), "p.json");
  const BackpropTimes nulls = backprop_times(profile_from_json(unknown_times, "p.json"), "p.json");
  REQUIRE(nulls.compute_s() == plain.compute_s());
}

TEST_CASE("unattributed: the period model adds it to F and before the first layer's backward", "[des][unattributed]") {
  // Without it: F = 0.5, B = [1, 2], B_L = 2. wfbp: j0 1 -> 3, j1 max(2, 3) = 3 -> 3.5;
  //   wait = 3.5 - 2 = 1.5; iteration = 0.5 + 2 + 1.5 = 4.0.
  // With it: F = 0.5 + 0.25 = 0.75, then u_B = 1.5 before the first layer's backward, which
  //   starts at 2.25; B_j unchanged relative to it, so the syncs and the wait (1.5) are as before,
  //   shifted: iteration = 0.75 + 1.5 + 2 + 1.5 = 5.75.
  // ssgd: F + u_B + B_L + sum c = 0.75 + 1.5 + 2 + 2.5 = 6.75 (without: 0.5 + 2 + 2.5 = 5.0).
  const BackpropTimes with = backprop_times(profile_from_json(two_layer_profile(true), "p.json"), "p.json");
  const BackpropTimes without = backprop_times(profile_from_json(two_layer_profile(false), "p.json"), "p.json");
  REQUIRE(with.ready_s == without.ready_s);
  REQUIRE(with.forward_total_s == 0.75);
  REQUIRE(with.backprop_s() == 2.0);
  REQUIRE(with.backward_start_s() == 2.25);
  const PeriodTiming overlapped = time_assignment(with, every_layer(2));
  REQUIRE(overlapped.iteration_s == std::vector<double>{5.75, 5.75});
  REQUIRE(overlapped.wait_s == std::vector<double>{1.5, 1.5});
  REQUIRE(overlapped.syncs[0][1].start_s == 2.25 + 3.0);  // F + u_B + max(B_2, end of j0)
  REQUIRE(time_assignment(without, every_layer(1)).iteration_s == std::vector<double>{4.0});
  REQUIRE(run_ssgd(with, 2).timing.period_s == 2 * 6.75);
  REQUIRE(run_ssgd(without, 1).timing.period_s == 5.0);
}

TEST_CASE("unattributed: the DES runs it as compute after the forward and before the first backward", "[des][unattributed]") {
  // One simulated worker (identical workers), measured sync times. Iteration 0:
  //   forward 0 -> 0.5, unattributed forward 0.5 -> 0.75, unattributed backward 0.75 -> 2.25;
  //   backward j0 2.25 -> 3.25, j1 -> 4.25. wfbp: all-reduce j0 3.25 -> 5.25, j1 5.25 -> 5.75;
  //   update at 5.75; U = 0: iteration 5.75, as the period model says.
  //   ssgd: all-reduces issued at 4.25, back to back: 4.25 + 2.5 = 6.75.
  const Profile with = profile_from_json(two_layer_profile(true), "p.json");
  const DesResult wfbp = des_run(with, program_from_assignment(every_layer(1)), 2);
  REQUIRE(wfbp.iteration_s[0] == near(5.75));
  REQUIRE(wfbp.iteration_s[1] == near(5.75));
  REQUIRE(wfbp.exposed_comm_s() == near(2 * 1.5));
  int unattributed_events = 0;
  for (const DesTraceEvent& event : wfbp.trace) {
    if (event.name == "forward (unattributed)") REQUIRE(event.duration_s == near(0.25));
    if (event.name == "backward (unattributed)") REQUIRE(event.duration_s == near(1.5));
    if (event.name.find("(unattributed)") != std::string::npos) ++unattributed_events;
  }
  REQUIRE(unattributed_events == 4);  // 2 per iteration
  const DesResult ssgd = des_run(with, ssgd_program(2, 1), 1);
  REQUIRE(ssgd.iteration_s[0] == near(6.75));
  // Without the key the DES is unchanged: 0.5 + 2 + wait 1.5 = 4.0.
  const DesResult plain = des_run(profile_from_json(two_layer_profile(false), "p.json"),
                                  program_from_assignment(every_layer(1)), 1);
  REQUIRE(plain.iteration_s[0] == near(4.0));
}

}  // namespace syncplan
