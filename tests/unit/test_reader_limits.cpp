// Where the readers draw the line: null only where a format documents it (docs/formats.md,
// SPEC section 3), link fits within a day, and numbers printed for people in short cells.
#include "core/cluster.hpp"
#include "core/errors.hpp"
#include "core/json_io.hpp"
#include "core/link.hpp"
#include "core/plan.hpp"
#include "core/profile.hpp"

#include "test_support.hpp"

#include <catch2/catch.hpp>

#include <limits>

#include <string>

using namespace syncplan;
using Catch::Contains;
using test::error_of;

namespace {

Json parse(const std::string& text) { return parse_json_text(text, "fixture"); }

Profile one_layer_profile() {
  Profile profile;
  profile.model = "toy";
  profile.source = "estimated:hand";
  LayerProfile layer;
  layer.name = "fc";
  layer.backward_s = 1;
  layer.sync_s = 1;
  profile.layers.push_back(layer);
  return profile;
}

/// A one-layer, one-iteration plan document whose top level ends with `extra` (",\"key\": value").
Json plan_document(const std::string& extra) {
  return parse(R"({"format": "syncplan.plan/v1", "model": "toy", "period": 1, "algorithm": "hand",
                   "layers": [{"name": "fc", "sync_iterations": [0]}])" + extra + "}");
}

/// A valid link fit whose field `key` is replaced by `value` (a JSON text).
Json link_document(const std::string& key, const std::string& value) {
  Json document = parse(R"({"format": "syncplan.link/v1", "collective": "allreduce", "workers": 8,
    "source": "estimated:hand", "alpha_s": 0.0007, "beta_s_per_byte": 1.4e-09, "r_squared": 1.0,
    "samples": [{"size_bytes": 0, "time_s": 0.0007, "algbw_GBps": 0.0, "busbw_GBps": 0.0}]})");
  if (key == "time_s") document["samples"][0]["time_s"] = parse(value);
  else document[key] = parse(value);
  return document;
}

Json cluster_document(const std::string& extra) {
  return parse(R"({"format": "syncplan.cluster/v1", "workers": 2,
                   "intra_node": {"bandwidth_Gbps": 10, "latency_us": 5})" + extra + "}");
}

}  // namespace

TEST_CASE("readers: Null::kUnknown reads null as absent, Null::kRejected hands it to the type check", "[json]") {
  const Json document = parse(R"({"a": null, "b": "text"})");
  ObjectReader unknown(document, "fixture");
  CHECK(unknown.optional("a") == nullptr);
  CHECK_FALSE(unknown.optional_string("a").has_value());
  CHECK(unknown.optional("missing", Null::kRejected) == nullptr);  // absent is still fine
  CHECK(*unknown.optional_string("b", Null::kRejected) == "text");

  ObjectReader rejected(document, "fixture");
  const Json* value = rejected.optional("a", Null::kRejected);
  REQUIRE(value != nullptr);
  CHECK(value->is_null());
  CHECK_THAT(error_of([&] { rejected.optional_string("a", Null::kRejected); }),
             Contains("fixture: field 'a': expected a string, got null"));
  CHECK_THAT(error_of([&] { rejected.optional_integer("a", 0, Null::kRejected); }),
             Contains("fixture: field 'a': expected a whole number, got null"));
}

TEST_CASE("readers: a plan's buckets and predicted may be absent but not null", "[json]") {
  const Profile profile = one_layer_profile();
  CHECK_FALSE(plan_from_json(plan_document(""), "plan.json", profile).buckets.has_value());
  CHECK_THAT(error_of([&] { plan_from_json(plan_document(R"(, "buckets": null)"), "plan.json", profile); }),
             Contains("plan.json: field 'buckets': expected a JSON object, got null"));
  CHECK_THAT(error_of([&] { plan_from_json(plan_document(R"(, "predicted": null)"), "plan.json", profile); }),
             Contains("plan.json: field 'predicted': expected a JSON object, got null"));
  // Documented nulls stay readable: the model, and the bound of a prediction (plan_to_json writes both).
  Json document = plan_document(
      R"(, "predicted": {"period_s": 2, "iteration_s": [2], "wait_s": [0], "lower_bound_period_s": null})");
  document["model"] = nullptr;
  const Plan plan = plan_from_json(document, "plan.json", profile);
  CHECK_FALSE(plan.model.has_value());
  CHECK_FALSE(plan.predicted->lower_bound_period_s.has_value());
}

TEST_CASE("readers: a plan's predicted lower bound may not exceed its predicted period", "[json]") {
  const Profile profile = one_layer_profile();
  const auto with_bound = [&](const char* bound) {
    return plan_from_json(plan_document(std::string(R"(, "predicted": {"period_s": 2, "iteration_s": [2], "wait_s": [0], )") +
                                        R"("lower_bound_period_s": )" + bound + R"(, "lower_bound": "exact"})"),
                          "plan.json", profile);
  };
  // Equal is the proven optimum; 2 * (1 + 1e-10) is decimal rounding of the same number.
  CHECK(*with_bound("2").predicted->lower_bound_period_s == 2);
  CHECK(with_bound("2.0000000002").predicted.has_value());
  // 2.5 s cannot bound a 2 s period (the helper's hand-edited plan was read and the bound silently
  // recomputed, exit 0).
  CHECK_THAT(error_of([&] { with_bound("2.5"); }),
             Contains("plan.json: field 'predicted': field 'lower_bound_period_s': 2.5 s is above the predicted 'period_s' 2 s"));
}

TEST_CASE("readers: a profile layer's tied_to may be absent but not null, its times null", "[json]") {
  const std::string head = R"({"format": "syncplan.profile/v1", "model": null, "source": "estimated:hand",
    "workers": null, "layers": [{"name": "fc", "param_count": null, "param_bytes": null, "forward_s": null,
    "backward_s": null, "update_s": null, "sync_s": null)";
  CHECK_FALSE(profile_from_json(parse(head + "}]}"), "p.json").layers[0].tied_to.has_value());
  CHECK_THAT(error_of([&] { profile_from_json(parse(head + R"(, "tied_to": null}]})"), "p.json"); }),
             Contains("p.json: layer 'fc': field 'tied_to': expected a string, got null"));
}

TEST_CASE("readers: no optional key of a cluster may be null", "[json]") {
  CHECK(cluster_from_json(cluster_document(""), "c.json").workers == 2);
  for (const char* key : {"name", "workers_per_node", "inter_node", "allreduce", "compute_slowdown", "jitter"}) {
    INFO(key);
    const std::string message =
        error_of([&] { cluster_from_json(cluster_document(std::string(R"(, ")") + key + R"(": null)"), "c.json"); });
    CHECK_THAT(message, Contains(std::string("c.json: field '") + key + "'") && Contains("got null"));
  }
  CHECK_THAT(error_of([&] {
               const std::string jitter = R"(, "jitter": {"distribution": "normal", "sigma": 0.1, "seed": null})";
               cluster_from_json(cluster_document(jitter), "c.json");
             }),
             Contains("field 'jitter': field 'seed'") && Contains("got null"));
}

TEST_CASE("readers: a link fit's times are at most a day", "[json]") {
  // 86400 s is the bound itself and reads; 86400.001 s or 1e300 does not.
  CHECK(link_from_json(link_document("alpha_s", "86400"), "l.json").alpha_s == 86400);
  CHECK(link_from_json(link_document("beta_s_per_byte", "86400"), "l.json").beta_s_per_byte == 86400);
  CHECK_THAT(error_of([] { link_from_json(link_document("alpha_s", "86400.001"), "l.json"); }),
             Contains("l.json: field 'alpha_s': at most 86400 (a day)"));
  // The shortest text that reads back (it printed 1.0000000000000001e+300).
  CHECK_THAT(error_of([] { link_from_json(link_document("beta_s_per_byte", "1e300"), "l.json"); }),
             Contains("l.json: field 'beta_s_per_byte': at most 86400 (a day), got 1e+300; not a measurement"));
  CHECK_THAT(error_of([] { link_from_json(link_document("time_s", "1e200"), "l.json"); }),
             Contains("l.json: samples[0]: field 'time_s': at most 86400"));
}

TEST_CASE("count_text: the noun in the singular for exactly one, else with an s", "[format]") {
  CHECK(count_text(1, "worker") == "1 worker");
  CHECK(count_text(8, "worker") == "8 workers");
  CHECK(count_text(0, "layer") == "0 layers");
  CHECK(count_text(-1, "rank") == "-1 ranks");
}

TEST_CASE("format_short: fixed decimals from 10^-decimals up to 1e6, else 6 significant digits", "[format]") {
  CHECK(format_short(0.0, 6) == "0.000000");
  CHECK(format_short(0.0015, 6) == "0.001500");
  CHECK(format_short(1e-6, 6) == "0.000001");   // the smallest fixed value at 6 decimals
  CHECK(format_short(2.5e-9, 6) == "2.5e-09");  // below it: exponent form, digits kept
  CHECK(format_short(999999.5, 2) == "999999.50");
  CHECK(format_short(1234567.0, 2) == "1.23457e+06");
  CHECK(format_short(1e200, 6) == "1e+200");
  CHECK(format_short(-1e300, 6) == "-1e+300");
  CHECK(format_short(0.005, 2) == "0.005");
  CHECK(format_short(12.3456, 2) == "12.35");
}

TEST_CASE("format_ratio and format_shortest: speedups and numbers in messages without noise digits", "[format]") {
  CHECK(format_ratio(1.2345) == "1.23x");
  CHECK(format_ratio(0.0) == "0.00x");
  CHECK(format_ratio(0.00652852) == "0.00653x");  // it once printed "0.00652852x"
  CHECK(format_ratio(std::numeric_limits<double>::infinity()) == "n/a");
  // 1e-6 is 9.9999999999999995e-07 in 17 digits; the shortest text that reads back is "1e-06".
  CHECK(format_shortest(1e-6) == "1e-06");
  CHECK(std::stod(format_shortest(0.1 + 0.2)) == 0.1 + 0.2);  // still exact: 0.30000000000000004
}

TEST_CASE("limits: a cluster's absurd bandwidth, latency, slowdown and jitter are refused naming the field", "[json]") {
  // Values each past a limit of core/limits.hpp.
  CHECK_THAT(error_of([] {
               cluster_from_json(parse(R"({"format": "syncplan.cluster/v1", "workers": 2,
                 "intra_node": {"bandwidth_Gbps": 1e-300, "latency_us": 5}})"), "c.json");
             }),
             Contains("c.json: field 'intra_node': field 'bandwidth_Gbps': at least 1e-06, got 1"));
  CHECK_THAT(error_of([] {
               cluster_from_json(parse(R"({"format": "syncplan.cluster/v1", "workers": 2,
                 "intra_node": {"bandwidth_Gbps": 10, "latency_us": 1e308}})"), "c.json");
             }),
             Contains("c.json: field 'intra_node': field 'latency_us': at most 1e+07, got 1e+308"));
  CHECK_THAT(error_of([] { cluster_from_json(cluster_document(R"(, "compute_slowdown": [1, 1e308])"), "c.json"); }),
             Contains("c.json: field 'compute_slowdown'[1]: at most 1000, got 1e+308"));
  CHECK_THAT(error_of([] { cluster_from_json(cluster_document(R"(, "compute_slowdown": {"0": 1e-9})"), "c.json"); }),
             Contains("field 'compute_slowdown'['0']: at least 0.001"));
  CHECK_THAT(error_of([] {
               cluster_from_json(cluster_document(R"(, "jitter": {"distribution": "lognormal", "sigma": 1000})"), "c.json");
             }),
             Contains("c.json: field 'jitter': field 'sigma': at most 2, got 1000"));
  // The limits themselves read: 1e-6 and 1e6 Gbit/s, 1e7 us, factors 1e-3 and 1e3, sigma 2.
  const Cluster edge = cluster_from_json(parse(R"({"format": "syncplan.cluster/v1", "workers": 2, "workers_per_node": 1,
    "intra_node": {"bandwidth_Gbps": 1e-6, "latency_us": 1e7}, "inter_node": {"bandwidth_Gbps": 1e6, "latency_us": 0},
    "compute_slowdown": [0.001, 1000], "jitter": {"distribution": "normal", "sigma": 2}})"), "c.json");
  CHECK(edge.intra_node.bandwidth_Gbps == 1e-6);
  CHECK(edge.inter_node.bandwidth_Gbps == 1e6);
  CHECK(edge.compute_slowdown[1] == 1000);
  CHECK(edge.jitter->sigma == 2);
}

TEST_CASE("limits: profile times, worker counts and sizes share the table", "[json]") {
  const auto profile_with = [](const std::string& top, const std::string& layer) {
    return parse(R"({"format": "syncplan.profile/v1", "source": "estimated:hand")" + top +
                 R"(, "layers": [{"name": "fc", "backward_s": 1)" + layer + "}]}");
  };
  CHECK(profile_from_json(profile_with("", R"(, "sync_s": 86400)"), "p.json").layers[0].sync_s == 86400);
  CHECK_THAT(error_of([&] { profile_from_json(profile_with("", R"(, "forward_s": 1e300)"), "p.json"); }),
             Contains("p.json: layer 'fc': field 'forward_s': at most 86400, got 1"));
  CHECK_THAT(error_of([&] { profile_from_json(profile_with(R"(, "workers": 16777217)", ""), "p.json"); }),
             Contains("p.json: field 'workers': at most 16777216, got 16777217"));
  // 2^50 bytes is the limit (1 PiB): 2^50 + 1 is refused.
  CHECK_THAT(error_of([&] { profile_from_json(profile_with("", R"(, "param_bytes": 1125899906842625)"), "p.json"); }),
             Contains("field 'param_bytes': at most 1125899906842624"));
  CHECK_THAT(error_of([] {
               Json document = link_document("alpha_s", "0.0007");
               document["samples"][0]["size_bytes"] = std::int64_t{1} << 51;
               link_from_json(document, "l.json");
             }),
             Contains("l.json: samples[0]: field 'size_bytes': at most 1125899906842624"));
  CHECK(limits::kMaxWorkers == 16777216);
  CHECK(kMaxPeriod == limits::kMaxPeriod);
  CHECK(kLongestCollective_s == limits::kLongestTime_s);
}

// Control characters (the helper's new-user check): a NUL no longer cuts an
// error message (InputError writes it as \x00 and keeps what follows), and the printed texts
// other than layer names (a profile's model and source, a plan's algorithm, a cluster's name) are
// refused as names are: ESC started terminal sequences, and C1's U+009B is ESC [ to a terminal.
TEST_CASE("readers: control characters are escaped in messages and refused in printed texts", "[json]") {
  CHECK(std::string(InputError(std::string("layer 'a\0b' and more", 20)).what()) == "layer 'a\\x00b' and more");
  CHECK(std::string(InputError("x\x1b]0;t\x07y").what()) == "x\\x1B]0;t\\x07y");
  CHECK(std::string(InputError("c1 \xc2\x9b end").what()) == "c1 \\u009B end");
  CHECK(std::string(InputError("caf\xc3\xa9 ok").what()) == "caf\xc3\xa9 ok");  // other UTF-8 unchanged

  const std::string head = R"({"format": "syncplan.profile/v1", "workers": 2, "layers": [{"name": "fc",
    "param_count": 1, "param_bytes": 4, "forward_s": 0.001, "backward_s": 0.001, "update_s": 0, "sync_s": 0.001}], )";
  CHECK_THAT(error_of([&] { profile_from_json(parse(head + R"("model": "m", "source": "x\u001b]0;t\u0007"})"), "p.json"); }),
             Contains("p.json: field 'source': control character U+001B at byte 1"));
  CHECK_THAT(error_of([&] { profile_from_json(parse(head + R"("model": "a\u009bb", "source": "s"})"), "p.json"); }),
             Contains("p.json: field 'model': control character U+009B at byte 1"));
  CHECK(profile_from_json(parse(head + R"("model": "caf\u00e9", "source": "s"})"), "p.json").model == "caf\xc3\xa9");
  CHECK_THAT(error_of([&] { cluster_from_json(cluster_document(R"(, "name": "n\u0000")"), "c.json"); }),
             Contains("c.json: field 'name': control character U+0000 at byte 1"));
  Json plan = plan_document("");
  plan["algorithm"] = "dp\x1b[2J";
  CHECK_THAT(error_of([&] { plan_from_json(plan, "plan.json", one_layer_profile()); }),
             Contains("plan.json: field 'algorithm': control character U+001B at byte 2"));
}
