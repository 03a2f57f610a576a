// akv serve's HTTP face: OpenAI's chat completions API over cpp-httplib (Debian's
// libcpp-httplib-dev; docs/serving.md says why), on the Engine (spec/serving.md SV1-SV8).
#pragma once
#include <atomic>
#include <memory>
#include <mutex>
#include <string>

#include "serve/engine.hpp"

namespace httplib {
class Server;
struct Request;
}

namespace akv::serve {

struct ServerOptions {
  std::string host = "127.0.0.1";  // loopback unless told otherwise (SV8)
  int port = 8080;                 // 0: any free port (tests)
  std::string api_key;             // required on every route but /health when set; needed off loopback
  std::string audit_log;           // append one JSON line per reply (SV9); "" none
  int read_timeout_s = 30;         // a client that sends nothing for this long is dropped (SV6)
  int write_timeout_s = 30;
  int threads = 32;                // HTTP worker threads (connections handled at once)
};

/// True for 127.0.0.0/8, ::1 and "localhost".
bool is_loopback(const std::string& host);

class HttpServer {
 public:
  /// Checks the options: a host off loopback without an API key is Error(kBadInput) (SV8).
  HttpServer(Engine& engine, ServerOptions opt);
  ~HttpServer();
  /// Binds the socket; returns the port. Error(kOutOfResources) when it cannot bind.
  int bind();
  /// Serves until stop(); bind() first.
  void run();
  /// Stops accepting and returns run() (the engine drains what it holds).
  void stop();
  /// SIGTERM's drain (SV6): new chat requests get 503; waits (at most `max_s` seconds) until
  /// every request in flight has written its last byte, streams included. Then stop().
  void drain(int max_s);

 private:
  /// True when no key is set, for /health, or when the request carries the key (SV8).
  bool authorized(const httplib::Request& req) const;
  void routes();
  /// Appends the reply's audit line (SV9); `body_sha256` is sha256_hex(body).
  void audit(const std::string& body, const std::string& body_sha256, const Reply& r);
  Engine& engine_;
  ServerOptions opt_;
  std::unique_ptr<httplib::Server> http_;
  std::string model_sha256_;
  std::mutex audit_mu_;
  std::atomic<bool> draining_{false};
  std::atomic<int> in_flight_{0};  // chat requests whose response is not yet fully written
  int listen_fd_ = -1;
  static constexpr int kListenBacklog = 512;
};

}  // namespace akv::serve
