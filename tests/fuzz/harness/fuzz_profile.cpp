// libFuzzer harness of the profile reader (syncplan.profile/v1, SPEC section 3), with the round trip.
#include "core/profile.hpp"
#include "fuzz_support.hpp"
#include "structure_mutator.hpp"

using namespace syncplan;

SYNCPLAN_FUZZ_STRUCTURE_MUTATOR()

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  return fuzz::refused_or_read([&] {
    const Profile profile = profile_from_json(parse_json_text(fuzz::text_of(data, size), "fuzz.json"), "fuzz.json");
    fuzz::expect_round_trip(profile_to_json(profile), [](const std::string& text) {
      return profile_to_json(profile_from_json(parse_json_text(text, "again.json"), "again.json"));
    }, "profile");
  });
}
