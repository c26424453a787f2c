// syncplan.model/v1 reading and the expansion of GPT-2 and Llama specs into Hugging Face's leaf
// modules (docs/models.md sections 1 and 2).
#include "model/model_spec.hpp"
#include "core/field_error.hpp"

#include "core/errors.hpp"

#include <fnmatch.h>

#include <algorithm>
#include <unordered_map>
#include <cmath>

namespace syncplan {

namespace {

// Limits that keep every count within int64 and every FLOP count finite (docs/formats.md).
constexpr std::int64_t kMaxVocab = std::int64_t{1} << 24;
constexpr std::int64_t kMaxPositions = std::int64_t{1} << 24;
constexpr std::int64_t kMaxHidden = std::int64_t{1} << 17;
constexpr std::int64_t kMaxLayers = std::int64_t{1} << 12;
constexpr std::int64_t kMaxIntermediate = std::int64_t{1} << 20;

double required_number(ObjectReader& reader, const std::string& key) {
  return read_nonnegative_number(reader.required(key), reader.where() + ": field '" + key + "'");
}

double required_positive(ObjectReader& reader, const std::string& key) {
  const double value = required_number(reader, key);
  if (value <= 0) throw InputError(reader.where() + ": field '" + key + "': must be > 0, got " + format_shortest(value));
  return value;
}

double required_probability(ObjectReader& reader, const std::string& key) {
  const double value = required_number(reader, key);
  if (value >= 1)
    throw InputError(reader.where() + ": field '" + key + "': a dropout probability must be in [0, 1), got " +
                     format_shortest(value));
  return value;
}

bool required_bool(ObjectReader& reader, const std::string& key) {
  const Json& value = reader.required(key);
  if (!value.is_boolean())
    throw InputError(reader.where() + ": field '" + key + "': expected true or false, got " + json_type_name(value));
  return value.get<bool>();
}

// The optional "frozen" list: non-empty strings (patterns; checked against the layers later).
std::vector<std::string> optional_patterns(ObjectReader& reader, const std::string& key) {
  const Json* value = reader.optional(key, Null::kRejected);
  if (!value) return {};
  const std::string where = reader.where() + ": field '" + key + "'";
  if (!value->is_array()) throw InputError(where + ": expected an array of layer-name patterns, got " + json_type_name(*value));
  std::vector<std::string> patterns;
  for (std::size_t i = 0; i < value->size(); ++i) {
    const Json& item = (*value)[i];
    const std::string at = where + "[" + std::to_string(i) + "]";
    if (!item.is_string() || is_nonfinite_token(item)) throw InputError(at + ": expected a string, got " + json_type_name(item));
    if (item.get_ref<const std::string&>().empty()) throw InputError(at + ": empty pattern");
    if (item.get_ref<const std::string&>().size() > kLongestLayerName)
      throw InputError(at + ": " + std::to_string(item.get_ref<const std::string&>().size()) +
                       " characters, at most " + std::to_string(kLongestLayerName));
    patterns.push_back(item.get<std::string>());
  }
  return patterns;
}

bool matches(const std::string& pattern, const std::string& name) {
  return fnmatch(pattern.c_str(), name.c_str(), 0) == 0;
}

}  // namespace

const char* architecture_name(Architecture architecture) {
  return architecture == Architecture::kLlama ? "llama" : "gpt2";
}

ModelSpec model_spec_from_json(const Json& document, const std::string& origin) {
  ObjectReader reader(document, origin);
  reader.require_format(kModelSpecFormat);
  ModelSpec spec;
  spec.name = reader.required_string("name");
  require_printable(spec.name, origin, "name");
  if (spec.name.empty()) throw InputError(origin + ": field 'name': empty model name");
  const std::string architecture = reader.required_string("architecture");
  if (architecture == "gpt2") spec.architecture = Architecture::kGpt2;
  else if (architecture == "llama") spec.architecture = Architecture::kLlama;
  else
    throw InputError(origin + ": field 'architecture': unknown architecture '" + architecture +
                     "' (known: gpt2, llama)");
  spec.source = reader.optional_string("source");
  if (spec.source) require_printable(*spec.source, origin, "source");
  spec.vocab_size = reader.required_integer("vocab_size", 1, kMaxVocab);
  spec.max_position_embeddings = reader.required_integer("max_position_embeddings", 1, kMaxPositions);
  spec.hidden_size = reader.required_integer("hidden_size", 1, kMaxHidden);
  spec.num_hidden_layers = reader.required_integer("num_hidden_layers", 1, kMaxLayers);
  spec.num_attention_heads = reader.required_integer("num_attention_heads", 1, kMaxHidden);
  spec.intermediate_size = reader.required_integer("intermediate_size", 1, kMaxIntermediate);
  spec.tie_word_embeddings = required_bool(reader, "tie_word_embeddings");
  spec.norm_eps = required_positive(reader, "norm_eps");
  if (spec.hidden_size % spec.num_attention_heads != 0)
    throw InputError(origin + ": field 'num_attention_heads': " + std::to_string(spec.num_attention_heads) +
                     " heads do not divide hidden_size " + std::to_string(spec.hidden_size));

  if (spec.architecture == Architecture::kLlama) {
    spec.num_key_value_heads = reader.required_integer("num_key_value_heads", 1, kMaxHidden);
    if (spec.num_attention_heads % spec.num_key_value_heads != 0)
      throw InputError(origin + ": field 'num_key_value_heads': " + std::to_string(spec.num_key_value_heads) +
                       " key/value heads do not divide num_attention_heads " +
                       std::to_string(spec.num_attention_heads));
    if (spec.head_dim() % 2 != 0)
      throw InputError(origin + ": field 'num_attention_heads': head size " + std::to_string(spec.head_dim()) +
                       " (hidden_size / heads) must be even for rotary embeddings");
    spec.rope_theta = required_positive(reader, "rope_theta");
  } else {
    spec.num_key_value_heads = spec.num_attention_heads;
    spec.embd_pdrop = required_probability(reader, "embd_pdrop");
    spec.attn_pdrop = required_probability(reader, "attn_pdrop");
    spec.resid_pdrop = required_probability(reader, "resid_pdrop");
  }
  spec.frozen = optional_patterns(reader, "frozen");
  reader.reject_unknown_keys();
  if (!spec.frozen.empty()) {
    const Model model = expand_model(spec);
    for (const std::string& pattern : spec.frozen)
      if (std::none_of(model.layers.begin(), model.layers.end(),
                       [&](const ModelLayer& layer) { return matches(pattern, layer.name); }))
        throw InputError(origin + ": field 'frozen': pattern '" + pattern + "' matches no layer of " + spec.name +
                         " (names as in docs/models.md section 2, e.g. '" + model.layers.front().name + "')");
  }
  return spec;
}

ModelSpec read_model_spec_file(const std::string& path) { return model_spec_from_json(read_json_file(path), path); }

std::vector<std::string> known_model_names(const std::filesystem::path& models_dir) {
  std::vector<std::string> names;
  std::error_code ec;
  for (std::filesystem::directory_iterator it(models_dir, ec), end; !ec && it != end; it.increment(ec))
    if (it->path().extension() == ".json") names.push_back(it->path().stem().string());
  std::sort(names.begin(), names.end());
  return names;
}

std::filesystem::path resolve_model_spec(const std::string& model, const std::filesystem::path& models_dir) {
  const bool is_path = model.find('/') != std::string::npos ||
                       (model.size() >= 5 && model.compare(model.size() - 5, 5, ".json") == 0);
  if (is_path) return model;
  std::filesystem::path path = models_dir / (model + ".json");
  std::error_code ec;
  if (!model.empty() && std::filesystem::is_regular_file(path, ec)) return path;
  std::string known;
  for (const std::string& name : known_model_names(models_dir)) known += (known.empty() ? "" : ", ") + name;
  throw FieldError("model", "model '" + model + "': no model spec " + path.string() + " (known: " +
                   (known.empty() ? "none" : known) + "; or give a path to a " + kModelSpecFormat + " file)");
}

// ---------------------------------------------------------------------------------------------
// Expansion (docs/models.md section 2)
// ---------------------------------------------------------------------------------------------

namespace {

using Shape = std::vector<std::int64_t>;

ModelLayer layer(std::string name, ModuleKind module, std::vector<ParamTensor> params, std::vector<LayerOp> ops) {
  ModelLayer result;
  result.name = std::move(name);
  result.module = module;
  result.params = std::move(params);
  result.ops = std::move(ops);
  return result;
}

ParamTensor weight(Shape shape) { return {"weight", std::move(shape)}; }
ParamTensor bias(std::int64_t size) { return {"bias", {size}}; }

// HF's Conv1D stores its weight [in, out] and always has a bias.
ModelLayer conv1d(std::string name, std::int64_t in, std::int64_t out, std::vector<LayerOp> after = {}) {
  std::vector<LayerOp> ops{LinearOp{in, out, true}};
  ops.insert(ops.end(), after.begin(), after.end());
  return layer(std::move(name), ModuleKind::kConv1D, {weight({in, out}), bias(out)}, std::move(ops));
}

// nn.Linear stores its weight [out, in]; Llama's have no bias.
ModelLayer linear(std::string name, std::int64_t in, std::int64_t out, std::vector<LayerOp> after = {}) {
  std::vector<LayerOp> ops{LinearOp{in, out, false}};
  ops.insert(ops.end(), after.begin(), after.end());
  return layer(std::move(name), ModuleKind::kLinear, {weight({out, in})}, std::move(ops));
}

ModelLayer dropout(std::string name, std::vector<LayerOp> ops) {
  return layer(std::move(name), ModuleKind::kDropout, {}, std::move(ops));
}

ModelLayer lm_head(const ModelSpec& spec, const std::string& embedding) {
  ModelLayer head = linear("lm_head", spec.hidden_size, spec.vocab_size, {CrossEntropyOp{spec.vocab_size}});
  if (spec.tie_word_embeddings) head.tied_to = embedding;
  return head;
}

// GPT2LMHeadModel, in forward call order (GPT2Block.forward, GPT2Attention.forward, GPT2MLP.forward):
// HF registers c_proj before attn_dropout and mlp.c_proj before mlp.act, but runs them after.
void expand_gpt2(const ModelSpec& s, std::vector<ModelLayer>& out) {
  const std::int64_t d = s.hidden_size, h = s.num_attention_heads, dh = s.head_dim(), I = s.intermediate_size;
  const auto layer_norm = [&](std::string name) {
    return layer(std::move(name), ModuleKind::kLayerNorm, {weight({d}), bias(d)}, {LayerNormOp{d, s.norm_eps}});
  };
  out.push_back(layer("transformer.wte", ModuleKind::kEmbedding, {weight({s.vocab_size, d})},
                      {TokenEmbeddingOp{s.vocab_size, d}}));
  out.push_back(layer("transformer.wpe", ModuleKind::kEmbedding, {weight({s.max_position_embeddings, d})},
                      {PositionEmbeddingOp{s.max_position_embeddings, d}}));
  out.push_back(dropout("transformer.drop", {DropoutOp{s.embd_pdrop, d}}));
  for (std::int64_t i = 0; i < s.num_hidden_layers; ++i) {
    const std::string block = "transformer.h." + std::to_string(i) + ".";
    out.push_back(layer_norm(block + "ln_1"));
    // The scores run right after c_attn (split into heads is a view), so c_attn carries them.
    out.push_back(conv1d(block + "attn.c_attn", d, 3 * d, {AttentionScoresOp{{h, h, dh}}}));
    // attn_dropout is applied to the probabilities, right before they multiply V.
    out.push_back(dropout(block + "attn.attn_dropout", {AttentionContextOp{{h, h, dh}, s.attn_pdrop}}));
    out.push_back(conv1d(block + "attn.c_proj", d, d));
    // The residual addition runs in GPT2Block right after the attention returns.
    out.push_back(dropout(block + "attn.resid_dropout", {DropoutOp{s.resid_pdrop, d}, ResidualAddOp{d}}));
    out.push_back(layer_norm(block + "ln_2"));
    out.push_back(conv1d(block + "mlp.c_fc", d, I));
    out.push_back(layer(block + "mlp.act", ModuleKind::kGelu, {}, {GeluOp{I}}));
    out.push_back(conv1d(block + "mlp.c_proj", I, d));
    out.push_back(dropout(block + "mlp.dropout", {DropoutOp{s.resid_pdrop, d}, ResidualAddOp{d}}));
  }
  out.push_back(layer_norm("transformer.ln_f"));
  out.push_back(lm_head(s, "transformer.wte"));
}

// LlamaForCausalLM, in forward execution order.
void expand_llama(const ModelSpec& s, std::vector<ModelLayer>& out) {
  const std::int64_t d = s.hidden_size, h = s.num_attention_heads, g = s.num_key_value_heads, dh = s.head_dim(),
                     I = s.intermediate_size;
  const auto rms_norm = [&](std::string name) {
    return layer(std::move(name), ModuleKind::kRmsNorm, {weight({d})}, {RmsNormOp{d, s.norm_eps}});
  };
  out.push_back(layer("model.embed_tokens", ModuleKind::kEmbedding, {weight({s.vocab_size, d})},
                      {TokenEmbeddingOp{s.vocab_size, d}}));
  // LlamaModel computes the cos/sin tables once, before the first block; inv_freq is a buffer.
  out.push_back(layer("model.rotary_emb", ModuleKind::kRotaryEmbedding, {}, {RotaryTableOp{dh, s.rope_theta}}));
  for (std::int64_t i = 0; i < s.num_hidden_layers; ++i) {
    const std::string block = "model.layers." + std::to_string(i) + ".";
    out.push_back(rms_norm(block + "input_layernorm"));
    out.push_back(linear(block + "self_attn.q_proj", d, h * dh));
    out.push_back(linear(block + "self_attn.k_proj", d, g * dh));
    // v_proj is the last module before rotary, the scores and P V, so it carries them.
    const AttentionHeads heads{h, g, dh};
    out.push_back(linear(block + "self_attn.v_proj", d, g * dh,
                         {RotaryApplyOp{heads}, AttentionScoresOp{heads}, AttentionContextOp{heads, 0.0}}));
    out.push_back(linear(block + "self_attn.o_proj", h * dh, d, {ResidualAddOp{d}}));
    out.push_back(rms_norm(block + "post_attention_layernorm"));
    // down_proj(act_fn(gate_proj(x)) * up_proj(x)): gate, act, up, product, down.
    out.push_back(linear(block + "mlp.gate_proj", d, I));
    out.push_back(layer(block + "mlp.act_fn", ModuleKind::kSilu, {}, {SiluOp{I}}));
    out.push_back(linear(block + "mlp.up_proj", d, I, {GatedProductOp{I}}));
    out.push_back(linear(block + "mlp.down_proj", I, d, {ResidualAddOp{d}}));
  }
  out.push_back(rms_norm("model.norm"));
  out.push_back(lm_head(s, "model.embed_tokens"));
}

}  // namespace

std::int64_t Model::param_count() const {
  std::int64_t total = 0;
  for (const ModelLayer& layer : layers) total += layer.param_count();
  return total;
}

Model expand_model(const ModelSpec& spec) {
  Model model;
  model.name = spec.name;
  model.architecture = spec.architecture;
  model.max_position_embeddings = spec.max_position_embeddings;
  model.num_hidden_layers = spec.num_hidden_layers;
  if (spec.architecture == Architecture::kGpt2) expand_gpt2(spec, model.layers);
  else expand_llama(spec, model.layers);
  // Frozen layers (the spec's patterns), then whole tie groups: a tied layer computes with its
  // owner's tensors, so freezing either freezes both.
  for (ModelLayer& layer : model.layers)
    layer.frozen = std::any_of(spec.frozen.begin(), spec.frozen.end(),
                               [&](const std::string& pattern) { return matches(pattern, layer.name); });
  // The owner by name, through an index: a find over every layer for each layer was quadratic, 12 s
  // under the fuzzer's sanitizers for a spec of 4,048 blocks (28,000 layers; structure-aware
  // fuzzing, docs/fuzzing.md).
  std::unordered_map<std::string, std::size_t> index_of;
  for (std::size_t i = 0; i < model.layers.size(); ++i) index_of.emplace(model.layers[i].name, i);
  const auto owner_of = [&](const ModelLayer& layer) {
    if (!layer.tied_to) return model.layers.end();
    const auto found = index_of.find(*layer.tied_to);
    return found == index_of.end() ? model.layers.end()
                                   : model.layers.begin() + static_cast<std::ptrdiff_t>(found->second);
  };
  for (const ModelLayer& layer : model.layers)  // a frozen sharer freezes the owner ...
    if (const auto owner = owner_of(layer); owner != model.layers.end() && layer.frozen) owner->frozen = true;
  for (ModelLayer& layer : model.layers)  // ... and the owner every sharer
    if (const auto owner = owner_of(layer); owner != model.layers.end()) layer.frozen = owner->frozen;
  return model;
}

void check_workload(const Model& model, const Workload& workload) {
  if (workload.seq > model.max_position_embeddings)
    throw FieldError("seq", "seq " + std::to_string(workload.seq) + ": longer than max_position_embeddings " +
                     std::to_string(model.max_position_embeddings) + " of model " + model.name);
}

Profile model_profile_skeleton(const Model& model, Dtype dtype, const std::string& source) {
  Profile profile;
  profile.model = model.name;
  profile.source = source;
  for (const ModelLayer& layer : model.layers) {
    LayerProfile entry;
    entry.name = layer.name;
    entry.param_count = layer.param_count();
    entry.param_bytes = layer.param_count() * dtype_size_bytes(dtype);
    entry.tied_to = layer.tied_to;
    entry.frozen = layer.frozen;
    profile.layers.push_back(std::move(entry));
  }
  return profile;
}

}  // namespace syncplan
