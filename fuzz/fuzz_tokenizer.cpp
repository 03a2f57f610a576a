// libFuzzer target for the byte-level BPE tokenizer and the ChatML encoder (spec/tokenizer.md
// T3-T6, CT3; docs/fuzzing.md). The tokenizer is the real model's when its GGUF is found
// ($AKV_FUZZ_MODEL, else $AKV_MODELS or ${XDG_CACHE_HOME:-~/.cache}/akv/models/SmolLM2-135M-Instruct.Q4_1.gguf),
// else a small built-in vocabulary (every byte, a few merges, the ChatML specials). For any
// bytes: encode returns (never throws) ids inside the vocabulary, none of them special;
// decoding them gives the input with the bytes that have no token removed (T4, T5); a one-message
// ChatML conversation of valid UTF-8 content is <|im_start|> ... <|im_end|> \n.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>

#include "fuzz/finding.hpp"
#include "readers/tokenizer/bpe_tokenizer.hpp"
#include "chat/chatml.hpp"
#include "readers/tokenizer/pre_tokenizer.hpp"
#include "reference/error.hpp"

using namespace akv;
using namespace akv::readers;
using namespace akv::chat;

namespace {

using akv::fuzz::finding;

const char* kTemplate =
    "{% for message in messages %}{% if loop.first and messages[0]['role'] != 'system' %}{{ '<|im_start|>system\n"
    "fuzz<|im_end|>\n' }}{% endif %}{{'<|im_start|>' + message['role'] + '\n' + message['content'] + "
    "'<|im_end|>' + '\n'}}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}";

std::string model_path() {
  if (const char* p = std::getenv("AKV_FUZZ_MODEL")) return p;
  std::string dir;
  if (const char* m = std::getenv("AKV_MODELS")) dir = m;
  else if (const char* x = std::getenv("XDG_CACHE_HOME"); x != nullptr && *x != '\0') dir = std::string(x) + "/akv/models";
  else if (const char* h = std::getenv("HOME")) dir = std::string(h) + "/.cache/akv/models";  // as scripts/fetch-model
  return dir + "/SmolLM2-135M-Instruct.Q4_1.gguf";
}

// A small vocabulary: every byte but 0x04 (so a byte without a token is exercised), merges over
// letters, spaces and digits, and the two ChatML specials.
BpeTokenizer builtin() {
  std::vector<std::string> tokens, merges;
  for (int b = 0; b < 256; ++b) tokens.push_back(b == 4 ? "\xE2\x98\x83" : byte_level_char(static_cast<uint8_t>(b)));
  const std::string sp = byte_level_char(' ');
  for (const auto& [l, r] : std::vector<std::pair<std::string, std::string>>{
           {"t", "h"}, {"th", "e"}, {sp, "the"}, {"a", "a"}, {"aa", "aa"}, {sp, sp}, {"i", "n"}, {sp, "in"}, {"\xC3\xA9", "t"}}) {
    merges.push_back(l + " " + r);
    tokens.push_back(l + r);
  }
  tokens.push_back("<|im_start|>");
  tokens.push_back("<|im_end|>");
  std::vector<int32_t> types(tokens.size(), 1);
  types[types.size() - 1] = types[types.size() - 2] = 3;
  return BpeTokenizer(tokens, merges, types, "smollm");
}

struct Setup {
  std::shared_ptr<const BpeTokenizer> tok;
  std::shared_ptr<const ChatEncoder> chat;
  Setup() {
    const std::string path = model_path();
    if (std::filesystem::exists(path)) {
      const GgufFile f = GgufFile::open(path);
      tok = std::make_shared<const BpeTokenizer>(BpeTokenizer::from_gguf(f));
      chat = make_chatml_encoder(f);
      std::fprintf(stderr, "fuzz_tokenizer: the real tokenizer of %s\n", path.c_str());
    } else {
      tok = std::make_shared<const BpeTokenizer>(builtin());
      chat = make_chatml_encoder(builtin(), kTemplate, "builtin");
      std::fprintf(stderr, "fuzz_tokenizer: the built-in vocabulary (no %s)\n", path.c_str());
    }
  }
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const Setup s;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const std::vector<Token> ids = s.tok->encode(text);  // throws: a finding (libFuzzer reports it)
  std::string kept;
  for (char c : text)
    if (s.tok->byte_token(static_cast<uint8_t>(c))) kept += c;
  for (Token id : ids) {
    if (id < 0 || id >= s.tok->vocab_size()) finding("an id outside the vocabulary");
    if (s.tok->is_special(id)) finding("text became a special token");
  }
  if (s.tok->decode(ids) != kept) finding("decode(encode(x)) is not x less the bytes without a token");
  if (s.chat->tokenize(text) != ids) finding("the encoder's tokenize differs from the tokenizer's");

  bool valid = true;
  split_utf8(text, [&](std::string_view, bool v) { valid = valid && v; });
  if (valid) {
    Conversation c;
    Message m;
    m.role = "user";
    m.content = std::string(text);
    c.messages = {m};
    const EncodedConversation e = s.chat->encode(c);
    if (e.spans.size() != 1 || e.preamble.empty()) finding("a one-message conversation is not preamble + one span");
    const std::vector<Token>& sp = e.spans[0];
    const std::vector<Token> nl = s.tok->encode("\n");
    if (sp.size() < 2 + nl.size() || sp.front() != *s.tok->find("<|im_start|>") ||
        sp[sp.size() - 1 - nl.size()] != *s.tok->find("<|im_end|>"))
      finding("a ChatML span is not <|im_start|> ... <|im_end|> \\n");
  }
  return 0;
}
