// The run fingerprint (runtime/fingerprint.hpp): FNV-1a 64 against the published test vectors,
// which changes move which part, and the mismatch message. The collective check runs under
// mpirun in test_arrivals_cases.sh (fingerprint case).
#include "runtime/fingerprint.hpp"

#include <catch2/catch.hpp>

#include <cstring>

using namespace syncplan;

namespace {

Plan sample_plan() {
  Plan plan;
  plan.model = "tiny-gpt";
  plan.period = 2;
  plan.algorithm = "dp";
  plan.layers = {{"transformer.wte", {1}}, {"lm_head", {0, 1}}};
  return plan;
}

ModelSpec sample_spec() {
  ModelSpec spec;
  spec.name = "tiny-gpt";
  spec.vocab_size = 256;
  spec.hidden_size = 128;
  spec.norm_eps = 1e-5;
  return spec;
}

}  // namespace

TEST_CASE("FNV-1a 64 gives the reference vectors", "[fingerprint]") {
  // From the FNV authors' test suite (draft-eastlake-fnv, "test_fnv" vectors for FNV-1a 64).
  CHECK(fnv1a64("") == 0xcbf29ce484222325ull);
  CHECK(fnv1a64("a") == 0xaf63dc4c8601ec8cull);
  CHECK(fnv1a64("foobar") == 0x85944171f73967e8ull);
  // In pieces: the hash of "foo" continued with "bar" is the hash of "foobar".
  CHECK(fnv1a64("bar", fnv1a64("foo")) == fnv1a64("foobar"));
  CHECK(hex64(0xcbf29ce484222325ull) == "0xcbf29ce484222325");
  CHECK(hex64(1) == "0x0000000000000001");
}

TEST_CASE("fingerprint: what the executor runs changes the plan part, nothing else does", "[fingerprint]") {
  const Plan plan = sample_plan();
  Plan renamed = plan;  // algorithm, model name and prediction do not change what runs
  renamed.algorithm = "dreamddp";
  renamed.model = "other";
  renamed.predicted = PlanPrediction{1.0, {0.5, 0.5}, {0, 0}, std::nullopt, ""};
  CHECK(schedule_identity(renamed) == schedule_identity(plan));
  Plan moved = plan;
  moved.layers[0].sync_iterations = {0};
  CHECK(schedule_identity(moved) != schedule_identity(plan));
  Plan bucketed = plan;
  bucketed.buckets = PlanBuckets{2.5e-5, {{{"lm_head"}}, {{"lm_head", "transformer.wte"}}}};
  CHECK(schedule_identity(bucketed) != schedule_identity(plan));
  CHECK(schedule_identity("wfbp", 1) == "strategy wfbp period 1");
  CHECK(schedule_identity("wfbp", 1) != schedule_identity("wfbp", 2));

  const ModelSpec spec = sample_spec();
  const RunFingerprint base = fingerprint_run(schedule_identity(plan), spec, 2, 32, 2);
  CHECK(base == fingerprint_run(schedule_identity(renamed), spec, 2, 32, 2));
  const RunFingerprint other_plan = fingerprint_run(schedule_identity(moved), spec, 2, 32, 2);
  CHECK(other_plan.schedule != base.schedule);
  CHECK(other_plan.model == base.model);
  CHECK(other_plan.workload == base.workload);
  ModelSpec wider = spec;
  wider.hidden_size = 256;
  CHECK(fingerprint_run(schedule_identity(plan), wider, 2, 32, 2).model != base.model);
  ModelSpec noted = spec;
  noted.source = "a comment";  // free text: not part of the model
  CHECK(fingerprint_run(schedule_identity(plan), noted, 2, 32, 2) == base);
  ModelSpec eps = spec;
  eps.norm_eps = 1e-5 * (1 + 1e-15);  // a difference only the 17-digit text shows
  CHECK(fingerprint_run(schedule_identity(plan), eps, 2, 32, 2).model != base.model);
  CHECK(fingerprint_run(schedule_identity(plan), spec, 4, 32, 2).workload != base.workload);
  CHECK(fingerprint_run(schedule_identity(plan), spec, 2, 16, 2).workload != base.workload);
  CHECK(fingerprint_run(schedule_identity(plan), spec, 2, 32, 4).workload != base.workload);
  // The workload part is FNV-1a 64 of its text, computed here the same documented way.
  CHECK(base.workload == fnv1a64("batch 2 seq 32 ranks 2"));
}

TEST_CASE("fingerprint: the combined hash is FNV-1a 64 over the parts' little-endian bytes", "[fingerprint]") {
  const RunFingerprint parts{0x0102030405060708ull, 0x1112131415161718ull, 0x2122232425262728ull};
  // Written out by hand: each part's bytes from the lowest.
  const unsigned char bytes[24] = {8, 7, 6, 5, 4, 3, 2, 1, 0x18, 0x17, 0x16, 0x15, 0x14, 0x13, 0x12, 0x11,
                                   0x28, 0x27, 0x26, 0x25, 0x24, 0x23, 0x22, 0x21};
  CHECK(parts.combined() == fnv1a64(std::as_bytes(std::span<const unsigned char>(bytes))));
  RunFingerprint swapped = parts;
  std::swap(swapped.schedule, swapped.model);
  CHECK(swapped.combined() != parts.combined());
}

TEST_CASE("fingerprint: the mismatch message names each differing rank and part", "[fingerprint]") {
  const RunFingerprint root{1, 2, 3};
  const std::pair<int, RunFingerprint> one[] = {{1, {9, 2, 3}}};
  CHECK(run_mismatch_message(root, one, 0) == "rank 1's plan differs from rank 0's");
  const std::pair<int, RunFingerprint> two[] = {{1, {9, 2, 3}}, {3, {1, 9, 9}}};
  CHECK(run_mismatch_message(root, two, 0) ==
        "rank 1's plan differs from rank 0's; rank 3's model and batch/sequence/ranks differ from rank 0's");
  const std::pair<int, RunFingerprint> all[] = {{2, {9, 9, 9}}};
  CHECK(run_mismatch_message(root, all, 5) ==
        "rank 2's plan, model and batch/sequence/ranks differ from rank 0's; and 5 more ranks differ");
  CHECK(differing_parts(root, root).empty());
}
