// What the tests of akv serve share (spec/serving.md): a server on loopback on a free port, on its
// own thread until destroyed, and the requests they send it. Every request is bounded
// (max_tokens, a client timeout).
#pragma once
#include <gtest/gtest.h>
#include <httplib.h>
#include <nlohmann/json.hpp>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>
#include <csignal>

#include <atomic>
#include <memory>
#include <sstream>
#include <string>
#include <thread>

#include "serve/engine.hpp"
#include "serve/http_server.hpp"
#include "runtime/backends.hpp"

namespace akv::test_serve {
using json = nlohmann::json;

// A peer that closes while a test writes must fail the write, not kill the test (SIGPIPE).
inline const bool kSigpipeIgnored = [] {
  signal(SIGPIPE, SIG_IGN);
  return true;
}();

// A server on 127.0.0.1, a free port, running on its own thread until destroyed.
struct TestServer {
  std::unique_ptr<serve::Engine> engine;
  std::unique_ptr<serve::HttpServer> http;
  std::thread thread;
  int port = 0;
  explicit TestServer(serve::EngineOptions eo = {}, serve::ServerOptions so = {}, const std::string& model = "tiny") {
    LoadedModel lm = load_model(model, 1);
    auto b = make_backend("cpu", lm.model, {});
    engine = std::make_unique<serve::Engine>(std::move(lm), std::move(b), eo);
    so.port = 0;
    http = std::make_unique<serve::HttpServer>(*engine, so);
    port = http->bind();
    thread = std::thread([this] { http->run(); });
  }
  ~TestServer() {
    http->stop();
    thread.join();
  }
  httplib::Client client() const {
    httplib::Client c("127.0.0.1", port);
    c.set_read_timeout(120, 0);
    return c;
  }
};

// A raw TCP connection to 127.0.0.1:port whose reads give up after recv_timeout_s (for what an
// HTTP client library will not send); -1 when it cannot connect.
inline int loopback_socket(int port, int recv_timeout_s) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return -1;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  timeval tv{recv_timeout_s, 0};
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 || setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

struct Answer {
  int status = 0;
  json body;
  std::string session;
};

inline Answer post(const TestServer& s, const json& body, const std::string& session = "", const std::string& path = "/v1/chat/completions",
            const std::string& key = "") {
  httplib::Client c = s.client();
  httplib::Headers h;
  if (!session.empty()) h.emplace("x-akv-session", session);
  if (!key.empty()) h.emplace("Authorization", "Bearer " + key);
  auto r = c.Post(path, h, body.dump(), "application/json");
  if (!r) {
    ADD_FAILURE() << "no response from the server: " << httplib::to_string(r.error());
    return {};
  }
  Answer a;
  a.status = r->status;
  a.body = json::parse(r->body, nullptr, false);
  a.session = r->get_header_value("x-akv-session");
  return a;
}

// What must be byte-equal between two replies to the same request (SV1): the choices (tokens'
// text, logprobs, finish reason), the cache digest and the logits digest.
inline std::string reply_bits(const json& b) {
  return b["choices"].dump() + " " + b["akv"]["cache_sha256"].get<std::string>() + " " + b["akv"]["logits_sha256"].get<std::string>();
}

inline json request_of(const json& messages, int max_tokens = 3) {
  return {{"messages", messages}, {"max_tokens", max_tokens}, {"logprobs", true}, {"top_logprobs", 2}};
}

inline std::atomic<int> cold_counter{0};
inline std::string cold_session() { return "cold-" + std::to_string(cold_counter++); }  // never cached: a cold start

// The content a stream carried, and whether it ended with [DONE].
inline std::string streamed_content(const std::string& body, bool& done) {
  std::string content;
  done = false;
  std::istringstream lines(body);
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("data: ", 0) != 0) continue;
    if (line == "data: [DONE]") {
      done = true;
      continue;
    }
    const json chunk = json::parse(line.substr(6));  // kept: a range-for over a temporary's member dangles
    for (const json& ch : chunk["choices"])
      if (ch["delta"].contains("content")) content += ch["delta"]["content"].get<std::string>();
  }
  return content;
}

// Everything a raw connection receives until the server closes it or its receive timeout passes.
inline std::string read_all(int fd) {
  std::string got;
  char buf[4096];
  for (ssize_t n; (n = recv(fd, buf, sizeof buf, 0)) > 0;) got.append(buf, static_cast<size_t>(n));
  return got;
}


}  // namespace akv::test_serve
