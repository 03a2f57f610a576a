// The real model's tokenizer and ChatML template against Hugging Face (spec/tokenizer.md T2, T4,
// T7, CT5). The setup test real_model_hf_tokenizer_ids (scripts/crosscheck-tokenizer) wrote
// Hugging Face's ids for the same file; a missing file fails, with the command to run.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>

#include "readers/conversation/chat_parse.hpp"
#include "readers/tokenizer/bpe_tokenizer.hpp"
#include "chat/chatml.hpp"
#include "reference/chat.hpp"

using namespace akv;
using namespace akv::readers;
using namespace akv::chat;

namespace {

const nlohmann::json& hf() {
  static const nlohmann::json j = [] {
    std::ifstream f(AKV_HF_TOKENIZER_IDS);
    if (!f) return nlohmann::json();
    return nlohmann::json::parse(f);
  }();
  if (j.is_null())
    ADD_FAILURE() << "no " << AKV_HF_TOKENIZER_IDS << ": run scripts/crosscheck-tokenizer " << AKV_HF_TOKENIZER_IDS
                  << " (it fetches the model and Hugging Face tokenizers; needs network once)";
  return j;
}

const GgufFile& file() {
  static const GgufFile f = GgufFile::open(hf().at("model").get<std::string>());
  return f;
}
const BpeTokenizer& tok() {
  static const BpeTokenizer t = BpeTokenizer::from_gguf(file());
  return t;
}
const ChatEncoder& chatml() {
  static const auto e = make_chatml_encoder(file());
  return *e;
}

std::string from_hex(const std::string& h) {
  std::string out;
  for (size_t i = 0; i + 1 < h.size(); i += 2) out += static_cast<char>(std::stoi(h.substr(i, 2), nullptr, 16));
  return out;
}

std::vector<Token> flat(const EncodedConversation& e) {
  std::vector<Token> out = e.preamble;
  for (const auto& s : e.spans) out.insert(out.end(), s.begin(), s.end());
  return out;
}

}  // namespace

TEST(T2_ByteLevelAlphabet, EqualsTransformersBytesToUnicode) {
  ASSERT_FALSE(hf().is_null());
  const auto& table = hf().at("byte_level");
  ASSERT_EQ(table.size(), 256u);
  for (int b = 0; b < 256; ++b)
    EXPECT_EQ(byte_level_char(static_cast<uint8_t>(b)), table.at(std::to_string(b)).get<std::string>()) << "byte " << b;
}

TEST(T7_HuggingFaceEquality, RealVocabulary) {
  ASSERT_FALSE(hf().is_null());
  EXPECT_EQ(tok().vocab_size(), 49152);
  EXPECT_EQ(tok().merge_count(), 48900u);
  EXPECT_EQ(tok().bos(), 1);
  EXPECT_EQ(tok().eos(), 2);
  EXPECT_EQ(tok().find("<|im_start|>"), 1);
  EXPECT_TRUE(tok().is_special(2));
  int missing = 0;
  for (int b = 0; b < 256; ++b) missing += !tok().byte_token(static_cast<uint8_t>(b));
  EXPECT_EQ(missing, 21) << "spec/tokenizer.md T4 lists the bytes SmolLM2's vocabulary lacks";
}

TEST(T7_HuggingFaceEquality, HardStrings) {
  ASSERT_FALSE(hf().is_null());
  const auto& strings = hf().at("strings");
  ASSERT_GE(strings.size(), 30u);
  for (const auto& s : strings) {
    const std::string text = from_hex(s.at("hex"));
    EXPECT_EQ(tok().encode(text), s.at("ids").get<std::vector<Token>>()) << "input (hex) " << s.at("hex").get<std::string>().substr(0, 120);
    EXPECT_EQ(chatml().tokenize(text), s.at("ids").get<std::vector<Token>>());
  }
}

TEST(T7_HuggingFaceEquality, EveryMessageOfEveryConversation) {
  ASSERT_FALSE(hf().is_null());
  std::set<std::string> seen;
  size_t texts = 0;
  for (const auto& c : hf().at("conversations")) {
    const std::string path = c.at("file");
    seen.insert(std::filesystem::path(path).filename().string());
    const Conversation conv = load_conversation(path);
    for (const auto& t : c.at("texts")) {
      const Message& m = conv.messages.at(t.at("index").get<size_t>());
      ASSERT_EQ(m.content, t.at("text").get<std::string>()) << path << " message " << t.at("index");
      EXPECT_EQ(tok().encode(m.content), t.at("ids").get<std::vector<Token>>()) << path << " message " << t.at("index");
      ++texts;
    }
  }
  EXPECT_GE(texts, 100u);
  for (const auto& e : std::filesystem::directory_iterator(std::string(AKV_SOURCE_DIR) + "/examples/conversations"))
    if (e.path().extension() == ".json") {
      EXPECT_TRUE(seen.count(e.path().filename().string())) << e.path();
    }
}

TEST(CT5_TransformersChatTemplate, PlainMessagesEqualApplyChatTemplate) {
  ASSERT_FALSE(hf().is_null());
  EXPECT_EQ(hf().at("chat_template").get<std::string>(), std::string(file().get_string("tokenizer.chat_template")));
  size_t compared = 0;
  for (const auto& c : hf().at("conversations")) {
    const Conversation conv = load_conversation(c.at("file").get<std::string>());
    Conversation sub;
    for (size_t i : c.at("plain").get<std::vector<size_t>>()) sub.messages.push_back(conv.messages.at(i));
    if (sub.messages.empty()) continue;
    EXPECT_EQ(flat(chatml().encode(sub)), c.at("chat_template_ids").get<std::vector<Token>>()) << c.at("file");
    ++compared;
  }
  EXPECT_GE(compared, 10u);
}

TEST(CT5_TransformersChatTemplate, EveryFieldAsTheSpecWritesIt) {
  ASSERT_FALSE(hf().is_null());
  size_t compared = 0;
  for (const auto& c : hf().at("conversations")) {
    ASSERT_FALSE(c.at("spans").is_null()) << c.at("file") << ": a message shape the Python side does not write";
    const EncodedConversation e = chatml().encode(load_conversation(c.at("file").get<std::string>()));
    EXPECT_EQ(e.preamble, c.at("preamble").get<std::vector<Token>>()) << c.at("file");
    ASSERT_EQ(e.spans.size(), c.at("spans").size()) << c.at("file");
    for (size_t i = 0; i < e.spans.size(); ++i)
      EXPECT_EQ(e.spans[i], c.at("spans")[i].get<std::vector<Token>>()) << c.at("file") << " message " << i;
    ++compared;
  }
  EXPECT_GE(compared, 13u);
}

