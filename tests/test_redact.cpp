// A string removed from inside a message (spec/operations.md O10): Session::replace, the
// redaction witness through the library and the `akv` binary, and its re-run by `akv verify`.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "cli_support.hpp"
#include "readers/conversation/chat_parse.hpp"
#include "reference/error.hpp"
#include "reference/session.hpp"
#include "support.hpp"
#include "runtime/digest.hpp"
#include "runtime/models.hpp"
#include "verify/redact.hpp"
#include "verify/witness.hpp"
#include "wrapped_backend.hpp"

using namespace akv;
using nlohmann::json;

namespace {

const std::string kSecret = "sk-live-4f9a2c7e1b";

// A banking request with an API key inside the user's message (message 1), said twice.
const std::string kConversation = R"({"messages": [
  {"role": "system", "content": "You are a banking assistant."},
  {"role": "user", "content": "Pay my electricity bill. My API key is sk-live-4f9a2c7e1b; if it fails, retry with sk-live-4f9a2c7e1b."},
  {"role": "assistant", "content": "Done: the bill of 42.10 EUR is paid."},
  {"role": "user", "content": "Thanks. When is the next one due?"}]})";

std::string conversation_file(const std::string& name, const std::string& text = kConversation) {
  const std::string path = ::testing::TempDir() + "akv_o10_" + name + ".json";
  std::ofstream(path) << text;
  return path;
}

WitnessOptions redact_options(std::vector<Redaction> r = {{1, kSecret}}) {
  WitnessOptions o;
  o.model = "tiny";
  o.redact = std::move(r);
  return o;
}

std::vector<Token> tokens_of(size_t n, Token base) {
  std::vector<Token> t(n);
  for (size_t i = 0; i < n; ++i) t[i] = static_cast<Token>((base + 7 * i) % 200);
  return t;
}

}  // namespace

// The session's operation: replacing a span's tokens leaves the cache and every kept logits
// row bit for bit those of a session built with the new tokens, the prefix unwritten.
TEST(O10_Replace, EqualsASessionBuiltWithTheNewTokens) {
  const auto m = load_model("tiny").model;
  auto b1 = make_reference_backend(m), b2 = make_reference_backend(m);
  const std::vector<Token> a = tokens_of(9, 3), x = tokens_of(12, 50), x2 = tokens_of(5, 90), c = tokens_of(7, 120),
                           d = tokens_of(4, 30), d2 = tokens_of(6, 31);
  Session s(*b1);
  s.append(0, a), s.append(1, x), s.append(2, c), s.append(3, d);
  const std::vector<uint64_t> serials_before(s.cache().write_serials().begin(), s.cache().write_serials().begin() + 9);
  const uint64_t written = s.cache().entries_written();
  const std::vector<SpanEdit> edits{{1, x2}, {3, d2}};
  const EvictStats st = s.replace(edits);
  EXPECT_EQ(st.truncated_at, a.size());
  EXPECT_EQ(st.tokens_evicted, x.size() + d.size());
  EXPECT_EQ(st.tokens_recomputed, x2.size() + c.size() + d2.size());
  EXPECT_EQ(s.cache().entries_written() - written, x2.size() + c.size() + d2.size()) << "the cache's own count";
  EXPECT_TRUE(std::equal(serials_before.begin(), serials_before.end(), s.cache().write_serials().begin()))
      << "E3: the prefix before the first edited span is not written";

  Session fresh(*b2);
  fresh.append(0, a), fresh.append(1, x2), fresh.append(2, c), fresh.append(3, d2);
  EXPECT_EQ(cache_sha256(s.cache()), cache_sha256(fresh.cache()));
  ASSERT_EQ(s.logits().size(), fresh.logits().size());
  EXPECT_EQ(std::memcmp(s.logits().data(), fresh.logits().data(), s.logits().size_bytes()), 0);
  EXPECT_EQ(s.tokens(), fresh.tokens());
  EXPECT_EQ(s.entry_spans(), fresh.entry_spans());
  ASSERT_EQ(s.spans().size(), 4u);
  EXPECT_EQ(s.spans()[1].length, x2.size());
  EXPECT_EQ(s.spans()[2].start, a.size() + x2.size());
}

// O6 for replace: each refused request names its problem and leaves the session as it was.
TEST(O10_Replace, ErrorsLeaveTheSessionUnchanged) {
  const auto m = load_model("tiny").model;
  auto b = make_reference_backend(m);
  Session s(*b);
  s.append(0, tokens_of(5, 1)), s.append(1, tokens_of(5, 2)), s.append(2, tokens_of(5, 3));
  s.evict(SpanId{2});
  const std::string before = session_state_sha256(s);
  const struct {
    std::vector<SpanEdit> edits;
    ErrorCode code;
    std::string needle;
  } cases[] = {
      {{}, ErrorCode::kEmptyInput, "no spans"},
      {{{7, tokens_of(3, 1)}}, ErrorCode::kUnknownSpan, "span 7"},
      {{{2, tokens_of(3, 1)}}, ErrorCode::kSpanEvicted, "span 2"},
      {{{1, tokens_of(3, 1)}, {1, tokens_of(2, 1)}}, ErrorCode::kDuplicateSpan, "span 1 named twice"},
      {{{1, {}}}, ErrorCode::kEmptyInput, "no tokens for span 1"},
      {{{0, tokens_of(3, 1)}, {1, {4, -1}}}, ErrorCode::kInvalidToken, "token -1 at index 1"},
      {{{1, std::vector<Token>(static_cast<size_t>(m->config.max_ctx), 5)}}, ErrorCode::kContextOverflow, "context"},
  };
  for (const auto& c : cases) {
    try {
      s.replace(c.edits);
      ADD_FAILURE() << "accepted: " << c.needle;
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), c.code) << e.what();
      EXPECT_NE(std::string(e.what()).find(c.needle), std::string::npos) << e.what();
    }
    EXPECT_EQ(session_state_sha256(s), before) << c.needle;
  }
}

TEST(O10_Redact, RemovesEveryOccurrenceAndCountsThem) {
  const Conversation c = parse_conversation(kConversation);
  std::vector<RedactionCount> n;
  const Conversation r = redacted(c, {{1, kSecret}}, &n);
  ASSERT_EQ(n.size(), 1u);
  EXPECT_EQ(n[0].occurrences, 2u);
  EXPECT_EQ(n[0].bytes, kSecret.size());
  EXPECT_EQ(r.messages[1].content, "Pay my electricity bill. My API key is ; if it fails, retry with .");
  EXPECT_EQ(r.messages[0].content, c.messages[0].content);
  EXPECT_EQ(parse_redaction("1:a:b").text, "a:b") << "everything after the first ':'";
}

// The witness: redact == never (the conversation rendered without the string), bit for bit
// under two configurations, the prefix before message 1 untouched, and exactly the edited
// message's new tokens and the later messages written. The secret appears in no output.
TEST(O10_Redact, TheWitnessPassesAndNeverShowsTheString) {
  const Conversation c = parse_conversation(kConversation);
  const WitnessReport r = run_witness(c, redact_options());
  EXPECT_TRUE(r.passed()) << to_text(r);
  EXPECT_TRUE(r.control_moved);
  EXPECT_FALSE(r.same_config);
  EXPECT_TRUE(r.evicted.empty());
  ASSERT_EQ(r.redacted.size(), 1u);
  EXPECT_EQ(r.redacted[0].occurrences, 2u);
  EXPECT_EQ(r.tokens_evicted - r.tokens_inserted, 2 * kSecret.size()) << "the fixture encoder: a token a byte";
  EXPECT_EQ(r.tokens_recomputed, r.tokens_inserted + r.tokens_survivors);
  EXPECT_EQ(r.tokens_never, r.tokens_poisoned - 2 * kSecret.size());
  const std::string text = to_text(r), j = to_json(r).dump();
  EXPECT_EQ(text.find(kSecret), std::string::npos) << text;
  EXPECT_EQ(j.find(kSecret), std::string::npos) << j;
  EXPECT_NE(text.find("PASS: redact == never"), std::string::npos) << text;
}

// Its teeth: the same checks that catch a broken eviction catch a broken redaction.
TEST(O10_Redact, CatchesABackendThatBreaksInvarianceAndARebuildFromZero) {
  const Conversation c = parse_conversation(kConversation);
  const WitnessReport chunk = run_witness(c, redact_options(), [](std::shared_ptr<const Model> m) {
    return std::make_unique<test::ChunkSensitive>(std::move(m));
  });
  EXPECT_FALSE(chunk.exact());
  EXPECT_FALSE(chunk.passed());
  EXPECT_NE(to_text(chunk).find("redact != never"), std::string::npos) << to_text(chunk);
  const WitnessReport zero = run_witness(c, redact_options(), [](std::shared_ptr<const Model> m) {
    return std::make_unique<test::RebuildsFromZero>(std::move(m));
  });
  EXPECT_TRUE(zero.exact());
  EXPECT_FALSE(zero.prefix_untouched);
  EXPECT_FALSE(zero.writes_as_expected());
  EXPECT_FALSE(zero.passed());
}

TEST(O10_Redact, BadRequestsAreRefusedNamingTheMessageNotTheString) {
  const Conversation c = parse_conversation(kConversation);
  const Conversation raw = parse_conversation(R"({"messages": [{"role": "user", "content": "hello"}, {"role": "user", "tokens": [1, 2, 3]}]})");
  WitnessOptions kshift = redact_options();
  kshift.policy = EvictPolicy::kKShift;
  WitnessOptions both = redact_options();
  both.evict = {2};
  const struct {
    const Conversation& conv;
    WitnessOptions opt;
    std::string needle;
  } cases[] = {
      {c, redact_options({{4, kSecret}}), "--redact 4: message index out of range (4 messages)"},
      {c, redact_options({{2, kSecret}}), "does not occur in message 2"},
      {c, redact_options({{1, ""}}), "the string is empty"},
      {raw, redact_options({{1, "x"}}), "raw token ids"},
      {c, kshift, "only the exact policy"},
      {c, both, "--redact excludes --evict"},
  };
  for (const auto& k : cases) {
    try {
      (void)run_witness(k.conv, k.opt);
      ADD_FAILURE() << "accepted: " << k.needle;
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kBadInput) << e.what();
      EXPECT_NE(std::string(e.what()).find(k.needle), std::string::npos) << e.what();
      EXPECT_EQ(std::string(e.what()).find(kSecret), std::string::npos) << e.what();
    }
  }
  for (const std::string bad : {"1", "x:abc", ":abc", "1:", "-1:abc"}) {
    EXPECT_THROW(parse_redaction(bad), Error) << bad;
  }
}

// The CLI end to end: witness --redact, --out, and verify, which needs the string given back.
TEST(O10_Redact, CliWitnessOutAndVerify) {
  const std::string conv = conversation_file("cli"), out = ::testing::TempDir() + "akv_o10_cli.witness.json";
  const test::CliRun w = test::run_akv({"witness", conv, "--model", "tiny", "--redact", "1:" + kSecret, "--out", out});
  ASSERT_EQ(w.code, 0) << w.out << w.err;
  EXPECT_NE(w.out.find("redacting 1 string(s), not shown (message 1: 18 bytes x 2)"), std::string::npos) << w.out;
  EXPECT_EQ(w.out.find(kSecret), std::string::npos) << w.out;
  const std::string file = test::slurp(out);
  EXPECT_EQ(file.find(kSecret), std::string::npos) << "the witness file keeps the length only";
  EXPECT_EQ(json::parse(file)["provenance"]["options"]["redact"], json::parse(R"([{"message": 1, "bytes": 18}])"));

  const test::CliRun v = test::run_akv({"verify", out, "--redact", "1:" + kSecret});
  EXPECT_EQ(v.code, 0) << v.out << v.err;
  const test::CliRun missing = test::run_akv({"verify", out});
  EXPECT_EQ(missing.code, 2) << missing.out;
  EXPECT_NE(missing.err.find("give them again, in order: --redact 1:STRING (18 bytes)"), std::string::npos) << missing.err;
  const std::string other = "Pay my electricity";  // another string of message 1, of the same length
  ASSERT_EQ(other.size(), kSecret.size());
  const test::CliRun wrong = test::run_akv({"verify", out, "--redact", "1:" + other});
  EXPECT_EQ(wrong.code, 1) << "another string of the same length: the digests differ";
  EXPECT_NE(wrong.out.find("DIFFERS"), std::string::npos) << wrong.out;

  const test::CliRun excl = test::run_akv({"witness", conv, "--model", "tiny", "--redact", "1:x", "--evict", "2"});
  EXPECT_EQ(excl.code, 2) << "CLI11 refuses the pair";
  const test::CliRun bad = test::run_akv({"witness", conv, "--model", "tiny", "--redact", "one:" + kSecret});
  EXPECT_EQ(bad.code, 2);
  EXPECT_NE(bad.err.find("expected N:STRING"), std::string::npos) << bad.err;
}
