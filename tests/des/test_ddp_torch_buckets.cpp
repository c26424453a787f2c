// ddp's bucket assignment against PyTorch 1.13's own on tiny-gpt's parameters (docs/des.md "ddp"):
// the first bucket holds 1 MiB whatever --bucket-cap-mb is, as DDP's bucket_size_limits
// [_DEFAULT_FIRST_BUCKET_BYTES, cap] do.
#include "model/model_spec.hpp"
#include "simulator/layer_times.hpp"
#include "simulator/strategies/strategies.hpp"

#include <catch2/catch.hpp>

#include <string>

using namespace syncplan;

namespace {

// All-reduces of one iteration of `program`: buckets with parameter bytes (a bucket of only
// parameterless layers issues none, docs/des.md).
int issued_buckets(const SyncProgram& program, const std::vector<double>& param_bytes) {
  int count = 0;
  for (const SyncOp& op : program.iterations[0]) {
    double bytes = 0;
    for (const int j : op.layers) bytes += param_bytes[j];
    count += bytes > 0 ? 1 : 0;
  }
  return count;
}

}  // namespace

TEST_CASE("ddp's buckets on tiny-gpt match torch 1.13's at caps 0.1, 1 and 25 MiB", "[des][programs][ddp]") {
  // The expected counts are torch's, not ours: on /usr/bin/python3 (torch 1.13.0a0),
  //   params = list(TinyGPT().parameters())             # tools/torch_profile.py's model, fp32, tie deduped
  //   torch.distributed._compute_bucket_assignment_by_size(
  //       list(reversed(params)), [dist._DEFAULT_FIRST_BUCKET_BYTES, int(cap_mb * 2**20)], [False] * 52)
  // (reversed: the gradient-ready order DDP rebuilds its buckets in after the first iteration)
  // gives 10, 4 and 2 buckets at cap_mb 0.1, 1 and 25 (first buckets of 16 parameters, 1,114,112 B).
  // The old rule, a first bucket of min(1 MiB, cap), gave 13 at 0.1 MiB.
  const Model model = expand_model(read_model_spec_file(std::string(SYNCPLAN_DATA_DIR) + "/models/tiny-gpt.json"));
  const Profile profile = model_profile_skeleton(model, Dtype::kFp32, "estimated:test");
  std::vector<double> bytes;  // backprop order, after the tied-layer rule (lm_head's weight is wte's)
  for (auto it = profile.layers.rbegin(); it != profile.layers.rend(); ++it)
    bytes.push_back(static_cast<double>(it->tied_to ? 0 : *it->param_bytes));
  double total = 0;
  for (const double b : bytes) total += b;
  REQUIRE(total == 834304.0 * 4);  // tiny-gpt's 834,304 parameters in fp32 (tools/torch_profile.py)

  constexpr double kMiB = 1024.0 * 1024.0;
  const double first = kDdpFirstBucketMiB * kMiB;
  CHECK(issued_buckets(ddp_program(bytes, 1, 0.1 * kMiB, first), bytes) == 10);
  CHECK(issued_buckets(ddp_program(bytes, 1, 1 * kMiB, first), bytes) == 4);
  CHECK(issued_buckets(ddp_program(bytes, 1, 25 * kMiB, first), bytes) == 2);
  // The old first bucket of min(1 MiB, cap) is not torch's: 13 buckets at 0.1 MiB.
  CHECK(issued_buckets(ddp_program(bytes, 1, 0.1 * kMiB, 0.1 * kMiB), bytes) == 13);
}
