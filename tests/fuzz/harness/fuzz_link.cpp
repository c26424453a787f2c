// libFuzzer harness of the link-fit reader (syncplan.link/v1, SPEC section 7), with the round trip.
#include "core/link.hpp"
#include "fuzz_support.hpp"
#include "structure_mutator.hpp"

using namespace syncplan;

SYNCPLAN_FUZZ_STRUCTURE_MUTATOR()

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  return fuzz::refused_or_read([&] {
    const LinkFit link = link_from_json(parse_json_text(fuzz::text_of(data, size), "fuzz.json"), "fuzz.json");
    fuzz::expect_round_trip(link_to_json(link), [](const std::string& text) {
      return link_to_json(link_from_json(parse_json_text(text, "again.json"), "again.json"));
    }, "link fit");
  });
}
