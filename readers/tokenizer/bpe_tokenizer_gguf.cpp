// BpeTokenizer::from_gguf: the tokenizer metadata of a GGUF file (spec/tokenizer.md T1).
#include <limits>

#include "readers/tokenizer/bpe_tokenizer.hpp"
#include "reference/error.hpp"

namespace akv::model {

namespace {

[[noreturn]] void bad(const GgufFile& f, const std::string& key, const std::string& what) {
  throw Error(ErrorCode::kBadModel, f.name() + ": metadata '" + key + "': " + what);
}

std::vector<std::string> strings(const GgufFile& f, const std::string& key) {
  const Array& a = f.get_array(key);
  if (a.type != ValueType::kString)
    bad(f, key, "an array of " + value_type_name(static_cast<uint32_t>(a.type)) + ", expected an array of string");
  return {a.strings.begin(), a.strings.end()};
}

std::optional<Token> token_id(const GgufFile& f, const std::string& key) {
  const Value* v = f.find(key);
  if (!v) return std::nullopt;
  const uint64_t id = f.get_uint(key);
  if (id > static_cast<uint64_t>(std::numeric_limits<Token>::max())) bad(f, key, std::to_string(id) + " is not a token id");
  return static_cast<Token>(id);
}

}  // namespace

BpeTokenizer BpeTokenizer::from_gguf(const GgufFile& f) {
  const std::string_view model = f.get_string("tokenizer.ggml.model");
  if (model != "gpt2")
    bad(f, "tokenizer.ggml.model", "'" + std::string(model).substr(0, 60) +
                                       "' is not supported (akv reads byte-level BPE: gpt2)");
  const std::string_view pre = f.get_string("tokenizer.ggml.pre");
  std::vector<std::string> tokens = strings(f, "tokenizer.ggml.tokens");
  if (!f.find("tokenizer.ggml.merges")) bad(f, "tokenizer.ggml.merges", "missing: a gpt2 tokenizer needs its merges");
  const std::vector<std::string> merges = strings(f, "tokenizer.ggml.merges");
  std::vector<int32_t> types;
  if (f.find("tokenizer.ggml.token_type")) {
    const Array& a = f.get_array("tokenizer.ggml.token_type");
    if (a.type != ValueType::kI32)
      bad(f, "tokenizer.ggml.token_type",
          "an array of " + value_type_name(static_cast<uint32_t>(a.type)) + ", expected an array of int32");
    types.reserve(a.count);
    for (uint64_t i = 0; i < a.count; ++i) types.push_back(a.at<int32_t>(i));
  }
  return BpeTokenizer(std::move(tokens), merges, std::move(types), pre, token_id(f, "tokenizer.ggml.bos_token_id"),
                      token_id(f, "tokenizer.ggml.eos_token_id"), f.name() + ": tokenizer");
}

}  // namespace akv::model
