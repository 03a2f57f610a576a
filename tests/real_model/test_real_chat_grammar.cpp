// The grammar engine (spec/serving.md SV14) on SmolLM2-135M-Instruct's vocabulary: 49152
// byte-level BPE tokens (a token may be part of a UTF-8 character), ChatML's control tokens.
// Greedy decoding over seeded random logits under each grammar gives JSON valid under its
// schema and calls of known tools; two vocabularies built apart give the same masks for the same
// tokens; and the model itself, its logits masked, answers with a valid call and a valid object.
#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <nlohmann/json.hpp>
#include <optional>

#include "../chat_grammar_support.hpp"
#include "chat/grammar.hpp"
#include "reference/error.hpp"
#include "reference/session.hpp"
#include "runtime/backends.hpp"
#include "runtime/models.hpp"

namespace akv {
namespace {

using namespace chat;
using namespace test_grammar;
using Clock = std::chrono::steady_clock;

const std::string kPath = "response_format.json_schema.schema";

double ms_since(Clock::time_point t) { return std::chrono::duration<double, std::milli>(Clock::now() - t).count(); }

const LoadedModel& smollm2() {
  static const LoadedModel m = load_model("smollm2");
  return m;
}
const ChatEncoder& enc() { return *smollm2().encoder; }
const GrammarVocabulary& vocab() {
  static const GrammarVocabulary v = [] {
    const auto t = Clock::now();
    GrammarVocabulary built(enc());
    std::printf("[ report ] grammar vocabulary of %d ids built in %.1f ms\n", built.size(), ms_since(t));
    return built;
  }();
  return v;
}

Json J(const char* text) { return Json::parse(text); }

const Json& person() {
  static const Json s = J(R"({"type": "object", "properties": {"name": {"type": "string", "maxLength": 24}, "age": {"type": "integer", "minimum": 0, "maximum": 150},
      "born": {"type": "string", "format": "date"}, "tags": {"type": "array", "items": {"type": "string", "pattern": "^[a-z]{1,8}$"}, "maxItems": 3}},
      "required": ["name", "age"], "additionalProperties": false})");
  return s;
}

const std::vector<ToolSchema>& tools() {
  static const std::vector<ToolSchema> t = {
      {"get_weather",
       J(R"({"type": "object", "properties": {"city": {"type": "string", "description": "The city name"}, "unit": {"enum": ["celsius", "fahrenheit"]}}, "required": ["city"]})"),
       "tools[0].function"},
      {"add", J(R"({"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}}, "required": ["a", "b"]})"), "tools[1].function"},
  };
  return t;
}

TEST(SV14_RealVocabulary, ChatmlsMarkersAreControlAndNeverAllowed) {
  const int n = enc().vocab_size();
  ASSERT_EQ(vocab().size(), n);
  size_t control = 0;
  for (Token id = 0; id < n; ++id) control += enc().is_control(id);
  std::printf("[ report ] %zu control ids of %d\n", control, n);
  EXPECT_GT(control, 0u);
  EXPECT_LT(control, 1000u);
  const Token end = enc().end_of_turn();
  EXPECT_TRUE(enc().is_control(end));
  EXPECT_EQ(enc().bytes({end}), "<|im_end|>");
  const std::vector<Token> prompt = enc().generation_prompt();
  EXPECT_TRUE(enc().is_control(prompt.front())) << "<|im_start|>";
  for (Token id : enc().tokenize("{\"name\": \"Alice\"}")) EXPECT_FALSE(enc().is_control(id)) << id;
  // A grammar never allows one: the decoding helper checks every mask of every step.
  GrammarMatcher m(Grammar::json_object(vocab()));
  const Decode d = greedy_decode(m, enc(), 1, 2000);
  EXPECT_TRUE(d.failure.empty()) << d.failure;
}

TEST(SV14_RealJsonSchema, GreedyDecodesOverRandomLogitsParseAndAreValid) {
  auto t = Clock::now();
  const Grammar g = Grammar::json_schema(vocab(), person(), kPath);
  std::printf("[ report ] schema compiled in %.1f ms\n", ms_since(t));
  t = Clock::now();
  (void)Grammar::json_schema(vocab(), person(), kPath);
  std::printf("[ report ] again, from the cache, in %.3f ms\n", ms_since(t));
  size_t steps = 0;
  t = Clock::now();
  for (uint64_t seed = 1; seed <= 6; ++seed) {
    GrammarMatcher m(g);
    const Decode d = greedy_decode(m, enc(), seed, 2000);
    ASSERT_TRUE(d.failure.empty() && d.stopped) << d.failure << "\n" << d.text;
    Json v;
    ASSERT_EQ(parse_json(d.text, v), "") << d.text;
    EXPECT_EQ(violation(v, person(), person()), "") << d.text;
    steps += d.masks.size();
  }
  std::printf("[ report ] %zu masked steps, %.3f ms each (mask, random logits, accept)\n", steps, ms_since(t) / steps);
}

// Drawn schemas (SchemaDraw) over SmolLM2's tokens, where one token may span several JSON
// tokens or part of a UTF-8 character: refused by path, or every decode valid.
TEST(SV14_RealJsonSchema, DrawnSchemasAreRefusedByPathOrEveryDecodeIsValid) {
  size_t compiled = 0;
  for (uint64_t seed = 1; seed <= 12; ++seed) {
    SchemaDraw draw(seed * 977);
    const Json schema = draw.schema(2);
    SCOPED_TRACE("seed " + std::to_string(seed) + ": " + schema.dump());
    std::optional<Grammar> g;
    try {
      g = Grammar::json_schema(vocab(), schema, kPath);
    } catch (const Error& e) {
      EXPECT_EQ(std::string(e.what()).rfind(kPath, 0), 0u) << e.what();
      continue;
    }
    ++compiled;
    for (uint64_t k = 0; k < 2; ++k) {
      GrammarMatcher m(*g);
      const Decode d = greedy_decode(m, enc(), seed * 31 + k, 2000);
      ASSERT_TRUE(d.failure.empty() && d.stopped) << d.failure << "\n" << d.text;
      Json v;
      ASSERT_EQ(parse_json(d.text, v), "") << d.text;
      EXPECT_EQ(violation(v, schema, schema), "") << d.text;
    }
  }
  EXPECT_GE(compiled, 8u);
}

TEST(SV14_RealToolCalls, RequiredAndAutoCallsParseWithAKnownName) {
  for (const bool required : {true, false}) {
    ToolCallOptions o;
    o.required = required;
    const Grammar g = Grammar::tool_calls(vocab(), tools(), o);
    for (uint64_t seed = 1; seed <= 4; ++seed) {
      GrammarMatcher m(g);
      if (!required) {
        for (Token id : enc().tokenize("I will look it up.\n<tool_call>")) ASSERT_TRUE(m.accept(id)) << id;
      }
      const Decode d = greedy_decode(m, enc(), seed, 2000);
      ASSERT_TRUE(d.failure.empty() && d.stopped) << d.failure << "\n" << d.text;
      const std::string text = required ? d.text : "<tool_call>" + d.text;
      const std::string open = "<tool_call>\n", close = "\n</tool_call>";
      ASSERT_EQ(text.rfind(open, 0), 0u) << text;
      const size_t end = text.find(close);
      ASSERT_NE(end, std::string::npos) << text;
      Json call;
      ASSERT_EQ(parse_json(text.substr(open.size(), end - open.size()), call), "") << text;
      const ToolSchema* tool = nullptr;
      for (const ToolSchema& t : tools())
        if (call["name"] == t.name) tool = &t;
      ASSERT_NE(tool, nullptr) << text;
      EXPECT_EQ(violation(call["arguments"], tool->parameters, tool->parameters), "") << text;
    }
  }
}

TEST(SV14_RealJsonSchema, TwoVocabulariesGiveTheSameMasksForTheSameTokens) {
  const Grammar g1 = Grammar::tool_calls(vocab(), tools());
  GrammarMatcher first(g1);
  const Decode d = greedy_decode(first, enc(), 42, 2000);
  ASSERT_TRUE(d.stopped) << d.failure;
  const GrammarVocabulary other(enc());
  const Grammar g2 = Grammar::tool_calls(other, tools());
  ASSERT_EQ(g1.source(), g2.source());
  GrammarMatcher m(g2);
  std::vector<uint32_t> mask;
  std::vector<Token> tokens = d.tokens;
  tokens.push_back(enc().end_of_turn());
  double fill_ms = 0, accept_ms = 0;
  for (size_t k = 0; k < tokens.size(); ++k) {
    auto t = Clock::now();
    m.fill_mask(mask);
    fill_ms += ms_since(t);
    ASSERT_EQ(std::memcmp(mask.data(), d.masks[k].data(), mask.size() * sizeof(uint32_t)), 0) << "step " << k;
    t = Clock::now();
    ASSERT_TRUE(m.accept(tokens[k]));
    accept_ms += ms_since(t);
  }
  EXPECT_TRUE(m.is_terminated());
  std::printf("[ report ] per token: fill_mask %.3f ms, accept %.3f ms (%zu tokens of a tool call)\n",
              fill_ms / tokens.size(), accept_ms / tokens.size(), tokens.size());
}

// SmolLM2 answers under a grammar, greedily, its own logits masked: whatever it prefers, the
// reply is a valid call or a valid object.
std::string constrained_reply(const Conversation& c, const Grammar& g, size_t max_tokens) {
  const LoadedModel& lm = smollm2();
  auto backend = make_backend("cpu", lm.model);
  Session s(*backend);
  const EncodedConversation e = enc().encode(c);
  SpanId id = 0;
  if (!e.preamble.empty()) s.append(id++, e.preamble, LogitRows::kLast);
  for (const auto& span : e.spans) s.append(id++, span, LogitRows::kLast);
  const std::vector<Token> prompt = enc().generation_prompt();
  std::vector<float> logits = s.append(id, prompt, LogitRows::kLast);
  GrammarMatcher m(g);
  std::vector<uint32_t> mask;
  std::string text;
  for (size_t step = 0; step < max_tokens; ++step) {
    m.fill_mask(mask);
    apply_mask(mask, logits.data(), logits.size());
    Token pick = -1;
    for (size_t i = 0; i < logits.size(); ++i)
      if (pick < 0 ? logits[i] > -std::numeric_limits<float>::infinity() : logits[i] > logits[static_cast<size_t>(pick)])
        pick = static_cast<Token>(i);
    EXPECT_GE(pick, 0) << "the mask allows no token after: " << text;
    if (pick < 0 || !m.accept(pick)) break;
    if (pick == enc().end_of_turn()) break;
    text += enc().bytes({pick});
    const Token t = pick;
    logits = s.append(id, std::span<const Token>(&t, 1), LogitRows::kLast);
  }
  EXPECT_TRUE(m.is_terminated()) << "no end within " << max_tokens << " tokens: " << text;
  return text;
}

Message message(const std::string& role, const std::string& content) {
  Message m;
  m.role = role;
  m.content = content;
  return m;
}

TEST(SV14_RealModelDecode, SmolLM2WritesAValidCallAndAValidObjectUnderTheMask) {
  Conversation weather;
  const Json listed = Json::array({Json{{"name", "get_weather"}, {"parameters", tools()[0].parameters}},
                                   Json{{"name", "add"}, {"parameters", tools()[1].parameters}}});
  weather.messages.push_back(message("system", "You are a helpful assistant with tools. To call one, reply with <tool_call>\n"
                                               "{\"name\": NAME, \"arguments\": ARGS}\n</tool_call>.\n<tools>\n" +
                                                   listed.dump() + "\n</tools>"));
  weather.messages.push_back(message("user", "What is the weather in London?"));
  const std::string call_text = constrained_reply(weather, Grammar::tool_calls(vocab(), tools()), 120);
  std::printf("[ report ] SmolLM2, required tool call: %s\n", call_text.c_str());
  const size_t end = call_text.find("\n</tool_call>");
  ASSERT_EQ(call_text.rfind("<tool_call>\n", 0), 0u) << call_text;
  ASSERT_NE(end, std::string::npos) << call_text;
  Json call;
  ASSERT_EQ(parse_json(call_text.substr(12, end - 12), call), "") << call_text;
  ASSERT_TRUE(call["name"] == "get_weather" || call["name"] == "add") << call_text;
  const Json& params = call["name"] == "add" ? tools()[1].parameters : tools()[0].parameters;
  EXPECT_EQ(violation(call["arguments"], params, params), "") << call_text;

  Conversation alice;
  alice.messages.push_back(message("user", "Describe a person named Alice, aged 30, as JSON."));
  const std::string object_text = constrained_reply(alice, Grammar::json_schema(vocab(), person(), kPath), 120);
  std::printf("[ report ] SmolLM2, json_schema: %s\n", object_text.c_str());
  Json v;
  ASSERT_EQ(parse_json(object_text, v), "") << object_text;
  EXPECT_EQ(violation(v, person(), person()), "") << object_text;
}

}  // namespace
}  // namespace akv
