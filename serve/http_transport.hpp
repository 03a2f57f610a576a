// akv serve's HTTP/1.1 transport over Boost.Beast (docs/serving.md "Choices" says why): it
// reads each request whole under one deadline, checks its framing (RFC 9112), caps the
// connections of each peer, answers pipelined requests in order, and tells a handler when its
// client has gone (spec/serving.md SV6, SV13). It knows nothing of the API: a Router does.
#pragma once
#include <cstddef>
#include <functional>
#include <memory>
#include <string>

#include "serve/http_types.hpp"

namespace akv::serve {

struct TransportOptions {
  std::string host = "127.0.0.1";
  int port = 8080;                   // 0: any free port
  int request_timeout_s = 30;        // a whole request (head and body) must arrive within this, from the connection's first byte or the last reply
  int write_timeout_s = 30;          // a client that does not read a response (or a chunk) for this long is dropped
  size_t max_connections = 512;      // open connections in all; more are refused with 503
  size_t max_connections_per_peer = 32;  // of one client address; more are refused with 503
  size_t workers = 64;               // threads that run the handlers (engine requests wait there)
  size_t io_threads = 2;             // threads that read and write
  size_t max_body_bytes = size_t{8} << 20;  // 413 past this
  size_t max_header_bytes = size_t{64} << 10;  // 431 past this
};

/// Routes a request read whole: returns an immediate answer or a handler (http_types.hpp).
using Router = std::function<Routed(const HttpRequest&)>;
/// The body of the transport's own errors (framing, limits, too many connections), in the
/// API's error shape: status, code, message.
using ErrorPage = std::function<HttpResponse(int, const std::string&, const std::string&)>;

class HttpTransport {
 public:
  /// Error(kBadInput) for an option out of range.
  HttpTransport(TransportOptions opt, Router router, ErrorPage error_page);
  ~HttpTransport();
  HttpTransport(const HttpTransport&) = delete;
  HttpTransport& operator=(const HttpTransport&) = delete;
  /// Binds and listens; returns the port. Error(kOutOfResources) when it cannot.
  int bind();
  /// Serves until stop(); bind() first.
  void run();
  /// Stops accepting, closes every connection (their handlers see the client gone), waits for
  /// the handlers, and makes run() return. Idempotent; any thread.
  void stop();
  /// Connections open now.
  size_t connections() const;

  struct Impl;  // opaque: Boost.Beast stays in the .cpp

 private:
  std::unique_ptr<Impl> impl_;
};

/// The framing checks of a request head (RFC 9112 sections 6, 7; SV13), shared by the transport
/// and the fuzz target: a Transfer-Encoding other than exactly `chunked` (501 when chunked is
/// last, 400 otherwise), Transfer-Encoding with Content-Length, more than one Host. Returns the
/// status (0: the head is fine) and a message naming the problem.
std::pair<int, std::string> check_framing(const HttpRequest& head);

/// Reads `bytes` as a client's stream of requests with the transport's parser and limits
/// (`opt`'s header and body limits) and its framing checks, calling `each` for every request
/// read whole, in order. Returns the status the transport answers the first bad request with
/// (400, 413, 431, 501), or 0 when every byte was used or the last request is incomplete. For
/// the fuzz target (fuzz/fuzz_http_request.cpp): the server reads sockets with the same parser.
int read_requests(std::string_view bytes, const TransportOptions& opt, const std::function<void(const HttpRequest&)>& each);

}  // namespace akv::serve
