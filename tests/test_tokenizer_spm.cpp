// The SentencePiece tokenizer (spec/tokenizer.md T12) on a hand-built vocabulary whose ids are
// derived by hand from the clause: merge order by score, the leftmost on a tie, byte fallback,
// the space prefix, BOS, special tokens, invalid UTF-8; its GGUF reading and refusals; and
// `akv tokenize --vocab` on a SentencePiece file (T11). The comparison with llama.cpp itself is
// scripts/crosscheck-vocab and the real-model test T11_LlamaCppEquality.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>

#include "readers/gguf/gguf.hpp"
#include "readers/tokenizer/spm_tokenizer.hpp"
#include "reference/error.hpp"
#include "tests/bad_model_support.hpp"
#include "tests/cli_support.hpp"
#include "tests/support/gguf_builder.hpp"

using namespace akv;
using namespace akv::readers;
using Ids = std::vector<Token>;

namespace {

const std::string kSp = "\xE2\x96\x81";  // U+2581

// ids 0 <unk> (unknown), 1 <s>, 2 </s> (control), 3..258 <0x00>..<0xFF> (byte: byte b is 3 + b),
// then normal tokens with scores, and "q" user-defined.
enum : Token { kUnk = 0, kBos = 1, kEos = 2, kSpace = 259, kA, kB, kC, kD, kAB, kBC, kCD, kAA, kSpA, kE, kLtS, kQ };
constexpr Token byte_id(unsigned b) { return 3 + static_cast<Token>(b); }

struct Vocab {
  std::vector<std::string> tokens{"<unk>", "<s>", "</s>"};
  std::vector<float> scores{0, 0, 0};
  std::vector<int32_t> types{2, 3, 3};
  SpmTokenizer::Options opt{kBos, kEos, true, true};
  Vocab() {
    static const char* hex = "0123456789ABCDEF";
    for (int b = 0; b < 256; ++b) add(std::string("<0x") + hex[b >> 4] + hex[b & 15] + ">", 0, 6);
    add(kSp, -1);
    add("a", -1);
    add("b", -1);
    add("c", -1);
    add("d", -1);
    add("ab", -3);
    add("bc", -2);  // beats ab although ab is further left
    add("cd", -3);  // ties ab
    add("aa", -3);
    add(kSp + "a", -4);
    add("\xC3\xA9", -1);  // é
    add("<s", -5);        // a normal token one merge short of the control token <s>
    add("q", 0, 4);       // user-defined
  }
  void add(const std::string& t, float s, int32_t ty = 1) {
    tokens.push_back(t);
    scores.push_back(s);
    types.push_back(ty);
  }
  SpmTokenizer make() const { return SpmTokenizer(tokens, scores, types, opt, "tiny"); }
  SpmTokenizer no_prefix() const {
    Vocab v = *this;
    v.opt.add_space_prefix = false;
    return v.make();
  }
};

using test::expect_bad_model;

std::function<void()> with(const std::function<void(Vocab&)>& change) {
  return [change] {
    Vocab v;
    change(v);
    v.make();
  };
}

}  // namespace

TEST(T12_Spm, HighestScoreMergesFirst) {
  const SpmTokenizer k = Vocab().no_prefix();
  EXPECT_EQ(k.encode("abc"), (Ids{kA, kBC}));       // bc (-2) before ab (-3), though ab is leftmost
  EXPECT_EQ(k.encode("abcd"), (Ids{kA, kBC, kD}));  // then neither "abc" nor "bcd" is a token
  EXPECT_EQ(k.encode("cdab"), (Ids{kCD, kAB}));
  EXPECT_EQ(k.encode("ba"), (Ids{kB, kA}));         // no token "ba": the characters stay
}

TEST(T12_Spm, LeftmostOnATie) {
  const SpmTokenizer k = Vocab().no_prefix();
  EXPECT_EQ(k.encode("aaa"), (Ids{kAA, kA}));  // the rightmost first would give [a, aa]
  EXPECT_EQ(k.encode("aaaa"), (Ids{kAA, kAA}));
  EXPECT_EQ(k.encode("aaaaa"), (Ids{kAA, kAA, kA}));
  EXPECT_EQ(k.encode("aab"), (Ids{kAA, kB}));  // aa and ab tie at -3: aa is further left
}

TEST(T12_Spm, SpacePrefixAndSpaces) {
  const SpmTokenizer k = Vocab().make();
  EXPECT_EQ(k.encode("a"), (Ids{kSpA}));
  EXPECT_EQ(k.encode("b a"), (Ids{kSpace, kB, kSpA}));
  EXPECT_EQ(k.encode("ab"), (Ids{kSpace, kAB}));  // ab (-3) beats the prefix's ▁a (-4)
  EXPECT_EQ(k.encode("  "), (Ids{kSpace, kSpace, kSpace}));
  EXPECT_EQ(k.encode("\ta"), (Ids{kSpace, byte_id('\t'), kA}));  // only 0x20 becomes ▁
  EXPECT_EQ(k.encode(kSp + "a"), (Ids{kSpace, kSpA}));           // a ▁ in the text is the same character
  const SpmTokenizer off = Vocab().no_prefix();
  EXPECT_EQ(off.encode("a"), (Ids{kA}));
  EXPECT_EQ(off.encode("b a"), (Ids{kB, kSpA}));
  EXPECT_EQ(off.encode(" "), (Ids{kSpace}));
}

TEST(T12_Spm, EmptyTextAndBos) {
  const SpmTokenizer k = Vocab().make();
  EXPECT_EQ(k.encode(""), Ids{});  // no space prefix for no text
  EXPECT_EQ(k.encode("", true), (Ids{kBos}));
  EXPECT_EQ(k.encode("a", true), (Ids{kBos, kSpA}));
  EXPECT_EQ(k.encode("a", false), (Ids{kSpA}));
  Vocab v;
  v.opt.add_bos = false;
  EXPECT_EQ(v.make().encode("a", true), (Ids{kSpA}));
  v.opt.bos = std::nullopt;
  EXPECT_EQ(v.make().encode("", true), Ids{});
}

TEST(T12_Spm, ByteFallbackForUnknownCharacters) {
  const SpmTokenizer k = Vocab().no_prefix();
  EXPECT_EQ(k.encode("\xC3\xA9"), (Ids{kE}));                               // é is a token
  EXPECT_EQ(k.encode("a\xE4\xB8\xAD"), (Ids{kA, byte_id(0xE4), byte_id(0xB8), byte_id(0xAD)}));  // 中 is not
  EXPECT_EQ(k.encode("\xF0\x9F\x98\x80"), (Ids{byte_id(0xF0), byte_id(0x9F), byte_id(0x98), byte_id(0x80)}));
  EXPECT_EQ(k.encode("x"), (Ids{byte_id('x')}));
  // Without <0x41> the ASCII byte falls back to its own character's token.
  Vocab v;
  v.tokens[3 + 0x41] = "A";
  v.types[3 + 0x41] = 1;
  v.opt.add_space_prefix = false;
  const SpmTokenizer ascii = v.make();
  EXPECT_EQ(ascii.byte_token('A'), 3 + 0x41);
  EXPECT_EQ(ascii.encode("\xE4" "A"), (Ids{byte_id(0xE4), 3 + 0x41}));  // one symbol "E4 41", not a token
}

TEST(T12_Spm, InvalidUtf8CutByLeadByte) {
  const SpmTokenizer k = Vocab().no_prefix();
  // E4 takes three bytes whatever follows: "E4 a b" is one symbol, no token, so three byte tokens.
  EXPECT_EQ(k.encode("\xE4" "ab"), (Ids{byte_id(0xE4), byte_id('a'), byte_id('b')}));
  EXPECT_EQ(k.encode("\x80" "a"), (Ids{byte_id(0x80), kA}));  // a continuation byte alone is one symbol
  EXPECT_EQ(k.encode("ab\xC3"), (Ids{kAB, byte_id(0xC3)}));   // cut short at the end
  EXPECT_EQ(k.encode("\xFF" "abc"), (Ids{byte_id(0xFF), byte_id('a'), byte_id('b'), byte_id('c')}));
  EXPECT_EQ(k.encode("\xF4\x90\x80\x80"), (Ids{byte_id(0xF4), byte_id(0x90), byte_id(0x80), byte_id(0x80)}));
  const std::string bytes = "x\xED\xA0\x80 \xC0\xAF\xFF";
  EXPECT_EQ(Vocab().make().decode(Vocab().make().encode(bytes)), " " + bytes);  // every byte comes back
}

TEST(T12_Spm, TextNeverBecomesASpecialToken) {
  const SpmTokenizer k = Vocab().no_prefix();
  // "<s" is a normal token, "<s>" a control one: llama.cpp's index would take it, akv's does not (T6).
  EXPECT_EQ(k.encode("<s>"), (Ids{kLtS, byte_id('>')}));
  EXPECT_EQ(k.encode("<unk>"), (Ids{byte_id('<'), byte_id('u'), byte_id('n'), byte_id('k'), byte_id('>')}));
  EXPECT_EQ(k.encode("q"), (Ids{byte_id('q')}));  // user-defined
  EXPECT_FALSE(k.find("<s>").has_value());
  EXPECT_EQ(k.find("<s"), kLtS);
  EXPECT_EQ(k.find("<0x41>"), byte_id(0x41));  // byte tokens are in the index, as in llama.cpp
}

TEST(T12_Spm, Decode) {
  const SpmTokenizer k = Vocab().make();
  EXPECT_EQ(k.decode(k.encode("b a\xE4")), " b a\xE4");  // the prefix comes back as a space
  EXPECT_EQ(k.decode({kBos, kUnk, kLtS, kSpA, byte_id(0x0A), kQ}), "<s><unk><s a\nq");
  try {
    k.decode({kA, -1});
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidToken);
    EXPECT_NE(std::string(e.what()).find("ids[1]: token id -1 outside"), std::string::npos) << e.what();
  }
}

// The clause read literally, O(n^2): cut by lead byte, then scan every adjacent pair for the
// highest score (the first found among equals), merge, repeat; map. No heap.
Ids naive(const Vocab& v, std::string_view text) {
  if (text.empty()) return {};
  std::string s = kSp;
  for (char c : text) s += c == ' ' ? kSp : std::string(1, c);
  std::vector<std::string> sym;
  for (size_t i = 0; i < s.size();) {
    const auto b = static_cast<uint8_t>(s[i]);
    const size_t n = std::min<size_t>(b < 0xC0 ? 1 : b < 0xE0 ? 2 : b < 0xF0 ? 3 : 4, s.size() - i);
    sym.push_back(s.substr(i, n));
    i += n;
  }
  std::map<std::string, Token> index;  // the clause's index: no unknown (2), control (3), user-defined (4)
  for (size_t i = 0; i < v.tokens.size(); ++i)
    if (v.types[i] != 2 && v.types[i] != 3 && v.types[i] != 4) index[v.tokens[i]] = static_cast<Token>(i);
  const auto lookup = [&](const std::string& t) -> Token {
    const auto it = index.find(t);
    return it == index.end() ? -1 : it->second;
  };
  for (;;) {
    int best = -1;
    for (size_t i = 0; i + 1 < sym.size(); ++i) {
      const Token t = lookup(sym[i] + sym[i + 1]);
      if (t >= 0 && (best < 0 || v.scores[t] > v.scores[lookup(sym[best] + sym[best + 1])])) best = static_cast<int>(i);
    }
    if (best < 0) break;
    sym[best] += sym[best + 1];
    sym.erase(sym.begin() + best + 1);
  }
  Ids out;
  for (const std::string& x : sym) {
    if (const Token t = lookup(x); t >= 0) {
      out.push_back(t);
      continue;
    }
    for (char c : x) out.push_back(byte_id(static_cast<uint8_t>(c)));
  }
  return out;
}

// Seeded random strings over the vocabulary's characters, spaces and stray bytes: the heap gives
// the literal reading's ids, the ids' pieces are the escaped text byte for byte, and no id is a
// control, user-defined or unknown token.
TEST(T12_Spm, HeapEqualsTheLiteralReadingOnRandomText) {
  const Vocab v;
  const SpmTokenizer k = v.make();
  const std::vector<std::string> parts = {"a", "b", "c", "d", " ", "\xC3\xA9", "<", "s", ">", "q", "\xE4", "\x80", "\xFF", "\xE2\x96\x81"};
  uint64_t x = 20250;
  const auto next = [&] { return (x = x * 6364136223846793005ULL + 1442695040888963407ULL) >> 33; };
  for (int n = 0; n < 3000; ++n) {
    std::string text;
    for (uint64_t len = next() % 14; len > 0; --len) text += parts[next() % parts.size()];
    const Ids ids = k.encode(text);
    ASSERT_EQ(ids, naive(v, text)) << testing::PrintToString(text);
    std::string escaped = text.empty() ? "" : kSp, pieces;
    for (char c : text) escaped += c == ' ' ? kSp : std::string(1, c);
    for (Token id : ids) pieces += id >= byte_id(0) && id <= byte_id(255) ? std::string(1, static_cast<char>(id - 3)) : v.tokens[id];
    EXPECT_EQ(pieces, escaped);  // no byte lost or added
    // Decoding turns each ▁ into a space, unless a stray lead byte (E4, FF) took its bytes into
    // a symbol of its own, which comes back as bytes.
    std::string back = escaped;
    for (size_t at; (at = back.find(kSp)) != std::string::npos;) back.replace(at, kSp.size(), " ");
    if (text.find('\xFF') == std::string::npos && text.find('\xE4') == std::string::npos) {
      EXPECT_EQ(k.decode(ids), back);
    }
    for (Token id : ids) EXPECT_TRUE(id != kUnk && id != kBos && id != kEos && id != kQ) << id;
  }
}

TEST(T12_Spm, RefusesBadVocabularies) {
  expect_bad_model([] { SpmTokenizer({}, {}, {}, {}); }, "the vocabulary is empty");
  expect_bad_model(with([](Vocab& v) { v.add("a", -1); }), "'a' repeats tokens[260]");
  expect_bad_model(with([](Vocab& v) { v.add("", -1); }), "an empty token");
  expect_bad_model(with([](Vocab& v) { v.add("\xFF", -1); }), "not valid UTF-8 at byte 0");
  expect_bad_model(with([](Vocab& v) { v.scores.pop_back(); }), "271 scores for 272 tokens");
  expect_bad_model(with([](Vocab& v) { v.types.pop_back(); }), "271 types for 272 tokens");
  expect_bad_model(with([](Vocab& v) { v.scores[kA] = std::nanf(""); }), "scores[260]: NaN is not a score");
  expect_bad_model(with([](Vocab& v) { v.types[kA] = 7; }), "token_type[260]: 7 is not a token type");
  expect_bad_model(with([](Vocab& v) { v.tokens[byte_id(0x4A)] = "<0x4a>"; }), "'<0x4a>' is a byte token (type 6) but not <0xXX>");
  expect_bad_model(with([](Vocab& v) { v.tokens[byte_id(0x80)] = "zz"; v.types[byte_id(0x80)] = 1; }),
                   "no fallback token for byte 0x80");
  expect_bad_model(with([](Vocab& v) { v.tokens[byte_id(0x7A)] = "zz"; v.types[byte_id(0x7A)] = 1; }),
                   "no fallback token for byte 0x7A (neither <0x7A> nor the byte itself)");
  expect_bad_model(with([](Vocab& v) { v.opt.bos = 272; }), "bos_token_id: 272 is outside the vocabulary [0, 272)");
  expect_bad_model(with([](Vocab& v) { v.opt.eos = -1; }), "eos_token_id: -1 is outside");
  expect_bad_model(with([](Vocab& v) { v.opt.bos = std::nullopt; }), "add_bos_token: true, but there is no bos token");
}

// ---- from_gguf and akv tokenize --vocab -----------------------------------------------------

namespace {

using test::array_value;
using test::Kv;
using test::kv;
using test::kv_str;
using test::Writer;

std::vector<Kv> spm_kvs(const Vocab& v) {
  Writer toks, scores, types;
  for (const auto& t : v.tokens) toks.str(t);
  for (float s : v.scores) scores.put(s);
  for (int32_t t : v.types) types.put(t);
  return {kv_str("general.architecture", "llama"),
          kv_str("tokenizer.ggml.model", "llama"),
          kv_str("tokenizer.ggml.pre", "default"),
          {"tokenizer.ggml.tokens", 9, array_value(8, v.tokens.size(), toks.b)},
          {"tokenizer.ggml.scores", 9, array_value(6, v.scores.size(), scores.b)},
          {"tokenizer.ggml.token_type", 9, array_value(5, v.types.size(), types.b)},
          kv<uint32_t>("tokenizer.ggml.bos_token_id", 4, kBos),
          kv<uint32_t>("tokenizer.ggml.eos_token_id", 4, kEos)};
}

GgufFile parse(const std::vector<Kv>& kvs) {
  test::TestGguf g;
  g.kvs = kvs;
  return GgufFile::parse(g.bytes(), "t.gguf");
}

std::vector<Kv> replaced(std::vector<Kv> kvs, const Kv& k) {
  for (Kv& e : kvs)
    if (e.key == k.key) {
      e = k;
      return kvs;
    }
  kvs.push_back(k);
  return kvs;
}

std::vector<Kv> without(std::vector<Kv> kvs, const std::string& key) {
  std::erase_if(kvs, [&](const Kv& e) { return e.key == key; });
  return kvs;
}

}  // namespace

TEST(T12_Spm, FromGgufReadsTheTokenizerKeys) {
  const Vocab v;
  const SpmTokenizer k = SpmTokenizer::from_gguf(parse(spm_kvs(v)));
  EXPECT_EQ(k.vocab_size(), 272);
  EXPECT_EQ(k.score(kBC), -2.0f);
  EXPECT_EQ(k.token_type(kQ), TokenType::kUserDefined);
  EXPECT_EQ(k.options().bos, kBos);
  EXPECT_EQ(k.options().eos, kEos);
  EXPECT_EQ(k.encode("b a", true), (Ids{kBos, kSpace, kB, kSpA}));  // defaults: space prefix, add_bos

  const SpmTokenizer off = SpmTokenizer::from_gguf(parse(replaced(
      replaced(spm_kvs(v), kv<bool>("tokenizer.ggml.add_space_prefix", 7, false)),
      kv<bool>("tokenizer.ggml.add_bos_token", 7, false))));
  EXPECT_EQ(off.encode("b a", true), (Ids{kB, kSpA}));

  // No bos/eos keys: llama.cpp's defaults 1 and 2; no pre-tokenizer key; int32 scores; no scores.
  const SpmTokenizer d = SpmTokenizer::from_gguf(parse(without(without(without(spm_kvs(v), "tokenizer.ggml.bos_token_id"),
                                                                       "tokenizer.ggml.eos_token_id"), "tokenizer.ggml.pre")));
  EXPECT_EQ(d.options().bos, 1);
  EXPECT_EQ(d.options().eos, 2);
  Writer iscores;
  for (float s : v.scores) iscores.put(static_cast<int32_t>(s));
  const SpmTokenizer i = SpmTokenizer::from_gguf(
      parse(replaced(spm_kvs(v), {"tokenizer.ggml.scores", 9, array_value(5, v.scores.size(), iscores.b)})));
  EXPECT_EQ(i.encode("abc"), (Ids{kSpA, kBC}));  // bc (-2), then ▁a (-4): ab lost its b
  const SpmTokenizer z = SpmTokenizer::from_gguf(parse(without(spm_kvs(v), "tokenizer.ggml.scores")));
  EXPECT_EQ(z.score(kBC), 0.0f);
  EXPECT_EQ(z.encode("aaa"), (Ids{kSpA, kAA}));  // all scores 0: ▁a is the leftmost pair
}

TEST(T12_Spm, FromGgufRefusals) {
  const Vocab v;
  const auto open = [](std::vector<Kv> kvs) { return [kvs] { SpmTokenizer::from_gguf(parse(kvs)); }; };
  expect_bad_model(open(replaced(spm_kvs(v), kv_str("tokenizer.ggml.model", "gpt2"))),
                   "metadata 'tokenizer.ggml.model': 'gpt2' is not supported (akv reads SentencePiece: llama)");
  expect_bad_model(open(replaced(spm_kvs(v), kv_str("tokenizer.ggml.pre", "llama-bpe"))),
                   "'tokenizer.ggml.pre': 'llama-bpe' is not supported for a llama (SentencePiece) vocabulary");
  expect_bad_model(open(without(spm_kvs(v), "tokenizer.ggml.tokens")), "tokenizer.ggml.tokens");
  Writer strs;
  strs.str("x");
  expect_bad_model(open(replaced(spm_kvs(v), {"tokenizer.ggml.scores", 9, array_value(8, 1, strs.b)})),
                   "'tokenizer.ggml.scores': an array of string, expected an array of float32 or int32");
  expect_bad_model(open(replaced(spm_kvs(v), kv<uint8_t>("tokenizer.ggml.add_space_prefix", 0, 1))),
                   "'tokenizer.ggml.add_space_prefix': expected bool, got u");
  expect_bad_model(open(replaced(spm_kvs(v), kv<uint32_t>("tokenizer.ggml.bos_token_id", 4, 5000))),
                   "bos_token_id: 5000 is outside the vocabulary");
}

TEST(T12_Spm, AkvTokenizeVocab) {
  test::TestGguf g;
  g.kvs = spm_kvs(Vocab());
  const std::vector<uint8_t> b = g.bytes();
  const std::string vocab = test::temp_bytes("t12_spm.gguf", std::string(b.begin(), b.end()));
  const std::string a = test::temp_bytes("t12_a.txt", "b a\xE4");
  const std::string e = test::temp_bytes("t12_e.txt", "");
  const test::CliRun r = test::run_akv({"tokenize", a, e, "--vocab", vocab, "--json"});
  ASSERT_EQ(r.code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j.at("model"), "llama");
  EXPECT_EQ(j.at("pre"), "default");
  EXPECT_EQ(j.at("vocab_size"), 272);
  EXPECT_EQ(j["texts"][0]["tokens"].get<Ids>(), (Ids{kSpace, kB, kSpA, byte_id(0xE4)}));  // no BOS
  EXPECT_TRUE(j["texts"][1]["tokens"].empty());
  const test::CliRun plain = test::run_akv({"tokenize", a, "--vocab", vocab});
  ASSERT_EQ(plain.code, 0) << plain.err;
  EXPECT_NE(plain.out.find("(SentencePiece, 272 tokens)"), std::string::npos) << plain.out;
  EXPECT_NE(plain.out.find(a + ": 4 tokens: 259 261 268 231"), std::string::npos) << plain.out;
}
