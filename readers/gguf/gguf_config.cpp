#include "readers/gguf/gguf_config.hpp"

#include <limits>
#include <set>
#include <string_view>
#include <variant>

#include "readers/gguf/dequant.hpp"
#include "readers/json_limited.hpp"
#include "reference/error.hpp"
#include "reference/strict.hpp"

namespace akv::readers {

namespace {

[[noreturn]] void bad(const GgufFile& f, const std::string& field, const std::string& what) {
  throw Error(ErrorCode::kBadModel, f.name() + ": " + field + ": " + what);
}

// A size in [1, 2^31).
int size_of(const GgufFile& f, const std::string& key, uint64_t v) {
  if (v < 1 || v > static_cast<uint64_t>(std::numeric_limits<int32_t>::max()))
    bad(f, "metadata '" + key + "'", std::to_string(v) + " is out of range [1, 2^31)");
  return static_cast<int>(v);
}

int required(const GgufFile& f, const std::string& key) { return size_of(f, key, f.get_uint(key)); }

int optional(const GgufFile& f, const std::string& key, int fallback) {
  const auto v = f.find_uint(key);
  return v ? size_of(f, key, *v) : fallback;
}

std::string dims_text(const TensorInfo& t) {
  std::string s = "[";
  for (size_t i = 0; i < t.dims.size(); ++i) s += (i ? ", " : "") + std::to_string(t.dims[i]);
  return s + "]";
}

// The (hidden, vocab) matrix `name`: ggml dims [hidden, vocab].
void check_embedding(const GgufFile& f, const TensorInfo& t, const Config& c) {
  if (t.dims.size() != 2 || t.dims[0] != static_cast<uint64_t>(c.hidden) || t.dims[1] != static_cast<uint64_t>(c.vocab))
    bad(f, "tensor '" + std::string(t.name) + "'.dims",
        dims_text(t) + ", expected [" + std::to_string(c.hidden) + ", " + std::to_string(c.vocab) + "] (hidden, vocab)");
}

// C5: the metadata keys akv reads and implements; any other key under `llama.` or
// `tokenizer.` would change the function (a RoPE scaling, a sliding window, a soft-cap, a
// tokenizer flag), so the file is refused naming it. `general.` and `quantize.` keys describe
// the file and change nothing (general.architecture and general.alignment are checked).
void check_metadata_keys(const GgufFile& f, const std::string& arch) {
  static const std::set<std::string_view> arch_keys = {
      "embedding_length", "block_count", "feed_forward_length", "context_length",
      "attention.head_count", "attention.head_count_kv", "attention.key_length",
      "attention.value_length", "attention.layer_norm_rms_epsilon", "rope.dimension_count",
      "rope.freq_base", "rope.scaling.type", "vocab_size", "attention.sliding_window"};
  static const std::set<std::string_view> read = {
      "tokenizer.ggml.model", "tokenizer.ggml.pre", "tokenizer.ggml.tokens", "tokenizer.ggml.token_type",
      "tokenizer.ggml.scores",  // SentencePiece merge scores (spec/tokenizer.md T12)
      "tokenizer.ggml.merges", "tokenizer.chat_template",
      // ids of named tokens: which token is BOS, EOS, padding; they do not change the logits.
      "tokenizer.ggml.bos_token_id", "tokenizer.ggml.eos_token_id", "tokenizer.ggml.unknown_token_id",
      "tokenizer.ggml.padding_token_id", "tokenizer.ggml.eot_token_id", "tokenizer.ggml.eom_token_id",
      "tokenizer.ggml.seperator_token_id", "tokenizer.ggml.separator_token_id", "tokenizer.ggml.cls_token_id",
      "tokenizer.ggml.mask_token_id"};
  // Flags whose false value is what akv does; true would make the file's own runtime add text.
  static const std::set<std::string_view> must_be_false = {"tokenizer.ggml.add_bos_token", "tokenizer.ggml.add_eos_token",
                                                           "tokenizer.ggml.add_space_prefix", "tokenizer.ggml.add_sep_token"};
  // Mixture-of-experts counts: 0 is a dense block, which is what akv runs.
  static const std::set<std::string_view> must_be_zero = {"expert_count", "expert_used_count"};
  const std::string prefix = arch + ".";
  for (const auto& [key, value] : f.metadata()) {
    const std::string k(key);
    if (k.starts_with("general.") || k.starts_with("quantize.")) continue;
    if (read.count(key)) continue;
    const std::string rest = k.starts_with(prefix) ? k.substr(prefix.size()) : std::string();
    if (!rest.empty() && arch_keys.count(rest)) {
      // Only Gemma 3 has sliding layers whose pattern and local base akv knows (C7).
      if (rest == "attention.sliding_window" && arch != "gemma3")
        bad(f, "metadata " + quoted_name(k), "a sliding window is implemented for gemma3 only (spec/gguf.md C7)");
      continue;
    }
    // Gemma 3's chat template begins with BOS (C7): the file's flag says what akv's template does.
    if (k == "tokenizer.ggml.add_bos_token" && arch == "gemma3") {
      if (!std::holds_alternative<bool>(value)) bad(f, "metadata " + quoted_name(k), "expected a bool");
      continue;
    }
    if (!rest.empty() && must_be_zero.count(rest)) {
      if (f.get_uint(k) != 0) bad(f, "metadata " + quoted_name(k), "mixture-of-experts blocks are not implemented (spec/gguf.md C5)");
      continue;
    }
    if (must_be_false.count(key)) {
      if (!std::holds_alternative<bool>(value)) bad(f, "metadata " + quoted_name(k), "expected a bool");
      if (std::get<bool>(value))
        bad(f, "metadata " + quoted_name(k), "true is not implemented (akv's chat template adds no such token; spec/gguf.md C5)");
      continue;
    }
    bad(f, "metadata " + quoted_name(k),
        "not implemented: akv refuses a key that may change the model's function rather than ignore it (spec/gguf.md C5)");
  }
}

}  // namespace

Config config_from_gguf(const GgufFile& f, const std::string& name) {
  const std::string arch(f.get_string("general.architecture"));
  if (arch != "llama" && arch != "qwen2" && arch != "qwen3" && arch != "gemma3")
    bad(f, "metadata 'general.architecture'",
        "architecture '" + printable(arch, 40) + "' is not supported (expected llama, qwen2, qwen3 or gemma3)");

  check_metadata_keys(f, arch);
  const std::string P = arch + ".";
  Config c;
  c.name = name;
  c.hidden = required(f, P + "embedding_length");
  c.n_layers = required(f, P + "block_count");
  c.ffn = required(f, P + "feed_forward_length");
  c.max_ctx = required(f, P + "context_length");
  c.n_heads = required(f, P + "attention.head_count");
  c.n_kv_heads = optional(f, P + "attention.head_count_kv", c.n_heads);
  if (c.n_heads % c.n_kv_heads != 0)
    bad(f, "metadata '" + P + "attention.head_count_kv'",
        std::to_string(c.n_kv_heads) + " does not divide the head count " + std::to_string(c.n_heads));
  if (!f.find(P + "attention.key_length") && c.hidden % c.n_heads != 0)
    bad(f, "metadata '" + P + "attention.head_count'",
        std::to_string(c.n_heads) + " does not divide the hidden size " + std::to_string(c.hidden));
  c.head_dim = optional(f, P + "attention.key_length", c.hidden / c.n_heads);
  if (optional(f, P + "attention.value_length", c.head_dim) != c.head_dim)
    bad(f, "metadata '" + P + "attention.value_length'", "differs from the key length " + std::to_string(c.head_dim));
  if (c.head_dim % 2 != 0) bad(f, "metadata '" + P + "attention.key_length'", "head dim " + std::to_string(c.head_dim) + " is odd");
  // The RoPE table holds max_ctx x head_dim floats: a small hostile file must not ask for GiBs.
  if (static_cast<uint64_t>(c.max_ctx) * static_cast<uint64_t>(c.head_dim) > (uint64_t{1} << 28))
    bad(f, "metadata '" + P + "context_length'", std::to_string(c.max_ctx) + " x head dim " + std::to_string(c.head_dim) +
                                                  " is more than 2^28 RoPE table entries (1 GiB)");
  if (optional(f, P + "rope.dimension_count", c.head_dim) != c.head_dim)
    bad(f, "metadata '" + P + "rope.dimension_count'", "partial rotary is not supported (head dim " + std::to_string(c.head_dim) + ")");
  if (const auto s = f.find_string(P + "rope.scaling.type"); s && *s != "none")
    bad(f, "metadata '" + P + "rope.scaling.type'", "RoPE scaling '" + printable(*s, 40) + "' is not supported");
  c.rope_theta = f.find_float(P + "rope.freq_base").value_or(10000.0f);
  if (!(c.rope_theta > 0.0f) || c.rope_theta == std::numeric_limits<float>::infinity())
    bad(f, "metadata '" + P + "rope.freq_base'", "must be finite and > 0");
  c.rms_eps = f.get_float(P + "attention.layer_norm_rms_epsilon");
  if (!(c.rms_eps > 0.0f) || c.rms_eps == std::numeric_limits<float>::infinity())
    bad(f, "metadata '" + P + "attention.layer_norm_rms_epsilon'", "must be finite and > 0");

  if (f.find(P + "vocab_size")) {
    c.vocab = required(f, P + "vocab_size");
  } else {
    const Array& tokens = f.get_array("tokenizer.ggml.tokens");
    c.vocab = size_of(f, "tokenizer.ggml.tokens", tokens.count);
  }
  if (arch == "qwen2" || arch == "qwen3" || arch == "gemma3") apply_arch(c, arch);
  if (arch == "gemma3") {
    // llama.cpp's gemma3: every 6th layer (5, 11, ...) global, the others sliding with their
    // own RoPE base 10000 (spec/gguf.md C7); transformers' layer_types say the same.
    c.sliding_window = required(f, P + "attention.sliding_window");
    c.sliding_layers.assign(static_cast<size_t>(c.n_layers), 0);
    for (int l = 0; l < c.n_layers; ++l) c.sliding_layers[static_cast<size_t>(l)] = (l + 1) % 6 != 0;
    c.rope_theta_local = 10000.0f;
  }
  if (const TensorInfo* ff = f.find_tensor("rope_freqs.weight")) {
    // Llama 3.1's RoPE scaling as llama.cpp runs it (spec/model.md M20): each frequency divided
    // by its factor; (head_dim/2,) finite values > 0.
    if (arch != "llama") bad(f, "tensor 'rope_freqs.weight'", "RoPE frequency factors are implemented for llama only");
    if (ff->dims != std::vector<uint64_t>{static_cast<uint64_t>(c.head_dim / 2)})
      bad(f, "tensor 'rope_freqs.weight'.dims", dims_text(*ff) + ", expected [" + std::to_string(c.head_dim / 2) + "] (head_dim/2)");
    c.rope_freq_factors = dequantize(*ff, f.name());
    for (float v : c.rope_freq_factors)
      if (!(v > 0.0f) || v == std::numeric_limits<float>::infinity())
        bad(f, "tensor 'rope_freqs.weight'", "a factor is not finite and > 0");
  }
  const TensorInfo* emb = f.find_tensor("token_embd.weight");
  if (!emb) bad(f, "tensor 'token_embd.weight'", "missing");
  check_embedding(f, *emb, c);
  const TensorInfo* out = f.find_tensor("output.weight");
  c.tied_output = out == nullptr;
  if (out) check_embedding(f, *out, c);
  return c;
}

}  // namespace akv::readers
