#include "serve/http_server.hpp"

#include <fmt/format.h>
#include <httplib.h>
#include <nlohmann/json.hpp>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <set>
#include <thread>
#include <cstring>
#include <cctype>

#include "readers/conversation/chat_parse.hpp"
#include "readers/json_limited.hpp"
#include "reference/error.hpp"
#include "verify/digest.hpp"
#include "verify/provenance.hpp"

namespace akv::serve {
namespace {
using json = nlohmann::json;

struct UnsupportedMediaType : Error {
  explicit UnsupportedMediaType(const std::string& what) : Error(ErrorCode::kBadInput, what) {}
};

// OpenAI's error shape (SV6): {"error": {"message", "type", "param", "code"}}.
void send_error(httplib::Response& res, int status, const std::string& message, const std::string& type,
                const std::string& code) {
  res.status = status;
  res.set_content(json{{"error", {{"message", message}, {"type", type}, {"param", nullptr}, {"code", code}}}}.dump(-1, ' ', false, json::error_handler_t::replace),
                  "application/json");
}

void send_akv_error(httplib::Response& res, const Error& e) {
  if (dynamic_cast<const SessionBusy*>(&e) != nullptr) return send_error(res, 409, e.what(), "invalid_request_error", "session_busy");
  if (dynamic_cast<const GuardFailed*>(&e) != nullptr) return send_error(res, 500, e.what(), "server_error", "guard_failed");
  if (dynamic_cast<const UnsupportedMediaType*>(&e) != nullptr)
    return send_error(res, 415, e.what(), "invalid_request_error", "unsupported_media_type");
  switch (e.code()) {
    case ErrorCode::kBadInput:
    case ErrorCode::kInvalidToken:
    case ErrorCode::kEmptyInput:
      return send_error(res, 400, e.what(), "invalid_request_error", error_code_name(e.code()));
    case ErrorCode::kContextOverflow:
      return send_error(res, 400, e.what(), "invalid_request_error", "context_length_exceeded");
    case ErrorCode::kUnknownModel:
      return send_error(res, 404, e.what(), "invalid_request_error", "model_not_found");
    case ErrorCode::kUnknownSpan:
      return send_error(res, 404, e.what(), "invalid_request_error", "session_not_found");
    case ErrorCode::kOutOfResources:
      res.set_header("Retry-After", "1");
      return send_error(res, 429, e.what(), "rate_limit_error", "rate_limit_exceeded");
    default:
      return send_error(res, 500, e.what(), "server_error", error_code_name(e.code()));
  }
}

json bytes_of(const std::string& s) {
  json b = json::array();
  for (unsigned char c : s) b.push_back(c);
  return b;
}

json logprob_json(const Engine& e, const TokenLogprob& lp, const std::string& text, const std::string& bytes) {
  json top = json::array();
  for (const auto& [t, v] : lp.top) {
    const std::string s = e.model().encoder->render({t});
    top.push_back({{"token", utf8_text(s)}, {"logprob", v}, {"bytes", bytes_of(s)}});
  }
  return {{"token", text}, {"logprob", lp.logprob}, {"bytes", bytes_of(bytes)}, {"top_logprobs", top}};
}

json akv_json(const ReplyStats& s) {
  return {{"session", s.session},
          {"reused_tokens", s.reused_tokens},
          {"recomputed_tokens", s.recomputed_tokens},
          {"evicted_tokens", s.evicted_tokens},
          {"prefill_tokens", s.prefill_tokens},
          {"dropped_messages", s.dropped},
          {"guarded_messages", s.guarded},
          {"cache_sha256", s.cache_sha256},
          {"logits_sha256", s.logits_sha256}};
}

json usage_json(const Reply& r) {
  return {{"prompt_tokens", r.stats.prompt_tokens},
          {"completion_tokens", r.tokens.size()},
          {"total_tokens", r.stats.prompt_tokens + r.tokens.size()},
          {"prompt_tokens_details", {{"cached_tokens", r.stats.reused_tokens}}}};
}

std::string bearer(const httplib::Request& req) {
  const std::string h = req.get_header_value("Authorization");
  return h.rfind("Bearer ", 0) == 0 ? h.substr(7) : "";
}

// Constant-time comparison: the key's bytes do not show in the reply's timing.
bool same_key(const std::string& a, const std::string& b) {
  unsigned char d = a.size() == b.size() ? 0 : 1;
  for (size_t i = 0; i < a.size(); ++i) d |= static_cast<unsigned char>(a[i] ^ b[i % (b.empty() ? 1 : b.size())]);
  return d == 0 && !b.empty();
}

// A session id as a client names it: 1-128 of [A-Za-z0-9._:@-], so it is safe in a header,
// a path, a JSON string and a log line (SV3).
std::string session_id(const std::string& id, const char* where) {
  bool ok = !id.empty() && id.size() <= 128;
  for (const char c : id) ok = ok && (std::isalnum(static_cast<unsigned char>(c)) || std::strchr("._:@-", c) != nullptr);
  if (!ok) throw Error(ErrorCode::kBadInput, std::string(where) + ": a session id is 1 to 128 of A-Z a-z 0-9 . _ : @ -");
  return id;
}

// Decrements the in-flight count when the last copy goes: at the end of a plain response, or
// when cpp-httplib drops a stream's content provider after its last chunk.
struct InFlight {
  std::atomic<int>& n;
  explicit InFlight(std::atomic<int>& c) : n(c) { ++n; }
  ~InFlight() { --n; }
};

constexpr const char* kRoutes =
    "this server answers GET /health, GET /v1/models, POST /v1/chat/completions and POST /v1/sessions/{id}/evict";

constexpr const char* kJsonOnly =
    "Content-Type: expected application/json (curl -d sends application/x-www-form-urlencoded: add -H 'Content-Type: "
    "application/json')";

// A POST body must say it is JSON: another type would be read as something it does not claim to be.
void require_json(const httplib::Request& req) {
  const std::string t = req.get_header_value("Content-Type");
  if (t.rfind("application/json", 0) != 0 || (t.size() > 16 && t[16] != ';' && t[16] != ' '))
    throw UnsupportedMediaType(kJsonOnly);
}

bool has_body(const httplib::Request& req) {
  return req.has_header("Transfer-Encoding") || (req.has_header("Content-Length") && req.get_header_value("Content-Length") != "0");
}

void send_401(httplib::Response& res) {
  send_error(res, 401, "a valid API key is required (Authorization: Bearer ...)", "invalid_request_error", "invalid_api_key");
}
}  // namespace

bool HttpServer::authorized(const httplib::Request& req) const {
  return opt_.api_key.empty() || req.path == "/health" || same_key(bearer(req), opt_.api_key);
}

bool is_loopback(const std::string& host) {
  return host == "localhost" || host == "::1" || host.rfind("127.", 0) == 0;
}

HttpServer::HttpServer(Engine& engine, ServerOptions opt) : engine_(engine), opt_(std::move(opt)), http_(std::make_unique<httplib::Server>()) {
  if (!is_loopback(opt_.host) && opt_.api_key.empty())
    throw Error(ErrorCode::kBadInput, "--host " + opt_.host +
                                          ": listening off loopback needs --api-key-file (spec/serving.md SV8)");
  if (opt_.port < 0 || opt_.port > 65535) throw Error(ErrorCode::kBadInput, fmt::format("--port {}: not in [0, 65535]", opt_.port));
  const LoadedModel& lm = engine_.model();
  if (lm.real) model_sha256_ = file_or_folder_sha256(lm.source);
  http_->new_task_queue = [n = opt_.threads] { return new httplib::ThreadPool(static_cast<size_t>(n)); };
  // Debian's cpp-httplib listens with a backlog of 5: a burst of new clients would be refused.
  // The listening socket is remembered here and given a longer queue after bind().
  http_->set_socket_options([this](int sock) {
    httplib::default_socket_options(sock);
    listen_fd_ = sock;
  });
  http_->set_payload_max_length(kMaxRequestBytes);
  http_->set_read_timeout(opt_.read_timeout_s, 0);
  http_->set_write_timeout(opt_.write_timeout_s, 0);
  routes();
}

HttpServer::~HttpServer() = default;

int HttpServer::bind() {
  const int port = opt_.port == 0 ? http_->bind_to_any_port(opt_.host) : (http_->bind_to_port(opt_.host, opt_.port) ? opt_.port : -1);
  if (port < 0) throw Error(ErrorCode::kOutOfResources, fmt::format("cannot listen on {}:{}", opt_.host, opt_.port));
  if (listen_fd_ >= 0 && ::listen(listen_fd_, kListenBacklog) != 0)  // Linux: a second listen() sets the queue
    throw Error(ErrorCode::kOutOfResources, fmt::format("cannot set the listen queue on {}:{}", opt_.host, port));
  return port;
}

void HttpServer::run() { http_->listen_after_bind(); }
void HttpServer::stop() { http_->stop(); }

void HttpServer::drain(int max_s) {
  draining_ = true;
  for (int i = 0; i < max_s * 20 && in_flight_ > 0; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  stop();
}

void HttpServer::audit(const std::string& body, const std::string& body_sha256, const Reply& r) {
  if (opt_.audit_log.empty()) return;
  const BackendDescription d = engine_.backend_description();
  const json line = {{"akv_audit", 1},
                     {"time", std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count()},
                     {"request_sha256", body_sha256},
                     {"request_body", body},  // the bytes the digest is of
                     {"model", {{"name", engine_.model().name}, {"source", engine_.model().source},
                                {"seed", engine_.model().real ? json(nullptr) : json(engine_.model().seed)},
                                {"sha256", model_sha256_.empty() ? json(nullptr) : json(model_sha256_)}}},
                     {"engine", {{"default_max_tokens", engine_.options().default_max_tokens},
                                 {"guard", engine_.options().guard.patterns},
                                 {"guard_command", engine_.options().guard.command.empty() ? json(nullptr) : json(engine_.options().guard.command)},
                                 {"kv_type", kv_type_name(engine_.options().kv_type)}}},
                     {"akv", {{"version", akv_version()}, {"commit", akv_commit()}}},
                     {"backend", {{"name", d.name}, {"isa", d.isa}, {"threads", d.threads}}},
                     {"reply", {{"tokens", r.tokens}, {"finish_reason", r.finish_reason}, {"stats", akv_json(r.stats)}}}};
  const std::string text = line.dump(-1, ' ', false, json::error_handler_t::replace) + "\n";
  std::lock_guard lk(audit_mu_);
  FILE* f = std::fopen(opt_.audit_log.c_str(), "a+b");
  if (f == nullptr) throw Error(ErrorCode::kOutOfResources, "--audit-log " + opt_.audit_log + ": cannot open for append");
  // A log whose last line a kill cut (no newline): this line starts on a line of its own.
  bool cut = false;
  if (std::fseek(f, -1, SEEK_END) == 0) cut = std::fgetc(f) != '\n';
  std::fseek(f, 0, SEEK_END);
  const std::string out = (cut ? "\n" : "") + text;
  const bool ok = std::fwrite(out.data(), 1, out.size(), f) == out.size() && std::fflush(f) == 0 && fsync(fileno(f)) == 0;
  std::fclose(f);
  if (!ok) throw Error(ErrorCode::kOutOfResources, "--audit-log " + opt_.audit_log + ": write failed");
}

void HttpServer::routes() {
  // The key is checked before routing only for requests without a body: answering before a
  // body is read would leave it on a kept-alive connection, to be read as the next request.
  // The others are checked by their handler (or the error handler), after the body is read.
  http_->set_pre_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
    if (authorized(req) || has_body(req)) return httplib::Server::HandlerResponse::Unhandled;
    send_401(res);
    return httplib::Server::HandlerResponse::Handled;
  });
  http_->set_exception_handler([](const httplib::Request&, httplib::Response& res, std::exception_ptr ep) {
    try {
      std::rethrow_exception(ep);
    } catch (const Error& e) {
      send_akv_error(res, e);
    } catch (const std::exception& e) {
      send_error(res, 500, e.what(), "server_error", "internal");
    }
  });
  http_->set_error_handler([this](const httplib::Request& req, httplib::Response& res) {
    if (!res.body.empty()) return;
    if (!authorized(req)) return send_401(res);  // an unknown route with a body: no key, no route names
    const bool form = req.get_header_value("Content-Type").rfind("application/x-www-form-urlencoded", 0) == 0;
    if (res.status == 404) send_error(res, 404, "no route " + req.method + " " + req.path, "invalid_request_error", "not_found");
    else if (res.status == 413 && form) send_error(res, 415, kJsonOnly, "invalid_request_error", "unsupported_media_type");
    else if (res.status == 413) send_error(res, 413, "the body exceeds the limit of 8 MiB", "invalid_request_error", "body_too_large");
    else if (req.method.empty() || !std::set<std::string>{"GET", "POST", "HEAD"}.count(req.method))
      send_error(res, res.status == 400 ? 405 : res.status, kRoutes,
                 "invalid_request_error", "method_not_allowed");
    else send_error(res, res.status, fmt::format("HTTP error {}: the request line or headers are malformed or too long", res.status),
                    "invalid_request_error", "http_error");
  });
  // The methods no route has get 405. A body is read to its end first (a kept-alive
  // connection stays in step); one without Content-Length or chunking is not waited for
  // (cpp-httplib would read it until the client closed).
  const auto not_allowed = [this](const httplib::Request& req, httplib::Response& res, const httplib::ContentReader& read) {
    if (has_body(req)) read([](const char*, size_t) { return true; });
    if (!authorized(req)) return send_401(res);
    send_error(res, 405, kRoutes, "invalid_request_error", "method_not_allowed");
  };
  http_->Put(".*", not_allowed);
  http_->Patch(".*", not_allowed);
  http_->Delete(".*", not_allowed);
  http_->Options(".*", [this](const httplib::Request& req, httplib::Response& res) {
    if (!authorized(req)) return send_401(res);
    send_error(res, 405, kRoutes, "invalid_request_error", "method_not_allowed");
  });
  http_->Get("/health", [](const httplib::Request&, httplib::Response& res) {
    res.set_content(R"({"status":"ok"})", "application/json");
  });
  http_->Get("/v1/models", [this](const httplib::Request&, httplib::Response& res) {
    res.set_content(json{{"object", "list"},
                         {"data", {{{"id", engine_.model().name}, {"object", "model"}, {"created", 0}, {"owned_by", "akv"}}}}}
                        .dump(-1, ' ', false, json::error_handler_t::replace),
                    "application/json");
  });
  http_->Post(R"(/v1/sessions/([^/]+)/evict)", [this](const httplib::Request& req, httplib::Response& res) {
    if (!authorized(req)) return send_401(res);
    require_json(req);
    const json body = model::parse_json_limited(req.body, kConversationJson, {ErrorCode::kBadInput, "body"});
    if (!body.is_object() || !body.contains("messages") || !body["messages"].is_array())
      throw Error(ErrorCode::kBadInput, "body: expected {\"messages\": [span indexes]}");
    for (const auto& [k, _] : body.items())
      if (k != "messages") throw Error(ErrorCode::kBadInput, k + ": unknown field");
    std::vector<size_t> idx;
    for (const json& v : body["messages"]) {
      if (!v.is_number_unsigned()) throw Error(ErrorCode::kBadInput, "messages: expected non-negative integers");
      idx.push_back(v.get<size_t>());
    }
    const EvictStats st = engine_.evict(session_id(req.matches[1], "the path's session id"), idx);
    res.set_content(json{{"session", std::string(req.matches[1])},
                         {"evicted_tokens", st.tokens_evicted},
                         {"recomputed_tokens", st.tokens_recomputed},
                         {"truncated_at", st.truncated_at}}
                        .dump(-1, ' ', false, json::error_handler_t::replace),
                    "application/json");
  });
  http_->Post("/v1/chat/completions", [this](const httplib::Request& req, httplib::Response& res) {
    if (!authorized(req)) return send_401(res);
    auto flight = std::make_shared<InFlight>(in_flight_);
    if (draining_) {
      res.set_header("Retry-After", "1");
      return send_error(res, 503, "the server is shutting down", "server_error", "shutting_down");
    }
    require_json(req);
    const std::string hint = req.has_header("x-akv-session") ? session_id(req.get_header_value("x-akv-session"), "x-akv-session") : "";
    ChatRequest cr = parse_chat_request(req.body);
    const std::string name = engine_.model().name;
    if (!cr.model.empty() && cr.model != name)
      throw Error(ErrorCode::kUnknownModel, fmt::format("model '{}': this server serves '{}' (GET /v1/models)", cr.model, name));
    const bool stream = cr.stream, usage = cr.include_usage, logprobs = cr.logprobs;
    const std::string body = req.body;
    const std::string body_sha256 = sha256_hex(body);
    const std::string id = "chatcmpl-" + body_sha256.substr(0, 24);
    const int64_t created = std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
    std::shared_ptr<Generation> g = engine_.submit(std::move(cr), hint);
    const std::string session = g->wait_admitted();  // admission errors are still HTTP errors
    res.set_header("x-akv-session", session);
    if (!stream) {
      const Reply& r = g->reply();
      audit(body, body_sha256, r);
      json lp = nullptr;
      if (logprobs) {
        lp = {{"content", json::array()}};
        for (size_t i = 0; i < r.logprobs.size(); ++i) lp["content"].push_back(logprob_json(engine_, r.logprobs[i], r.token_text[i], r.token_bytes[i]));
      }
      res.set_content(json{{"id", id},
                           {"object", "chat.completion"},
                           {"created", created},
                           {"model", name},
                           {"choices", {{{"index", 0},
                                         {"message", {{"role", "assistant"}, {"content", r.text}}},
                                         {"logprobs", lp},
                                         {"finish_reason", r.finish_reason}}}},
                           {"usage", usage_json(r)},
                           {"akv", akv_json(r.stats)}}
                          .dump(-1, ' ', false, json::error_handler_t::replace),
                      "application/json");
      return;
    }
    auto chunk = [id, created, name](json delta, json lp, json finish) {
      return "data: " + json{{"id", id}, {"object", "chat.completion.chunk"}, {"created", created}, {"model", name},
                             {"choices", {{{"index", 0}, {"delta", delta}, {"logprobs", lp}, {"finish_reason", finish}}}}}
                            .dump(-1, ' ', false, json::error_handler_t::replace) + "\n\n";
    };
    res.set_chunked_content_provider("text/event-stream", [this, g, chunk, body, body_sha256, usage, id, created, name, flight](size_t, httplib::DataSink& sink) {
     try {
      auto write = [&](const std::string& s) {
        if (!sink.write(s.data(), s.size())) {
          g->cancel();  // the client went away: stop its generation (SV6)
          return false;
        }
        return true;
      };
      if (!write(chunk({{"role", "assistant"}, {"content", ""}}, nullptr, nullptr))) return false;
      TokenEvent ev;
      while (g->next_event(ev)) {
        json lp = nullptr;
        if (ev.logprob) lp = {{"content", {logprob_json(engine_, *ev.logprob, ev.token_text, ev.token_bytes)}}};
        if ((!ev.delta.empty() || ev.logprob) && !write(chunk({{"content", ev.delta}}, lp, nullptr))) return false;
      }
      try {
        const Reply& r = g->reply();
        audit(body, body_sha256, r);
        std::string last = chunk(json::object(), nullptr, r.finish_reason);
        json lastj = json::parse(last.substr(6));  // our own chunk, just written
        lastj["akv"] = akv_json(r.stats);
        if (!write("data: " + lastj.dump(-1, ' ', false, json::error_handler_t::replace) + "\n\n")) return false;
        if (usage &&
            !write("data: " + json{{"id", id}, {"object", "chat.completion.chunk"}, {"created", created}, {"model", name},
                                   {"choices", json::array()}, {"usage", usage_json(r)}}
                                  .dump(-1, ' ', false, json::error_handler_t::replace) + "\n\n"))
          return false;
      } catch (const std::exception& e) {
        // Headers are out: the error goes in the stream, in the same shape.
        write("data: " + json{{"error", {{"message", e.what()}, {"type", "server_error"}, {"param", nullptr}, {"code", "generation_failed"}}}}.dump(-1, ' ', false, json::error_handler_t::replace) + "\n\n");
      }
      write("data: [DONE]\n\n");
      sink.done();
      return true;
     } catch (...) {  // never out of the HTTP thread: the connection closes, the request stops
      g->cancel();
      return false;
     }
    });
  });
}

}  // namespace akv::serve
