// Gemma's turn template over a SentencePiece vocabulary (spec/tokenizer.md CT12), on a
// hand-built vocabulary: BOS as the preamble, one span per message, the system message folded
// into the first user turn, roles, trim, and the refusal of a vocabulary without the turn tokens.
#include <gtest/gtest.h>

#include "chat/gemma_chat.hpp"
#include "reference/error.hpp"

using namespace akv;
using namespace akv::readers;
using namespace akv::chat;

namespace {

enum : Token { kBos = 1, kSot = 3, kEot = 4 };

SpmTokenizer vocab(bool with_turns = true) {
  std::vector<std::string> t{"<unk>", "<s>", "</s>", with_turns ? "<start_of_turn>" : "<x>", "<end_of_turn>"};
  std::vector<int32_t> ty{2, 3, 3, 3, 3};
  static const char* hex = "0123456789ABCDEF";
  for (int b = 0; b < 256; ++b) {
    t.push_back(std::string("<0x") + hex[b >> 4] + hex[b & 15] + ">");
    ty.push_back(6);
  }
  for (const char* w : {"user", "model", "\n"}) {
    t.push_back(w);
    ty.push_back(1);
  }
  SpmTokenizer::Options o{kBos, 2, false, true};
  return SpmTokenizer(t, std::vector<float>(t.size(), 0.0f), ty, o, "hand");
}

Message msg(const std::string& role, const std::string& content) {
  Message m;
  m.role = role;
  m.content = content;
  return m;
}

std::vector<Token> cat(std::initializer_list<std::vector<Token>> parts) {
  std::vector<Token> out;
  for (const auto& p : parts) out.insert(out.end(), p.begin(), p.end());
  return out;
}

}  // namespace

TEST(CT12_GemmaTurns, SpansAsTheTemplateRendersThem) {
  const SpmTokenizer tok = vocab();
  const auto enc = make_gemma_encoder(tok, "hand");
  Conversation c;
  c.messages = {msg("system", "Be brief."), msg("user", "  Hi \n"), msg("assistant", "Hello"), msg("tool", "42")};
  c.messages[3].tool_call_id = "c1";
  const EncodedConversation e = enc->encode(c);
  EXPECT_EQ(e.preamble, std::vector<Token>{kBos});
  ASSERT_EQ(e.spans.size(), 4u);
  const std::vector<Token> nl = tok.encode("\n");
  EXPECT_EQ(e.spans[0], cat({{kSot}, tok.encode("user\nBe brief.\n\n")}));  // folded: the turn stays open
  EXPECT_EQ(e.spans[1], cat({tok.encode("Hi"), {kEot}, nl}));             // trimmed, closes the turn
  EXPECT_EQ(e.spans[2], cat({{kSot}, tok.encode("model\nHello"), {kEot}, nl}));
  EXPECT_EQ(e.spans[3], cat({{kSot}, tok.encode("user\ntool tool_call_id=c1\n42"), {kEot}, nl}));
  EXPECT_EQ(enc->generation_prompt(), cat({{kSot}, tok.encode("model\n")}));
  EXPECT_EQ(enc->end_of_turn(), kEot);
  EXPECT_EQ(enc->name(), "gemma");
}

// Jinja's trim is Python's str.strip(): Unicode spaces (U+3000, U+00A0, U+2028) go too, and
// U+200B (not str.isspace) stays.
TEST(CT12_GemmaTurns, TrimIsPythonsStrip) {
  const SpmTokenizer tok = vocab();
  const auto enc = make_gemma_encoder(tok, "hand");
  Conversation c;
  c.messages = {msg("user", "\u3000\u00a0Hi\u2028 \x1f"), msg("assistant", "\u200bok")};
  const EncodedConversation e = enc->encode(c);
  ASSERT_EQ(e.spans.size(), 2u);
  const std::vector<Token> nl = tok.encode("\n");
  EXPECT_EQ(e.spans[0], cat({{kSot}, tok.encode("user\nHi"), {kEot}, nl}));
  EXPECT_EQ(e.spans[1], cat({{kSot}, tok.encode("model\n\u200bok"), {kEot}, nl}));
}

TEST(CT12_GemmaTurns, AnUnfoldedSystemIsAUserTurnOfItsOwn) {
  const SpmTokenizer tok = vocab();
  const auto enc = make_gemma_encoder(tok, "hand");
  Conversation c;
  c.messages = {msg("system", "S"), msg("assistant", "A")};
  const EncodedConversation e = enc->encode(c);
  ASSERT_EQ(e.spans.size(), 2u);
  EXPECT_EQ(e.spans[0], cat({{kSot}, tok.encode("user\nsystem\nS"), {kEot}, tok.encode("\n")}));
  // Raw tokens are exactly themselves (CT4).
  c.messages[1] = Message{};
  c.messages[1].role = "user";
  c.messages[1].tokens = std::vector<Token>{7, 8};
  EXPECT_EQ(enc->encode(c).spans[1], (std::vector<Token>{7, 8}));
}

TEST(CT12_GemmaTurns, AVocabularyWithoutTheTurnTokensIsRefusedByName) {
  try {
    make_gemma_encoder(vocab(false), "hand");
    FAIL() << "accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kBadModel);
    EXPECT_NE(std::string(e.what()).find("<start_of_turn>"), std::string::npos) << e.what();
  }
}
