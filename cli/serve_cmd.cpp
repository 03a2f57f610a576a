// akv serve [--model M] [--host H] [--port P] [--api-key-file F] [--parallel N]
//           [--cache-budget BYTES] [--audit-log FILE] [--guard REGEX]... [--guard-command CMD] ...
// OpenAI's chat completions API on akv's exact cache (spec/serving.md, docs/serving.md).
#include <fmt/format.h>
#include <signal.h>

#include <fstream>
#include <iostream>
#include <thread>

#include "cli/commands.hpp"
#include "cli/options.hpp"
#include "cli/shared_options.hpp"
#include "reference/error.hpp"
#include "serve/http_server.hpp"
#include "runtime/backends.hpp"
#include "runtime/models.hpp"

namespace akv::cli {
namespace {
struct ServeArgs {
  std::string model = kDefaultRealModel;
  uint64_t seed = 1;
  std::string backend = "cpu";
  BackendOptions bo;
  serve::ServerOptions server;
  serve::EngineOptions engine;
  std::string api_key_file;
};

// One key a line, each its own caller (SV10); blank lines and lines starting with # skipped.
std::vector<std::string> read_keys(const std::string& path) {
  std::ifstream f(path);
  if (!f) throw Error(ErrorCode::kBadInput, "--api-key-file " + path + ": cannot read");
  std::vector<std::string> keys;
  std::string key;
  for (size_t line = 1; std::getline(f, key); ++line) {
    while (!key.empty() && (key.back() == '\r' || key.back() == ' ')) key.pop_back();
    if (key.empty() || key[0] == '#') continue;
    if (key.size() < 16) throw Error(ErrorCode::kBadInput, fmt::format("--api-key-file {}: the key on line {} has fewer than 16 characters", path, line));
    keys.push_back(key);
  }
  if (keys.empty()) throw Error(ErrorCode::kBadInput, "--api-key-file " + path + ": no key in it");
  return keys;
}

int run_serve(ServeArgs& a) {
  if (!a.api_key_file.empty()) a.server.api_keys = read_keys(a.api_key_file);
  // SIGTERM/SIGINT are taken by one thread (sigwait) that stops accepting; the requests in
  // flight finish (SV6). Blocked before any thread starts, so every thread inherits the mask.
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  LoadedModel lm = load_model(a.model, a.seed);
  auto backend = make_backend(a.backend, lm.model, a.bo);
  serve::Engine engine(std::move(lm), std::move(backend), a.engine);
  serve::HttpServer http(engine, a.server);
  const int port = http.bind();
  const BackendDescription d = engine.backend_description();
  std::cout << fmt::format("akv serve: listening on http://{}:{} (model {}, backend {}, {}, parallel {}{})", a.server.host, port,
                           engine.model().name, d.name, describe_isa_threads(d), a.engine.parallel,
                           a.engine.kv_type == KvType::kF32 ? std::string() : std::string(", cache ") + kv_type_name(a.engine.kv_type))
            << std::endl;
  std::thread signals([&] {
    int sig = 0;
    sigwait(&set, &sig);
    std::cerr << "akv serve: signal " << sig << ": draining the requests in flight" << std::endl;
    http.drain(600);
  });
  http.run();
  // run() returned without a signal (a bind error later, say): wake the signal thread.
  pthread_kill(signals.native_handle(), SIGTERM);
  signals.join();
  return 0;
}
}  // namespace

Command add_serve(CLI::App& app) {
  auto a = std::make_shared<ServeArgs>();
  auto* s = app.add_subcommand("serve", "Serve OpenAI's chat completions API on the exact cache (docs/serving.md)");
  add_model_option(s, a->model);
  s->add_option("--seed", a->seed, "Weight seed (synthetic models)")->capture_default_str()->check(decimal(0, UINT64_MAX));
  add_backend_options(s, a->backend, a->bo);
  s->add_option("--served-model-name", a->server.served_names,
                "A name the model is served as (repeatable): what `model` may be and GET /v1/models lists; default: --model's")
      ->check(nonempty());
  s->add_option("--host", a->server.host, "Address to listen on; off loopback it needs --api-key-file")->capture_default_str()->check(nonempty());
  s->add_option("--port", a->server.port, "TCP port (0: any free one, printed)")->capture_default_str()->check(decimal(0, 65535));
  s->add_option("--api-key-file", a->api_key_file,
                "File of API keys, one a line (at least 16 characters each), that clients send as Bearer; each key is a caller "
                "of its own: sessions, reuse and cached_tokens never cross callers")
      ->check(nonempty());
  s->add_option("--parallel", a->engine.parallel, "Requests decoded together (continuous batching)")->capture_default_str()->check(decimal(1, 256));
  s->add_option("--queue", a->engine.queue, "Requests that may wait beyond those; more get 429")->capture_default_str()->check(decimal(0, 100000));
  add_kv_type_option(s, a->engine.kv_type);
  s->add_option("--cache-budget", a->engine.cache_budget, "Bytes of K/V that idle sessions keep (LRU)")
      ->capture_default_str()
      ->check(decimal(0, UINT64_MAX));
  s->add_option("--max-sessions", a->engine.max_sessions,
                "Session records kept (cached or not, with their flags); past it the least recently used go, those without "
                "flags first")
      ->capture_default_str()
      ->check(decimal(1, 100000000));
  s->add_option("--session-memory", a->engine.session_record_bytes,
                "Bytes of session records (the last request's messages, flags) kept; past it the least recently used go, "
                "those without flags first")
      ->capture_default_str()
      ->check(decimal(0, UINT64_MAX));
  s->add_option("--max-connections", a->server.max_connections, "Open connections in all; more are refused (503)")
      ->capture_default_str()
      ->check(decimal(1, 1000000));
  s->add_option("--max-connections-per-client", a->server.max_connections_per_peer,
                "Open connections from one client address; more are refused (503)")
      ->capture_default_str()
      ->check(decimal(1, 1000000));
  s->add_option("--max-tokens-default", a->engine.default_max_tokens, "max_tokens of a request that names none")
      ->capture_default_str()
      ->check(decimal(1, 1u << 24));
  s->add_option("--audit-log", a->server.audit_log,
                "Append one chained JSON line per reply, eviction and deleted session, before it completes (akv audit LOG "
                "verifies and replays it)")
      ->check(nonempty());
  s->add_option("--audit-key", a->server.audit_key,
                "A PEM Ed25519 private key (openssl genpkey -algorithm ed25519 -out KEY.pem): sign every audit line")
      ->check(nonempty());
  s->add_option("--guard", a->engine.guard.patterns,
                "A regular expression (ECMAScript); a tool result that matches one is evicted before generation and reported")
      ->check(nonempty());
  s->add_option("--guard-command", a->engine.guard.command,
                "A shell command run on each distinct tool result (on stdin): exit 1 flags it (evicted, reported), 0 passes it, "
                "anything else fails the request (500 guard_failed)")
      ->check(nonempty());
  s->add_option("--guard-timeout", a->engine.guard.timeout_s, "Seconds the guard command may take on one tool result")
      ->capture_default_str()
      ->check(decimal(1, 3600));
  s->add_option("--timeout", a->server.read_timeout_s,
                "Seconds a whole request (headers and body) may take to arrive, and a client may stall reading a reply")
      ->capture_default_str()
      ->check(decimal(1, 3600));
  return {s, [a] {
            a->server.write_timeout_s = a->server.read_timeout_s;
            return run_serve(*a);
          }};
}

}  // namespace akv::cli
