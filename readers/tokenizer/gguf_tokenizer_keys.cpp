#include "readers/tokenizer/gguf_tokenizer_keys.hpp"

#include <limits>

#include "reference/error.hpp"
#include "reference/strict.hpp"

namespace akv::readers {

void bad_tokenizer_key(const GgufFile& f, const std::string& key, const std::string& what) {
  throw Error(ErrorCode::kBadModel, f.name() + ": metadata '" + key + "': " + what);
}

void expect_tokenizer_model(const GgufFile& f, std::string_view want, const std::string& reads) {
  const std::string_view model = f.get_string("tokenizer.ggml.model");
  if (model != want)
    bad_tokenizer_key(f, "tokenizer.ggml.model", "'" + printable(model, 60) + "' is not supported (akv reads " + reads + ")");
}

std::vector<std::string> tokenizer_strings(const GgufFile& f, const std::string& key) {
  const Array& a = f.get_array(key);
  if (a.type != ValueType::kString)
    bad_tokenizer_key(f, key, "an array of " + value_type_name(static_cast<uint32_t>(a.type)) +
                                  ", expected an array of string");
  return {a.strings.begin(), a.strings.end()};
}

std::vector<int32_t> tokenizer_types(const GgufFile& f) {
  const std::string key = "tokenizer.ggml.token_type";
  std::vector<int32_t> types;
  if (!f.find(key)) return types;
  const Array& a = f.get_array(key);
  if (a.type != ValueType::kI32)
    bad_tokenizer_key(f, key, "an array of " + value_type_name(static_cast<uint32_t>(a.type)) +
                                  ", expected an array of int32");
  types.reserve(a.count);
  for (uint64_t i = 0; i < a.count; ++i) types.push_back(a.at<int32_t>(i));
  return types;
}

std::optional<Token> tokenizer_token_id(const GgufFile& f, const std::string& key) {
  if (!f.find(key)) return std::nullopt;
  const uint64_t id = f.get_uint(key);
  if (id > static_cast<uint64_t>(std::numeric_limits<Token>::max()))
    bad_tokenizer_key(f, key, std::to_string(id) + " is not a token id");
  return static_cast<Token>(id);
}

std::optional<bool> tokenizer_flag(const GgufFile& f, const std::string& key) {
  const Value* v = f.find(key);
  if (!v) return std::nullopt;
  if (value_type(*v) != ValueType::kBool)
    bad_tokenizer_key(f, key, "expected bool, got " + value_type_name(static_cast<uint32_t>(v->index())));
  return std::get<bool>(*v);
}

}  // namespace akv::readers
