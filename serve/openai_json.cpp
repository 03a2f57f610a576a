#include "serve/openai_json.hpp"

namespace akv::serve {
using json = nlohmann::json;

std::string json_text(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }

HttpResponse error_response(const ApiError& e) {
  HttpResponse r;
  r.status = e.status();
  r.body = json_text({{"error",
                       {{"message", e.what()},
                        {"type", e.type()},
                        {"param", e.param().empty() ? json(nullptr) : json(e.param())},
                        {"code", e.api_code()}}}});
  if (e.retry_after_s() > 0) r.headers.emplace_back("Retry-After", std::to_string(e.retry_after_s()));
  return r;
}

namespace {
json bytes_of(const std::string& s) {
  json b = json::array();
  for (unsigned char c : s) b.push_back(c);
  return b;
}
}  // namespace

json logprob_json(const ChatEncoder& enc, const TokenLogprob& lp, const std::string& text, const std::string& bytes) {
  json top = json::array();
  for (const auto& [t, v] : lp.top) {
    const std::string b = enc.bytes({t});
    top.push_back({{"token", utf8_text(b)}, {"logprob", v}, {"bytes", bytes_of(b)}});
  }
  return {{"token", text}, {"logprob", lp.logprob}, {"bytes", bytes_of(bytes)}, {"top_logprobs", top}};
}

json spans_json(const std::vector<SpanOfMessage>& spans) {
  json a = json::array();
  for (const SpanOfMessage& s : spans) a.push_back({{"message", s.message < 0 ? json(nullptr) : json(s.message)}, {"tokens", s.tokens}});
  return a;
}

json message_json(const Reply& r) {
  json m = {{"role", "assistant"}, {"content", r.has_content ? json(r.content) : json(nullptr)}};
  if (!r.calls.empty()) {
    json calls = json::array();
    for (const ReplyCall& c : r.calls)
      calls.push_back({{"id", c.id}, {"type", "function"}, {"function", {{"name", c.name}, {"arguments", c.arguments}}}});
    m["tool_calls"] = calls;
  }
  return m;
}

json akv_json(const ReplyStats& s, const std::vector<std::string>& tool_call_errors) {
  return {{"session", s.session},
          {"reused_tokens", s.reused_tokens},
          {"recomputed_tokens", s.recomputed_tokens},
          {"evicted_tokens", s.evicted_tokens},
          {"prefill_tokens", s.prefill_tokens},
          {"dropped_messages", s.dropped},
          {"guarded_messages", s.guarded},
          {"spans", spans_json(s.spans)},
          {"cache_sha256", s.cache_sha256},
          {"logits_sha256", s.logits_sha256},
          {"seed", s.seed ? json(*s.seed) : json(nullptr)},
          {"tool_call_errors", tool_call_errors}};
}

json usage_json(const Reply& r) {
  return {{"prompt_tokens", r.stats.prompt_tokens},
          {"completion_tokens", r.tokens.size()},
          {"total_tokens", r.stats.prompt_tokens + r.tokens.size()},
          {"prompt_tokens_details", {{"cached_tokens", r.stats.reused_tokens}}}};
}

}  // namespace akv::serve
