// The byte-level BPE tokenizer and the ChatML encoder on a tiny hand-built vocabulary
// (spec/tokenizer.md T1-T6, CT1-CT4). No model file needed; the real model's tests are in
// tests/real_model/.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <set>

#include "readers/conversation/chat_parse.hpp"
#include "hostile_json.hpp"
#include "tests/bad_model_support.hpp"
#include "tests/support/gguf_builder.hpp"
#include "readers/tokenizer/bpe_tokenizer.hpp"
#include "chat/chatml.hpp"
#include "reference/error.hpp"
#include "runtime/models.hpp"
#include "verify/witness.hpp"

using namespace akv;
using namespace akv::readers;
using namespace akv::chat;

namespace {

const char* kSmolTemplate =
    "{% for message in messages %}{% if loop.first and messages[0]['role'] != 'system' %}{{ '<|im_start|>system\n"
    "You are a tiny helper<|im_end|>\n' }}{% endif %}{{'<|im_start|>' + message['role'] + '\n' + message['content'] + "
    "'<|im_end|>' + '\n'}}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}";

std::string bc(uint8_t b) { return byte_level_char(b); }

// Every byte's character (ids 0..255 in byte order), the merges' results, two specials.
struct Tiny {
  std::vector<std::string> tokens;
  std::vector<std::string> merges;
  std::vector<int32_t> types;
  Tiny() {
    for (int b = 0; b < 256; ++b) tokens.push_back(bc(static_cast<uint8_t>(b)));
    const std::vector<std::pair<std::string, std::string>> m = {
        {"b", "c"}, {"a", "b"}, {"a", "a"}, {"h", "e"}, {"l", "l"}, {"he", "ll"}, {"hell", "o"}, {bc(' '), "w"}};
    for (const auto& [l, r] : m) {
      merges.push_back(l + " " + r);
      tokens.push_back(l + r);
    }
    tokens.push_back("<|im_start|>");
    tokens.push_back("<|im_end|>");
    types.assign(tokens.size(), 1);
    types[types.size() - 2] = types[types.size() - 1] = 3;
  }
  BpeTokenizer make() const { return BpeTokenizer(tokens, merges, types, "smollm", std::nullopt, std::nullopt, "tiny"); }
  Token id(const std::string& t) const {
    for (size_t i = 0; i < tokens.size(); ++i)
      if (tokens[i] == t) return static_cast<Token>(i);
    ADD_FAILURE() << "no token " << t;
    return -1;
  }
};

const BpeTokenizer& tiny() {
  static const BpeTokenizer t = Tiny().make();
  return t;
}

// The pieces of the smollm pre-tokenizer (T3).
std::vector<std::string> pieces(std::string_view text) {
  static const PreTokenizerSplitter p(PreTokenizer::kSmolLM);
  std::vector<std::string_view> out;
  p.split(text, out);
  return {out.begin(), out.end()};
}

using test::expect_bad_model;

}  // namespace

// ---- T1: the vocabulary and its checks -------------------------------------------------

TEST(T1_Vocabulary, TinyBuildsAndLooksUp) {
  const Tiny t;
  const BpeTokenizer& k = tiny();
  EXPECT_EQ(k.vocab_size(), static_cast<int>(t.tokens.size()));
  EXPECT_EQ(k.merge_count(), t.merges.size());
  EXPECT_EQ(k.find("hello"), t.id("hello"));
  EXPECT_FALSE(k.find("zz").has_value());
  EXPECT_TRUE(k.is_special(t.id("<|im_end|>")));
  EXPECT_FALSE(k.is_special(t.id("hello")));
}

TEST(T1_Vocabulary, EachBadPartIsOneLineBadModel) {
  const Tiny t;
  auto with = [&](auto edit) {
    Tiny c = t;
    edit(c);
    return [c] { c.make(); };
  };
  expect_bad_model(with([](Tiny& c) { c.merges.clear(); }), "merges: no merges");
  expect_bad_model([&] { BpeTokenizer(t.tokens, t.merges, t.types, "llama3"); }, "'llama3' is not supported");
  expect_bad_model(with([](Tiny& c) { c.merges.push_back("q zzz"); }), "token 'zzz' is not in the vocabulary");
  expect_bad_model(with([](Tiny& c) { c.merges.push_back("x y"); }), "the merged token 'xy' is not in the vocabulary");
  expect_bad_model(with([](Tiny& c) { c.merges.push_back("xy"); }), "not two tokens separated by one space");
  expect_bad_model(with([](Tiny& c) { c.merges.push_back("h  e"); }), "not two tokens separated by one space");
  expect_bad_model(with([](Tiny& c) { c.merges.push_back("h e"); }), "repeats an earlier merge");
  expect_bad_model(with([](Tiny& c) { c.tokens.push_back("he"), c.types.push_back(1); }), "repeats tokens[");
  expect_bad_model(with([](Tiny& c) { c.tokens.push_back("\xff"), c.types.push_back(1); }), "not valid UTF-8");
  expect_bad_model(with([](Tiny& c) { c.tokens.push_back(""), c.types.push_back(1); }), "an empty token");
  expect_bad_model(with([](Tiny& c) { c.types.pop_back(); }), "token_type: ");
  expect_bad_model(with([](Tiny& c) { c.types[7] = 9; }), "token_type[7]: 9 is not a token type");
  expect_bad_model([&] { BpeTokenizer({}, t.merges, {}, "smollm"); }, "the vocabulary is empty");
  expect_bad_model([&] { BpeTokenizer(t.tokens, t.merges, t.types, "smollm", 100000); }, "bos_token_id: 100000 is outside");
  expect_bad_model([&] { BpeTokenizer(t.tokens, t.merges, t.types, "smollm", 0, -1); }, "eos_token_id: -1 is outside");
}

namespace {
// A GGUF image with the tiny tokenizer's metadata, each key replaceable.
akv::test::TestGguf tiny_gguf_file(const std::vector<akv::test::Kv>& replace = {}, const std::set<std::string>& drop = {}) {
  using namespace akv::test;
  const Tiny t;
  auto strs = [](const std::vector<std::string>& v) {
    Writer w;
    for (const auto& s : v) w.str(s);
    return array_value(8, v.size(), w.b);
  };
  Writer types;
  for (int32_t ty : t.types) types.put(ty);
  std::vector<Kv> kvs = {kv_str("tokenizer.ggml.model", "gpt2"),
                         kv_str("tokenizer.ggml.pre", "smollm"),
                         {"tokenizer.ggml.tokens", 9, strs(t.tokens)},
                         {"tokenizer.ggml.merges", 9, strs(t.merges)},
                         {"tokenizer.ggml.token_type", 9, array_value(5, t.types.size(), types.b)},
                         kv<uint32_t>("tokenizer.ggml.bos_token_id", 4, 1),
                         kv_str("tokenizer.chat_template", kSmolTemplate)};
  TestGguf g;
  for (Kv& k : kvs) {
    if (drop.count(k.key)) continue;
    for (const Kv& r : replace)
      if (r.key == k.key) k = r;
    g.kvs.push_back(k);
  }
  return g;
}
std::vector<uint8_t> tiny_gguf(const std::vector<akv::test::Kv>& replace = {}, const std::set<std::string>& drop = {}) {
  return tiny_gguf_file(replace, drop).bytes();
}
}  // namespace

TEST(T1_Vocabulary, FromGgufReadsTheKeys) {
  const GgufFile f = GgufFile::parse(tiny_gguf(), "tiny.gguf");
  const BpeTokenizer k = BpeTokenizer::from_gguf(f);
  EXPECT_EQ(k.vocab_size(), tiny().vocab_size());
  EXPECT_EQ(k.bos(), 1);
  EXPECT_FALSE(k.eos().has_value());
  EXPECT_EQ(k.encode("hello world"), tiny().encode("hello world"));
}

TEST(T1_Vocabulary, FromGgufBadKeysAreOneLineBadModel) {
  using namespace akv::test;
  auto open = [](std::vector<uint8_t> b) { return [b] { BpeTokenizer::from_gguf(GgufFile::parse(b, "t.gguf")); }; };
  expect_bad_model(open(tiny_gguf({kv_str("tokenizer.ggml.model", "llama")})),
                   "t.gguf: metadata 'tokenizer.ggml.model': 'llama' is not supported");
  expect_bad_model(open(tiny_gguf({kv_str("tokenizer.ggml.pre", "qwen35")})), "t.gguf: tokenizer: pre-tokenizer: 'qwen35'");
  expect_bad_model(open(tiny_gguf({}, {"tokenizer.ggml.merges"})), "'tokenizer.ggml.merges': missing");
  expect_bad_model(open(tiny_gguf({{"tokenizer.ggml.merges", 9, array_value(8, 0, {})}})), "merges: no merges");
  expect_bad_model(open(tiny_gguf({{"tokenizer.ggml.merges", 9, array_value(4, 1, Writer{}.put<uint32_t>(7).b)}})),
                   "'tokenizer.ggml.merges': an array of uint32, expected an array of string");
  expect_bad_model(open(tiny_gguf({{"tokenizer.ggml.merges", 9, array_value(8, 1, Writer{}.str("h nope").b)}})),
                   "merges[0]: token 'nope' is not in the vocabulary");
  expect_bad_model(open(tiny_gguf({{"tokenizer.ggml.token_type", 9, array_value(4, 1, Writer{}.put<uint32_t>(1).b)}})),
                   "expected an array of int32");
  expect_bad_model(open(tiny_gguf({}, {"tokenizer.ggml.tokens"})), "tokenizer.ggml.tokens");
  expect_bad_model(open(tiny_gguf({}, {"tokenizer.ggml.pre"})), "tokenizer.ggml.pre");
}

namespace {
// The tiny tokenizer as a Hugging Face tokenizer.json, edited by `edit`, written to a temp file.
std::string tiny_json(const std::function<void(nlohmann::json&)>& edit = {}) {
  const Tiny t;
  nlohmann::json j;
  j["normalizer"] = nullptr;
  j["pre_tokenizer"] = {{"type", "Sequence"},
                        {"pretokenizers", {{{"type", "Digits"}, {"individual_digits", true}},
                                           {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", true},
                                            {"use_regex", true}}}}};
  nlohmann::json vocab = nlohmann::json::object();
  for (size_t i = 0; i < t.tokens.size(); ++i) vocab[t.tokens[i]] = i;
  j["model"] = {{"type", "BPE"}, {"unk_token", nullptr}, {"byte_fallback", false}, {"vocab", vocab}, {"merges", t.merges}};
  j["added_tokens"] = nlohmann::json::array();
  for (size_t i = t.tokens.size() - 2; i < t.tokens.size(); ++i)
    j["added_tokens"].push_back({{"id", i}, {"content", t.tokens[i]}, {"special", true}});
  if (edit) edit(j);
  const std::string path = ::testing::TempDir() + "akv_tiny_tokenizer.json";
  std::ofstream(path) << j.dump();
  return path;
}
}  // namespace

TEST(T1_Vocabulary, FromTokenizerJson) {
  const BpeTokenizer k = BpeTokenizer::from_tokenizer_json(tiny_json());
  EXPECT_EQ(k.vocab_size(), tiny().vocab_size());
  EXPECT_EQ(k.encode("hello world 42 <|im_end|>"), tiny().encode("hello world 42 <|im_end|>"));
  EXPECT_TRUE(k.is_special(*k.find("<|im_end|>")));
  auto open = [](const std::string& p) { return [p] { BpeTokenizer::from_tokenizer_json(p); }; };
  expect_bad_model(open(tiny_json([](auto& j) { j["pre_tokenizer"] = {{"type", "Metaspace"}}; })), "pre_tokenizer: not");
  expect_bad_model(open(tiny_json([](auto& j) { j["model"]["unk_token"] = "<unk>"; })), "model: unk_token");
  expect_bad_model(open(tiny_json([](auto& j) { j["model"]["type"] = "WordPiece"; })), "model.type: not BPE");
  expect_bad_model(open(tiny_json([](auto& j) { j["model"]["vocab"]["zz"] = 100000; })), "model.vocab: the ids");
  expect_bad_model(open(tiny_json([](auto& j) { j["model"]["merges"] = nlohmann::json::array(); })), "no merges");
  expect_bad_model(open(tiny_json([](auto& j) { j["model"]["merges"].push_back({"q", "zzz"}); })), "'zzz' is not in");
  expect_bad_model(open(::testing::TempDir() + "no_such_tokenizer.json"), "cannot be read");
}

// tokenizer.json is read by the strict JSON reader: deep nesting, a repeated key, a NUL byte
// are one-line bad_model errors naming the file.
TEST(T1_Vocabulary, HostileTokenizerJsonIsRefusedNamingTheFile) {
  test::expect_hostile_json_refused(::testing::TempDir() + "akv_hostile_tokenizer.json", ErrorCode::kBadModel,
                                    [](const std::string& p) { BpeTokenizer::from_tokenizer_json(p); });
}

// The chat template's tokenizer_config.json, likewise, before any other file of the folder.
TEST(CT1_ChatmlTemplate, HostileTokenizerConfigIsRefusedNamingTheFile) {
  const std::string dir = ::testing::TempDir() + "akv_hostile_hf";
  std::filesystem::create_directories(dir);
  std::ofstream(dir + "/tokenizer.json") << "{}";
  test::expect_hostile_json_refused(dir + "/tokenizer_config.json", ErrorCode::kBadModel,
                                    [&](const std::string&) { load_model(dir); });
}

// ---- T2: the byte-level alphabet --------------------------------------------------------

TEST(T2_ByteLevelAlphabet, Gpt2Mapping) {
  EXPECT_EQ(bc(' '), "\xC4\xA0");   // U+0120 Ġ
  EXPECT_EQ(bc('\n'), "\xC4\x8A");  // U+010A Ċ
  EXPECT_EQ(bc(0), "\xC4\x80");     // U+0100
  EXPECT_EQ(bc('A'), "A");
  EXPECT_EQ(bc(0xE9), "\xC3\xA9");  // é stands for itself
  EXPECT_EQ(bc(0xAD), "\xC5\x83");  // soft hyphen: the 68th remapped byte, U+0143
  std::set<std::string> all;
  for (int b = 0; b < 256; ++b) all.insert(bc(static_cast<uint8_t>(b)));
  EXPECT_EQ(all.size(), 256u);
}

// ---- T3: the smollm pre-tokenizer -------------------------------------------------------

TEST(T3_PreTokenizer, Gpt2PatternAndDigits) {
  using V = std::vector<std::string>;
  EXPECT_EQ(pieces("Hello world"), (V{"Hello", " world"}));
  EXPECT_EQ(pieces("abc123 4"), (V{"abc", "1", "2", "3", " ", "4"}));
  EXPECT_EQ(pieces("a  b"), (V{"a", " ", " b"}));
  EXPECT_EQ(pieces("x  "), (V{"x", "  "}));
  EXPECT_EQ(pieces("it's they'll"), (V{"it", "'s", " they", "'ll"}));
  EXPECT_EQ(pieces("hi!? ok"), (V{"hi", "!?", " ok"}));
  EXPECT_EQ(pieces("\u65e5\u672c\u8a9e"), (V{"\u65e5\u672c\u8a9e"}));  // one \p{L}+ run
  EXPECT_EQ(pieces("x\u0663\u00b2"), (V{"x", "\u0663", "\u00b2"}));  // Arabic-Indic 3, superscript 2: \p{N}
  EXPECT_EQ(pieces("a\n\nb"), (V{"a", "\n", "\n", "b"}));  // \s+(?!\S) leaves the last one to \s+
  EXPECT_EQ(pieces(""), V{});
}

TEST(T3_PreTokenizer, PiecesCoverTheText) {
  const std::string s = "Mixed: \u00e9t\u00e9 2024, \U0001F600\u200d\U0001F466  \t\n end";
  std::string joined;
  for (const auto& p : pieces(s)) joined += p;
  EXPECT_EQ(joined, s);
}

// ---- T4: merges by rank -----------------------------------------------------------------

TEST(T4_BpeMerges, LowestRankFirstLeftmostAmongEquals) {
  const Tiny t;
  const BpeTokenizer& k = tiny();
  EXPECT_EQ(k.encode("hello"), (std::vector<Token>{t.id("hello")}));
  EXPECT_EQ(k.encode("abc"), (std::vector<Token>{t.id("a"), t.id("bc")}));  // "b c" has rank 0 < "a b"
  EXPECT_EQ(k.encode("aaa"), (std::vector<Token>{t.id("aa"), t.id("a")}));
  EXPECT_EQ(k.encode("hello world"), (std::vector<Token>{t.id("hello"), t.id(bc(' ') + "w"), t.id("o"), t.id("r"),
                                                           t.id("l"), t.id("d")}));
  EXPECT_EQ(k.encode("hell"), (std::vector<Token>{t.id("hell")}));
}

TEST(T4_BpeMerges, ByteWithoutATokenIsDropped) {
  Tiny t;
  t.tokens[static_cast<uint8_t>('x')] = "\xE2\x98\x83";  // 'x' has no token now (a snowman instead)
  const BpeTokenizer k = t.make();
  EXPECT_FALSE(k.byte_token('x').has_value());
  EXPECT_EQ(k.encode("hxe"), (std::vector<Token>{t.id("he")}));  // neighbours meet and merge
  EXPECT_EQ(k.encode("xxx"), std::vector<Token>{});
}

// Long runs of one character (the quadratic case of a naive merge loop) round-trip; a hang
// would hit the test's CTest timeout. Speed is a benchmark figure, not asserted here.
TEST(T4_BpeMerges, LongInputsRoundTrip) {
  std::string text;
  for (int i = 0; i < 2000; ++i) text += "hello world, abc " + std::to_string(i) + " aaa\n";
  text += std::string(100000, ' ') + std::string(100000, 'a') + std::string(50000, '7');
  const std::vector<Token> ids = tiny().encode(text);
  EXPECT_EQ(tiny().decode(ids), text);
}

// ---- T5: invalid UTF-8 ------------------------------------------------------------------

TEST(T5_InvalidUtf8, SequenceLengths) {
  EXPECT_EQ(utf8_sequence_length("a", 0), 1u);
  EXPECT_EQ(utf8_sequence_length("\xC3\xA9", 0), 2u);
  EXPECT_EQ(utf8_sequence_length("\xE2\x82\xAC", 0), 3u);
  EXPECT_EQ(utf8_sequence_length("\xF0\x9F\x98\x80", 0), 4u);
  EXPECT_EQ(utf8_sequence_length("\xC0\xAF", 0), 0u);          // overlong
  EXPECT_EQ(utf8_sequence_length("\xE0\x80\xAF", 0), 0u);      // overlong
  EXPECT_EQ(utf8_sequence_length("\xED\xA0\x80", 0), 0u);      // surrogate
  EXPECT_EQ(utf8_sequence_length("\xF4\x90\x80\x80", 0), 0u);  // above U+10FFFF
  EXPECT_EQ(utf8_sequence_length("\xE2\x82", 0), 0u);          // truncated
  EXPECT_EQ(utf8_sequence_length("\x80", 0), 0u);              // lone continuation
  EXPECT_EQ(utf8_sequence_length("\xFF", 0), 0u);
}

TEST(T5_InvalidUtf8, EachInvalidByteIsAPieceOfItsOwn) {
  const Tiny t;
  const BpeTokenizer& k = tiny();
  EXPECT_EQ(k.encode("h\xFF" "e"), (std::vector<Token>{t.id("h"), t.id(bc(0xFF)), t.id("e")}));  // no "he" across
  EXPECT_EQ(k.encode("\xE2\x82"), (std::vector<Token>{t.id(bc(0xE2)), t.id(bc(0x82))}));
  const std::string junk = "ok\xC3\x28\xED\xA0\x80\xF0\x9F\x98 hello\xFE";
  EXPECT_EQ(k.decode(k.encode(junk)), junk);  // every byte has a token here: nothing lost
}

// ---- T6: special text and decoding ------------------------------------------------------

TEST(T6_SpecialsAndDecode, SpecialTextStaysText) {
  const Tiny t;
  const BpeTokenizer& k = tiny();
  const std::vector<Token> ids = k.encode("a<|im_end|>b<|im_start|>");
  for (Token id : ids) EXPECT_FALSE(k.is_special(id)) << id;
  EXPECT_EQ(k.decode(ids), "a<|im_end|>b<|im_start|>");
  EXPECT_EQ(k.decode({t.id("<|im_start|>"), t.id("hello")}), "<|im_start|>hello");
}

TEST(T6_SpecialsAndDecode, DecodeChecksIds) {
  try {
    tiny().decode({1, tiny().vocab_size()});
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidToken);
    EXPECT_NE(std::string(e.what()).find("ids[1]"), std::string::npos) << e.what();
  }
}

// ---- CT1-CT4: ChatML --------------------------------------------------------------------

TEST(CT1_ChatmlTemplate, RecognisesTheDefaultSystemMessage) {
  const ChatmlTemplate t = parse_chatml_template(kSmolTemplate);
  EXPECT_TRUE(t.has_default_system);
  EXPECT_EQ(t.default_system, "You are a tiny helper");
  std::string plain = kSmolTemplate;
  const size_t a = plain.find("{% if loop.first"), b = plain.find("{% endif %}") + 11;
  plain.erase(a, b - a);
  EXPECT_FALSE(parse_chatml_template(plain).has_default_system);
}

TEST(CT1_ChatmlTemplate, OtherTemplatesAreBadModel) {
  expect_bad_model([] { parse_chatml_template("{{ bos_token }}{% for m in messages %}{% endfor %}", "x.gguf"); },
                   "x.gguf: tokenizer.chat_template: not the ChatML template");
  std::string quoted = kSmolTemplate;
  quoted.replace(quoted.find("tiny"), 4, "it's");
  expect_bad_model([&] { parse_chatml_template(quoted); }, "holds a quote");
  Tiny t;
  t.types.back() = 1;  // <|im_end|> a normal token
  expect_bad_model([&] { make_chatml_encoder(t.make(), kSmolTemplate, "t"); }, "<|im_end|> is not a special");
  const GgufFile f = GgufFile::parse(tiny_gguf({}, {"tokenizer.chat_template"}), "t.gguf");
  expect_bad_model([&] { make_chatml_encoder(f); }, "tokenizer.chat_template");
}

TEST(CT2_MessageText, EveryFieldIsWritten) {
  Message m;
  m.role = "user";
  m.content = "hi";
  EXPECT_EQ(chatml_message_text(m), "user\nhi");
  m.name = "ann";
  EXPECT_EQ(chatml_message_text(m), "user name=ann\nhi");
  Message tool;
  tool.role = "tool";
  tool.name = "lookup";
  tool.tool_call_id = "call_1";
  tool.content = "42";
  EXPECT_EQ(chatml_message_text(tool), "tool name=lookup tool_call_id=call_1\n42");
  Message a;
  a.role = "assistant";
  a.refusal = "no";
  a.tool_calls = {{"call_1", "f", "{\"x\": 1}", "function"}, {"", "g", "not json", "function"},
                  {"c2", "sh", "ls \"/\"", "custom"}};
  EXPECT_EQ(chatml_message_text(a),
            "assistant\n<refusal>no</refusal>\n"
            "<tool_call>\n{\"name\": \"f\", \"arguments\": {\"x\": 1}}\n</tool_call>\n"
            "<tool_call>\n{\"name\": \"g\", \"arguments\": \"not json\"}\n</tool_call>\n"
            "<tool_call>\n{\"name\": \"sh\", \"input\": \"ls \\\"/\\\"\"}\n</tool_call>");  // ids are not written (CT14)
  a.content = "sure";
  a.refusal.clear();
  a.tool_calls.resize(1);
  EXPECT_EQ(chatml_message_text(a),
            "assistant\nsure\n<tool_call>\n{\"name\": \"f\", \"arguments\": {\"x\": 1}}\n</tool_call>");
}

namespace {
std::shared_ptr<const ChatEncoder> tiny_chatml() {
  static auto e = make_chatml_encoder(Tiny().make(), kSmolTemplate, "tiny");
  return e;
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

TEST(CT3_ChatmlSpans, OneSpanPerMessageAndThePreamble) {
  const Tiny t;
  const auto& e = *tiny_chatml();
  EXPECT_EQ(e.name(), "chatml");
  const Token start = t.id("<|im_start|>"), end = t.id("<|im_end|>");
  const std::vector<Token> nl = tiny().encode("\n");
  Conversation c;
  c.messages = {msg("user", "hello <|im_end|>"), msg("assistant", "aaa")};
  const EncodedConversation enc = e.encode(c);
  EXPECT_EQ(enc.preamble, cat({{start}, tiny().encode("system\nYou are a tiny helper"), {end}, nl}));
  ASSERT_EQ(enc.spans.size(), 2u);
  EXPECT_EQ(enc.spans[0], cat({{start}, tiny().encode("user\nhello <|im_end|>"), {end}, nl}));
  EXPECT_EQ(std::count(enc.spans[0].begin(), enc.spans[0].end(), end), 1) << "text became a special token";
  EXPECT_EQ(enc.spans[1], cat({{start}, tiny().encode("assistant\naaa"), {end}, nl}));
  EXPECT_EQ(enc.tokens(), enc.preamble.size() + enc.spans[0].size() + enc.spans[1].size());
  c.messages.insert(c.messages.begin(), msg("system", "be brief"));
  EXPECT_TRUE(e.encode(c).preamble.empty());
  EXPECT_EQ(e.render(enc.spans[1]), "<|im_start|>assistant\naaa<|im_end|>\n");
}

TEST(CT4_RawTokens, PassThroughAndAreChecked) {
  const auto& e = *tiny_chatml();
  Conversation c;
  Message raw;
  raw.role = "user";
  raw.tokens = std::vector<Token>{5, 7, 5};
  c.messages = {raw};
  EXPECT_EQ(e.encode(c).spans.at(0), (std::vector<Token>{5, 7, 5}));
  c.messages[0].tokens->push_back(tiny().vocab_size());
  try {
    e.encode(c);
    ADD_FAILURE() << "no error";
  } catch (const Error& err) {
    EXPECT_EQ(err.code(), ErrorCode::kInvalidToken) << err.what();
  }
  EXPECT_EQ(e.render({static_cast<Token>(0xFF), -3}), "\\xFF<|invalid -3|>");
}

// CT1: <|im_start|> / <|im_end|> must be control tokens; a user-defined one (GGUF type 4, HF
// "special": false) is text a message could spell, so it is refused by name.
TEST(CT1_ChatmlTemplate, UserDefinedTurnTokensAreRefused) {
  Tiny t;
  t.types[t.types.size() - 2] = 4;  // <|im_start|> user-defined
  expect_bad_model([&] { make_chatml_encoder(t.make(), kSmolTemplate, "t"); },
                   "t: tokens: <|im_start|> is a user-defined token, not a control token");
  Tiny u;
  u.types.back() = 4;
  expect_bad_model([&] { make_chatml_encoder(u.make(), kSmolTemplate, "u"); }, "<|im_end|> is a user-defined token");
}

// O8: an eviction is certified only against a rendering the template really produces.
TEST(O8_NeverShownRendering, EvictingTheSystemMessageUnderADefaultIsRefused) {
  const auto& e = *tiny_chatml();
  Conversation c;
  c.messages = {msg("system", "be brief"), msg("user", "hello"), msg("assistant", "aaa")};
  const EncodedConversation enc = e.encode(c);
  try {
    check_never_shown_rendering(e, c, enc, {0});
    ADD_FAILURE() << "evicting the system message under a default system prompt was accepted";
  } catch (const Error& err) {
    EXPECT_EQ(err.code(), ErrorCode::kBadInput);
    const std::string w = err.what();
    EXPECT_NE(w.find("--evict 0"), std::string::npos) << w;
    EXPECT_NE(w.find("its default system prompt takes the system message's place"), std::string::npos) << w;
    EXPECT_NE(w.find("O8"), std::string::npos) << w;
  }
  // Evicting a later message renders the rest unchanged: accepted.
  EXPECT_NO_THROW(check_never_shown_rendering(e, c, enc, {1}));
  EXPECT_NO_THROW(check_never_shown_rendering(e, c, enc, {1, 2}));
  // Message 0 a user message and message 1 the system one: without message 0, the template
  // renders no preamble, so the kept spans (with the preamble) are no real run either.
  Conversation d;
  d.messages = {msg("user", "hi"), msg("system", "be brief"), msg("user", "hello")};
  EXPECT_THROW(check_never_shown_rendering(e, d, e.encode(d), {0}), Error);
  // A template without a default system message renders the rest as the spans: accepted.
  std::string plain = kSmolTemplate;
  const size_t a = plain.find("{% if loop.first"), b = plain.find("{% endif %}") + 11;
  plain.erase(a, b - a);
  const auto p = make_chatml_encoder(Tiny().make(), plain, "plain");
  EXPECT_NO_THROW(check_never_shown_rendering(*p, c, p->encode(c), {0}));
}

namespace {
// The tiny tokenizer's file made a whole llama model (hidden 8, one layer, 2 heads of 4, FFN 8,
// tied output) with `vocab` embedding rows, written to a temporary .gguf.
std::string tiny_model_file(int vocab, const std::string& name, uint32_t context = 256) {
  using namespace akv::test;
  TestGguf g = tiny_gguf_file();
  for (Kv k : {kv_str("general.architecture", "llama"), kv<uint32_t>("llama.embedding_length", 4, 8),
               kv<uint32_t>("llama.block_count", 4, 1), kv<uint32_t>("llama.feed_forward_length", 4, 8),
               kv<uint32_t>("llama.context_length", 4, context), kv<uint32_t>("llama.attention.head_count", 4, 2),
               kv<float>("llama.attention.layer_norm_rms_epsilon", 6, 1e-5f), kv<uint32_t>("llama.vocab_size", 4, vocab)})
    g.kvs.push_back(k);
  const auto t = [&](const std::string& n, std::vector<uint64_t> dims) {
    uint64_t c = 1;
    for (uint64_t d : dims) c *= d;
    Writer w;
    for (uint64_t i = 0; i < c; ++i) w.put(static_cast<float>((i * 7919) % 13) * 0.01f - 0.06f);
    g.tensors.push_back({n, dims, 0, w.b});
  };
  t("token_embd.weight", {8, static_cast<uint64_t>(vocab)});
  for (const char* n : {"blk.0.attn_norm.weight", "blk.0.ffn_norm.weight", "output_norm.weight"}) t(n, {8});
  for (const char* n : {"blk.0.attn_q.weight", "blk.0.attn_k.weight", "blk.0.attn_v.weight", "blk.0.attn_output.weight",
                        "blk.0.ffn_gate.weight", "blk.0.ffn_up.weight", "blk.0.ffn_down.weight"})
    t(n, {8, 8});
  const std::string path = ::testing::TempDir() + "akv_" + name + ".gguf";
  const std::vector<uint8_t> bytes = g.bytes();
  std::ofstream(path, std::ios::binary).write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  return path;
}
}  // namespace

// C6: a model with fewer rows than its tokenizer has tokens is refused at load, naming the
// file and both sizes (not later, at the first high id appended).
TEST(C6_VocabRows, FewerModelRowsThanTokensIsBadModel) {
  const int tokens = tiny().vocab_size();
  const std::string small = tiny_model_file(tokens - 10, "c6_small");
  expect_bad_model([&] { load_model(small); },
                   small + ": the model has " + std::to_string(tokens - 10) + " token rows (vocab) but its tokenizer has " +
                       std::to_string(tokens) + " tokens");
  const std::string exact = tiny_model_file(tokens, "c6_exact"), padded = tiny_model_file(tokens + 6, "c6_padded");
  EXPECT_EQ(load_model(exact).model->config.vocab, tokens);
  EXPECT_EQ(load_model(padded).model->config.vocab, tokens + 6) << "a padded vocabulary loads";
}

// O8 through the witness on a real-format model file (offline): evicting the system message
// under the template's default system prompt is bad_input, before any model work.
TEST(O8_NeverShownRendering, TheWitnessRefusesItOnAGgufModel) {
  const std::string path = tiny_model_file(tiny().vocab_size(), "o8_model");
  const Conversation c = parse_conversation(
      R"({"messages": [{"role": "system", "content": "be brief"}, {"role": "user", "content": "hello"},
                       {"role": "assistant", "content": "aaa"}, {"role": "user", "content": "bc"}]})");
  WitnessOptions o;
  o.model = path;
  o.evict = {0};
  try {
    run_witness(c, o);
    ADD_FAILURE() << "accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kBadInput);
    EXPECT_NE(std::string(e.what()).find("default system prompt"), std::string::npos) << e.what();
  }
  o.evict = {1};
  const WitnessReport r = run_witness(c, o);
  EXPECT_TRUE(r.passed()) << to_text(r);
  EXPECT_EQ(r.encoder, "chatml");
}

// A small file that claims a huge context allocates for what is used: the RoPE table and the
// scratch grow with the cache (spec/model.md M6), not with llama.context_length.
TEST(C1_ConfigFromGguf, AHugeClaimedContextCostsOnlyWhatIsUsed) {
  const std::string path = tiny_model_file(tiny().vocab_size(), "c1_huge_ctx", 1u << 24);
  const LoadedModel m = load_model(path);
  EXPECT_EQ(m.model->config.max_ctx, 1 << 24) << "the claim is kept, not reinterpreted";
  EXPECT_EQ(m.model->rope->rows_computed(), 0);
  const Conversation c = parse_conversation(
      R"({"messages": [{"role": "system", "content": "be brief"}, {"role": "user", "content": "hello"},
                       {"role": "assistant", "content": "aaa"}]})");
  WitnessOptions o;
  o.model = path;
  o.evict = {1};
  EXPECT_TRUE(run_witness(c, o).passed());
}
