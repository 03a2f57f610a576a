// The llama-bpe and qwen2 pre-tokenizers and llama.cpp's reading of bytes (spec/tokenizer.md
// T9-T11), on hand-made strings whose pieces are read off the pattern, and on a tiny hand-built
// vocabulary. The comparison with llama.cpp itself is scripts/crosscheck-vocab and the real-model
// test T11_LlamaCppEquality.
#include <gtest/gtest.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "readers/gguf/gguf.hpp"
#include "readers/tokenizer/bpe_tokenizer.hpp"
#include "reference/error.hpp"
#include "tests/cli_support.hpp"
#include "tests/support/gguf_builder.hpp"

using namespace akv;
using namespace akv::readers;
using V = std::vector<std::string>;

namespace {

V split(PreTokenizer kind, std::string_view text) {
  static const PreTokenizerSplitter llama3(PreTokenizer::kLlama3), qwen2(PreTokenizer::kQwen2);
  std::vector<std::string_view> out;
  (kind == PreTokenizer::kLlama3 ? llama3 : qwen2).split(text, out);
  return {out.begin(), out.end()};
}
V L(std::string_view t) { return split(PreTokenizer::kLlama3, t); }
V Q(std::string_view t) { return split(PreTokenizer::kQwen2, t); }

std::string bc(uint8_t b) { return byte_level_char(b); }

// Every byte's character (ids 0..255 in byte order), a few merges, "abc" as a token no merge
// makes, "zz" as a control token and "qq" as a user-defined one.
struct Vocab {
  std::vector<std::string> tokens, merges;
  std::vector<int32_t> types;
  Vocab() {
    for (int b = 0; b < 256; ++b) tokens.push_back(bc(static_cast<uint8_t>(b)));
    for (const auto& [l, r] : std::vector<std::pair<std::string, std::string>>{{"b", "c"}, {"h", "e"}, {bc(' '), "w"}}) {
      merges.push_back(l + " " + r);
      tokens.push_back(l + r);
    }
    tokens.insert(tokens.end(), {"abc", "zz", "qq"});
    types.assign(tokens.size(), 1);
    types[types.size() - 2] = 3;
    types[types.size() - 1] = 4;
  }
  BpeTokenizer make(std::string_view pre) const { return BpeTokenizer(tokens, merges, types, pre); }
  Token id(const std::string& t) const {
    for (size_t i = 0; i < tokens.size(); ++i)
      if (tokens[i] == t) return static_cast<Token>(i);
    ADD_FAILURE() << "no token " << t;
    return -1;
  }
  std::vector<Token> bytes(std::string_view s) const {
    std::vector<Token> out;
    for (char c : s) out.push_back(static_cast<uint8_t>(c));
    return out;
  }
};

std::vector<Token> cat(std::vector<Token> a, const std::vector<Token>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

}  // namespace

// ---- T9: the llama-bpe and qwen2 pre-tokenizers -------------------------------------------

TEST(T9_LlamaPreTokenizers, NamesAreExact) {
  EXPECT_EQ(find_pre_tokenizer("llama-bpe"), PreTokenizer::kLlama3);
  EXPECT_EQ(find_pre_tokenizer("qwen2"), PreTokenizer::kQwen2);
  EXPECT_EQ(find_pre_tokenizer("smollm"), PreTokenizer::kSmolLM);
  for (const char* other : {"llama3", "llama-v3", "qwen35", "Qwen2", "", "gpt-2", "default"})
    EXPECT_FALSE(find_pre_tokenizer(other).has_value()) << other;
  const Vocab v;
  try {
    v.make("qwen35");
    ADD_FAILURE() << "qwen35 accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kBadModel);
    EXPECT_NE(std::string(e.what()).find("'qwen35' is not supported (akv knows: smollm, llama-bpe, qwen2)"),
              std::string::npos)
        << e.what();
  }
}

TEST(T9_LlamaPreTokenizers, DigitsInThreesForLlama3SinglyForQwen2) {
  EXPECT_EQ(L("1234567"), (V{"123", "456", "7"}));
  EXPECT_EQ(Q("1234567"), (V{"1", "2", "3", "4", "5", "6", "7"}));
  EXPECT_EQ(L("a12345b"), (V{"a", "123", "45", "b"}));
  EXPECT_EQ(Q("a12345b"), (V{"a", "1", "2", "3", "4", "5", "b"}));
  EXPECT_EQ(L(" 123"), (V{" ", "123"}));  // no space joins a number
  EXPECT_EQ(Q(" 12"), (V{" ", "1", "2"}));
  EXPECT_EQ(L("x\u00b2\u00b3\u00bd\u0663"), (V{"x", "\u00b2\u00b3\u00bd", "\u0663"}));  // \p{N}: ² ³ ½ ٣
  EXPECT_EQ(Q("x\u00b2\u00bd"), (V{"x", "\u00b2", "\u00bd"}));
}

TEST(T9_LlamaPreTokenizers, ContractionsAnyCaseAsciiApostropheOnly) {
  for (auto f : {L, Q}) {
    EXPECT_EQ(f("IT'S they'LL we'Re I'd"), (V{"IT", "'S", " they", "'LL", " we", "'Re", " I", "'d"}));
    EXPECT_EQ(f("don't'VE'm"), (V{"don", "'t", "'VE", "'m"}));
    EXPECT_EQ(f("'x"), (V{"'x"}));                 // no contraction: the apostrophe prefixes the letters
    EXPECT_EQ(f("''s"), (V{"''", "s"}));           // a punctuation run takes both apostrophes
    EXPECT_EQ(f("it\u2019s"), (V{"it", "\u2019s"}));  // U+2019 is no apostrophe here
  }
}

TEST(T9_LlamaPreTokenizers, OneNonLetterBeforeALetterRun) {
  for (auto f : {L, Q}) {
    EXPECT_EQ(f("Hello world"), (V{"Hello", " world"}));
    EXPECT_EQ(f("!abc"), (V{"!abc"}));
    EXPECT_EQ(f("..abc"), (V{"..", "abc"}));
    EXPECT_EQ(f("\tx"), (V{"\tx"}));
    EXPECT_EQ(f("a\nb"), (V{"a", "\n", "b"}));  // never \r or \n
    EXPECT_EQ(f("\u65e5\u672c\u8a9e"), (V{"\u65e5\u672c\u8a9e"}));
  }
}

TEST(T9_LlamaPreTokenizers, PunctuationTakesOneSpaceAndTheNewlinesAfter) {
  for (auto f : {L, Q}) {
    EXPECT_EQ(f("x!?\n\ny"), (V{"x", "!?\n\n", "y"}));
    EXPECT_EQ(f(" ?!"), (V{" ?!"}));
    EXPECT_EQ(f("a ,b"), (V{"a", " ,", "b"}));
    EXPECT_EQ(f("a  ,"), (V{"a", " ", " ,"}));
    EXPECT_EQ(f("!!\r\n\r\n x"), (V{"!!\r\n\r\n", " x"}));
  }
}

TEST(T9_LlamaPreTokenizers, WhitespaceRuns) {
  for (auto f : {L, Q}) {
    EXPECT_EQ(f("   a"), (V{"  ", " a"}));  // the last space goes with the letter
    EXPECT_EQ(f("a   "), (V{"a", "   "}));  // whole at the end
    EXPECT_EQ(f("a \n b"), (V{"a", " \n", " b"}));
    EXPECT_EQ(f("a\n\n  \n x"), (V{"a", "\n\n  \n", " x"}));  // up to the last newline
    EXPECT_EQ(f("\r\n\r\n"), (V{"\r\n\r\n"}));
    EXPECT_EQ(f("a\t b"), (V{"a", "\t", " b"}));
    EXPECT_EQ(f(std::string(5000, ' ') + "x"), (V{std::string(4999, ' '), " x"}));
  }
}

// llama.cpp's whitespace is Unicode's White_Space: U+0085 is in it, U+180E (PCRE2's \h) is not.
TEST(T9_LlamaPreTokenizers, WhiteSpaceIsUnicodes) {
  for (auto f : {L, Q}) {
    EXPECT_EQ(f("a\u180e\u180eb"), (V{"a", "\u180e\u180e", "b"}));  // punctuation; as \s it would be "\u180e", "\u180eb"
    EXPECT_EQ(f("x \u180e"), (V{"x", " \u180e"}));
    EXPECT_EQ(f("a\u0085\u0085b"), (V{"a", "\u0085", "\u0085b"}));
    EXPECT_EQ(f("a\u3000\u00a0b"), (V{"a", "\u3000", "\u00a0b"}));
  }
}

TEST(T9_LlamaPreTokenizers, PiecesCoverTheText) {
  const std::string s = "Mixed: \u00e9t\u00e9 2024, \U0001F600\u200d\U0001F466  \t\n end's 'LL\r\n\u0301x";
  for (auto f : {L, Q}) {
    std::string joined;
    for (const auto& p : f(s)) joined += p;
    EXPECT_EQ(joined, s);
  }
}

// Under llama-bpe (llama.cpp's ignore_merges) a piece that is a normal token is that token.
TEST(T9_LlamaPreTokenizers, Llama3TakesAWholePieceTokenUnmerged) {
  const Vocab v;
  EXPECT_EQ(v.make("llama-bpe").encode("abc"), (std::vector<Token>{v.id("abc")}));
  EXPECT_EQ(v.make("qwen2").encode("abc"), (std::vector<Token>{v.id("a"), v.id("bc")}));  // merges: "b c" only
  EXPECT_EQ(v.make("smollm").encode("abc"), (std::vector<Token>{v.id("a"), v.id("bc")}));
  // Never a control or user-defined token, even as a whole piece (T6).
  EXPECT_EQ(v.make("llama-bpe").encode("zz"), v.bytes("zz"));
  EXPECT_EQ(v.make("llama-bpe").encode("qq"), v.bytes("qq"));
  EXPECT_EQ(v.make("llama-bpe").encode("he wins"), (std::vector<Token>{v.id("he"), v.id(bc(' ') + "w"), v.id("i"),
                                                                         v.id("n"), v.id("s")}));
}

// ---- T10: bytes as llama.cpp reads them ---------------------------------------------------

TEST(T10_LlamaCppBytes, DecoderAsLlamaCpp) {
  const std::string fffd = "\xEF\xBF\xBD";
  const auto text = [](std::string_view b) { return read_like_llama_cpp(b).text; };
  EXPECT_EQ(text("a\xFF" "b"), "a" + fffd + "b");
  EXPECT_EQ(text("\xC0\xAF"), "/");  // overlong forms are their code point
  EXPECT_EQ(text("\xE0\x80\xAF"), "/");
  EXPECT_EQ(text("\xF0\x80\x80\xAF"), "/");
  EXPECT_EQ(text(std::string("\xC0\x80", 2)), std::string(1, '\0'));
  EXPECT_EQ(text("\xC3\x28"), fffd + "(");
  EXPECT_EQ(text("\xE2\x82"), fffd + fffd);       // truncated: one U+FFFD per byte
  EXPECT_EQ(text("\xF4\x90\x80\x80"), fffd + fffd + fffd + fffd);  // above U+10FFFF
  EXPECT_EQ(text("\xF5\x80\x80\x80"), fffd + fffd + fffd + fffd);
  EXPECT_EQ(text("\xF8\x88\x80\x80\x80"), fffd + fffd + fffd + fffd + fffd);
  EXPECT_EQ(text("ok \xC3\xA9 \xF0\x9F\x98\x80"), "ok \xC3\xA9 \xF0\x9F\x98\x80");  // valid text unchanged
  const LlamaCppText s = read_like_llama_cpp("x\xED\xA0\x80y\xED\xBF\xBF");
  EXPECT_EQ(s.text, "x" + fffd + "y" + fffd);
  ASSERT_EQ(s.surrogates.size(), 2u);
  EXPECT_EQ(s.surrogates[0], (std::pair<size_t, std::string>{1, "\xED\xA0\x80"}));
  EXPECT_EQ(s.surrogates[1], (std::pair<size_t, std::string>{5, "\xED\xBF\xBF"}));
}

TEST(T10_LlamaCppBytes, InvalidBytesDoNotCutTheText) {
  const Vocab v;
  for (const char* pre : {"llama-bpe", "qwen2"}) {
    const BpeTokenizer k = v.make(pre);
    // U+FFFD is punctuation: one piece with the '!' around it (smollm: three pieces, byte 0xFF's token).
    EXPECT_EQ(k.encode("!\xFF!"), v.bytes("!\xEF\xBF\xBD!")) << pre;
    EXPECT_EQ(k.encode("h\xFF" "e"), cat({v.id("h")}, v.bytes("\xEF\xBF\xBD" "e"))) << pre;
    EXPECT_EQ(k.encode("\xC0\xAF"), v.bytes("/")) << pre;
    // A surrogate keeps its own bytes, in a piece of its own kind (not a letter).
    EXPECT_EQ(k.encode("he\xED\xA0\x80"), cat({v.id("he")}, v.bytes("\xED\xA0\x80"))) << pre;
    EXPECT_EQ(k.decode(k.encode("a\xED\xA0\x80\xFF")), "a\xED\xA0\x80\xEF\xBF\xBD") << pre;
  }
  const BpeTokenizer smol = v.make("smollm");
  EXPECT_EQ(smol.encode("!\xFF!"), v.bytes("!\xFF!"));  // T5, for contrast
}

// ---- T11: akv tokenize --vocab --------------------------------------------------------------

namespace {
std::string vocab_file(const std::string& name, const std::string& model, const std::string& pre) {
  using namespace akv::test;
  const Vocab v;
  auto strs = [](const std::vector<std::string>& s) {
    Writer w;
    for (const auto& x : s) w.str(x);
    return array_value(8, s.size(), w.b);
  };
  Writer types;
  for (int32_t t : v.types) types.put(t);
  TestGguf g;
  g.kvs = {kv_str("general.architecture", "llama"), kv_str("tokenizer.ggml.model", model),
           kv_str("tokenizer.ggml.pre", pre), {"tokenizer.ggml.tokens", 9, strs(v.tokens)},
           {"tokenizer.ggml.merges", 9, strs(v.merges)},
           {"tokenizer.ggml.token_type", 9, array_value(5, v.types.size(), types.b)}};
  const std::vector<uint8_t> b = g.bytes();
  return test::temp_bytes(name, std::string(b.begin(), b.end()));
}
}  // namespace

TEST(T11_VocabOnlyTokenize, EachFilesBytesAsText) {
  const Vocab v;
  const std::string g = vocab_file("t11_llama3.gguf", "gpt2", "llama-bpe");
  const std::string a = test::temp_bytes("t11_a.txt", "abc he");
  const std::string b = test::temp_bytes("t11_b.txt", "!\xFF!");
  const std::string e = test::temp_bytes("t11_e.txt", "");
  const test::CliRun r = test::run_akv({"tokenize", a, b, e, "--vocab", g, "--json"});
  ASSERT_EQ(r.code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j.at("pre"), "llama-bpe");
  ASSERT_EQ(j.at("texts").size(), 3u);
  EXPECT_EQ(j["texts"][0]["file"], a);
  EXPECT_EQ(j["texts"][0]["tokens"].get<std::vector<Token>>(), cat({v.id("abc")}, cat(v.bytes(" "), {v.id("he")})));
  EXPECT_EQ(j["texts"][1]["tokens"].get<std::vector<Token>>(), v.bytes("!\xEF\xBF\xBD!"));
  EXPECT_TRUE(j["texts"][2]["tokens"].empty());
  const test::CliRun plain = test::run_akv({"tokenize", a, "--vocab", g});
  ASSERT_EQ(plain.code, 0) << plain.err;
  EXPECT_NE(plain.out.find(a + ": 3 tokens: " + std::to_string(v.id("abc")) + " 32 " + std::to_string(v.id("he"))),
            std::string::npos)
      << plain.out;
}

TEST(T11_VocabOnlyTokenize, RefusalsAreExit2NamingTheProblem) {
  const std::string a = test::temp_bytes("t11_r.txt", "hi");
  const struct {
    std::vector<std::string> args;
    std::string part;
  } cases[] = {
      {{"tokenize", a, "--vocab", vocab_file("t11_bert.gguf", "bert", "default")},
       "'tokenizer.ggml.model': 'bert' is not supported (akv reads gpt2: byte-level BPE, and llama: SentencePiece)"},
      {{"tokenize", a, "--vocab", vocab_file("t11_q35.gguf", "gpt2", "qwen35")}, "'qwen35' is not supported"},
      {{"tokenize", a, "--vocab", "/nonexistent/v.gguf"}, "/nonexistent/v.gguf"},
      {{"tokenize", "/nonexistent/t.txt", "--vocab", vocab_file("t11_ok.gguf", "gpt2", "qwen2")}, "/nonexistent/t.txt: cannot open"},
      {{"tokenize", a, a}, "one conversation FILE, 2 given"},
      {{"tokenize", a, "--vocab", vocab_file("t11_m.gguf", "gpt2", "qwen2"), "--model", "tiny"}, "excludes"},
  };
  for (const auto& c : cases) {
    const test::CliRun r = test::run_akv(c.args);
    EXPECT_EQ(r.code, 2) << c.part << ": " << r.err;
    EXPECT_NE(r.err.find(c.part), std::string::npos) << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    EXPECT_TRUE(r.out.empty()) << r.out;
  }
}
