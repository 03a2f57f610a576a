// The published chat templates recognised in a model file (spec/tokenizer.md CT13), offline:
// the pinned table, and that a text which is not exactly a pinned one is not recognised. The
// pinned texts themselves (llama.cpp's sdist) are checked in tests/real_model/test_real_vocab.cpp.
#include <gtest/gtest.h>

#include <set>

#include "runtime/digest.hpp"
#include "chat/published_templates.hpp"

using namespace akv;

TEST(CT13_PublishedTemplates, TheTableNamesEachTemplateOnce) {
  const auto& t = published_templates();
  ASSERT_EQ(t.size(), 5u);
  std::set<std::string> digests;
  std::multiset<chat::TurnTemplate> kinds;
  for (const PublishedTemplate& p : t) {
    const std::string h = p.sha256;
    EXPECT_EQ(h.size(), 64u) << p.source;
    EXPECT_EQ(h.find_first_not_of("0123456789abcdef"), std::string::npos) << p.source;
    digests.insert(h);
    kinds.insert(p.renders_as);
  }
  EXPECT_EQ(digests.size(), t.size());
  EXPECT_EQ(kinds.count(chat::TurnTemplate::kQwen25), 1u);
  EXPECT_EQ(kinds.count(chat::TurnTemplate::kLlama3), 2u);
  EXPECT_EQ(kinds.count(chat::TurnTemplate::kPhi3), 1u);
  EXPECT_EQ(kinds.count(chat::TurnTemplate::kQwen3), 1u);
}

TEST(CT13_PublishedTemplates, AnyOtherTextIsNotRecognised) {
  // ChatML (CT1) and near misses: not a published turn template, so not rendered as one.
  for (const char* text : {"", "\n", "{% for message in messages %}{% endfor %}",
                           "{{ bos_token }}{% for message in messages %}{{ message['content'] }}{% endfor %}"})
    EXPECT_FALSE(published_turn_template(text).has_value()) << text;
  // A text whose digest is a pinned digest's neighbour in any sense is still not one: the check
  // is the digest of the whole text, so a single changed byte is refused.
  EXPECT_NE(sha256_hex(std::string_view("a")), sha256_hex(std::string_view("a\n")));
  EXPECT_FALSE(published_turn_template("a\n").has_value());
}
