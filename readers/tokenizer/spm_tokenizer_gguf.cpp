// SpmTokenizer::from_gguf: the tokenizer metadata of a GGUF file whose model is "llama"
// (spec/tokenizer.md T12), read as llama.cpp's llama_vocab::load reads it.
#include "readers/tokenizer/gguf_tokenizer_keys.hpp"
#include "readers/tokenizer/spm_tokenizer.hpp"

namespace akv::readers {

SpmTokenizer SpmTokenizer::from_gguf(const GgufFile& f) {
  expect_tokenizer_model(f, "llama", "SentencePiece: llama");
  // llama.cpp ignores the pre-tokenizer of a SentencePiece file; its converter writes "default".
  if (const auto pre = f.find_string("tokenizer.ggml.pre"); pre && *pre != "default")
    bad_tokenizer_key(f, "tokenizer.ggml.pre", "'" + std::string(*pre).substr(0, 60) +
                                                   "' is not supported for a llama (SentencePiece) vocabulary (expected default)");
  std::vector<std::string> tokens = tokenizer_strings(f, "tokenizer.ggml.tokens");
  std::vector<float> scores;
  if (f.find("tokenizer.ggml.scores")) {
    const Array& a = f.get_array("tokenizer.ggml.scores");
    if (a.type != ValueType::kF32 && a.type != ValueType::kI32)
      bad_tokenizer_key(f, "tokenizer.ggml.scores", "an array of " + value_type_name(static_cast<uint32_t>(a.type)) +
                                                        ", expected an array of float32 or int32");
    scores.reserve(a.count);
    for (uint64_t i = 0; i < a.count; ++i)
      scores.push_back(a.type == ValueType::kF32 ? a.at<float>(i) : static_cast<float>(a.at<int32_t>(i)));
  }
  Options opt;
  // llama.cpp's defaults for a llama vocabulary: bos 1, eos 2 (dropped when outside it).
  const auto in_vocab = [&](Token id) { return id < static_cast<Token>(tokens.size()) ? std::optional<Token>(id) : std::nullopt; };
  opt.bos = tokenizer_token_id(f, "tokenizer.ggml.bos_token_id");
  if (!opt.bos) opt.bos = in_vocab(1);
  opt.eos = tokenizer_token_id(f, "tokenizer.ggml.eos_token_id");
  if (!opt.eos) opt.eos = in_vocab(2);
  opt.add_bos = tokenizer_flag(f, "tokenizer.ggml.add_bos_token").value_or(true);
  opt.add_space_prefix = tokenizer_flag(f, "tokenizer.ggml.add_space_prefix").value_or(true);
  return SpmTokenizer(std::move(tokens), std::move(scores), tokenizer_types(f), opt, f.name() + ": tokenizer");
}

}  // namespace akv::readers
