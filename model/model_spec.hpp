// Model specs (syncplan.model/v1, docs/formats.md): reading them strictly and expanding them into
// the per-layer list with Hugging Face's module names (docs/models.md).
#pragma once

#include "core/json_io.hpp"
#include "core/profile.hpp"
#include "model/model_layers.hpp"

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace syncplan {

inline constexpr const char* kModelSpecFormat = "syncplan.model/v1";

/// The model families a spec can describe; each fixes the block structure (docs/models.md section 1).
enum class Architecture {
  kGpt2,   ///< GPT2LMHeadModel: learned positions, LayerNorm, Conv1D with biases, GELU MLP, dropout
  kLlama,  ///< LlamaForCausalLM: rotary positions, RMSNorm, bias-free Linear, SwiGLU MLP
};

/// "gpt2" or "llama".
const char* architecture_name(Architecture architecture);

/// A model's configuration, in Hugging Face's config.json terms (docs/formats.md, "Model spec").
/// Sizes are counts; every one is >= 1 after reading.
struct ModelSpec {
  std::string name;                          ///< e.g. "gpt2"; becomes the profile's `model`
  Architecture architecture = Architecture::kGpt2;
  std::optional<std::string> source;         ///< where the numbers come from (free text)
  std::int64_t vocab_size = 0;               ///< rows of the token embedding
  std::int64_t max_position_embeddings = 0;  ///< longest sequence (GPT-2's n_positions)
  std::int64_t hidden_size = 0;              ///< model width d (GPT-2's n_embd)
  std::int64_t num_hidden_layers = 0;        ///< transformer blocks (GPT-2's n_layer)
  std::int64_t num_attention_heads = 0;      ///< query heads; divides hidden_size
  std::int64_t num_key_value_heads = 0;      ///< key/value heads (Llama; GPT-2: = num_attention_heads)
  std::int64_t intermediate_size = 0;        ///< MLP width (GPT-2's n_inner, 4 d when null there)
  bool tie_word_embeddings = false;          ///< lm_head shares the token embedding's weight
  double norm_eps = 0;                       ///< epsilon of LayerNorm / RMSNorm (> 0)
  double rope_theta = 0;                     ///< Llama: rotary base (> 0); GPT-2: unused (0)
  double embd_pdrop = 0;                     ///< GPT-2: dropout after the embeddings, in [0, 1)
  double attn_pdrop = 0;                     ///< GPT-2: dropout on attention probabilities, in [0, 1)
  double resid_pdrop = 0;                    ///< GPT-2: dropout on each block's two residual branches, in [0, 1)
  /// Layers whose parameters are not trained (key "frozen", optional, default none): shell-style
  /// patterns (POSIX fnmatch, no flags: `*` any run of characters dots included, `?` one, `[...]`
  /// a set) over the expanded layer names, e.g. "transformer.wte" or "transformer.h.*.attn.*"
  /// (docs/models.md section 2); each must match at least one layer.
  std::vector<std::string> frozen;

  /// hidden_size / num_attention_heads.
  std::int64_t head_dim() const { return hidden_size / num_attention_heads; }
};

/// Parses a syncplan.model/v1 document. Unknown keys (including another architecture's),
/// missing fields, wrong types, sizes < 1 or above the limits of docs/formats.md, heads that do
/// not divide hidden_size, key/value heads that do not divide the heads, dropout outside [0, 1),
/// eps/theta <= 0, and a `frozen` pattern that is empty or matches no layer throw InputError
/// naming `origin` and the field (and the pattern).
ModelSpec model_spec_from_json(const Json& document, const std::string& origin);

/// read_json_file + model_spec_from_json.
ModelSpec read_model_spec_file(const std::string& path);

/// The spec file `model` means: a path when it names an existing file or contains '/' or ends in
/// ".json", else `models_dir`/MODEL.json. Throws InputError "--model 'X': ..." listing the known
/// names when neither exists.
std::filesystem::path resolve_model_spec(const std::string& model, const std::filesystem::path& models_dir);

/// Names of the specs in `models_dir` (file names without ".json"), sorted.
std::vector<std::string> known_model_names(const std::filesystem::path& models_dir);

/// A model expanded into its leaf modules.
struct Model {
  std::string name;
  Architecture architecture = Architecture::kGpt2;
  std::int64_t max_position_embeddings = 0;  ///< longest sequence the model accepts
  std::int64_t num_hidden_layers = 0;        ///< transformer blocks (GPT-2's residual-projection init scales by it)
  std::vector<ModelLayer> layers;            ///< forward call order (docs/models.md section 2)

  /// Sum of the layers' param_count(): every parameter once (tied ones with their owner).
  std::int64_t param_count() const;
};

/// The layer list of `spec`, with Hugging Face's leaf-module names, in forward call order (the
/// order the forward pass runs them; its reverse is the order their gradients become ready);
/// computations that belong to no module are charged to the module that runs just before them
/// (docs/models.md section 2). A layer matched by a `frozen` pattern is frozen, and so is the
/// rest of its tie group (shared parameters are trained or frozen together).
Model expand_model(const ModelSpec& spec);

/// Checks that `workload` fits the model: seq <= max_position_embeddings. Throws InputError
/// "--seq N: longer than max_position_embeddings M of model NAME" otherwise.
void check_workload(const Model& model, const Workload& workload);

/// A profile with the model's layers, names, param_count, param_bytes (param_count x dtype size),
/// tied_to and frozen, and no times: the common part of every profiling backend. `source` is set as given.
Profile model_profile_skeleton(const Model& model, Dtype dtype, const std::string& source);

}  // namespace syncplan
