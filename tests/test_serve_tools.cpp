// akv serve with tools (spec/serving.md SV4, SV15-SV17; spec/input.md IN10): tool definitions
// are part of the prompt and of its digests, a change of them between turns is an eviction that
// still equals cold, tool_choice and response_format are checked naming the field, a draw
// without a seed uses the default one and says so, and the Responses API is the same engine.
// On the tiny model, loopback.
#include <gtest/gtest.h>
#include <httplib.h>
#include <nlohmann/json.hpp>

#include <sstream>
#include <string>

#include "serve_support.hpp"

namespace akv {
namespace {
using json = nlohmann::json;
using namespace test_serve;

const json kTools = json::array(
    {{{"type", "function"},
      {"function", {{"name", "get_weather"}, {"description", "Weather now"},
                    {"parameters", {{"type", "object"}, {"properties", {{"city", {{"type", "string"}}}}}, {"required", {"city"}}}}}}},
     {{"type", "function"}, {"function", {{"name", "noop"}, {"parameters", {{"type", "object"}, {"properties", json::object()}}}}}}});

const json kMsgs = json::array({{{"role", "user"}, {"content", "Weather in Bern?"}}});

json with_tools(json req, const json& tools = kTools) {
  req["tools"] = tools;
  return req;
}

TEST(SV15_Tools, TheDefinitionsArePartOfThePromptAndItsDigests) {
  TestServer s;
  const Answer plain = post(s, request_of(kMsgs), cold_session());
  const Answer tooled = post(s, with_tools(request_of(kMsgs)), cold_session());
  ASSERT_EQ(tooled.status, 200) << tooled.body.dump();
  EXPECT_NE(plain.body["akv"]["cache_sha256"], tooled.body["akv"]["cache_sha256"]);
  EXPECT_GT(tooled.body["usage"]["prompt_tokens"].get<size_t>(), plain.body["usage"]["prompt_tokens"].get<size_t>());
  // A change of the tool list between turns of one session: an eviction, and the cold reply.
  ASSERT_EQ(post(s, with_tools(request_of(kMsgs)), "agent").status, 200);
  json fewer = with_tools(request_of(kMsgs), json::array({kTools[1]}));
  const Answer changed = post(s, fewer, "agent");
  ASSERT_EQ(changed.status, 200);
  EXPECT_GT(changed.body["akv"]["evicted_tokens"].get<size_t>(), 0u);
  EXPECT_EQ(reply_bits(changed.body), reply_bits(post(s, fewer, cold_session()).body));
}

TEST(SV15_Tools, ChoicesAndFormatsAreCheckedNamingTheField) {
  TestServer s;
  const std::vector<std::pair<json, std::string>> bad = {
      {json{{"tool_choice", "auto"}}, "tool_choice"},  // no tools
      {with_tools(json{{"tool_choice", "sometimes"}}), "tool_choice"},
      {with_tools(json{{"tool_choice", {{"type", "function"}, {"function", {{"name", "rm"}}}}}}), "rm"},
      {with_tools(json{{"tool_choice", "required"}, {"function_call", "auto"}}), "function_call"},
      {json{{"response_format", {{"type", "yaml"}}}}, "response_format.type"},
      {json{{"response_format", {{"type", "json_schema"}, {"json_schema", {{"name", "x"}, {"schema", {{"type", "object"}}}, {"extra", 1}}}}}}, "extra"},
      {with_tools(json{{"response_format", {{"type", "json_object"}}}}), "response_format"},
      {json{{"parallel_tool_calls", "no"}}, "parallel_tool_calls"},
      {json{{"reasoning_effort", "high"}}, "reasoning_effort"},
  };
  for (const auto& [extra, needle] : bad) {
    json r = request_of(kMsgs);
    r.update(extra);
    const Answer a = post(s, r);
    EXPECT_EQ(a.status, 400) << r.dump();
    EXPECT_NE(a.body["error"]["message"].get<std::string>().find(needle), std::string::npos) << a.body.dump();
  }
  // Accepted: the legacy functions and function_call, a named choice, none, the newer transport fields.
  json legacy = request_of(kMsgs);
  legacy["functions"] = json::array({kTools[0]["function"]});
  legacy["function_call"] = {{"name", "get_weather"}};
  EXPECT_EQ(post(s, legacy).status, 200);
  json named = with_tools(request_of(kMsgs));
  named["tool_choice"] = {{"type", "function"}, {"function", {{"name", "noop"}}}};
  named["parallel_tool_calls"] = false;
  named["service_tier"] = "auto";
  named["safety_identifier"] = "u1";
  named["reasoning_effort"] = nullptr;
  EXPECT_EQ(post(s, named).status, 200);
}

TEST(SV4_Sampler, ADrawWithoutASeedUsesTheDefaultOneAndSaysSo) {
  TestServer s;
  json r = request_of(kMsgs, 6);
  r["temperature"] = 0.8;
  const Answer unseeded = post(s, r, cold_session());
  ASSERT_EQ(unseeded.status, 200) << unseeded.body.dump();
  EXPECT_EQ(unseeded.body["akv"]["seed"], 0);
  r["seed"] = 0;
  EXPECT_EQ(reply_bits(post(s, r, cold_session()).body), reply_bits(unseeded.body));
  r["seed"] = 7;
  EXPECT_EQ(post(s, r, cold_session()).body["akv"]["seed"], 7);
  EXPECT_TRUE(post(s, request_of(kMsgs), cold_session()).body["akv"]["seed"].is_null());  // greedy: no draw
}

TEST(SV17_Responses, AResponsesRequestIsTheChatRequestItMeans) {
  serve::ServerOptions so;
  so.served_names = {"akv-tiny", "gpt-4o-mini"};
  TestServer s({}, so);
  const json chat = {{"model", "gpt-4o-mini"},
                     {"messages", {{{"role", "system"}, {"content", "Be brief."}}, {{"role", "user"}, {"content", "Hi"}}}},
                     {"max_tokens", 5}};
  const Answer c = post(s, chat, cold_session());
  ASSERT_EQ(c.status, 200) << c.body.dump();
  EXPECT_EQ(c.body["model"], "gpt-4o-mini");
  const json resp = {{"model", "gpt-4o-mini"}, {"instructions", "Be brief."}, {"input", "Hi"}, {"max_output_tokens", 5}};
  const Answer r = post(s, resp, cold_session(), "/v1/responses");
  ASSERT_EQ(r.status, 200) << r.body.dump();
  EXPECT_EQ(r.body["object"], "response");
  ASSERT_EQ(r.body["output"][0]["type"], "message");
  EXPECT_EQ(r.body["output"][0]["content"][0]["text"], c.body["choices"][0]["message"]["content"]);
  EXPECT_EQ(r.body["akv"]["cache_sha256"], c.body["akv"]["cache_sha256"]);
  EXPECT_EQ(r.body["akv"]["logits_sha256"], c.body["akv"]["logits_sha256"]);
  EXPECT_EQ(r.body["usage"]["output_tokens"], c.body["usage"]["completion_tokens"]);
  // Items: a function call and its output are the assistant's tool call and the tool message.
  const json items = {{"model", "akv-tiny"},
                      {"input", {{{"role", "user"}, {"content", "Weather?"}},
                                 {{"type", "function_call"}, {"call_id", "c9"}, {"name", "get_weather"}, {"arguments", "{\"city\":\"Bern\"}"}},
                                 {{"type", "function_call_output"}, {"call_id", "c9"}, {"output", "sunny"}}}},
                      {"tools", {{{"type", "function"}, {"name", "get_weather"}, {"parameters", kTools[0]["function"]["parameters"]}}}},
                      {"max_output_tokens", 4}};
  // The chat body, written by hand: a tool's keys keep their order (IN10), as Responses gives them.
  const std::string chat_items = R"({"model": "akv-tiny", "max_tokens": 4, "messages": [{"role": "user", "content": "Weather?"},
    {"role": "assistant", "content": "", "tool_calls": [{"id": "c9", "type": "function", "function": {"name": "get_weather", "arguments": "{\"city\":\"Bern\"}"}}]},
    {"role": "tool", "tool_call_id": "c9", "content": "sunny"}],
    "tools": [{"type": "function", "function": {"name": "get_weather", "parameters": )" + kTools[0]["function"]["parameters"].dump() + "}}]}";
  httplib::Client cc = s.client();
  auto chat_reply = cc.Post("/v1/chat/completions", {{"x-akv-session", cold_session()}}, chat_items, "application/json");
  ASSERT_TRUE(chat_reply);
  EXPECT_EQ(post(s, items, cold_session(), "/v1/responses").body["akv"]["cache_sha256"],
            json::parse(chat_reply->body)["akv"]["cache_sha256"]) << chat_reply->body;
  // Streamed: the events, their text joined, and the completed response last.
  json st = resp;
  st["stream"] = true;
  httplib::Client cl = s.client();
  auto sr = cl.Post("/v1/responses", st.dump(), "application/json");
  ASSERT_TRUE(sr);
  std::istringstream lines(sr->body);
  std::string joined, last;
  for (std::string l; std::getline(lines, l);) {
    if (l.rfind("data: ", 0) != 0) continue;
    const json e = json::parse(l.substr(6));
    last = e["type"];
    if (last == "response.output_text.delta") joined += e["delta"].get<std::string>();
  }
  EXPECT_EQ(last, c.body["choices"][0]["finish_reason"] == "length" ? "response.incomplete" : "response.completed");
  EXPECT_EQ(joined, c.body["choices"][0]["message"]["content"]);
  // Refused by name: state a server keeps none of, an unknown item type, another model.
  EXPECT_EQ(post(s, {{"input", "x"}, {"previous_response_id", "resp_1"}}, "", "/v1/responses").status, 400);
  EXPECT_EQ(post(s, {{"input", {{{"type", "reasoning"}}}}}, "", "/v1/responses").status, 400);
  EXPECT_EQ(post(s, {{"input", "x"}, {"model", "gpt-5"}}, "", "/v1/responses").status, 404);
  // GET /v1/models lists the served names.
  httplib::Client m = s.client();
  auto models = m.Get("/v1/models");
  ASSERT_TRUE(models);
  const json list = json::parse(models->body)["data"];
  ASSERT_EQ(list.size(), 2u);
  EXPECT_EQ(list[1]["id"], "gpt-4o-mini");
}

}  // namespace
}  // namespace akv
