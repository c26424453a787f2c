// The random inputs of a one-op graph (model/op_graph.hpp), shared by the CPU kernel tests and
// the CUDA-versus-CPU test so that both backends compute on the same numbers.
#pragma once

#include "core/counter_random.hpp"
#include "model/op_graph.hpp"

#include <cstdint>
#include <vector>

namespace syncplan::test {

/// A tensor of an op graph and the values it starts with.
struct RandomTensor {
  TensorRef ref;
  std::vector<float> values;
};

/// What nothing in the op's two passes computes: every input's value and every output's arriving
/// gradient, each uniform in [-1, 1) (counter_signed_uniform of stream splitmix64(seed + i) for
/// the i-th tensor of that list, inputs first). Parameter gradients are not in it: the backward
/// adds into them, so they start at zero (zero_gradients).
inline std::vector<RandomTensor> random_op_inputs(const OpGraph& op, std::uint64_t seed) {
  std::vector<TensorRef> refs;
  for (const OpGraphTensor& input : op.inputs) refs.push_back(input.value);
  for (const OpGraphTensor& output : op.outputs)
    if (output.grad.elements > 0) refs.push_back(output.grad);
  std::vector<RandomTensor> tensors;
  for (std::size_t i = 0; i < refs.size(); ++i) {
    RandomTensor& tensor = tensors.emplace_back(RandomTensor{refs[i], {}});
    const std::uint64_t stream = splitmix64(seed + i);
    for (std::int64_t e = 0; e < refs[i].elements; ++e)
      tensor.values.push_back(counter_signed_uniform(stream, static_cast<std::uint64_t>(e)));
  }
  return tensors;
}

}  // namespace syncplan::test
