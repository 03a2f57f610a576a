// libFuzzer target: akv serve's reading of a client's bytes (spec/serving.md SV13, SV2): the
// HTTP/1.1 parser with the server's limits and framing checks (serve/http_transport), then each
// request's headers and body as the chat route reads them (serve/chat_request). Any input must
// end in a request, a status or a typed error: never a crash, a hang or a read past the input.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "reference/error.hpp"
#include "serve/chat_request.hpp"
#include "serve/http_transport.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  akv::serve::TransportOptions opt;
  opt.max_body_bytes = size_t{1} << 20;  // the server's is 8 MiB; a fuzz input is smaller
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  const int status = akv::serve::read_requests(bytes, opt, [](const akv::serve::HttpRequest& r) {
    (void)r.header("x-akv-session");
    (void)r.count("content-length");
    try {
      (void)akv::serve::parse_chat_request(r.body);
    } catch (const akv::Error&) {
      // a bad body is a typed error (400), which is what is wanted
    }
  });
  if (status != 0 && status != 400 && status != 413 && status != 431 && status != 501) __builtin_trap();
  return 0;
}
