// libFuzzer harness of the cluster reader (docs/cluster.md), with the round trip.
#include "core/cluster.hpp"
#include "fuzz_support.hpp"
#include "structure_mutator.hpp"

using namespace syncplan;

SYNCPLAN_FUZZ_STRUCTURE_MUTATOR()

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  return fuzz::refused_or_read([&] {
    const Cluster cluster = cluster_from_json(parse_json_text(fuzz::text_of(data, size), "fuzz.json"), "fuzz.json");
    fuzz::expect_round_trip(cluster_to_json(cluster), [](const std::string& text) {
      return cluster_to_json(cluster_from_json(parse_json_text(text, "again.json"), "again.json"));
    }, "cluster");
  });
}
