// Structure-aware mutation for the harnesses (docs/fuzzing.md, "Structure-aware mutation"; issue
// 24): libFuzzer's byte mutations rarely turn a well-formed file into a well-formed file with an
// extreme number in one field, a layer repeated, a key dropped or a name that collides with
// another, which is where the readers' checks broke. This mutator parses each NUL-separated part of
// an input that is JSON and edits the document (numbers to the extremes of every numeric type,
// strings to other strings of the document, arrays and objects reshaped), or, for text such as
// nccl-tests logs, replaces one number token by an extreme one; half of the calls are libFuzzer's
// own byte mutations, so the byte-level search goes on. Enabled by SYNCPLAN_FUZZ_STRUCTURE.
//
// A harness opts in with SYNCPLAN_FUZZ_STRUCTURE_MUTATOR() at file scope (one definition of
// LLVMFuzzerCustomMutator per executable). The mutator is compiled once (structure_mutator.cpp):
// a copy per harness, nlohmann/json's templates under the sanitizers, took about 17 s each.
#pragma once

#include <cstddef>
#include <cstdint>

namespace syncplan::fuzz {

/// The mutation: `data` holds `size` bytes of at most `max_size`; returns the new size. Parts are
/// separated by NUL bytes (two-file inputs); one part is edited.
/// Only with SYNCPLAN_FUZZ_STRUCTURE set in the environment (tests/fuzz/run.sh --structure): the
/// short runs of tools/test.sh keep libFuzzer's byte mutations alone, so that a landing is not
/// failed by a finding of a search it did not ask for.
std::size_t structure_mutate(std::uint8_t* data, std::size_t size, std::size_t max_size, unsigned seed);

}  // namespace syncplan::fuzz

/// Makes structure_mutate the harness's libFuzzer custom mutator.
#define SYNCPLAN_FUZZ_STRUCTURE_MUTATOR()                                                                      \
  extern "C" std::size_t LLVMFuzzerCustomMutator(std::uint8_t* data, std::size_t size, std::size_t max_size, \
                                                 unsigned int seed) {                                          \
    return syncplan::fuzz::structure_mutate(data, size, max_size, seed);                                       \
  }
