// libFuzzer harness of DreamDDP's time-file importer (`import dreamddp`): the input is the bp file,
// a NUL byte and the comm file; the profile it gives must read back (round trip).
#include "profiler/import_dreamddp.hpp"
#include "fuzz_support.hpp"
#include "structure_mutator.hpp"

using namespace syncplan;

SYNCPLAN_FUZZ_STRUCTURE_MUTATOR()

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  // Not a structured binding: clang 14 cannot capture one in a lambda.
  const auto parts = fuzz::split_at_nul(fuzz::text_of(data, size));
  const std::string& bp_text = parts.first;
  const std::string& comm_text = parts.second;
  const fuzz::TemporaryFile bp("bp.json", bp_text);
  const fuzz::TemporaryFile comm("comm.json", comm_text);
  DreamddpImportOptions options;
  options.nonfinite = size % 2 == 0 ? NonfinitePolicy::kError : NonfinitePolicy::kZero;  // both policies
  return fuzz::refused_or_read([&] {
    const Profile profile = import_dreamddp(bp.path(), comm.path(), options);
    fuzz::expect_round_trip(profile_to_json(profile), [](const std::string& text) {
      return profile_to_json(profile_from_json(parse_json_text(text, "again.json"), "again.json"));
    }, "imported profile");
  });
}
