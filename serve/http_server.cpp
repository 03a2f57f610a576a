#include "serve/http_server.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <chrono>
#include <cstring>
#include <thread>

#include "readers/json_limited.hpp"
#include "reference/error.hpp"
#include "serve/openai_json.hpp"
#include "serve/responses_api.hpp"
#include "runtime/digest.hpp"
#include "runtime/build_info.hpp"

namespace akv::serve {
namespace {
using json = nlohmann::json;

constexpr const char* kRoutes =
    "this server answers GET /health, GET /v1/models, POST /v1/chat/completions, POST /v1/responses, GET /v1/sessions, "
    "DELETE /v1/sessions/{id} and POST /v1/sessions/{id}/evict";

constexpr const char* kJsonOnly =
    "Content-Type: expected application/json (curl -d sends application/x-www-form-urlencoded: add -H 'Content-Type: "
    "application/json')";

HttpResponse json_response(const json& j, int status = 200) {
  HttpResponse r;
  r.status = status;
  r.body = json_text(j);
  return r;
}

HttpResponse error_of(int status, const std::string& type, const std::string& code, const std::string& message) {
  return error_response(ApiError(status, type, code, message));
}

// Constant-time comparison: the key's bytes do not show in the reply's timing.
bool same_key(const std::string& a, const std::string& b) {
  unsigned char d = a.size() == b.size() ? 0 : 1;
  for (size_t i = 0; i < a.size(); ++i) d |= static_cast<unsigned char>(a[i] ^ b[i % (b.empty() ? 1 : b.size())]);
  return d == 0 && !b.empty();
}

// An id as a client names it (a session, a cache key): 1-128 of [A-Za-z0-9._:@-], so it is
// safe in a header, a path, a JSON string and a log line (SV3). An empty one is refused too.
std::string checked_id(const std::string& id, const std::string& where) {
  bool ok = !id.empty() && id.size() <= 128;
  for (const char c : id) ok = ok && c != '\0' && (std::isalnum(static_cast<unsigned char>(c)) || std::strchr("._:@-", c) != nullptr);
  if (!ok) throw Error(ErrorCode::kBadInput, where + ": an id is 1 to 128 of A-Z a-z 0-9 . _ : @ - (got " + std::to_string(id.size()) + " bytes)");
  return id;
}

// A path segment with its %XX escapes decoded (a client may escape '@' or ':').
std::string percent_decoded(const std::string& s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '%' && i + 2 < s.size() && std::isxdigit(static_cast<unsigned char>(s[i + 1])) &&
        std::isxdigit(static_cast<unsigned char>(s[i + 2]))) {
      out += static_cast<char>(std::stoi(s.substr(i + 1, 2), nullptr, 16));
      i += 2;
    } else {
      out += s[i];
    }
  }
  return out;
}

// A POST body must say it is JSON: another type would be read as something it does not claim to be.
void require_json(const HttpRequest& req) {
  const std::string* h = req.header("content-type");
  std::string t = h == nullptr ? "" : *h;
  for (char& c : t) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));  // media types are case-insensitive
  if (t.rfind("application/json", 0) != 0 || (t.size() > 16 && t[16] != ';' && t[16] != ' '))
    throw ApiError(415, "invalid_request_error", "unsupported_media_type", kJsonOnly);
}

// The credentials of `Authorization: Bearer KEY`; the scheme is case-insensitive (RFC 9110 section 11.1).
std::string bearer_token(const HttpRequest& req) {
  const std::string* h = req.header("authorization");
  if (h == nullptr || h->size() < 7) return "";
  std::string scheme = h->substr(0, 7);
  for (char& c : scheme) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return scheme == "bearer " ? h->substr(7) : "";
}

// Decrements the in-flight count when the handler ends (its last byte written or the client gone).
struct InFlight {
  std::atomic<int>& n;
  explicit InFlight(std::atomic<int>& c) : n(c) { ++n; }
  ~InFlight() { --n; }
};
}  // namespace

bool is_loopback(const std::string& host) {
  return host == "localhost" || host == "::1" || host.rfind("127.", 0) == 0;
}

struct HttpServer::Api {
  Engine& engine;
  ServerOptions opt;
  std::string model_sha256;
  std::unique_ptr<AuditChainWriter> audit;
  std::atomic<bool> draining{false};
  std::atomic<int> in_flight{0};

  Api(Engine& e, ServerOptions o) : engine(e), opt(std::move(o)) {}

  // ---- the caller (SV8, SV10)

  /// The caller of an authorized request: "local" without keys, else an id derived from its
  /// key (never the key). Empty when the request carries no valid key.
  std::string caller(const HttpRequest& req) const {
    if (opt.api_keys.empty()) return "local";
    const std::string given = bearer_token(req);
    std::string who;
    for (const std::string& k : opt.api_keys)  // every key compared, in constant time each
      if (same_key(given, k)) who = "key:" + sha256_hex(k).substr(0, 16);
    return who;
  }

  /// The caller's scope (SV10): the caller and its cache key (`x-akv-cache-key`, or a chat
  /// body's `prompt_cache_key`; the same when both are given).
  static std::string scope(const std::string& who, const HttpRequest& req, const std::string& body_key = "") {
    std::string salt;
    if (const std::string* h = req.header("x-akv-cache-key")) salt = checked_id(*h, "x-akv-cache-key");
    if (!body_key.empty()) {
      checked_id(body_key, "prompt_cache_key");
      if (!salt.empty() && salt != body_key) throw Error(ErrorCode::kBadInput, "prompt_cache_key: differs from the x-akv-cache-key header");
      salt = body_key;
    }
    return who + "/" + salt;
  }

  static std::string session_header(const HttpRequest& req) {
    if (req.count("x-akv-session") > 1) throw Error(ErrorCode::kBadInput, "x-akv-session: sent more than once");
    const std::string* h = req.header("x-akv-session");
    return h == nullptr ? "" : checked_id(*h, "x-akv-session");
  }

  // ---- the served names (SV2)

  std::vector<std::string> names() const { return opt.served_names.empty() ? std::vector<std::string>{engine.model().name} : opt.served_names; }

  /// The name a reply carries: the request's `model` when it is a served name, the first served
  /// name when the request names none. Error(kUnknownModel) for another.
  std::string served_name(const std::string& model) const {
    const std::vector<std::string> ns = names();
    if (model.empty()) return ns.front();
    for (const std::string& n : ns)
      if (n == model) return n;
    throw Error(ErrorCode::kUnknownModel, fmt::format("model '{}': this server serves {} (GET /v1/models)", model, json(ns).dump()));
  }

  // ---- routing (one place for the key, after the body was read)

  Routed route(const HttpRequest& req) {
    Routed out;
    out.immediate = true;
    const std::string& m = req.method;
    if (req.path == "/health") {
      if (m != "GET") return method_not_allowed("GET");
      out.response = json_response({{"status", "ok"}});
      return out;
    }
    const std::string who = caller(req);
    if (who.empty()) {  // no key, no route names
      out.response = error_of(401, "invalid_request_error", "invalid_api_key", "a valid API key is required (Authorization: Bearer ...)");
      return out;
    }
    auto handler = [&](void (Api::*h)(const HttpRequest&, Exchange&, const std::string&, const std::string&), std::string arg = "") {
      Routed r;
      r.handler = [this, h, who, arg](const HttpRequest& q, Exchange& x) {
        try {
          (this->*h)(q, x, who, arg);
        } catch (...) {
          x.respond(error_response(api_error_of(std::current_exception())));
        }
      };
      return r;
    };
    if (req.path == "/v1/models") {
      if (m != "GET") return method_not_allowed("GET");
      json data = json::array();
      for (const std::string& n : names()) data.push_back({{"id", n}, {"object", "model"}, {"created", 0}, {"owned_by", "akv"}});
      out.response = json_response({{"object", "list"}, {"data", data}});
      return out;
    }
    if (req.path == "/v1/chat/completions") {
      if (m != "POST") return method_not_allowed("POST");
      // A full engine answers at once, never from behind the requests it holds (SV6, SV13).
      if (engine.load() >= static_cast<size_t>(engine.options().parallel) + engine.options().queue) {
        out.response = error_response(queue_full(fmt::format("the engine holds {} requests (--parallel {}, --queue {}); retry later",
                                                             engine.load(), engine.options().parallel, engine.options().queue)));
        return out;
      }
      return handler(&Api::chat_completions);
    }
    if (req.path == "/v1/responses") {
      if (m != "POST") return method_not_allowed("POST");
      if (engine.load() >= static_cast<size_t>(engine.options().parallel) + engine.options().queue) {
        out.response = error_response(queue_full(fmt::format("the engine holds {} requests (--parallel {}, --queue {}); retry later",
                                                             engine.load(), engine.options().parallel, engine.options().queue)));
        return out;
      }
      return handler(&Api::responses);
    }
    if (req.path == "/v1/sessions") {
      if (m != "GET") return method_not_allowed("GET");
      return handler(&Api::list_sessions);
    }
    const std::string prefix = "/v1/sessions/";
    if (req.path.rfind(prefix, 0) == 0) {
      const std::string rest = req.path.substr(prefix.size());
      const size_t slash = rest.find('/');
      const std::string id = percent_decoded(rest.substr(0, slash));
      if (slash == std::string::npos) {
        if (m != "DELETE") return method_not_allowed("DELETE");
        return handler(&Api::delete_session, id);
      }
      if (rest.substr(slash) == "/evict") {
        if (m != "POST") return method_not_allowed("POST");
        return handler(&Api::evict, id);
      }
    }
    out.response = error_of(404, "invalid_request_error", "not_found", "no route " + m + " " + req.path + "; " + kRoutes);
    return out;
  }

  static Routed method_not_allowed(const std::string& allow) {
    Routed r;
    r.immediate = true;
    r.response = error_of(405, "invalid_request_error", "method_not_allowed", std::string("this route takes ") + allow + "; " + kRoutes);
    r.response.headers.emplace_back("Allow", allow);
    return r;
  }

  // ---- the handlers, one per route

  void list_sessions(const HttpRequest& req, Exchange& x, const std::string& who, const std::string&) {
    json list = json::array();
    for (const SessionInfo& s : engine.sessions(scope(who, req)))
      list.push_back({{"id", s.id}, {"object", "akv.session"}, {"named", s.named}, {"busy", s.busy}, {"cached", s.cached},
                      {"cached_tokens", s.cached_tokens}, {"messages", s.messages}, {"flagged_messages", s.flagged}});
    x.respond(json_response({{"object", "list"}, {"data", list}}));
  }

  void delete_session(const HttpRequest& req, Exchange& x, const std::string& who, const std::string& id) {
    const std::string sc = scope(who, req);
    engine.forget(sc, checked_id(id, "the path's session id"));
    x.respond(json_response({{"id", id}, {"object", "akv.session"}, {"deleted", true}}));
  }

  void evict(const HttpRequest& req, Exchange& x, const std::string& who, const std::string& id) {
    require_json(req);
    EvictRequest er;
    er.scope = scope(who, req);
    er.session = checked_id(id, "the path's session id");
    const json body = readers::parse_json_limited(req.body, kConversationJson, {ErrorCode::kBadInput, "body"});
    if (!body.is_object()) throw Error(ErrorCode::kBadInput, "body: expected {\"messages\": [indexes]} and/or {\"tool_call_ids\": [ids]}");
    for (const auto& [k, v] : body.items()) {
      if (k == "messages") {
        if (!v.is_array()) throw Error(ErrorCode::kBadInput, "messages: expected an array of message indexes");
        for (const json& i : v) {
          if (i.is_string() && i.get<std::string>() == "preamble")
            throw Error(ErrorCode::kBadInput, "messages: the template's own preamble (its default system prompt) is no message of the "
                                              "request and is never evicted (spec/serving.md SV3)");
          if (!i.is_number_unsigned()) throw Error(ErrorCode::kBadInput, "messages: expected non-negative integers (the request's message indexes)");
          er.messages.push_back(i.get<size_t>());
        }
      } else if (k == "tool_call_ids") {
        if (!v.is_array()) throw Error(ErrorCode::kBadInput, "tool_call_ids: expected an array of strings");
        for (const json& i : v) {
          if (!i.is_string() || i.get<std::string>().empty()) throw Error(ErrorCode::kBadInput, "tool_call_ids: expected non-empty strings");
          er.tool_call_ids.push_back(i.get<std::string>());
        }
      } else {
        throw Error(ErrorCode::kBadInput, k + ": unknown field (the body takes \"messages\" and \"tool_call_ids\")");
      }
    }
    const EvictResult r = engine.evict(er);
    x.respond(json_response({{"session", id},
                             {"flagged_messages", r.flagged},
                             {"cached", r.cached},
                             {"evicted_tokens", r.stats.tokens_evicted},
                             {"recomputed_tokens", r.stats.tokens_recomputed},
                             {"prefill_tokens", r.prefill_tokens},
                             {"truncated_at", r.stats.truncated_at},
                             {"spans", spans_json(r.spans)},
                             {"cache_sha256", r.cache_sha256.empty() ? json(nullptr) : json(r.cache_sha256)}}));
  }

  void chat_completions(const HttpRequest& req, Exchange& x, const std::string& who, const std::string&) {
    InFlight flight(in_flight);
    if (draining) throw shutting_down();
    require_json(req);
    const std::string hint = session_header(req);
    ChatRequest cr = parse_chat_request(req.body);
    const std::string name = served_name(cr.model);
    const std::string sc = scope(who, req, cr.prompt_cache_key);
    const bool stream = cr.stream, usage = cr.include_usage, logprobs = cr.logprobs;
    const std::string id = "chatcmpl-" + sha256_hex(req.body).substr(0, 24);
    const int64_t created = std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
    std::shared_ptr<Generation> g = engine.submit(std::move(cr), hint, sc);
    x.on_client_gone([g] { g->cancel(); });  // an abandoned request stops at the next step (SV6)
    const ReplyStats admitted = g->wait_admitted();  // admission errors are still HTTP errors
    std::vector<std::pair<std::string, std::string>> headers = {{"x-akv-session", admitted.session},
                                                                {"x-akv-cache-sha256", admitted.cache_sha256},
                                                                {"x-akv-guarded-messages", json(admitted.guarded).dump()}};
    const ChatEncoder& enc = *engine.model().encoder;
    if (!stream) {
      const Reply& r = g->reply();
      if (r.cancelled) return;  // nobody to answer
      json lp = nullptr;
      if (logprobs) {
        lp = {{"content", json::array()}};
        for (size_t i = 0; i < r.logprobs.size(); ++i) lp["content"].push_back(logprob_json(enc, r.logprobs[i], r.token_text[i], r.token_bytes[i]));
      }
      HttpResponse res = json_response({{"id", id},
                                        {"object", "chat.completion"},
                                        {"created", created},
                                        {"model", name},
                                        {"choices", {{{"index", 0},
                                                      {"message", message_json(r)},
                                                      {"logprobs", lp},
                                                      {"finish_reason", r.finish_reason}}}},
                                        {"usage", usage_json(r)},
                                        {"akv", akv_json(r.stats, r.call_errors)}});
      res.headers = headers;
      res.headers.emplace_back("x-akv-logits-sha256", r.stats.logits_sha256);
      x.respond(res);
      return;
    }
    auto chunk = [&](json delta, json lp, json finish) {
      return "data: " + json_text({{"id", id}, {"object", "chat.completion.chunk"}, {"created", created}, {"model", name},
                                   {"choices", {{{"index", 0}, {"delta", delta}, {"logprobs", lp}, {"finish_reason", finish}}}}}) + "\n\n";
    };
    if (!x.begin_stream("text/event-stream", headers)) return g->cancel();
    if (!x.write(chunk({{"role", "assistant"}, {"content", ""}}, nullptr, nullptr))) return g->cancel();
    TokenEvent ev;
    while (g->next_event(ev)) {
      json lp = nullptr;
      if (ev.logprob) lp = {{"content", {logprob_json(enc, *ev.logprob, ev.token_text, ev.token_bytes)}}};
      if ((!ev.delta.empty() || ev.logprob) && !x.write(chunk({{"content", ev.delta}}, lp, nullptr))) return g->cancel();
      // A call as OpenAI streams one (SV15): its index, id and name first, then its arguments.
      for (size_t i = 0; i < ev.calls.size(); ++i) {
        const ReplyCall& c = ev.calls[i];
        const json head = {{"tool_calls", {{{"index", i}, {"id", c.id}, {"type", "function"}, {"function", {{"name", c.name}, {"arguments", ""}}}}}}};
        const json args = {{"tool_calls", {{{"index", i}, {"function", {{"arguments", c.arguments}}}}}}};
        if (!x.write(chunk(head, nullptr, nullptr)) || !x.write(chunk(args, nullptr, nullptr))) return g->cancel();
      }
    }
    try {
      const Reply& r = g->reply();
      if (r.cancelled) return;
      json last = json::parse(chunk(json::object(), nullptr, r.finish_reason).substr(6));
      last["akv"] = akv_json(r.stats, r.call_errors);
      if (!x.write("data: " + json_text(last) + "\n\n")) return;
      if (usage && !x.write("data: " + json_text({{"id", id}, {"object", "chat.completion.chunk"}, {"created", created}, {"model", name},
                                                  {"choices", json::array()}, {"usage", usage_json(r)}}) + "\n\n"))
        return;
    } catch (...) {
      // Headers are out: the error goes in the stream, in the same shape, and no finish_reason
      // follows (the reply did not complete).
      const ApiError e = api_error_of(std::current_exception());
      x.write("data: " + error_response(e).body + "\n\n");
    }
    x.write("data: [DONE]\n\n");
    x.end();
  }

  // SV17: POST /v1/responses, read as the chat request it means, on the same engine.
  void responses(const HttpRequest& req, Exchange& x, const std::string& who, const std::string&) {
    InFlight flight(in_flight);
    if (draining) throw shutting_down();
    require_json(req);
    const std::string hint = session_header(req);
    const json original = readers::parse_json_limited(req.body, kConversationJson, {ErrorCode::kBadInput, "body"});
    ChatRequest cr = parse_chat_request(chat_body_of_response(req.body));
    const std::string name = served_name(cr.model);
    const std::string sc = scope(who, req, cr.prompt_cache_key);
    const bool stream = cr.stream;
    const std::string id = "resp_" + sha256_hex(req.body).substr(0, 24);
    const int64_t created = std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
    std::shared_ptr<Generation> g = engine.submit(std::move(cr), hint, sc);
    x.on_client_gone([g] { g->cancel(); });
    const ReplyStats admitted = g->wait_admitted();
    std::vector<std::pair<std::string, std::string>> headers = {{"x-akv-session", admitted.session},
                                                                {"x-akv-cache-sha256", admitted.cache_sha256},
                                                                {"x-akv-guarded-messages", json(admitted.guarded).dump()}};
    if (!stream) {
      const Reply& r = g->reply();
      if (r.cancelled) return;
      HttpResponse res = json_response(response_json(id, created, name, r, original));
      res.headers = headers;
      res.headers.emplace_back("x-akv-logits-sha256", r.stats.logits_sha256);
      x.respond(res);
      return;
    }
    // The stream of events the openai client reads (response.created ... response.completed).
    size_t seq = 0;
    auto event = [&](const std::string& type, json data) {
      data["type"] = type;
      data["sequence_number"] = seq++;
      return x.write("event: " + type + "\ndata: " + json_text(data) + "\n\n");
    };
    const std::string msg_id = "msg_" + id.substr(5);
    json shell = {{"id", id}, {"object", "response"}, {"created_at", created}, {"status", "in_progress"}, {"model", name}, {"output", json::array()}};
    if (!x.begin_stream("text/event-stream", headers)) return g->cancel();
    if (!event("response.created", {{"response", shell}}) || !event("response.in_progress", {{"response", shell}})) return g->cancel();
    bool message_open = false;
    std::string text;
    auto open_message = [&] {
      message_open = true;
      return event("response.output_item.added", {{"output_index", 0}, {"item", {{"type", "message"}, {"id", msg_id}, {"status", "in_progress"}, {"role", "assistant"}, {"content", json::array()}}}}) &&
             event("response.content_part.added", {{"item_id", msg_id}, {"output_index", 0}, {"content_index", 0}, {"part", {{"type", "output_text"}, {"text", ""}, {"annotations", json::array()}}}});
    };
    TokenEvent ev;
    while (g->next_event(ev)) {
      if (ev.delta.empty()) continue;
      if (!message_open && !open_message()) return g->cancel();
      text += ev.delta;
      if (!event("response.output_text.delta", {{"item_id", msg_id}, {"output_index", 0}, {"content_index", 0}, {"delta", ev.delta}})) return g->cancel();
    }
    try {
      const Reply& r = g->reply();
      if (r.cancelled) return;
      const json full = response_json(id, created, name, r, original);
      size_t index = 0;
      if (message_open || (r.has_content && r.calls.empty())) {
        if (!message_open && !open_message()) return;
        const json part = {{"type", "output_text"}, {"text", text}, {"annotations", json::array()}};
        if (!event("response.output_text.done", {{"item_id", msg_id}, {"output_index", 0}, {"content_index", 0}, {"text", text}}) ||
            !event("response.content_part.done", {{"item_id", msg_id}, {"output_index", 0}, {"content_index", 0}, {"part", part}}) ||
            !event("response.output_item.done", {{"output_index", 0}, {"item", full["output"][0]}}))
          return;
        index = 1;
      }
      for (const json& item : full["output"]) {
        if (item["type"] != "function_call") continue;
        json added = item;
        added["arguments"] = "";
        added["status"] = "in_progress";
        if (!event("response.output_item.added", {{"output_index", index}, {"item", added}}) ||
            !event("response.function_call_arguments.delta", {{"item_id", item["id"]}, {"output_index", index}, {"delta", item["arguments"]}}) ||
            !event("response.function_call_arguments.done", {{"item_id", item["id"]}, {"output_index", index}, {"arguments", item["arguments"]}}) ||
            !event("response.output_item.done", {{"output_index", index}, {"item", item}}))
          return;
        ++index;
      }
      event(r.finish_reason == "length" ? "response.incomplete" : "response.completed", {{"response", full}});
    } catch (...) {
      const ApiError e = api_error_of(std::current_exception());
      event("error", {{"code", e.api_code()}, {"message", e.what()}, {"param", nullptr}});
    }
    x.end();
  }

  // ---- the audit log (SV9): the engine's events, in its order

  void write_audit(const AuditEvent& ev) {
    json line = {{"akv_audit", 1}, {"kind", ev.kind}, {"scope", sha256_hex(ev.scope).substr(0, 32)}, {"session", ev.session},
                 {"time", std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count()}};
    if (ev.kind == "evict") {
      line["flagged_messages"] = *ev.flagged;
      line["flagged_keys"] = *ev.flagged_keys;
    } else if (ev.kind == "chat") {
      const BackendDescription d = engine.backend_description();
      const LoadedModel& lm = engine.model();
      const Reply& r = *ev.reply;
      line["request_sha256"] = sha256_hex(ev.request->body);
      line["request_body"] = ev.request->body;  // the bytes the digest is of
      line["model"] = {{"name", lm.name}, {"source", lm.source}, {"seed", lm.real ? json(nullptr) : json(lm.seed)},
                       {"sha256", model_sha256.empty() ? json(nullptr) : json(model_sha256)}};
      line["engine"] = {{"default_max_tokens", engine.options().default_max_tokens},
                        {"guard", engine.options().guard.patterns},
                        {"guard_command", engine.options().guard.command.empty() ? json(nullptr) : json(engine.options().guard.command)},
                        {"kv_type", kv_type_name(engine.options().kv_type)}};
      line["akv"] = {{"version", akv_version()}, {"commit", akv_commit()}};
      line["backend"] = {{"name", d.name}, {"isa", d.isa}, {"threads", d.threads}};
      line["reply"] = {{"tokens", r.tokens}, {"finish_reason", r.finish_reason}, {"stats", akv_json(r.stats, r.call_errors)}};
    }
    audit->append(std::move(line));
  }
};

HttpServer::HttpServer(Engine& engine, ServerOptions opt) : api_(std::make_unique<Api>(engine, opt)) {
  if (!is_loopback(opt.host) && opt.api_keys.empty())
    throw Error(ErrorCode::kBadInput, "--host " + opt.host + ": listening off loopback needs --api-key-file (spec/serving.md SV8)");
  for (const std::string& k : opt.api_keys)
    if (k.size() < 16) throw Error(ErrorCode::kBadInput, "--api-key-file: a key has fewer than 16 characters");
  const LoadedModel& lm = engine.model();
  if (lm.real) api_->model_sha256 = file_or_folder_sha256(lm.source);
  if (!opt.audit_log.empty()) {
    api_->audit = std::make_unique<AuditChainWriter>(opt.audit_log, opt.audit_key);
    Api* api = api_.get();
    engine.set_audit([api](const AuditEvent& ev) { api->write_audit(ev); });
  } else if (!opt.audit_key.empty()) {
    throw Error(ErrorCode::kBadInput, "--audit-key: needs --audit-log");
  }
  TransportOptions t;
  t.host = opt.host;
  t.port = opt.port;
  t.request_timeout_s = opt.read_timeout_s;
  t.write_timeout_s = opt.write_timeout_s;
  t.workers = opt.threads != 0 ? opt.threads : static_cast<size_t>(engine.options().parallel) + engine.options().queue + 16;
  t.max_connections = opt.max_connections;
  t.max_connections_per_peer = opt.max_connections_per_peer;
  t.max_body_bytes = kMaxRequestBytes;
  Api* api = api_.get();
  transport_ = std::make_unique<HttpTransport>(
      t, [api](const HttpRequest& r) { return api->route(r); },
      [](int status, const std::string& code, const std::string& message) {
        return error_of(status, status >= 500 ? "server_error" : "invalid_request_error", code, message);
      });
}

HttpServer::~HttpServer() {
  transport_->stop();
  if (api_->audit) api_->engine.set_audit(nullptr);  // the engine outlives this server's log
}

int HttpServer::bind() { return transport_->bind(); }
void HttpServer::run() { transport_->run(); }
void HttpServer::stop() { transport_->stop(); }
size_t HttpServer::connections() const { return transport_->connections(); }

void HttpServer::drain(int max_s) {
  api_->draining = true;
  for (int i = 0; i < max_s * 20 && api_->in_flight > 0; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  stop();
}

}  // namespace akv::serve
