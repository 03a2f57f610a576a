// Reading a GGUF file's tokenizer keys (spec/tokenizer.md T1, T12), shared by the byte-level BPE
// and SentencePiece readers: each wrong key is Error(kBadModel) `FILE: metadata 'KEY': problem`.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "readers/gguf/gguf.hpp"
#include "reference/config.hpp"

namespace akv::readers {

/// Throws Error(kBadModel) `FILE: metadata 'KEY': WHAT`.
[[noreturn]] void bad_tokenizer_key(const GgufFile& f, const std::string& key, const std::string& what);

/// Checks that `tokenizer.ggml.model` is `want`; otherwise throws naming the model found and
/// `reads` (what the caller reads, e.g. "byte-level BPE: gpt2"). Throws when the key is missing.
void expect_tokenizer_model(const GgufFile& f, std::string_view want, const std::string& reads);

/// The string array at `key`, copied. Throws (bad_tokenizer_key) when it is missing or not an
/// array of strings.
std::vector<std::string> tokenizer_strings(const GgufFile& f, const std::string& key);

/// `tokenizer.ggml.token_type` as int32 values, or empty when the key is absent. Throws when it
/// is not an array of int32.
std::vector<int32_t> tokenizer_types(const GgufFile& f);

/// The token id at `key` (any integer type), or nullopt when absent. Throws when it is not an
/// integer or is above 2^31 - 1 (a negative integer is refused by GgufFile::get_uint).
std::optional<Token> tokenizer_token_id(const GgufFile& f, const std::string& key);

/// The bool at `key`, or nullopt when absent. Throws when it is another type.
std::optional<bool> tokenizer_flag(const GgufFile& f, const std::string& key);

}  // namespace akv::readers
