// akv's tokenizer on llama.cpp's vocab-only files against llama.cpp's ids (spec/tokenizer.md
// T11, T12). The setup test real_model_llama_vocab_ids (scripts/crosscheck-vocab --dump) compared
// them through `akv tokenize --vocab` and wrote llama.cpp's ids; this test compares again,
// in-process through BpeTokenizer or SpmTokenizer. A missing file fails, with the command to run.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "readers/gguf/gguf.hpp"
#include "readers/tokenizer/bpe_tokenizer.hpp"
#include "readers/tokenizer/spm_tokenizer.hpp"
#include "chat/published_templates.hpp"

using namespace akv;
using namespace akv::readers;
using namespace akv::chat;

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

// CT13: the texts CT11 checks (llama.cpp's templates in the same sdist, beside the vocab files;
// the phi-3 file's own template) are the pinned ones, with or without the file's trailing
// newline; one byte more is not.
TEST(CT13_PublishedTemplates, EveryCheckedTextIsRecognised) {
  ASSERT_FALSE(ids().is_null());
  const std::filesystem::path dir = std::filesystem::path(ids()["qwen2"].at("path").get<std::string>()).parent_path();
  const auto read = [](const std::filesystem::path& p) {
    std::ifstream f(p, std::ios::binary);
    EXPECT_TRUE(f) << "no " << p << ": run scripts/fetch-vocab";
    return std::string(std::istreambuf_iterator<char>(f), {});
  };
  const std::pair<std::string, TurnTemplate> files[] = {
      {read(dir / "templates" / "Qwen-Qwen2.5-7B-Instruct.jinja"), TurnTemplate::kQwen25},
      {read(dir / "templates" / "Qwen-Qwen3-0.6B.jinja"), TurnTemplate::kQwen3},
      {read(dir / "templates" / "meta-llama-Llama-3.1-8B-Instruct.jinja"), TurnTemplate::kLlama3},
      {read(dir / "templates" / "meta-llama-Llama-3.2-3B-Instruct.jinja"), TurnTemplate::kLlama3},
      {std::string(GgufFile::open((dir / "ggml-vocab-phi-3.gguf").string()).get_string("tokenizer.chat_template")),
       TurnTemplate::kPhi3},
  };
  for (const auto& [text, want] : files) {
    ASSERT_FALSE(text.empty());
    EXPECT_EQ(published_turn_template(text), want) << text.substr(0, 60);
    const std::string bare = text.ends_with('\n') ? text.substr(0, text.size() - 1) : text;
    EXPECT_EQ(published_turn_template(bare), want);
    EXPECT_EQ(published_turn_template(bare + "\n"), want);
    EXPECT_FALSE(published_turn_template(bare + " ").has_value());
    EXPECT_FALSE(published_turn_template(bare + "\n\n").has_value());
    std::string flipped = bare;
    flipped[flipped.size() / 2] ^= 0x20;
    EXPECT_FALSE(published_turn_template(flipped).has_value());
  }
  // qwen2's own file carries Qwen2's ChatML, not Qwen2.5's: it stays CT1's.
  const GgufFile q = GgufFile::open((dir / "ggml-vocab-qwen2.gguf").string());
  EXPECT_FALSE(published_turn_template(q.get_string("tokenizer.chat_template")).has_value());
}
