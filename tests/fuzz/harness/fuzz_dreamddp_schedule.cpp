// libFuzzer harness of DreamDDP's schedule importer (`import dreamddp-schedule`): the input is a
// profile, a NUL byte and the schedule file; the plan it gives must read back (round trip).
#include "profiler/import_dreamddp.hpp"
#include "fuzz_support.hpp"
#include "structure_mutator.hpp"

using namespace syncplan;

SYNCPLAN_FUZZ_STRUCTURE_MUTATOR()

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  // Not a structured binding: clang 14 cannot capture one in a lambda.
  const auto parts = fuzz::split_at_nul(fuzz::text_of(data, size));
  const std::string& profile_text = parts.first;
  const std::string& schedule_text = parts.second;
  const fuzz::TemporaryFile schedule("schedule.json", schedule_text);
  return fuzz::refused_or_read([&] {
    const Profile profile = profile_from_json(parse_json_text(profile_text, "profile.json"), "profile.json");
    const Plan plan = import_dreamddp_schedule(schedule.path(), profile);
    fuzz::expect_round_trip(plan_to_json(plan), [&](const std::string& text) {
      return plan_to_json(plan_from_json(parse_json_text(text, "again.json"), "again.json", profile));
    }, "imported plan");
  });
}
