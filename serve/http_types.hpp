// What akv serve's routes see of HTTP (spec/serving.md SV2, SV6): a request read whole and
// checked (http_transport), and an exchange to answer it once or as a stream. Nothing here
// depends on the HTTP library.
#pragma once
#include <functional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace akv::serve {

struct HttpRequest {
  std::string method;  // as sent: "GET", "POST", ...
  std::string target;  // as sent, with its query
  std::string path;    // the target without its query
  std::vector<std::pair<std::string, std::string>> headers;  // names lower-case, in order
  std::string body;
  std::string peer;  // the client's address
  unsigned version = 11;  // HTTP/1.1: 11, HTTP/1.0: 10
  /// The value of the first header `name` (lower-case), nullptr when none.
  const std::string* header(std::string_view name) const {
    for (const auto& [k, v] : headers)
      if (k == name) return &v;
    return nullptr;
  }
  size_t count(std::string_view name) const {
    size_t n = 0;
    for (const auto& [k, v] : headers) n += k == name;
    return n;
  }
};

struct HttpResponse {
  int status = 200;
  std::string content_type = "application/json";
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body;
  bool close = false;  // close the connection after it (a request whose framing is unknown)
};

/// One request's answer, given once (respond) or as a stream (begin_stream, write..., end).
/// Called from the handler's thread; every call blocks until its bytes are written or the
/// connection is gone.
class Exchange {
 public:
  virtual ~Exchange() = default;
  /// Writes a whole response. False when the client is gone or did not read it in time.
  virtual bool respond(const HttpResponse& r) = 0;
  /// Writes the head of a chunked response (status 200, `content_type`, `headers`).
  virtual bool begin_stream(const std::string& content_type, const std::vector<std::pair<std::string, std::string>>& headers) = 0;
  /// Writes one chunk of the stream. False when the client is gone or did not read in time.
  virtual bool write(std::string_view chunk) = 0;
  /// Ends the stream (the last chunk).
  virtual void end() = 0;
  /// `f` runs once when the client closes its connection (or it fails) before the answer is
  /// complete, on another thread; at once when it already has (SV6: an abandoned request stops).
  virtual void on_client_gone(std::function<void()> f) = 0;
};

/// What a router gives the transport: an answer it can make at once, without blocking (health,
/// a route that does not exist, a missing key), or a handler to run on a worker thread.
struct Routed {
  bool immediate = false;
  HttpResponse response;                                 // when immediate
  std::function<void(const HttpRequest&, Exchange&)> handler;  // otherwise
};

}  // namespace akv::serve
