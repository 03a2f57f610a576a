// akv serve's API: OpenAI's chat completions and akv's session routes, one handler per route
// (spec/serving.md SV2-SV13), over the Engine and the HTTP transport (http_transport.hpp).
#pragma once
#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "serve/audit_chain.hpp"
#include "serve/engine.hpp"
#include "serve/http_transport.hpp"

namespace akv::serve {

struct ServerOptions {
  std::string host = "127.0.0.1";  // loopback unless told otherwise (SV8)
  int port = 8080;                 // 0: any free port (tests)
  /// API keys, each its own caller (SV10); with any, every route but /health needs one, and
  /// they are needed off loopback.
  std::vector<std::string> api_keys;
  std::string audit_log;           // append one JSON line per reply (SV9); "" none
  std::string audit_key;           // a PEM Ed25519 private key: sign each audit line (SV9); "" none
  int read_timeout_s = 30;         // a whole request must arrive within this (SV13)
  int write_timeout_s = 30;        // a client that does not read for this long is dropped
  /// Handler threads; 0: the engine's --parallel + --queue + 16, so that every request the engine
  /// may hold has one and cheap routes are never queued behind them (SV13).
  size_t threads = 0;
  size_t max_connections = 512;
  size_t max_connections_per_peer = 32;
  /// The names `model` may take and GET /v1/models lists (--served-model-name, repeatable);
  /// empty: the loaded model's name (SV2).
  std::vector<std::string> served_names;
};

/// True for 127.0.0.0/8, ::1 and "localhost".
bool is_loopback(const std::string& host);

class HttpServer {
 public:
  /// Checks the options: a host off loopback without an API key, a key shorter than 16
  /// characters, an audit key that is not an Ed25519 key: Error(kBadInput) (SV8, SV9).
  HttpServer(Engine& engine, ServerOptions opt);
  ~HttpServer();
  /// Binds the socket; returns the port. Error(kOutOfResources) when it cannot bind.
  int bind();
  /// Serves until stop(); bind() first.
  void run();
  /// Stops accepting, ends every connection and returns run() (the engine drains what it holds).
  void stop();
  /// SIGTERM's drain (SV6): new chat requests get 503; waits (at most `max_s` seconds) until
  /// every request in flight has written its last byte, streams included. Then stop().
  void drain(int max_s);
  /// Connections open now (for the tests of SV13).
  size_t connections() const;

 private:
  struct Api;
  std::unique_ptr<Api> api_;
  std::unique_ptr<HttpTransport> transport_;
};

}  // namespace akv::serve
