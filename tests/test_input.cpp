// Every message shape and field a real transcript carries (spec/input.md IN1-IN3, IN7):
// serialised, rejected naming it, or ignored and listed; parser limits.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <atomic>
#include <filesystem>
#include <system_error>
#include <nlohmann/json.hpp>
#include <thread>

#include "optimized/cpu/thread_pool.hpp"
#include "readers/conversation/chat_parse.hpp"
#include "readers/json_limited.hpp"
#include "reference/chat.hpp"
#include "reference/error.hpp"
#include "reference/strict.hpp"
#include "reference/tokenizer.hpp"
#include "support.hpp"

using namespace akv;
using nlohmann::json;

namespace {
std::string span_of(const std::string& message_json) {
  const Conversation c = parse_conversation(R"({"messages": [)" + message_json + "]}");
  return tok::render(encode_message(c.messages.at(0)));
}

Error parse_error(const std::string& text) {
  try {
    parse_conversation(text);
  } catch (const Error& e) {
    return e;
  }
  ADD_FAILURE() << "accepted: " << text.substr(0, 200);
  return Error(ErrorCode::kBadInput, "");
}

void expect_rejected(const std::string& text, const std::string& needle) {
  const Error e = parse_error(text);
  EXPECT_EQ(e.code(), ErrorCode::kBadInput) << e.what();
  EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
  EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos) << "two lines: " << e.what();
}

std::string one(const std::string& message_json) { return R"({"messages": [)" + message_json + "]}"; }

std::string nested_object(size_t depth) {
  std::string s;
  for (size_t i = 0; i < depth; ++i) s += "{\"a\":";
  s += "1";
  s += std::string(depth, '}');
  return s;
}
}  // namespace

// The issue's first case: content null + legacy function_call is in the span, so a message
// with it never gives the digest of the same message without it.
TEST(IN1_MessageShapes, LegacyFunctionCallIsInTheSpan) {
  const std::string with = span_of(
      R"({"role": "assistant", "content": null, "function_call": {"name": "transfer_money", "arguments": "{\"to\": \"ACCOUNT-X\"}"}})");
  EXPECT_EQ(with, "<|assistant|><|call|>transfer_money<|args|>{\"to\": \"ACCOUNT-X\"}<|end|>");
  EXPECT_NE(with, span_of(R"({"role": "assistant", "content": null})"));
}

TEST(IN1_MessageShapes, EveryRoleHasItsSpan) {
  EXPECT_EQ(span_of(R"({"role": "system", "content": "s", "name": "ops"})"), "<|system|><|name|>opss<|end|>");
  EXPECT_EQ(span_of(R"({"role": "developer", "content": "be brief"})"), "<|developer|>be brief<|end|>");
  EXPECT_NE(span_of(R"({"role": "developer", "content": "x"})"), span_of(R"({"role": "system", "content": "x"})"));
  EXPECT_EQ(span_of(R"({"role": "user", "content": "hi", "name": "alice"})"), "<|user|><|name|>alicehi<|end|>");
  EXPECT_EQ(span_of(R"({"role": "function", "name": "get_time", "content": "12:00"})"),
            "<|function|>get_time<|result|>12:00<|end|>");
  EXPECT_EQ(span_of(R"({"role": "tool", "name": "f", "tool_call_id": "c1", "content": "r"})"), "<|tool|>f<|id|>c1<|result|>r<|end|>");
  EXPECT_EQ(span_of(R"({"role": "assistant", "content": "", "refusal": "no"})"), "<|assistant|><|refusal|>no<|end|>");
  EXPECT_EQ(span_of(R"({"role": "assistant", "content": [{"type": "text", "text": "a"}, {"type": "refusal", "refusal": "b"}]})"),
            "<|assistant|>a<|refusal|>b<|end|>");
}

TEST(IN1_MessageShapes, CustomAndFunctionToolCallsInOrder) {
  EXPECT_EQ(span_of(R"({"role": "assistant", "content": "ok",
      "function_call": {"name": "legacy", "arguments": "{}"},
      "tool_calls": [{"id": "c1", "type": "custom", "custom": {"name": "sh", "input": "ls -l"}},
                     {"id": "c2", "function": {"name": "f", "arguments": {"k": [1, 2]}}}]})"),
            "<|assistant|>ok<|call|>legacy<|args|>{}<|call|>sh<|input|>ls -l<|id|>c1<|call|>f<|args|>{\"k\":[1,2]}<|id|>c2<|end|>");
  // A custom call and a function call with the same name and text are different spans.
  EXPECT_NE(span_of(R"({"role": "assistant", "tool_calls": [{"type": "custom", "custom": {"name": "f", "input": "x"}}]})"),
            span_of(R"({"role": "assistant", "tool_calls": [{"type": "function", "function": {"name": "f", "arguments": "x"}}]})"));
}

// Dropping any serialised field changes the span: no field is silently lost (IN2).
TEST(IN1_MessageShapes, DroppingAnySerialisedFieldChangesTheSpan) {
  const json full = json::parse(R"({"role": "assistant", "content": "c", "name": "n", "refusal": "r",
      "function_call": {"name": "fc", "arguments": "a"},
      "tool_calls": [{"id": "i", "type": "function", "function": {"name": "f", "arguments": "x"}}]})");
  const std::string all = span_of(full.dump());
  for (const auto& [key, value] : full.items()) {
    if (key == "role") continue;
    json less = full;
    less.erase(key);
    EXPECT_NE(span_of(less.dump()), all) << "dropping " << key << " left the span unchanged";
  }
}

TEST(IN2_Fields, NeverModelFieldsAreIgnoredAndListed) {
  const Conversation c = parse_conversation(R"({"source": "s", "temperature": 0, "messages": [
      {"role": "user", "content": "x", "id": "m0", "timestamp": 1, "metadata": {"k": 1}},
      {"role": "assistant", "content": "y", "tool_calls": [{"index": 0, "id": "c", "function": {"name": "f", "arguments": ""}}]}]})");
  const std::vector<std::string> want = {"source", "temperature", "messages[0].id", "messages[0].metadata",
                                         "messages[0].timestamp", "messages[1].tool_calls[0].index"};
  EXPECT_EQ(c.ignored, want);
  // A reply message as OpenAI's client writes it back (model_dump()): null audio and
  // annotations are absent; any other value is not.
  const Conversation d = parse_conversation(R"({"messages": [{"role": "assistant", "content": "y", "refusal": null,
      "audio": null, "annotations": null, "function_call": null, "tool_calls": null}]})");
  EXPECT_EQ(d.ignored, (std::vector<std::string>{"messages[0].annotations", "messages[0].audio"}));
  EXPECT_EQ(tok::render(encode_message(d.messages[0])), "<|assistant|>y<|end|>");
  expect_rejected(one(R"({"role": "assistant", "content": "y", "annotations": []})"), "messages[0].annotations: unknown field");
  // Ignored fields do not change the span.
  EXPECT_EQ(tok::render(encode_message(c.messages[0])), "<|user|>x<|end|>");
}

TEST(IN2_Fields, FieldsThatReachTheModelWithoutATokenFormAreRejected) {
  expect_rejected(one(R"({"role": "user", "content": [{"type": "image_url", "image_url": {"url": "http://x"}}]})"),
                  "messages[0].content[0].type: 'image_url' parts reach the model");
  expect_rejected(one(R"({"role": "user", "content": [{"type": "input_audio", "input_audio": {}}]})"), "'input_audio'");
  expect_rejected(one(R"({"role": "assistant", "content": "x", "audio": {"id": "a1"}})"), "messages[0].audio");
  expect_rejected(one(R"({"role": "user", "content": "x", "mystery": 1})"), "messages[0].mystery: unknown field");
  expect_rejected(one(R"({"role": "user", "content": [{"type": "text", "text": "a", "extra": 1}]})"),
                  "messages[0].content[0].extra: unknown field");
  expect_rejected(one(R"({"role": "assistant", "tool_calls": [{"type": "code", "code": {}}]})"), "unknown tool call type 'code'");
  expect_rejected(one(R"({"role": "user", "content": "x", "tool_call_id": "c"})"), "only tool messages carry tool_call_id");
  expect_rejected(one(R"({"role": "user", "content": "x", "function_call": {"name": "f"}})"),
                  "only assistant messages carry function_call");
  expect_rejected(one(R"({"role": "tool", "content": "x", "refusal": "r"})"), "only assistant messages carry refusal");
  expect_rejected(one(R"({"role": "user", "content": [{"type": "refusal", "refusal": "r"}]})"), "belong to assistant messages");
  expect_rejected(one(R"({"role": "assistant", "function_call": "f"})"), "messages[0].function_call: expected an object");
}

// The issue's third case: a 70,000-deep arguments object is a one-line error, not SIGSEGV.
TEST(IN3_ParserLimits, DeepNestingIsAOneLineError) {
  const std::string deep = one(R"({"role": "assistant", "content": null, "tool_calls": [{"id": "c", "type": "function",
      "function": {"name": "f", "arguments": )" + nested_object(70000) + "}}]}");
  ASSERT_GT(deep.size(), 140000u);
  expect_rejected(deep, "nested deeper than 256");
  // At the limit it parses: depth 256 counting the top-level object.
  const std::string at_limit = "{\"messages\": [{\"role\": \"user\", \"content\": \"x\"}], \"metadata\": " + nested_object(255) + "}";
  EXPECT_NO_THROW(parse_conversation(at_limit));
  expect_rejected("{\"messages\": [{\"role\": \"user\", \"content\": \"x\"}], \"metadata\": " + nested_object(256) + "}", "nested deeper");
  // Arrays count as well as objects.
  expect_rejected("{\"messages\": " + std::string(100000, '[') + std::string(100000, ']') + "}", "nested deeper");
}

TEST(IN3_ParserLimits, HostileBytesAndNumbers) {
  expect_rejected(one("{\"role\": \"user\", \"content\": \"\xff\xfe\"}"), "malformed JSON");
  expect_rejected(one(std::string("{\"role\": \"user\", \"content\": \"a") + '\0' + "b\"}"), "malformed JSON");
  expect_rejected(one(R"({"role": "user", "content": "x"})").substr(0, 20), "malformed JSON");
  expect_rejected(R"({"messages": [{"role": "user", "content": "x"}], "poisoned": [1e999]})", "malformed JSON");
  expect_rejected(R"({"messages": [{"role": "user", "content": "x"}], "poisoned": [99999999999999999999999]})", "poisoned[0]");
  expect_rejected(one(R"({"role": "user", "tokens": [18446744073709551615]})"), "messages[0].tokens[0]");
  // An escaped NUL or newline inside a role is named escaped, on one line.
  expect_rejected(one(R"({"role": "us\u0000er\nx", "content": "x"})"), "unknown role 'us\\x00er\\x0ax'");
  // An escaped NUL in content is a byte like any other.
  EXPECT_EQ(encode_message(parse_conversation(one(R"({"role": "user", "content": "a\u0000b"})")).messages[0]),
            (std::vector<Token>{tok::kUser, 'a', 0, 'b', tok::kEnd}));
}

// A repeated key would keep one value and drop the other silently: rejected, at any depth.
TEST(IN3_ParserLimits, RepeatedKeysAreRejected) {
  expect_rejected(one(R"({"role": "user", "content": "transfer", "content": "hello"})"), "key 'content' repeated");
  expect_rejected(R"({"messages": [], "messages": [{"role": "user", "content": "x"}]})", "key 'messages' repeated");
  expect_rejected(one(R"({"role": "assistant", "tool_calls": [{"function": {"name": "a", "name": "b"}}]})"), "key 'name' repeated");
  // The same key in sibling objects is fine.
  EXPECT_NO_THROW(parse_conversation(one(R"({"role": "user", "content": "a"}, {"role": "user", "content": "b"})")));
}

TEST(IN3_ParserLimits, NulByteIsMalformedNotTheEndOfInput) {
  // The JSON library would stop at the NUL and accept the conversation, dropping the rest.
  const std::string good = one(R"({"role": "user", "content": "a"})");
  EXPECT_NO_THROW(parse_conversation(good));
  expect_rejected(good + std::string("\0", 1) + "garbage", "a NUL byte at offset");
  expect_rejected(std::string("\0", 1) + good, "a NUL byte at offset 0");
}

TEST(IN3_ParserLimits, OversizedTextIsRejectedBeforeParsing) {
  const std::string big(kMaxConversationBytes + 1, ' ');
  expect_rejected(big, "more than the limit");
}

// A JSON file given as a pipe (akv verify <(...), /dev/stdin) is read, under the same limit.
TEST(IN3_ParserLimits, AJsonFileFromAPipeIsReadUpToItsLimit) {
  const std::string fifo = ::testing::TempDir() + "in3_json_fifo";
  std::filesystem::remove(fifo);
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  const readers::JsonLimits limits{64, 4, "spec/input.md IN3"};
  const readers::JsonSource source{ErrorCode::kBadInput, "the pipe", nullptr};
  auto feed = [&](const std::string& bytes) {
    return std::thread([&fifo, bytes] {
      std::FILE* f = std::fopen(fifo.c_str(), "wb");
      if (f) std::fwrite(bytes.data(), 1, bytes.size(), f), std::fclose(f);
    });
  };
  std::thread w = feed(R"({"a": [1, 2]})");
  EXPECT_EQ(readers::read_json_file(fifo, limits, source), json::parse(R"({"a": [1, 2]})"));
  w.join();
  w = feed(std::string(1000, ' ') + "{}");
  try {
    (void)readers::read_json_file(fifo, limits, source);
    ADD_FAILURE() << "a pipe past the limit was read";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kBadInput);
    EXPECT_NE(std::string(e.what()).find("the pipe"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("more than the limit"), std::string::npos) << e.what();
  }
  w.join();
  std::filesystem::remove(fifo);
}

// IN7: errors name the real problem.
TEST(IN7_ErrorsNameTheProblem, DirectoryAsFile) {
  try {
    load_conversation(::testing::TempDir());
    ADD_FAILURE() << "a directory was read";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("is a directory"), std::string::npos) << e.what();
  }
}

TEST(IN7_ErrorsNameTheProblem, NonIntegerPoisoned) {
  expect_rejected(R"({"messages": [{"role": "user", "content": "x"}], "poisoned": ["0"]})",
                  "poisoned[0]: expected an integer message index, got string");
  expect_rejected(R"({"messages": [{"role": "user", "content": "x"}], "poisoned": [0.5]})", "got number 0.5");
  expect_rejected(R"({"messages": [{"role": "user", "content": "x"}], "poisoned": [-1]})", "poisoned[0]: message index -1 is negative");
}

TEST(IN7_ErrorsNameTheProblem, TokenOutOfRangeNamesFileMessageAndIndex) {
  Conversation c = parse_conversation(one(R"({"role": "user", "content": "x"}, {"role": "user", "tokens": [1, 2, 300]})"));
  c.source = "conv.json";
  try {
    check_token_ids(c, 288);
    ADD_FAILURE() << "token 300 accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidToken);
    EXPECT_STREQ(e.what(), "conv.json: messages[1].tokens[2]: token id 300 outside the vocabulary [0, 288)");
  }
  c.messages[1].tokens = std::vector<Token>{287};
  EXPECT_NO_THROW(check_token_ids(c, 288));
}

// The issue's fourth case: when threads fail to start partway, the pool joins the started ones
// and says so (no hang, no std::terminate).
TEST(IN7_ErrorsNameTheProblem, ThreadsThatCannotStartAreJoined) {
  std::atomic<int> started{0};
  const cpu::ThreadPool::Spawn fail_after_3 = [&](std::function<void()> body) {
    if (started == 3) throw std::system_error(std::make_error_code(std::errc::resource_unavailable_try_again));
    ++started;
    return std::thread(std::move(body));
  };
  try {
    cpu::ThreadPool pool(8, fail_after_3);
    ADD_FAILURE() << "the pool started";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kOutOfResources);
    EXPECT_NE(std::string(e.what()).find("cannot start 8 threads"), std::string::npos) << e.what();
  }
  EXPECT_EQ(started, 3);
  EXPECT_THROW(cpu::ThreadPool(0), Error);
  EXPECT_THROW(cpu::ThreadPool(cpu::kMaxThreads + 1), Error);
  cpu::ThreadPool ok(3);
  std::atomic<int> items{0};
  ok.run(10, [&](int b, int e) { items += e - b; });
  EXPECT_EQ(items, 10);
}

TEST(IN4_StrictOptions, DecimalParsing) {
  EXPECT_EQ(parse_decimal("0", 0, 5), 0u);
  EXPECT_EQ(parse_decimal("18446744073709551615", 0, UINT64_MAX), UINT64_MAX);
  for (const char* bad : {"", "-1", "+1", " 1", "1 ", "0x10", "1e3", "abc", "6", "18446744073709551616"})
    EXPECT_FALSE(parse_decimal(bad, 0, 5)) << "'" << bad << "' accepted";
}

// IN2 at the top level: a field that reaches the model (Anthropic's `system`, a request's
// `tools`) is rejected by name, never listed as ignored with a PASS; so is an unknown one.
TEST(IN2_Fields, TopLevelFieldsThatReachTheModelAreRejected) {
  const std::string msgs = R"("messages": [{"role": "user", "content": "x"}])";
  expect_rejected("{\"system\": \"be brief\", " + msgs + "}", "system: a top-level system prompt (Anthropic's request shape) reaches the model");
  expect_rejected("{\"instructions\": \"be brief\", " + msgs + "}", "instructions: a Responses API field");
  expect_rejected("{\"verbosity\": \"low\", " + msgs + "}", "verbosity: this option changes what a reasoning model is told");
  expect_rejected("{\"input\": [], " + msgs + "}", "input: an OpenAI Responses API body");
  expect_rejected("{\"frobnicate\": 1, " + msgs + "}", "frobnicate: unknown top-level field");
  // Sampling and provenance fields never reach the prompt: ignored and listed.
  const Conversation c = parse_conversation("{\"model\": \"gpt-4o\", \"max_tokens\": 5, \"tags\": [], " + msgs + "}");
  EXPECT_EQ(c.ignored, (std::vector<std::string>{"max_tokens", "model", "tags"}));
}

// The formats agent stacks write that akv does not read are refused naming what they are,
// pointing at the conversion (docs/auditors-guide.md, Other formats), never misread.
TEST(IN2_Fields, OtherFormatsAreNamedNotMisread) {
  const std::string line = R"({"messages": [{"role": "user", "content": "x"}]})";
  expect_rejected(line + "\n" + line + "\n", "a JSONL log? akv reads one conversation per file");
  expect_rejected(R"({"input": [{"role": "user", "content": "hi"}], "instructions": "be brief"})", "an OpenAI Responses API body");
  expect_rejected(line + "\n]", "unexpected ']'; expected end of input");  // only a complete first line reads as JSONL
  // Anthropic text blocks are the chat API's text parts: read as the same text.
  const Conversation a = parse_conversation(R"({"messages": [{"role": "user", "content": [{"type": "text", "text": "hi "}, {"type": "text", "text": "there"}]}]})");
  EXPECT_EQ(a.messages[0].content, parse_conversation(R"({"messages": [{"role": "user", "content": "hi there"}]})").messages[0].content);
}

// Anthropic's tool_use / tool_result blocks are named for what they are, not as a tokenizer gap.
TEST(IN2_Fields, AnthropicBlocksAreNamed) {
  expect_rejected(one(R"({"role": "assistant", "content": [{"type": "tool_use", "id": "t", "name": "f", "input": {}}]})"),
                  "'tool_use' parts are Anthropic content blocks");
  expect_rejected(one(R"({"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t", "content": "r"}]})"),
                  "'tool_result' parts are Anthropic content blocks");
}
