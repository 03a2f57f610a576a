// BpeTokenizer::from_gguf: the tokenizer metadata of a GGUF file (spec/tokenizer.md T1).
#include "readers/tokenizer/bpe_tokenizer.hpp"
#include "readers/tokenizer/gguf_tokenizer_keys.hpp"

namespace akv::readers {

BpeTokenizer BpeTokenizer::from_gguf(const GgufFile& f) {
  expect_tokenizer_model(f, "gpt2", "byte-level BPE: gpt2");
  const std::string_view pre = f.get_string("tokenizer.ggml.pre");
  std::vector<std::string> tokens = tokenizer_strings(f, "tokenizer.ggml.tokens");
  if (!f.find("tokenizer.ggml.merges"))
    bad_tokenizer_key(f, "tokenizer.ggml.merges", "missing: a gpt2 tokenizer needs its merges");
  const std::vector<std::string> merges = tokenizer_strings(f, "tokenizer.ggml.merges");
  return BpeTokenizer(std::move(tokens), merges, tokenizer_types(f), pre,
                      tokenizer_token_id(f, "tokenizer.ggml.bos_token_id"),
                      tokenizer_token_id(f, "tokenizer.ggml.eos_token_id"), f.name() + ": tokenizer");
}

}  // namespace akv::readers
