// syncplan.cluster/v1 reading (docs/cluster.md): valid documents and every kind of bad input, each
// an InputError whose message names the file and the field.
#include "des_support.hpp"

#include "core/errors.hpp"

#include <string>

namespace syncplan {
namespace {

using Catch::Matchers::Contains;
using des_test::cluster_document;

// The message of the InputError that reading `document` throws ("" and a failure when none).
std::string error_of(const Json& document) {
  try {
    cluster_from_json(document, "bad-cluster.json");
  } catch (const InputError& e) {
    return e.what();
  }
  FAIL_CHECK("no InputError for " << document.dump());
  return "";
}

// 4 workers, 2 per node: both links present, valid.
Json two_nodes() { return cluster_document(4, 2, 80, 1, 8, 10); }

}  // namespace

TEST_CASE("cluster JSON: the documented example parses field by field", "[cluster]") {
  const Json document = parse_json_text(R"({
    "format": "syncplan.cluster/v1",
    "name": "2 sites x 16 GPUs",
    "workers": 32,
    "workers_per_node": 16,
    "intra_node": {"bandwidth_Gbps": 100, "latency_us": 5},
    "inter_node": {"bandwidth_Gbps": 1, "latency_us": 10000},
    "allreduce": "hierarchical",
    "compute_slowdown": {"3": 2.0, "31": 0.5},
    "jitter": {"distribution": "lognormal", "sigma": 0.05, "seed": 7}
  })", "example.json");
  const Cluster cluster = cluster_from_json(document, "example.json");
  REQUIRE(cluster.name == std::optional<std::string>("2 sites x 16 GPUs"));
  REQUIRE(cluster.workers == 32);
  REQUIRE(cluster.workers_per_node == 16);
  REQUIRE(cluster.nodes() == 2);
  // 100 Gbit/s = 100e9 / 8 bytes/s = 1.25e10 bytes/s; 1 Gbit/s = 1.25e8 bytes/s.
  REQUIRE(cluster.intra_node.bandwidth_Bps() == des_test::near(1.25e10));
  REQUIRE(cluster.inter_node.bandwidth_Bps() == des_test::near(1.25e8));
  // 5 us = 5e-6 s; 10000 us = 0.01 s.
  REQUIRE(cluster.intra_node.latency_s() == des_test::near(5e-6));
  REQUIRE(cluster.inter_node.latency_s() == des_test::near(0.01));
  REQUIRE(cluster.allreduce == AllreduceAlgorithm::kHierarchical);
  // Sparse slowdown: workers 3 and 31 named, every other worker at 1.
  REQUIRE(cluster.compute_slowdown.size() == 32);
  REQUIRE(cluster.slowdown(3) == 2.0);
  REQUIRE(cluster.slowdown(31) == 0.5);
  REQUIRE(cluster.slowdown(0) == 1.0);
  REQUIRE(cluster.slowdown(30) == 1.0);
  REQUIRE(cluster.jitter.has_value());
  REQUIRE(cluster.jitter->distribution == JitterSpec::Distribution::kLognormal);
  REQUIRE(cluster.jitter->sigma == 0.05);
  REQUIRE(cluster.jitter->seed == 7u);
  REQUIRE_FALSE(cluster.identical_workers());

  // Written back and read again: the same cluster.
  const Cluster again = cluster_from_json(cluster_to_json(cluster), "again.json");
  REQUIRE(again.workers == 32);
  REQUIRE(again.workers_per_node == 16);
  REQUIRE(again.compute_slowdown == cluster.compute_slowdown);
  REQUIRE(again.jitter->seed == 7u);
  REQUIRE(again.allreduce == AllreduceAlgorithm::kHierarchical);
}

TEST_CASE("cluster JSON: defaults, array slowdown and normal jitter", "[cluster]") {
  SECTION("minimal single node: workers_per_node = workers, ring, inter_node = intra_node") {
    const Cluster cluster = cluster_from_json(
        parse_json_text(R"({"format": "syncplan.cluster/v1", "workers": 4,
                            "intra_node": {"bandwidth_Gbps": 8, "latency_us": 10}})", "min.json"),
        "min.json");
    REQUIRE(cluster.workers_per_node == 4);
    REQUIRE(cluster.nodes() == 1);
    REQUIRE(cluster.allreduce == AllreduceAlgorithm::kRing);
    REQUIRE_FALSE(cluster.name.has_value());
    // 8 Gbit/s = 1e9 bytes/s.
    REQUIRE(cluster.inter_node.bandwidth_Bps() == des_test::near(1e9));
    REQUIRE(cluster.compute_slowdown.empty());
    REQUIRE(cluster.slowdown(2) == 1.0);
    REQUIRE_FALSE(cluster.jitter.has_value());
    REQUIRE(cluster.identical_workers());
  }
  SECTION("array slowdown, one factor per worker") {
    Json document = cluster_document(2, 2, 8, 10);
    document["compute_slowdown"] = Json::array({1.0, 1.5});
    const Cluster cluster = des_test::cluster_of(document);
    REQUIRE(cluster.slowdown(0) == 1.0);
    REQUIRE(cluster.slowdown(1) == 1.5);
    REQUIRE_FALSE(cluster.identical_workers());
  }
  SECTION("the same slowdown for everyone is still identical workers") {
    Json document = cluster_document(2, 2, 8, 10);
    document["compute_slowdown"] = Json::array({2.0, 2.0});
    REQUIRE(des_test::cluster_of(document).identical_workers());
  }
  SECTION("normal jitter, default seed 1; sigma 0 is no randomness") {
    Json document = cluster_document(2, 2, 8, 10);
    document["jitter"] = Json{{"distribution", "normal"}, {"sigma", 0.1}};
    Cluster cluster = des_test::cluster_of(document);
    REQUIRE(cluster.jitter->distribution == JitterSpec::Distribution::kNormal);
    REQUIRE(cluster.jitter->sigma == 0.1);
    REQUIRE(cluster.jitter->seed == 1u);
    REQUIRE_FALSE(cluster.identical_workers());
    document["jitter"]["sigma"] = 0;
    REQUIRE(des_test::cluster_of(document).identical_workers());
  }
  SECTION("measured jitter: drawn from the profile's spreads, correlation 0 by default") {
    Json document = cluster_document(2, 2, 8, 10);
    document["jitter"] = Json{{"distribution", "measured"}};
    Cluster cluster = des_test::cluster_of(document);
    REQUIRE(cluster.jitter->distribution == JitterSpec::Distribution::kMeasured);
    REQUIRE(cluster.jitter->sigma == 0);
    REQUIRE(cluster.jitter->correlation == 0);
    REQUIRE(cluster.jitter->seed == 1u);
    // Every worker draws its own times: none stands for another.
    REQUIRE_FALSE(cluster.identical_workers());
    document["jitter"] = Json{{"distribution", "measured"}, {"correlation", 0.25}, {"seed", 5}};
    cluster = des_test::cluster_of(document);
    REQUIRE(cluster.jitter->correlation == 0.25);
    const Json written = cluster_to_json(cluster);
    REQUIRE(written["jitter"] == Json{{"distribution", "measured"}, {"correlation", 0.25}, {"seed", 5}});
    REQUIRE(cluster_to_json(des_test::cluster_of(written)) == written);
  }
  SECTION("a whole number written as 4.0 is accepted") {
    Json document = two_nodes();
    document["workers"] = 4.0;
    REQUIRE(des_test::cluster_of(document).workers == 4);
  }
}

TEST_CASE("cluster JSON: a file that names no algorithm gets the caller's default", "[cluster]") {
  // docs/cluster.md: "ring", or "auto" for plan --model and whatif --model; a named one is kept.
  Json document = two_nodes();
  document.erase("allreduce");
  REQUIRE(cluster_from_json(document, "c.json").allreduce == AllreduceAlgorithm::kRing);
  REQUIRE(cluster_from_json(document, "c.json", AllreduceAlgorithm::kAuto).allreduce == AllreduceAlgorithm::kAuto);
  document["allreduce"] = "ring";
  REQUIRE(cluster_from_json(document, "c.json", AllreduceAlgorithm::kAuto).allreduce == AllreduceAlgorithm::kRing);
  document["allreduce"] = "auto";
  const Cluster automatic = cluster_from_json(document, "c.json");
  REQUIRE(automatic.allreduce == AllreduceAlgorithm::kAuto);
  REQUIRE(cluster_to_json(automatic)["allreduce"] == "auto");
}

TEST_CASE("cluster JSON: each bad input throws InputError naming the file and the field", "[cluster]") {
  Json document = two_nodes();
  std::vector<std::string> expected;  // substrings of the message besides the file name

  SECTION("unknown top-level key") {
    document["comment"] = "hello";
    expected = {"unknown key 'comment'"};
  }
  SECTION("unknown key inside intra_node") {
    document["intra_node"]["mtu"] = 9000;
    expected = {"'intra_node'", "unknown key 'mtu'"};
  }
  SECTION("unknown key inside inter_node") {
    document["inter_node"]["bandwidth_gbps"] = 8;
    expected = {"'inter_node'", "unknown key 'bandwidth_gbps'"};
  }
  SECTION("unknown key inside jitter") {
    document["jitter"] = Json{{"distribution", "normal"}, {"sigma", 0.1}, {"mean", 1}};
    expected = {"'jitter'", "unknown key 'mean'"};
  }
  SECTION("0 workers") {
    document["workers"] = 0;
    document["workers_per_node"] = 1;
    expected = {"'workers'", ">= 1"};
  }
  SECTION("workers not a whole number") {
    document["workers"] = 2.5;
    expected = {"'workers'"};
  }
  SECTION("more workers than the documented maximum of 2^24 = 16,777,216") {
    document["workers"] = 16777217;
    document["workers_per_node"] = 1;
    expected = {"'workers'", "16777216"};
  }
  SECTION("workers not divisible by workers_per_node") {
    document["workers"] = 6;
    document["workers_per_node"] = 4;
    expected = {"'workers_per_node'"};
  }
  SECTION("workers_per_node larger than workers") {
    document["workers_per_node"] = 8;
    expected = {"'workers_per_node'"};
  }
  SECTION("workers_per_node 0") {
    document["workers_per_node"] = 0;
    expected = {"'workers_per_node'"};
  }
  SECTION("negative bandwidth") {
    document["inter_node"]["bandwidth_Gbps"] = -1;
    expected = {"'inter_node'", "'bandwidth_Gbps'"};
  }
  SECTION("zero bandwidth") {
    document["intra_node"]["bandwidth_Gbps"] = 0;
    expected = {"'intra_node'", "'bandwidth_Gbps'", "> 0"};
  }
  SECTION("negative latency") {
    document["intra_node"]["latency_us"] = -5;
    expected = {"'intra_node'", "'latency_us'"};
  }
  SECTION("missing latency") {
    document["inter_node"].erase("latency_us");
    expected = {"'inter_node'", "'latency_us'"};
  }
  SECTION("unknown allreduce") {
    document["allreduce"] = "butterfly";
    expected = {"'allreduce'", "butterfly", "\"auto\""};
  }
  SECTION("unknown jitter distribution") {
    document["jitter"] = Json{{"distribution", "uniform"}, {"sigma", 0.1}};
    expected = {"'distribution'", "uniform"};
  }
  SECTION("negative sigma") {
    document["jitter"] = Json{{"distribution", "lognormal"}, {"sigma", -0.1}};
    expected = {"'jitter'", "'sigma'"};
  }
  SECTION("sigma with the measured jitter") {
    document["jitter"] = Json{{"distribution", "measured"}, {"sigma", 0.1}};
    expected = {"'jitter'", "'sigma'", "not used with distribution \"measured\""};
  }
  SECTION("correlation without the measured jitter") {
    document["jitter"] = Json{{"distribution", "lognormal"}, {"sigma", 0.1}, {"correlation", 0.5}};
    expected = {"'jitter'", "'correlation'", "only with distribution \"measured\""};
  }
  SECTION("correlation above 1") {
    document["jitter"] = Json{{"distribution", "measured"}, {"correlation", 1.5}};
    expected = {"'jitter'", "'correlation'", "at most 1"};
  }
  SECTION("negative seed") {
    document["jitter"] = Json{{"distribution", "lognormal"}, {"sigma", 0.1}, {"seed", -1}};
    expected = {"'seed'"};
  }
  SECTION("slowdown list of the wrong length") {
    document["compute_slowdown"] = Json::array({1.0, 2.0, 1.0});
    expected = {"'compute_slowdown'", "expected 4"};
  }
  SECTION("slowdown factor 0 in a list") {
    document["compute_slowdown"] = Json::array({1.0, 0.0, 1.0, 1.0});
    expected = {"'compute_slowdown'", "[1]", "> 0"};
  }
  SECTION("negative slowdown factor in a list") {
    document["compute_slowdown"] = Json::array({1.0, 1.0, -2.0, 1.0});
    expected = {"'compute_slowdown'", "[2]"};
  }
  SECTION("slowdown factor 0 in the sparse form") {
    document["compute_slowdown"] = Json{{"1", 0}};
    expected = {"'compute_slowdown'", "'1'", "> 0"};
  }
  SECTION("sparse slowdown with a key that is not an index") {
    document["compute_slowdown"] = Json{{"first", 2.0}};
    expected = {"'compute_slowdown'", "'first'"};
  }
  SECTION("sparse slowdown with a negative key") {
    document["compute_slowdown"] = Json{{"-1", 2.0}};
    expected = {"'compute_slowdown'", "'-1'"};
  }
  SECTION("sparse slowdown with an index out of range (4 workers: 0..3)") {
    document["compute_slowdown"] = Json{{"4", 2.0}};
    expected = {"'compute_slowdown'", "'4'", "0..3"};
  }
  SECTION("sparse slowdown with a huge index") {
    document["compute_slowdown"] = Json{{"99999999999", 2.0}};
    expected = {"'compute_slowdown'", "'99999999999'"};
  }
  SECTION("slowdown neither a list nor an object") {
    document["compute_slowdown"] = 2.0;
    expected = {"'compute_slowdown'"};
  }
  SECTION("missing inter_node with several nodes") {
    document.erase("inter_node");
    expected = {"'inter_node'", "2 nodes"};
  }
  SECTION("missing intra_node") {
    document.erase("intra_node");
    expected = {"'intra_node'"};
  }
  SECTION("wrong format string") {
    document["format"] = "syncplan.cluster/v2";
    expected = {"'format'", "syncplan.cluster/v2"};
  }
  SECTION("a profile passed as a cluster") {
    document["format"] = "syncplan.profile/v1";
    expected = {"'format'"};
  }
  SECTION("not an object") {
    document = Json::array({1, 2});
    expected = {"expected a JSON object"};
  }

  const std::string message = error_of(document);
  INFO("message: " << message);
  CHECK_THAT(message, Contains("bad-cluster.json"));
  for (const std::string& text : expected) CHECK_THAT(message, Contains(text));
  // One line (SPEC section 2).
  CHECK(message.find('\n') == std::string::npos);
}

TEST_CASE("cluster JSON: read_cluster_file names the path of a missing file", "[cluster]") {
  REQUIRE_THROWS_WITH(read_cluster_file("no-such-folder/no-such-cluster.json"),
                      Contains("no-such-cluster.json"));
  REQUIRE_THROWS_AS(read_cluster_file("no-such-folder/no-such-cluster.json"), InputError);
}

}  // namespace syncplan
