// Shared fixtures of the layer-graph tests: the shipped and small test models, a fixed batch of
// byte tokens, and the loss evaluated by a forward pass alone.
#pragma once

#include "model/cpu/cpu_graph.hpp"
#include "model/model_spec.hpp"

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace syncplan::test {

/// A shipped spec of data/models, expanded.
inline Model shipped_model(const std::string& name) {
  return expand_model(read_model_spec_file((std::filesystem::path(SYNCPLAN_DATA_DIR) / "models" / (name + ".json")).string()));
}

/// A small Llama: vocabulary 64, width 32, 2 blocks of 4 query heads sharing 2 key/value heads
/// (grouped-query attention), SwiGLU width 48, untied lm_head.
inline Model small_llama() {
  const Json spec = Json::parse(R"({"format": "syncplan.model/v1", "name": "small-llama", "architecture": "llama",
    "vocab_size": 64, "max_position_embeddings": 32, "hidden_size": 32, "num_hidden_layers": 2,
    "num_attention_heads": 4, "num_key_value_heads": 2, "intermediate_size": 48, "tie_word_embeddings": false,
    "norm_eps": 1e-5, "rope_theta": 10000.0})");
  return expand_model(model_spec_from_json(spec, "small-llama"));
}

/// A small GPT-2 with every dropout at 0.1 and an untied lm_head (the dropout and untied paths).
inline Model small_gpt2_dropout() {
  const Json spec = Json::parse(R"({"format": "syncplan.model/v1", "name": "small-gpt2-dropout", "architecture": "gpt2",
    "vocab_size": 64, "max_position_embeddings": 32, "hidden_size": 32, "num_hidden_layers": 2,
    "num_attention_heads": 4, "intermediate_size": 64, "tie_word_embeddings": false, "norm_eps": 1e-5,
    "embd_pdrop": 0.1, "attn_pdrop": 0.1, "resid_pdrop": 0.1})");
  return expand_model(model_spec_from_json(spec, "small-gpt2-dropout"));
}

/// A fixed batch: batch x seq bytes of an English text (ids below 128), each target the next byte,
/// ids folded into [0, vocab) for smaller vocabularies.
struct Batch {
  std::vector<std::int64_t> ids, targets;
};
inline Batch text_batch(std::int64_t batch, std::int64_t seq, std::int64_t vocab) {
  const std::string text =
      "It was the best of times, it was the worst of times, it was the age of wisdom, it was the age of "
      "foolishness, it was the epoch of belief, it was the epoch of incredulity, it was the season of Light, "
      "it was the season of Darkness, it was the spring of hope, it was the winter of despair.";
  Batch result;
  for (std::int64_t b = 0; b < batch; ++b)
    for (std::int64_t s = 0; s < seq; ++s) {
      const std::size_t at = static_cast<std::size_t>((b * seq + s) % static_cast<std::int64_t>(text.size() - 1));
      result.ids.push_back(static_cast<unsigned char>(text[at]) % vocab);
      result.targets.push_back(static_cast<unsigned char>(text[at + 1]) % vocab);
    }
  return result;
}

/// The loss of the current parameters and batch: a forward pass through every layer.
inline double forward_loss(cpu::CpuGraph& graph) {
  for (std::size_t i = 0; i < graph.layer_count(); ++i) graph.forward(i);
  return graph.loss();
}

}  // namespace syncplan::test
