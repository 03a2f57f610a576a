// The grammar engine of constrained decoding (spec/serving.md SV14) on the synthetic `tiny`
// model's fixture vocabulary (byte tokens 0..255, markers and reserved ids 256..287 control,
// <|end|> 260 the stop token): greedy decoding over seeded random logits under a grammar's mask
// always gives text that parses as JSON and is valid under the schema (an independent validator,
// chat_grammar_support.hpp); the same tokens give the same masks, bit for bit; a refused token
// changes nothing; a schema the engine would not enforce is refused naming its JSON path.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "chat/grammar.hpp"
#include "chat_grammar_support.hpp"
#include "reference/error.hpp"
#include "runtime/models.hpp"

namespace akv {
namespace {

using namespace chat;
using namespace test_grammar;

const std::string kPath = "response_format.json_schema.schema";

const LoadedModel& tiny() {
  static const LoadedModel m = load_model("tiny", 1);
  return m;
}
const ChatEncoder& enc() { return *tiny().encoder; }
const GrammarVocabulary& vocab() {
  static const GrammarVocabulary v(enc());
  return v;
}

Json J(const char* text) { return Json::parse(text); }

// The schemas the decoding tests draw under: every keyword family the checker admits.
const std::vector<const char*>& schemas() {
  static const std::vector<const char*> s = {
      R"({"type": "object", "properties": {"name": {"type": "string", "maxLength": 12}, "age": {"type": "integer", "minimum": 0, "maximum": 120},
          "tags": {"type": "array", "items": {"enum": ["a", "b", "c"]}, "maxItems": 3}, "nickname": {"type": ["string", "null"]}},
          "required": ["name", "age"], "additionalProperties": false})",
      R"({"$defs": {"point": {"type": "object", "properties": {"x": {"type": "number", "minimum": -10, "maximum": 10},
          "y": {"type": "integer", "exclusiveMinimum": 0, "exclusiveMaximum": 100}}, "required": ["x", "y"]}},
          "type": "object", "properties": {"from": {"$ref": "#/$defs/point"}, "to": {"$ref": "#/$defs/point"}, "label": {"const": "segment"}},
          "required": ["from", "to", "label"]})",
      R"({"anyOf": [{"type": "integer", "multipleOf": 5}, {"type": "string", "pattern": "^[a-z]{2,5}$"}, {"type": "boolean"}]})",
      R"({"type": "array", "prefixItems": [{"type": "string", "format": "date"}, {"type": "integer", "minimum": 1}],
          "items": {"type": "null"}, "minItems": 1, "maxItems": 4})",
      R"({"type": "object", "properties": {"id": {"type": "string", "format": "uuid"}, "ip": {"type": "string", "format": "ipv4"},
          "at": {"type": "string", "format": "time"}, "mail": {"type": "string", "format": "email"}, "host": {"type": "string", "format": "hostname"}},
          "required": ["id", "ip", "at", "mail", "host"]})",
      R"({"type": "object", "properties": {"n": {"type": "integer"}}, "additionalProperties": {"type": "boolean"},
          "minProperties": 1, "maxProperties": 3})",
      R"({"type": "object", "properties": {"s": {"type": "string", "minLength": 2, "maxLength": 6}, "t": {"type": "string"}}, "required": ["s", "t"]})",
      R"({"enum": [1, "two", null, {"three": 3}, [4]]})",
      R"({"type": "object", "properties": {"value": {"type": "integer"}, "next": {"anyOf": [{"$ref": "#"}, {"type": "null"}]}},
          "required": ["value", "next"]})",
      R"({"type": "object", "patternProperties": {"^x_[a-z]{1,3}$": {"type": "integer"}}, "additionalProperties": false, "maxProperties": 3})",
      R"({"type": "object", "propertyNames": {"pattern": "^[a-z]{1,4}$"}, "additionalProperties": {"type": "string", "maxLength": 3},
          "maxProperties": 3})",
      R"({"oneOf": [{"type": "object", "properties": {"kind": {"const": "a"}, "n": {"type": "integer"}}, "required": ["kind", "n"]},
          {"type": "object", "properties": {"kind": {"const": "b"}, "s": {"type": "string"}}, "required": ["kind", "s"]}]})",
      R"({"type": "string"})",
  };
  return s;
}

// The lean of schemas()[i]'s decodes: '}' is an email character, so it closes nothing there.
Lean lean_for(size_t i) {
  Lean lean;
  if (std::string(schemas()[i]).find("\"email\"") != std::string::npos) lean.closers = "\"]";
  return lean;
}

// Decodes under `g` from a fresh matcher; the reply must end within the budget, parse as JSON
// and be valid under `schema`. Returns the decode for further checks.
Decode decode_valid(const Grammar& g, const Json& schema, uint64_t seed, const Lean& lean = {}) {
  GrammarMatcher m(g);
  Decode d = greedy_decode(m, enc(), seed, 3000, lean);
  EXPECT_TRUE(d.failure.empty() && d.stopped) << d.failure << "\n  text so far: " << d.text;
  EXPECT_TRUE(m.is_terminated());
  Json v;
  const std::string parse_error = parse_json(d.text, v);
  EXPECT_EQ(parse_error, "") << "seed " << seed << ": not JSON: " << d.text;
  if (parse_error.empty()) {
    EXPECT_EQ(violation(v, schema, schema), "") << "seed " << seed << ": " << d.text;
  }
  return d;
}

TEST(SV14_GrammarVocabulary, TheFixtureBytesAreTextItsMarkersControlItsEndTheStop) {
  for (Token id = 0; id < 256; ++id) EXPECT_FALSE(enc().is_control(id)) << id;
  for (Token id = 256; id < enc().vocab_size(); ++id) EXPECT_TRUE(enc().is_control(id)) << id;
  EXPECT_TRUE(enc().is_control(-1));
  EXPECT_TRUE(enc().is_control(enc().vocab_size()));
  EXPECT_EQ(vocab().size(), enc().vocab_size());
  EXPECT_EQ(vocab().stop_token(), enc().end_of_turn());
  EXPECT_EQ(vocab().mask_words(), (static_cast<size_t>(enc().vocab_size()) + 31) / 32);
  EXPECT_EQ(std::string(GrammarVocabulary::engine()).rfind("xgrammar 0.2.8+akv.", 0), 0u) << "the patched build";
}

TEST(SV14_JsonSchema, GreedyDecodesOverRandomLogitsParseAndAreValid) {
  for (size_t i = 0; i < schemas().size(); ++i) {
    SCOPED_TRACE("schema " + std::to_string(i) + ": " + schemas()[i]);
    const Json schema = J(schemas()[i]);
    const Grammar g = Grammar::json_schema(vocab(), schema, kPath);
    for (uint64_t seed = 1; seed <= 6; ++seed) decode_valid(g, schema, seed * 1000 + i, lean_for(i));
  }
}

TEST(SV14_JsonObject, GreedyDecodesAreJsonObjects) {
  const Grammar g = Grammar::json_object(vocab());
  for (uint64_t seed = 1; seed <= 12; ++seed) {
    GrammarMatcher m(g);
    const Decode d = greedy_decode(m, enc(), seed, 3000);
    ASSERT_TRUE(d.failure.empty() && d.stopped) << d.failure << "\n  " << d.text;
    Json v;
    ASSERT_EQ(parse_json(d.text, v), "") << d.text;
    EXPECT_TRUE(v.is_object()) << d.text;
  }
}

// Random schemas (SchemaDraw, chat_grammar_support.hpp): each is refused with Error(kBadInput)
// naming a path under the schema's, or every greedy decode under it is JSON valid under it. The
// property behind "never wider than the schema".
TEST(SV14_JsonSchema, RandomSchemasAreRefusedByPathOrEveryDecodeIsValid) {
  size_t compiled = 0, refused = 0, decodes = 0;
  for (uint64_t seed = 1; seed <= 240; ++seed) {
    SchemaDraw draw(seed);
    Json schema = draw.schema(3);
    if (seed % 5 == 0) schema = Json{{"$defs", Json{{"d", schema}}}, {"type", "object"},
                                     {"properties", Json{{"a", Json{{"$ref", "#/$defs/d"}}}}}, {"required", Json::array({"a"})}};
    SCOPED_TRACE("seed " + std::to_string(seed) + ": " + schema.dump());
    std::optional<Grammar> g;
    try {
      g = Grammar::json_schema(vocab(), schema, kPath);
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kBadInput);
      EXPECT_EQ(std::string(e.what()).rfind(kPath, 0), 0u) << e.what();
      std::printf("[ report ] seed %llu refused: %s\n  %s\n", static_cast<unsigned long long>(seed), e.what(), schema.dump().c_str());
      ++refused;
      continue;
    }
    ++compiled;
    for (uint64_t k = 0; k < 3; ++k, ++decodes) decode_valid(*g, schema, seed * 7 + k);
  }
  std::printf("[ report ] %zu random schemas compiled (%zu decodes, each JSON valid under its schema), %zu refused\n",
              compiled, decodes, refused);
  EXPECT_GT(compiled, 200u) << "the draw must mostly give schemas the engine enforces";
}

// The mask is a function of the grammar's source and the tokens accepted: a grammar compiled
// again on a fresh vocabulary (cold cache, other grammars compiled first), the cached grammar,
// and a copy of a matcher taken halfway give the same masks, bit for bit.
TEST(SV14_JsonSchema, TheSameTokensGiveTheSameMasks) {
  for (const size_t which : {size_t{1}, size_t{8}, size_t{10}}) {
    SCOPED_TRACE(schemas()[which]);
    const Json schema = J(schemas()[which]);
    const Grammar g1 = Grammar::json_schema(vocab(), schema, kPath);
    GrammarMatcher first(g1);
    const Decode d = greedy_decode(first, enc(), 77, 3000);
    ASSERT_TRUE(d.stopped) << d.failure;
    ASSERT_GT(d.tokens.size(), 4u);
    std::vector<Token> tokens = d.tokens;
    tokens.push_back(vocab().stop_token());

    const GrammarVocabulary fresh(enc());
    (void)Grammar::json_object(fresh);
    (void)Grammar::json_schema(fresh, J(schemas()[0]), kPath);
    const Grammar g2 = Grammar::json_schema(fresh, schema, kPath);
    const Grammar g3 = Grammar::json_schema(vocab(), schema, kPath);  // from the cache
    EXPECT_EQ(g1.source(), g2.source());
    EXPECT_EQ(g1.source(), g3.source());

    GrammarMatcher m2(g2), m3(g3), half(g1);
    std::unique_ptr<GrammarMatcher> copy;
    std::vector<uint32_t> mask;
    for (size_t k = 0; k < tokens.size(); ++k) {
      if (k == tokens.size() / 2) copy = std::make_unique<GrammarMatcher>(half);
      for (GrammarMatcher* m : {&m2, &m3, &half, copy.get()}) {
        if (!m) continue;
        m->fill_mask(mask);
        ASSERT_EQ(mask.size(), d.masks[k].size());
        ASSERT_EQ(std::memcmp(mask.data(), d.masks[k].data(), mask.size() * sizeof(uint32_t)), 0) << "step " << k;
        ASSERT_TRUE(m->accept(tokens[k])) << "step " << k;
      }
    }
    EXPECT_TRUE(m2.is_terminated() && m3.is_terminated() && half.is_terminated() && copy->is_terminated());
  }
}

// The vocabulary is shared by a server's handler threads: grammars compiled on two threads at
// once, the same and different ones, are those compiled alone, mask for mask.
TEST(SV14_GrammarVocabulary, CompilesOnTwoThreadsAtOnceGiveTheGrammarsCompiledAlone) {
  const GrammarVocabulary shared(enc());
  std::vector<Grammar> a, b;
  std::thread other([&] {
    for (size_t i = 0; i < schemas().size(); ++i) b.push_back(Grammar::json_schema(shared, J(schemas()[i]), kPath));
  });
  for (size_t i = schemas().size(); i-- > 0;) a.insert(a.begin(), Grammar::json_schema(shared, J(schemas()[i]), kPath));
  other.join();
  for (size_t i = 0; i < schemas().size(); ++i) {
    SCOPED_TRACE(schemas()[i]);
    const Grammar alone = Grammar::json_schema(vocab(), J(schemas()[i]), kPath);
    ASSERT_EQ(a[i].source(), alone.source());
    ASSERT_EQ(b[i].source(), alone.source());
    GrammarMatcher reference(alone);
    const Decode d = greedy_decode(reference, enc(), 31 + i, 3000, lean_for(i));
    ASSERT_TRUE(d.stopped) << d.failure;
    for (const Grammar* g : {&a[i], &b[i]}) {
      GrammarMatcher m(*g);
      std::vector<uint32_t> mask;
      for (size_t k = 0; k < d.tokens.size(); ++k) {
        m.fill_mask(mask);
        ASSERT_EQ(mask, d.masks[k]) << "step " << k;
        ASSERT_TRUE(m.accept(d.tokens[k]));
      }
    }
  }
}

// accept() of an id the mask does not allow returns false and changes nothing.
TEST(SV14_Matcher, ARefusedTokenChangesNothing) {
  const Json schema = J(schemas()[0]);
  const Grammar g = Grammar::json_schema(vocab(), schema, kPath);
  GrammarMatcher probe(g);
  const Decode d = greedy_decode(probe, enc(), 5, 3000);
  ASSERT_TRUE(d.stopped) << d.failure;
  GrammarMatcher m(g);
  std::vector<uint32_t> before, after;
  size_t refused = 0;
  for (size_t k = 0; k < d.tokens.size(); ++k) {
    m.fill_mask(before);
    std::vector<Token> bad = {-1, vocab().size(), 256, 287};
    if (!m.can_end()) bad.push_back(vocab().stop_token());
    for (Token id = 0; id < 256; ++id)
      if (!mask_allows(before, id)) {
        bad.push_back(id);
        break;
      }
    for (Token id : bad) {
      ASSERT_FALSE(m.accept(id)) << "step " << k << " id " << id;
      ++refused;
    }
    m.fill_mask(after);
    ASSERT_EQ(before, after) << "step " << k;
    ASSERT_EQ(m.accepted(), k);
    ASSERT_TRUE(m.accept(d.tokens[k]));
  }
  EXPECT_GT(refused, 4 * d.tokens.size());
  ASSERT_TRUE(m.accept(vocab().stop_token()));
  EXPECT_TRUE(m.is_terminated());
  EXPECT_FALSE(m.can_end());
  m.fill_mask(after);
  EXPECT_EQ(after, std::vector<uint32_t>(vocab().mask_words(), 0)) << "a terminated matcher allows nothing";
  for (Token id : {Token{'{'}, Token{' '}, vocab().stop_token()}) EXPECT_FALSE(m.accept(id));
}

// The reply's bytes stay valid UTF-8: after ED (U+D000-U+DFFF) only 80-9F may follow (no
// surrogate), and the reply cannot stop inside a character.
TEST(SV14_Matcher, RepliesStayValidUtf8) {
  GrammarMatcher m(Grammar::json_schema(vocab(), J(R"({"type": "string"})"), kPath));
  std::vector<uint32_t> mask;
  ASSERT_TRUE(m.accept('"'));
  ASSERT_TRUE(m.accept(0xED));
  m.fill_mask(mask);
  for (Token b = 0x80; b <= 0x9F; ++b) EXPECT_TRUE(mask_allows(mask, b)) << b;
  for (Token b = 0xA0; b <= 0xBF; ++b) EXPECT_FALSE(mask_allows(mask, b)) << b;
  EXPECT_FALSE(mask_allows(mask, '"'));
  EXPECT_FALSE(m.accept(0xA0));
  ASSERT_TRUE(m.accept(0x9F));
  ASSERT_TRUE(m.accept(0xBF));  // U+D7FF
  ASSERT_TRUE(m.accept('"'));
  EXPECT_TRUE(m.can_end());

  ToolCallOptions o;
  o.required = false;
  GrammarMatcher text(Grammar::tool_calls(vocab(), {{"ping", nullptr, "tools[0].function"}}, o));
  EXPECT_TRUE(text.can_end());
  ASSERT_TRUE(text.accept(0xC3));
  EXPECT_FALSE(text.can_end());
  text.fill_mask(mask);
  EXPECT_FALSE(mask_allows(mask, vocab().stop_token()));
  EXPECT_FALSE(text.accept(vocab().stop_token()));
  ASSERT_TRUE(text.accept(0xA9));  // é
  EXPECT_TRUE(text.can_end());
}

// The engine is the patched build (scripts/lib/patch-xgrammar.py): a length-bounded string
// takes no raw control character (A), and a \u escape no surrogate (B).
TEST(SV14_JsonSchema, StringsTakeNoRawControlCharacterAndNoSurrogateEscape) {
  std::vector<uint32_t> mask;
  GrammarMatcher bounded(Grammar::json_schema(vocab(), J(R"({"type": "string", "maxLength": 8})"), kPath));
  ASSERT_TRUE(bounded.accept('"'));
  bounded.fill_mask(mask);
  for (Token b = 0; b < 0x20; ++b) EXPECT_FALSE(mask_allows(mask, b)) << b;
  EXPECT_TRUE(mask_allows(mask, 'a'));
  EXPECT_FALSE(mask_allows(mask, '\\'));

  GrammarMatcher plain(Grammar::json_schema(vocab(), J(R"({"type": "string"})"), kPath));
  for (Token b : {Token{'"'}, Token{'\\'}, Token{'u'}}) ASSERT_TRUE(plain.accept(b));
  plain.fill_mask(mask);
  for (const char* c = "0123456789abcdefABCDEF"; *c; ++c) EXPECT_TRUE(mask_allows(mask, *c)) << *c;
  ASSERT_TRUE(plain.accept('d'));
  plain.fill_mask(mask);
  for (const char* c = "01234567"; *c; ++c) EXPECT_TRUE(mask_allows(mask, *c)) << *c;
  for (const char* c = "89abcdefABCDEF"; *c; ++c) EXPECT_FALSE(mask_allows(mask, *c)) << *c;
}

// (C) A number without bounds has at most 16 digits before its point and a 2-digit exponent,
// an integer at most 18 digits: nothing a double or an int64 cannot hold.
TEST(SV14_JsonSchema, UnboundedNumbersStayWithinADoubleAndIntegersWithinInt64) {
  std::vector<uint32_t> mask;
  const auto digits_allowed = [&](GrammarMatcher& m) {
    m.fill_mask(mask);
    size_t n = 0;
    for (char c = '0'; c <= '9'; ++c) n += mask_allows(mask, c);
    return n;
  };
  GrammarMatcher integer(Grammar::json_schema(vocab(), J(R"({"type": "integer"})"), kPath));
  ASSERT_TRUE(integer.accept('-'));
  ASSERT_TRUE(integer.accept('9'));
  for (int i = 0; i < 17; ++i) {
    ASSERT_EQ(digits_allowed(integer), 10u) << i;
    ASSERT_TRUE(integer.accept('9'));
  }
  EXPECT_EQ(digits_allowed(integer), 0u) << "-999999999999999999 (18 digits) is the longest";
  EXPECT_TRUE(integer.can_end());

  GrammarMatcher number(Grammar::json_schema(vocab(), J(R"({"type": "number"})"), kPath));
  for (int i = 0; i < 16; ++i) ASSERT_TRUE(number.accept('9')) << i;
  EXPECT_EQ(digits_allowed(number), 0u);
  for (char c : std::string(".12345678901234567890e-")) ASSERT_TRUE(number.accept(c)) << c;
  ASSERT_TRUE(number.accept('9'));
  ASSERT_TRUE(number.accept('9'));
  EXPECT_EQ(digits_allowed(number), 0u) << "an exponent of two digits at most";
  EXPECT_TRUE(number.can_end());
}

// Properties are written in the schema's key order (ordered_json), which is part of the source.
TEST(SV14_JsonSchema, PropertiesFollowTheSchemasKeyOrder) {
  const Json za = J(R"({"type": "object", "properties": {"zeta": {"type": "integer"}, "alpha": {"type": "integer"}}, "required": ["zeta", "alpha"]})");
  const Json az = J(R"({"type": "object", "properties": {"alpha": {"type": "integer"}, "zeta": {"type": "integer"}}, "required": ["zeta", "alpha"]})");
  const Grammar g = Grammar::json_schema(vocab(), za, kPath);
  EXPECT_NE(g.source(), Grammar::json_schema(vocab(), az, kPath).source());
  for (uint64_t seed = 1; seed <= 4; ++seed) {
    const Decode d = decode_valid(g, za, seed);
    EXPECT_LT(d.text.find("\"zeta\""), d.text.find("\"alpha\"")) << d.text;
  }
}

// Whitespace runs between JSON tokens are at most JsonStyle::max_whitespace long, however much
// the logits favour whitespace.
TEST(SV14_JsonSchema, WhitespaceIsBounded) {
  const Json schema = J(R"({"type": "object", "properties": {"xs": {"type": "array", "items": {"type": "integer"}, "maxItems": 6}}, "required": ["xs"]})");
  JsonStyle style;
  style.max_whitespace = 2;
  const Grammar g = Grammar::json_schema(vocab(), schema, kPath, style);
  EXPECT_NE(g.source(), Grammar::json_schema(vocab(), schema, kPath).source());
  Lean lean;
  lean.whitespace_bonus = 0.9f;
  size_t longest = 0;
  for (uint64_t seed = 1; seed <= 4; ++seed) {
    const Decode d = decode_valid(g, schema, seed, lean);
    size_t run = 0;
    for (char c : d.text) {
      run = (c == ' ' || c == '\n' || c == '\t' || c == '\r') ? run + 1 : 0;
      longest = std::max(longest, run);
    }
  }
  EXPECT_EQ(longest, 2u) << "the lean toward whitespace must reach the bound, and never pass it";
  style.max_whitespace = 0;
  EXPECT_THROW(Grammar::json_schema(vocab(), schema, kPath, style), Error);
}

struct Refusal {
  const char* schema;
  std::string path;  // the message starts with path + ": "
  const char* says;  // and contains this
};

TEST(SV14_JsonSchema, ABadOrUnenforceableSchemaIsRefusedNamingItsPath) {
  const std::string P = kPath;
  std::string deep = R"({"type": "string"})", deep_path = P;
  for (int i = 0; i < 70; ++i) deep = R"({"type": "array", "items": )" + deep + "}";
  for (int i = 0; i < 65; ++i) deep_path += ".items";
  const std::vector<Refusal> cases = {
      {R"({"type": "object", "properties": {"x": {"type": "string", "pattern": "(?=a)b"}}})", P + ".properties.x.pattern", "Lookahead"},
      {R"({"type": "array", "items": {"type": "integer"}, "uniqueItems": true})", P + ".uniqueItems", "not a keyword"},
      {R"({"not": {"type": "string"}})", P + ".not", "not a keyword"},
      {R"({"type": "string", "format": "idn-email"})", P + ".format", "idn-email"},
      {R"({"type": "number", "multipleOf": 0.5})", P + ".multipleOf", "number"},
      {R"({"type": "integer", "multipleOf": 2.5})", P + ".multipleOf", "whole number"},
      {R"({"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a", "b"]})", P + ".required[1]", "\"b\""},
      {R"({"$ref": "#/$defs/a", "minimum": 1, "$defs": {"a": {"type": "integer"}}})", P + ".minimum", "$ref"},
      {R"({"$ref": "#/$defs/missing"})", P + ".$ref", "#/$defs/missing"},
      {R"({"$ref": "https://example.com/s.json"})", P + ".$ref", "not a pointer"},
      {R"({"type": "strin"})", P + ".type", "strin"},
      {R"({"type": "string", "pattern": "a{2,"})", P + ".pattern", "refuses"},
      {R"({"anyOf": []})", P + ".anyOf", "non-empty"},
      {R"({"allOf": [{"type": "string"}, {"maxLength": 3}]})", P + ".allOf", "allOf"},
      {R"({"oneOf": [{"type": "string"}, {"type": "string", "minLength": 2}]})", P, "oneOf"},
      {R"({"type": "object", "properties": {"a b": {"type": "foo"}}})", P + ".properties[\"a b\"].type", "foo"},
      {R"({"anyOf": [{"type": "string", "minLength": 1, "pattern": "x"}]})", P + ".anyOf[0].minLength", "pattern"},
      {R"({"type": "integer", "minimum": 0.5})", P + ".minimum", "whole numbers"},
      {R"({"type": "string", "minimum": 1})", P + ".minimum", "does not apply"},
      {"42", P, "expected a schema"},
      {"false", P, "false"},
      {R"({"type": "array", "items": [{"type": "string"}]})", P + ".items", "prefixItems"},
      {R"({"type": "object", "dependentRequired": {}})", P + ".dependentRequired", "not a keyword"},
      {R"({"properties": {}, "x-foo": 1})", P + ".x-foo", "not a keyword"},
      {R"({"minLength": 3})", P + ".minLength", "without `type`"},
      {R"({"type": "string", "pattern": "^.{0,300}$"})", P + ".pattern", "128"},
      {R"({"type": "string", "pattern": "^\"$"})", P + ".pattern", "invalid JSON"},
      {R"({"type": "string", "pattern": "^[à-ü]+$"})", P + ".pattern", "ASCII"},
      {R"({"type": "string", "format": "json-pointer"})", P + ".format", "invalid JSON"},
      {R"({"type": "string", "format": "date", "pattern": "x"})", P + ".pattern", "format"},
      {R"({"type": "string", "maxLength": 3, "format": "date"})", P + ".maxLength", "format"},
      {R"({"$defs": {"a": {"type": "string", "minLength": -1}}, "$ref": "#/$defs/a"})", P + ".$defs.a.minLength", "non-negative"},
      {R"({"type": "object", "properties": {"a": {"$ref": "#/properties"}}})", P + ".properties.a.$ref", "no schema"},
      {R"({"$defs": {"a": {"anyOf": [{"type": "integer"}]}}, "type": "object", "properties": {"x": {"$ref": "#/$defs/a/anyOf/0"}}})",
       P + ".properties.x.$ref", "no schema"},
      {R"({"type": "object", "properties": {"a": {"type": "integer"}}, "anyOf": [{}]})", P + ".type", "beside `anyOf`"},
      {R"({"enum": [1, "a"], "type": "integer"})", P + ".type", "enum[1]"},
      {R"({"const": 1, "enum": [1]})", P + ".enum", "const"},
      {R"({"type": "object", "additionalProperties": {"type": "integer"}, "unevaluatedProperties": false})", P + ".unevaluatedProperties", "additionalProperties"},
      {R"({"type": ["string", "null"], "items": {}})", P + ".items", "does not apply"},
      {R"({"type": "object", "properties": {"a": {"type": "string"}}, "required": "a"})", P + ".required", "array"},
      {R"({"type": "object", "propertyNames": {"type": "integer"}})", P + ".propertyNames.type", "strings"},
      {R"({"type": "string", "minLength": 5, "maxLength": 2})", P + ".minLength", "maxLength"},
      {deep.c_str(), deep_path, "nested deeper than 64"},
      // Schemas no finite value satisfies: xgrammar compiles them into grammars that dead-end.
      {R"({"$ref": "#"})", P, "no finite JSON value"},
      {R"({"type": "array", "minItems": 1})", P + ".minItems", "without `items`"},
      {R"({"$defs": {"a": {"$ref": "#/$defs/b"}, "b": {"anyOf": [{"$ref": "#/$defs/a"}]}}, "$ref": "#/$defs/a"})", P, "no finite"},
      {R"({"type": "object", "properties": {"a": {"$ref": "#"}}, "required": ["a"]})", P, "no finite JSON value"},
      {R"({"type": "array", "items": {"$ref": "#"}, "minItems": 1})", P, "no finite JSON value"},
      {R"({"type": "object", "properties": {"n": {"type": "integer"}, "b": {"$ref": "#/$defs/loop"}}, "$defs": {"loop": {"$ref": "#/$defs/loop"}}})",
       P + ".$defs.loop", "no finite JSON value"},
  };
  for (const Refusal& c : cases) {
    SCOPED_TRACE(c.schema);
    const Json schema = J(c.schema);
    for (int round = 0; round < 2; ++round) {  // refused again: nothing cached makes it pass
      try {
        (void)Grammar::json_schema(vocab(), schema, kPath);
        ADD_FAILURE() << "accepted";
      } catch (const Error& e) {
        EXPECT_EQ(e.code(), ErrorCode::kBadInput);
        const std::string what = e.what();
        EXPECT_EQ(what.rfind(c.path + ": ", 0), 0u) << what;
        EXPECT_NE(what.find(c.says), std::string::npos) << what;
        EXPECT_EQ(what.find('\n'), std::string::npos) << what;
      }
    }
  }
}

// Tool calls, Hermes form: `<tool_call>\n{"name": NAME, "arguments": ARGS}\n</tool_call>`, joined by "\n".
const std::vector<ToolSchema>& tools() {
  static const std::vector<ToolSchema> t = {
      {"get_weather",
       J(R"({"type": "object", "properties": {"city": {"type": "string", "maxLength": 20}, "unit": {"enum": ["celsius", "fahrenheit"]}}, "required": ["city"]})"),
       "tools[0].function"},
      {"add", J(R"({"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}}, "required": ["a", "b"], "additionalProperties": false})"),
       "tools[1].function"},
      {"ping", nullptr, "tools[2].function"},
  };
  return t;
}

// The calls of `text`, each checked: an object of exactly "name" (a known tool) and `args_key`
// (valid under that tool's parameters). Empty on any defect, which is reported.
std::vector<Json> parse_calls(const std::string& text, bool hermes, const std::vector<ToolSchema>& ts) {
  std::vector<std::string> bodies;
  if (hermes) {
    const std::string open = "<tool_call>\n", close = "\n</tool_call>";
    for (size_t at = 0;;) {
      if (text.compare(at, open.size(), open) != 0) {
        ADD_FAILURE() << "no <tool_call> at byte " << at << ": " << text;
        return {};
      }
      const size_t end = text.find(close, at + open.size());
      if (end == std::string::npos) {
        ADD_FAILURE() << "an unclosed call: " << text;
        return {};
      }
      bodies.push_back(text.substr(at + open.size(), end - at - open.size()));
      at = end + close.size();
      if (at == text.size()) break;
      if (text[at] != '\n') {
        ADD_FAILURE() << "calls not separated by a newline: " << text;
        return {};
      }
      ++at;
    }
  } else {
    bodies.push_back(text);
  }
  std::vector<Json> calls;
  const std::string args_key = hermes ? "arguments" : "parameters";
  for (const std::string& b : bodies) {
    Json call;
    if (const std::string why = parse_json(b, call); !why.empty()) {
      ADD_FAILURE() << "a call that is not JSON (" << why << "): " << b;
      return {};
    }
    EXPECT_TRUE(call.is_object() && call.size() == 2 && call.contains("name") && call.contains(args_key)) << b;
    const ToolSchema* tool = nullptr;
    for (const ToolSchema& t : ts)
      if (call["name"] == t.name) tool = &t;
    if (!tool) {
      ADD_FAILURE() << "a call to no known tool: " << b;
      return {};
    }
    const Json params = tool->parameters.is_null() ? J(R"({"type": "object", "properties": {}})") : tool->parameters;
    EXPECT_EQ(violation(call[args_key], params, params), "") << b;
    if (tool->parameters.is_null()) {
      EXPECT_EQ(call[args_key], Json::object()) << b;
    }
    calls.push_back(call);
  }
  return calls;
}

TEST(SV14_ToolCalls, RequiredCallsParseWithAKnownNameAndValidArguments) {
  for (const bool parallel : {true, false}) {
    ToolCallOptions o;
    o.parallel = parallel;
    const Grammar g = Grammar::tool_calls(vocab(), tools(), o);
    std::set<std::string> named;
    size_t most = 0;
    for (uint64_t seed = 1; seed <= 16; ++seed) {
      GrammarMatcher m(g);
      Lean lean;
      lean.stop_bonus = 0.0f;  // after a call, a second one as likely as the stop
      const Decode d = greedy_decode(m, enc(), seed, 3000, lean);
      ASSERT_TRUE(d.stopped) << d.failure << "\n" << d.text;
      const std::vector<Json> calls = parse_calls(d.text, true, tools());
      ASSERT_FALSE(calls.empty()) << d.text;
      if (!parallel) {
        EXPECT_EQ(calls.size(), 1u) << d.text;
      }
      most = std::max(most, calls.size());
      for (const Json& c : calls) named.insert(c["name"].get<std::string>());
    }
    EXPECT_EQ(named.size(), 3u) << "every tool is called under some seed";
    if (parallel) {
      EXPECT_GT(most, 1u) << "some seed makes parallel calls";
    }
  }
}

// Under tool_choice "auto" the text is free until the model writes `<tool_call>`; from there
// the call must be whole and valid.
TEST(SV14_ToolCalls, AutoLeavesTextFreeUntilTheTriggerThenConstrainsTheCall) {
  for (const bool parallel : {true, false}) {
    ToolCallOptions o;
    o.required = false;
    o.parallel = parallel;
    const Grammar g = Grammar::tool_calls(vocab(), tools(), o);
    GrammarMatcher m(g);
    std::vector<uint32_t> mask;
    m.fill_mask(mask);
    for (Token b = 0; b < 128; ++b) EXPECT_TRUE(mask_allows(mask, b)) << b;
    EXPECT_TRUE(m.can_end()) << "an empty reply is a reply";
    const std::string lead = "Let me check.\n<tool_call>";
    for (char c : lead) ASSERT_TRUE(m.accept(static_cast<unsigned char>(c))) << c;
    m.fill_mask(mask);
    for (Token id = 0; id < vocab().size(); ++id) EXPECT_EQ(mask_allows(mask, id), id == '\n') << id;
    for (uint64_t seed = 1; seed <= 4; ++seed) {
      GrammarMatcher c(m);
      const Decode d = greedy_decode(c, enc(), seed, 3000);
      ASSERT_TRUE(d.stopped) << d.failure;
      const std::string text = "<tool_call>" + d.text;
      const size_t end = text.find("\n</tool_call>");
      ASSERT_NE(end, std::string::npos) << text;
      EXPECT_EQ(parse_calls(text.substr(0, end + 13), true, tools()).size(), 1u) << text;
      if (!parallel) {
        EXPECT_EQ(end + 13, text.size()) << "one call, then only the stop token";
      }
    }
  }
}

TEST(SV14_ToolCalls, TheLlama31FormIsOneCall) {
  ToolCallOptions o;
  o.syntax = ToolCallSyntax::kLlama31;
  const Grammar g = Grammar::tool_calls(vocab(), tools(), o);
  std::set<std::string> named;
  for (uint64_t seed = 1; seed <= 12; ++seed) {
    GrammarMatcher m(g);
    const Decode d = greedy_decode(m, enc(), seed, 3000);
    ASSERT_TRUE(d.stopped) << d.failure;
    EXPECT_EQ(d.text.rfind("{\"name\": ", 0), 0u) << d.text;
    const std::vector<Json> calls = parse_calls(d.text, false, tools());
    ASSERT_EQ(calls.size(), 1u) << d.text;
    named.insert(calls[0]["name"].get<std::string>());
  }
  EXPECT_EQ(named.size(), 3u);
}

TEST(SV14_ToolCalls, BadToolsAreRefusedNamingThem) {
  const auto refused = [](const std::vector<ToolSchema>& ts, const std::string& prefix) {
    try {
      (void)Grammar::tool_calls(vocab(), ts);
      ADD_FAILURE() << "accepted; expected " << prefix;
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kBadInput);
      EXPECT_EQ(std::string(e.what()).rfind(prefix + ": ", 0), 0u) << e.what();
    }
  };
  refused({}, "tools");
  refused({tools()[0], {"get_weather", nullptr, "tools[1].function"}}, "tools[1].function.name");
  refused({{"", nullptr, "tools[0].function"}}, "tools[0].function.name");
  refused({tools()[1], {"f", J(R"({"type": "object", "properties": {"q": {"type": "string", "format": "iri"}}})"), "tools[1].function"}},
          "tools[1].function.parameters.properties.q.format");
}

// Disallowed logits become -inf, ids past the vocabulary too; the allowed keep their bits.
TEST(SV14_ApplyMask, DisallowedLogitsBecomeMinusInfinityTheOthersKeepTheirBits) {
  GrammarMatcher m(Grammar::json_schema(vocab(), J(schemas()[0]), kPath));
  ASSERT_TRUE(m.accept('{'));
  std::vector<uint32_t> mask;
  m.fill_mask(mask);
  std::vector<float> before(static_cast<size_t>(vocab().size()) + 12);
  for (size_t i = 0; i < before.size(); ++i) before[i] = uniform(9, 0, i) * 8.0f - 4.0f;
  std::vector<float> after = before;
  apply_mask(mask, after.data(), after.size());
  size_t allowed = 0;
  for (size_t i = 0; i < after.size(); ++i) {
    if (i < static_cast<size_t>(vocab().size()) && mask_allows(mask, static_cast<Token>(i))) {
      EXPECT_EQ(std::memcmp(&after[i], &before[i], sizeof(float)), 0) << i;
      ++allowed;
    } else {
      EXPECT_EQ(after[i], -std::numeric_limits<float>::infinity()) << i;
    }
  }
  EXPECT_GT(allowed, 0u);
  EXPECT_LT(allowed, static_cast<size_t>(vocab().size()));
}

TEST(SV14_GrammarSource, NamesTheEngineAndIsAFunctionOfTheRequest) {
  const Grammar a = Grammar::json_schema(vocab(), J(schemas()[1]), kPath);
  const Grammar b = Grammar::json_schema(vocab(), J(schemas()[1]), "elsewhere");
  EXPECT_EQ(a.source().rfind(std::string(GrammarVocabulary::engine()) + " structural_tag {", 0), 0u) << a.source();
  EXPECT_EQ(a.source(), b.source()) << "the error path is no part of the grammar";
  EXPECT_NE(a.source(), Grammar::json_object(vocab()).source());
  ToolCallOptions one, many;
  one.parallel = false;
  EXPECT_NE(Grammar::tool_calls(vocab(), tools(), one).source(), Grammar::tool_calls(vocab(), tools(), many).source());
  EXPECT_EQ(a.vocab_size(), vocab().size());
  EXPECT_EQ(a.stop_token(), vocab().stop_token());
}

}  // namespace
}  // namespace akv
