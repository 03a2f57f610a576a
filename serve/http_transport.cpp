#include "serve/http_transport.hpp"

#include <fmt/format.h>
#include <sys/socket.h>

#include <array>
#include <atomic>
#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <cerrno>
#include <cstring>
#include <deque>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <thread>
#include <vector>

#include "reference/error.hpp"

namespace akv::serve {
namespace {
namespace net = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = net::ip::tcp;

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

std::string trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return std::string(s);
}

HttpRequest to_request(const http::request<http::string_body>& r, const std::string& peer) {
  HttpRequest q;
  q.method = std::string(r.method_string());
  q.target = std::string(r.target());
  q.path = q.target.substr(0, q.target.find('?'));
  for (const auto& f : r) q.headers.emplace_back(lower(std::string(f.name_string())), std::string(f.value()));
  q.body = r.body();
  q.peer = peer;
  q.version = r.version();
  return q;
}
}  // namespace

std::pair<int, std::string> check_framing(const HttpRequest& head) {
  if (head.count("transfer-encoding") > 0) {
    std::vector<std::string> codings;
    for (const auto& [k, v] : head.headers) {
      if (k != "transfer-encoding") continue;
      size_t at = 0;
      for (;;) {
        const size_t comma = v.find(',', at);
        codings.push_back(lower(trim(std::string_view(v).substr(at, comma == std::string::npos ? std::string::npos : comma - at))));
        if (comma == std::string::npos) break;
        at = comma + 1;
      }
    }
    if (codings.empty() || codings.back() != "chunked")
      return {400, "Transfer-Encoding: the last coding of a request must be chunked (RFC 9112 section 6.3)"};
    if (codings.size() != 1)
      return {501, "Transfer-Encoding: only chunked is implemented, got '" + fmt::format("{}", fmt::join(codings, ", ")) + "'"};
    if (head.count("content-length") > 0) return {400, "Transfer-Encoding with Content-Length: the framing is ambiguous (RFC 9112 section 6.1)"};
  }
  if (head.count("host") > 1) return {400, "Host: sent more than once (RFC 9112 section 3.2)"};
  if (head.version >= 11 && head.count("host") == 0) return {400, "Host: missing (an HTTP/1.1 request needs one, RFC 9112 section 3.2)"};
  if (const std::string* h = head.header("host")) {
    // uri-host [ ":" port ]: no whitespace, control byte, '/', '?', '#' or '@' (RFC 3986 section 3.2).
    for (const char c : *h)
      if (static_cast<unsigned char>(c) <= 0x20 || c == 0x7F || std::strchr("/?#@\\\"<>{}|^`", c) != nullptr)
        return {400, "Host: not a host[:port] (RFC 9112 section 3.2)"};
  }
  return {0, ""};
}

int read_requests(std::string_view bytes, const TransportOptions& opt, const std::function<void(const HttpRequest&)>& each) {
  while (!bytes.empty()) {
    http::request_parser<http::string_body> p;
    p.header_limit(static_cast<uint32_t>(opt.max_header_bytes));
    p.body_limit(opt.max_body_bytes);
    p.eager(true);
    beast::error_code ec;
    bool head_checked = false;
    while (!p.is_done()) {
      const size_t used = p.put(net::buffer(bytes.data(), bytes.size()), ec);
      bytes.remove_prefix(used);
      if (ec == http::error::need_more) return 0;  // the rest has not arrived
      if (ec == http::error::header_limit) return 431;
      if (ec == http::error::body_limit) return 413;
      if (ec) return 400;
      if (!head_checked && p.is_header_done()) {
        head_checked = true;
        if (const auto [status, why] = check_framing(to_request(p.get(), "fuzz")); status != 0) return status;
        if (p.content_length() && *p.content_length() > opt.max_body_bytes) return 413;
      }
      if (used == 0 && !p.is_done()) return 0;
    }
    each(to_request(p.get(), "fuzz"));
  }
  return 0;
}

struct HttpTransport::Impl {
  TransportOptions opt;
  Router router;
  ErrorPage error_page;
  std::atomic<bool> stopping{false};
  std::once_flag stop_once;

  mutable std::mutex mu;  // guards the two below
  std::map<std::string, size_t> per_peer;
  std::map<const void*, std::weak_ptr<void>> live;  // open connections (Connection), by address

  // Declared after what a Connection's destructor uses: the io_context goes first, and with it
  // the handlers it still holds, while the counts they update are alive.
  net::io_context ioc;
  std::optional<net::executor_work_guard<net::io_context::executor_type>> guard;
  tcp::acceptor acceptor{ioc};
  net::thread_pool workers;

  Impl(TransportOptions o, Router r, ErrorPage e)
      : opt(std::move(o)), router(std::move(r)), error_page(std::move(e)), guard(net::make_work_guard(ioc)), workers(opt.workers) {}

  void accept();
  void close_all();
};

namespace {

// One client connection. Every socket operation runs on the connection's strand; a handler on
// a worker thread reaches it through post() and waits for its completion.
class Connection : public std::enable_shared_from_this<Connection>, public Exchange {
 public:
  Connection(tcp::socket s, HttpTransport::Impl& t, std::string peer)
      : stream_(std::move(s)), t_(t), peer_(std::move(peer)) {}

  ~Connection() override {
    std::lock_guard lk(t_.mu);
    if (--t_.per_peer[peer_] == 0) t_.per_peer.erase(peer_);
    t_.live.erase(this);
  }

  void start() {
    net::dispatch(stream_.get_executor(), [self = shared_from_this()] { self->read_head(); });
  }

  void close() {
    net::post(stream_.get_executor(), [self = shared_from_this()] {
      beast::error_code ec;
      self->stream_.socket().shutdown(tcp::socket::shutdown_both, ec);
      self->stream_.close();
      self->client_gone();
    });
  }

  // ---- Exchange (the worker's side): each call queues its bytes on the strand and returns at
  // once, so a client that reads slowly holds its connection, never a handler thread (SV13).

  bool respond(const HttpResponse& r) override {
    answered_ = true;
    auto res = std::make_shared<http::response<http::string_body>>(make_response(r));
    if (r.close) close_after_ = true;
    return enqueue(res->body().size(), [this, res](Done done) {
      http::async_write(stream_, *res, [res, done](beast::error_code ec, size_t) { done(!ec); });
    });
  }

  bool begin_stream(const std::string& content_type, const std::vector<std::pair<std::string, std::string>>& headers) override {
    answered_ = true;
    auto head = std::make_shared<http::response<http::empty_body>>(http::status::ok, version_);
    head->set(http::field::content_type, content_type);
    head->set(http::field::cache_control, "no-cache");
    for (const auto& [k, v] : headers) head->set(k, v);
    head->keep_alive(keep_alive_);
    head->chunked(true);
    auto sr = std::make_shared<http::response_serializer<http::empty_body>>(*head);
    return enqueue(0, [this, head, sr](Done done) {
      http::async_write_header(stream_, *sr, [head, sr, done](beast::error_code ec, size_t) { done(!ec); });
    });
  }

  bool write(std::string_view chunk) override {
    if (chunk.empty()) return true;  // an empty chunk would end the stream
    auto data = std::make_shared<std::string>(chunk);
    return enqueue(data->size(), [this, data](Done done) {
      net::async_write(stream_, http::make_chunk(net::buffer(*data)), [data, done](beast::error_code ec, size_t) { done(!ec); });
    });
  }

  void end() override {
    enqueue(0, [this](Done done) {
      net::async_write(stream_, http::make_chunk_last(), [done](beast::error_code ec, size_t) { done(!ec); });
    });
  }

  void on_client_gone(std::function<void()> f) override {
    bool now;
    {
      std::lock_guard lk(gone_mu_);
      now = gone_;
      if (!now) gone_callbacks_.push_back(f);
    }
    if (now) f();
  }

  /// The handler returned (on its worker thread): the exchange ends when its bytes are out.
  void handler_done() {
    net::post(stream_.get_executor(), [self = shared_from_this()] {
      self->handler_done_ = true;
      self->maybe_finish();
    });
  }

 private:
  using Done = std::function<void(bool)>;
  using Op = std::function<void(Done)>;
  // A response may hold this many bytes not yet written before its client is dropped as too
  // slow (a stream that outruns its reader).
  static constexpr size_t kMaxQueued = size_t{8} << 20;

  // Queues `op` (which writes `bytes` of body) after the ones before it; false when the client
  // is gone, the transport stops, or the client has fallen too far behind.
  bool enqueue(size_t bytes, Op op) {
    if (is_gone() || t_.stopping) return false;
    if (queued_ += bytes; queued_ > kMaxQueued) {
      write_failed_ = true;
      close();
      return false;
    }
    net::post(stream_.get_executor(), [self = shared_from_this(), bytes, op = std::move(op)]() mutable {
      self->ops_.push_back({bytes, std::move(op)});
      self->pump();
    });
    return true;
  }

  // Runs the queued writes one after the other, each under --timeout (SV13).
  void pump() {
    if (writing_ || ops_.empty()) return maybe_finish();
    if (is_gone()) {
      ops_.clear();
      return maybe_finish();
    }
    writing_ = true;
    auto [bytes, op] = std::move(ops_.front());
    ops_.pop_front();
    stream_.expires_after(std::chrono::seconds(t_.opt.write_timeout_s));
    op([self = shared_from_this(), bytes = bytes](bool ok) {
      self->stream_.expires_never();
      self->writing_ = false;
      self->queued_ -= bytes;
      if (!ok) {
        self->write_failed_ = true;
        self->ops_.clear();
        self->shutdown();
      }
      self->pump();
    });
  }

  void maybe_finish() {
    if (handler_done_ && !writing_ && ops_.empty() && !finished_) {
      finished_ = true;
      after_handler();
    }
  }

  bool is_gone() {
    std::lock_guard lk(gone_mu_);
    return gone_;
  }

  void client_gone() {
    std::vector<std::function<void()>> fs;
    {
      std::lock_guard lk(gone_mu_);
      if (gone_) return;
      gone_ = true;
      fs.swap(gone_callbacks_);
    }
    for (auto& f : fs) f();
  }

  http::response<http::string_body> make_response(const HttpResponse& r) const {
    http::response<http::string_body> res{static_cast<http::status>(r.status), version_};
    res.set(http::field::content_type, r.content_type);
    for (const auto& [k, v] : r.headers) res.set(k, v);
    res.body() = r.body;
    res.keep_alive(keep_alive_ && !r.close);
    res.prepare_payload();
    return res;
  }

  // Answers on the strand (an error of the transport, or a router's immediate answer), then
  // reads the next request or closes.
  void answer(const HttpResponse& r) {
    auto res = std::make_shared<http::response<http::string_body>>(make_response(r));
    const bool again = keep_alive_ && !r.close && !t_.stopping;
    stream_.expires_after(std::chrono::seconds(t_.opt.write_timeout_s));
    http::async_write(stream_, *res, [self = shared_from_this(), res, again](beast::error_code ec, size_t) {
      if (!ec && again) return self->read_head();
      if (!ec) return self->linger();
      self->shutdown();
    });
  }

  // After a last response: stop sending, then read and drop what the client still sends for a
  // while (at most 2 s and 16 MiB), so that a client still writing a refused body reads the
  // answer instead of a reset (nginx's lingering close).
  void linger() {
    beast::error_code ec;
    stream_.socket().shutdown(tcp::socket::shutdown_send, ec);
    stream_.expires_after(std::chrono::seconds(2));
    linger_read();
  }

  void linger_read() {
    stream_.async_read_some(net::buffer(drain_), [self = shared_from_this()](beast::error_code ec, size_t n) {
      self->drained_ += n;
      if (!ec && self->drained_ < (size_t{16} << 20)) return self->linger_read();
      self->shutdown();
    });
  }

  void fail(int status, const std::string& code, const std::string& message) {
    HttpResponse r = t_.error_page(status, code, message);
    r.close = true;  // the framing of what follows is unknown
    answer(r);
  }

  void shutdown() {
    beast::error_code ec;
    stream_.socket().shutdown(tcp::socket::shutdown_send, ec);
    stream_.close();
    client_gone();
  }

  void read_head() {
    if (t_.stopping) return shutdown();
    parser_.emplace();
    parser_->header_limit(static_cast<uint32_t>(t_.opt.max_header_bytes));
    parser_->body_limit(t_.opt.max_body_bytes);
    // One deadline for the whole request, head and body (SV13): a client that trickles its
    // bytes is dropped when it runs out, whatever its pace.
    stream_.expires_after(std::chrono::seconds(t_.opt.request_timeout_s));
    http::async_read_header(stream_, buffer_, *parser_, [self = shared_from_this()](beast::error_code ec, size_t) { self->on_head(ec); });
  }

  void on_head(beast::error_code ec) {
    if (ec == http::error::body_limit) return fail(413, "body_too_large", fmt::format("the body exceeds the limit of {} bytes", t_.opt.max_body_bytes));
    if (ec == http::error::header_limit) return fail(431, "header_too_large", fmt::format("the request head exceeds {} bytes", t_.opt.max_header_bytes));
    if (ec == http::error::end_of_stream || ec == beast::error::timeout || ec == net::error::operation_aborted || ec == net::error::eof ||
        ec == net::error::connection_reset)
      return shutdown();
    if (ec) return fail(400, "bad_request", "the request line or headers are malformed (" + ec.message() + ")");
    const auto& h = parser_->get();
    version_ = h.version();
    keep_alive_ = h.keep_alive();
    head_req_ = to_request(h, peer_);
    if (const auto [status, why] = check_framing(head_req_); status != 0) return fail(status, status == 501 ? "not_implemented" : "bad_framing", why);
    if (parser_->content_length() && *parser_->content_length() > t_.opt.max_body_bytes)
      return fail(413, "body_too_large", fmt::format("the body exceeds the limit of {} bytes", t_.opt.max_body_bytes));
    const std::string* expect = head_req_.header("expect");
    if (expect != nullptr && lower(*expect) == "100-continue" && !parser_->is_done()) {
      auto cont = std::make_shared<http::response<http::empty_body>>(http::status::continue_, version_);
      return http::async_write(stream_, *cont, [self = shared_from_this(), cont](beast::error_code e, size_t) {
        if (e) return self->shutdown();
        self->read_body();
      });
    }
    read_body();
  }

  void read_body() {
    http::async_read(stream_, buffer_, *parser_, [self = shared_from_this()](beast::error_code ec, size_t) { self->on_body(ec); });
  }

  void on_body(beast::error_code ec) {
    if (ec == http::error::body_limit) return fail(413, "body_too_large", fmt::format("the body exceeds the limit of {} bytes", t_.opt.max_body_bytes));
    if (ec == beast::error::timeout || ec == net::error::operation_aborted || ec == net::error::eof || ec == net::error::connection_reset ||
        ec == http::error::end_of_stream)
      return shutdown();
    if (ec) return fail(400, "bad_request", "the request body is malformed (" + ec.message() + ")");
    stream_.expires_never();
    HttpRequest req = head_req_;
    req.body = parser_->get().body();
    Routed routed;
    try {
      routed = t_.router(req);
    } catch (const std::exception& e) {
      return fail(500, "internal", e.what());
    }
    if (routed.immediate) return answer(routed.response);
    // A handler may wait on the engine: it runs on a worker; meanwhile the strand watches the
    // socket, so that a client that goes away stops its request (SV6).
    watch();
    close_after_ = false;
    write_failed_ = false;
    answered_ = false;
    handler_done_ = false;
    finished_ = false;
    auto self = shared_from_this();
    net::post(t_.workers, [self, req = std::move(req), h = std::move(routed.handler)] {
      try {
        h(req, *self);
      } catch (const std::exception& e) {
        if (!self->answered_) self->respond(self->t_.error_page(500, "internal", e.what()));
      }
      if (!self->answered_) self->respond(self->t_.error_page(500, "internal", "the handler gave no answer"));
      self->handler_done();
    });
  }

  // The socket is readable while a handler runs: end of stream (or an error) means the client
  // left; bytes mean a pipelined request, read after this one is answered.
  void watch() {
    watching_ = true;
    stream_.socket().async_wait(tcp::socket::wait_read, [self = shared_from_this()](beast::error_code ec) {
      self->watching_ = false;
      if (ec == net::error::operation_aborted && !self->is_gone()) return;
      if (!ec) {
        char c;
        const ssize_t n = ::recv(self->stream_.socket().native_handle(), &c, 1, MSG_PEEK | MSG_DONTWAIT);
        if (n > 0 || (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))) return;
      }
      self->client_gone();  // end of stream or an error: the client left, pipelined requests or not
    });
  }

  void after_handler() {
    if (watching_) {
      beast::error_code ec;
      stream_.socket().cancel(ec);
    }
    if (is_gone() || write_failed_ || t_.stopping) return shutdown();
    if (close_after_ || !keep_alive_) return linger();
    read_head();
  }

  beast::tcp_stream stream_;
  HttpTransport::Impl& t_;
  std::string peer_;
  beast::flat_buffer buffer_;
  std::optional<http::request_parser<http::string_body>> parser_;
  HttpRequest head_req_;
  unsigned version_ = 11;
  bool keep_alive_ = true;
  bool watching_ = false;
  std::atomic<bool> close_after_{false}, write_failed_{false}, answered_{false};
  std::atomic<size_t> queued_{0};                        // body bytes queued, not yet written
  std::deque<std::pair<size_t, Op>> ops_;               // the strand's queue of writes
  bool writing_ = false, handler_done_ = false, finished_ = false;
  std::array<char, 16384> drain_{};
  size_t drained_ = 0;
  std::mutex gone_mu_;
  bool gone_ = false;
  std::vector<std::function<void()>> gone_callbacks_;
};

}  // namespace

void HttpTransport::Impl::accept() {
  acceptor.async_accept(net::make_strand(ioc), [this](beast::error_code ec, tcp::socket s) {
    if (ec) {
      if (!stopping && ec != net::error::operation_aborted) accept();
      return;
    }
    beast::error_code e2;
    const tcp::endpoint remote = s.remote_endpoint(e2);
    const std::string peer = e2 ? std::string("?") : remote.address().to_string();
    bool refuse = false;
    std::string why;
    {
      std::lock_guard lk(mu);
      size_t total = 0;
      for (const auto& [_, n] : per_peer) total += n;
      if (total >= opt.max_connections) refuse = true, why = fmt::format("the server holds {} connections (its limit)", total);
      else if (per_peer[peer] >= opt.max_connections_per_peer)
        refuse = true, why = fmt::format("{} connections from {} are open (the limit per client address)", per_peer[peer], peer);
      if (!refuse) ++per_peer[peer];
    }
    if (refuse) {
      // Refused at once: one short answer that fits the socket's buffer, never waited on.
      HttpResponse r = error_page(503, "too_many_connections", why);
      std::string text = fmt::format("HTTP/1.1 503 Service Unavailable\r\nContent-Type: {}\r\nContent-Length: {}\r\nRetry-After: 1\r\nConnection: close\r\n\r\n{}",
                                     r.content_type, r.body.size(), r.body);
      s.non_blocking(true, e2);
      s.write_some(net::buffer(text), e2);
      s.shutdown(tcp::socket::shutdown_both, e2);
      s.close(e2);
    } else {
      auto c = std::make_shared<Connection>(std::move(s), *this, peer);
      {
        std::lock_guard lk(mu);
        live[c.get()] = c;
      }
      c->start();
    }
    if (!stopping) accept();
  });
}

void HttpTransport::Impl::close_all() {
  std::vector<std::shared_ptr<void>> cs;
  {
    std::lock_guard lk(mu);
    for (const auto& [_, w] : live)
      if (auto c = w.lock()) cs.push_back(std::move(c));
  }
  for (auto& c : cs) std::static_pointer_cast<Connection>(c)->close();
}

HttpTransport::HttpTransport(TransportOptions opt, Router router, ErrorPage error_page) {
  if (opt.port < 0 || opt.port > 65535) throw Error(ErrorCode::kBadInput, fmt::format("--port {}: not in [0, 65535]", opt.port));
  if (opt.request_timeout_s < 1 || opt.write_timeout_s < 1) throw Error(ErrorCode::kBadInput, "--timeout must be >= 1 second");
  if (opt.max_connections < 1 || opt.max_connections_per_peer < 1 || opt.workers < 1 || opt.io_threads < 1)
    throw Error(ErrorCode::kBadInput, "--max-connections, --max-connections-per-client and the thread counts must be >= 1");
  impl_ = std::make_unique<Impl>(std::move(opt), std::move(router), std::move(error_page));
}

HttpTransport::~HttpTransport() { stop(); }

int HttpTransport::bind() {
  Impl& t = *impl_;
  beast::error_code ec;
  const net::ip::address addr = net::ip::make_address(t.opt.host == "localhost" ? "127.0.0.1" : t.opt.host, ec);
  if (ec) throw Error(ErrorCode::kBadInput, "--host " + t.opt.host + ": not an IP address (" + ec.message() + ")");
  const tcp::endpoint ep(addr, static_cast<unsigned short>(t.opt.port));
  t.acceptor.open(ep.protocol(), ec);
  if (!ec) t.acceptor.set_option(net::socket_base::reuse_address(true), ec);
  if (!ec) t.acceptor.bind(ep, ec);
  if (!ec) t.acceptor.listen(512, ec);
  if (ec) throw Error(ErrorCode::kOutOfResources, fmt::format("cannot listen on {}:{} ({})", t.opt.host, t.opt.port, ec.message()));
  return t.acceptor.local_endpoint().port();
}

void HttpTransport::run() {
  Impl& t = *impl_;
  if (t.stopping) return;
  t.accept();
  std::vector<std::thread> io;
  for (size_t i = 1; i < t.opt.io_threads; ++i) io.emplace_back([&t] { t.ioc.run(); });
  t.ioc.run();
  for (auto& th : io) th.join();
}

void HttpTransport::stop() {
  Impl& t = *impl_;
  std::call_once(t.stop_once, [&t] {
    t.stopping = true;
    net::post(t.ioc, [&t] {
      beast::error_code ec;
      t.acceptor.close(ec);
    });
    t.close_all();
    t.workers.join();  // the handlers see their clients gone and return
    t.close_all();     // connections a last handler kept open
    t.guard.reset();
    t.ioc.stop();
  });
}

size_t HttpTransport::connections() const {
  std::lock_guard lk(impl_->mu);
  size_t n = 0;
  for (const auto& [_, k] : impl_->per_peer) n += k;
  return n;
}

}  // namespace akv::serve
