// libFuzzer harness of the nccl-tests importer (all_reduce_perf's text table and -J JSON file;
// one reader, one corpus per form): the link fit it gives must read back (round trip).
#include "profiler/import_nccl_tests.hpp"
#include "fuzz_support.hpp"
#include "structure_mutator.hpp"

using namespace syncplan;

SYNCPLAN_FUZZ_STRUCTURE_MUTATOR()

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const fuzz::TemporaryFile log("nccl-tests.log", fuzz::text_of(data, size));
  NcclTestsImportOptions options;
  if (size % 3 == 1) options.workers = 8;  // also with --workers, which must agree with the log
  options.in_place = size % 5 == 0;
  return fuzz::refused_or_read([&] {
    const NcclTestsImport imported = import_nccl_tests(log.path(), options);
    fuzz::expect_round_trip(link_to_json(imported.link), [](const std::string& text) {
      return link_to_json(link_from_json(parse_json_text(text, "again.json"), "again.json"));
    }, "imported link fit");
  });
}
