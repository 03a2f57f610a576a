// akv's tokenizer on llama.cpp's vocab-only files against llama.cpp's ids (spec/tokenizer.md
// T11, T12). The setup test real_model_llama_vocab_ids (scripts/crosscheck-vocab --dump) compared
// them through `akv tokenize --vocab` and wrote llama.cpp's ids; this test compares again,
// in-process through BpeTokenizer or SpmTokenizer. A missing file fails, with the command to run.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "readers/gguf/gguf.hpp"
#include "readers/tokenizer/bpe_tokenizer.hpp"
#include "readers/tokenizer/spm_tokenizer.hpp"

using namespace akv;
using namespace akv::model;

namespace {

const nlohmann::json& ids() {
  static const nlohmann::json j = [] {
    std::ifstream f(AKV_LLAMA_VOCAB_IDS);
    if (!f) return nlohmann::json();
    return nlohmann::json::parse(f);
  }();
  if (j.is_null())
    ADD_FAILURE() << "no " << AKV_LLAMA_VOCAB_IDS << ": run scripts/crosscheck-vocab --dump " << AKV_LLAMA_VOCAB_IDS
                  << " (it fetches llama-cpp-python's sdist and builds llama.cpp; needs network once)";
  return j;
}

std::string from_hex(const std::string& h) {
  std::string out;
  for (size_t i = 0; i + 1 < h.size(); i += 2) out += static_cast<char>(std::stoi(h.substr(i, 2), nullptr, 16));
  return out;
}

// Tok: BpeTokenizer (T9) or SpmTokenizer (T12).
template <class Tok>
void expect_equal(const std::string& name, size_t vocab_size, const std::string& pre) {
  ASSERT_FALSE(ids().is_null());
  ASSERT_TRUE(ids().contains(name)) << name;
  const auto& v = ids()[name];
  const GgufFile f = GgufFile::open(v.at("path").get<std::string>());
  const Tok tok = Tok::from_gguf(f);
  EXPECT_EQ(static_cast<size_t>(tok.vocab_size()), vocab_size);
  EXPECT_EQ(f.get_string("tokenizer.ggml.pre"), pre);
  const auto& strings = v.at("strings");
  ASSERT_GT(strings.size(), 1000u);
  size_t differ = 0;
  for (const auto& s : strings) {
    const std::string text = from_hex(s.at("hex").get<std::string>());
    const std::vector<Token> want = s.at("ids").get<std::vector<Token>>();
    if (tok.encode(text) != want && differ++ < 3) ADD_FAILURE() << name << ": ids differ on hex " << s.at("hex");
  }
  EXPECT_EQ(differ, 0u) << "of " << strings.size();
}

}  // namespace

TEST(T11_LlamaCppEquality, Qwen2) { expect_equal<BpeTokenizer>("qwen2", 151936, "qwen2"); }
TEST(T11_LlamaCppEquality, LlamaBpe) { expect_equal<BpeTokenizer>("llama-bpe", 128256, "llama-bpe"); }
TEST(T11_LlamaCppEquality, LlamaSpm) { expect_equal<SpmTokenizer>("llama-spm", 32000, "default"); }
TEST(T11_LlamaCppEquality, Phi3) { expect_equal<SpmTokenizer>("phi-3", 32064, "default"); }
