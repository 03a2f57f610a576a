// The serving engine (spec/serving.md SV1-SV5): one scheduler thread owns the backend and the
// cached sessions; requests join the running batch at the next decode step (continuous
// batching through Session::append_batch / Backend::forward_batch). By I1 and E1 a reply is
// a function of the request's spans only: not of the batch, the cache or an earlier edit.
#pragma once
#include <condition_variable>
#include <deque>
#include <exception>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "reference/backend.hpp"
#include "reference/error.hpp"
#include "serve/chat_request.hpp"
#include "serve/guard.hpp"
#include "serve/sampler.hpp"
#include "serve/session_store.hpp"
#include "verify/digest.hpp"
#include "verify/models.hpp"

namespace akv::serve {

struct EngineOptions {
  int parallel = 4;                        // requests decoded together
  size_t queue = 64;                       // requests waiting beyond those; more: 429 (SV6)
  size_t cache_budget = size_t{2} << 30;   // bytes of K/V kept by idle sessions (LRU)
  KvType kv_type = KvType::kF32;           // every session's cache type (spec/state.md S5), fixed for the server's life
  size_t default_max_tokens = 256;         // when a request names no max_tokens
  /// The guard (SV7): a tool message it flags is dropped from the request (evicted from its
  /// session) and reported.
  GuardOptions guard;
};

/// What the engine did for one reply: the `akv` object of the response (SV3).
struct ReplyStats {
  std::string session;
  size_t prompt_tokens = 0;      // the request's spans + the generation prompt
  size_t reused_tokens = 0;      // cache entries kept and not recomputed (cached_tokens)
  size_t recomputed_tokens = 0;  // survivors re-run by the eviction (E4)
  size_t evicted_tokens = 0;     // entries of spans the request no longer has
  size_t prefill_tokens = 0;     // new tokens appended (spans + generation prompt)
  std::vector<size_t> dropped;   // request message indexes dropped (flagged earlier or by the guard)
  std::vector<size_t> guarded;   // of those, flagged by the guard in this request
  std::string cache_sha256;      // the cache after the request's spans, before the generation prompt
  std::string logits_sha256;     // the logits rows the generated tokens were drawn from
};

struct Reply {
  std::vector<Token> tokens;       // generated, without the end-of-turn token
  std::vector<std::string> token_text;   // each token alone, as utf8_text()
  std::vector<std::string> token_bytes;  // each token's bytes, as the tokenizer decodes them
  std::string text;                // all of them, as utf8_text(), cut before a stop string
  std::string finish_reason;       // "stop" | "length"
  std::vector<TokenLogprob> logprobs;  // when asked
  ReplyStats stats;
};

/// One token as it is generated, for streaming: the text it adds (held back while it ends in
/// an incomplete UTF-8 sequence) and its log-probability when asked.
struct TokenEvent {
  std::string delta;
  std::optional<TokenLogprob> logprob;
  std::string token_text, token_bytes;
};

/// `bytes` as valid UTF-8: each byte that starts no valid sequence written as \xNN (the rule
/// of spec/tokenizer.md CT4), so that a reply is always JSON.
std::string utf8_text(const std::string& bytes);

/// POST /v1/sessions/{id}/evict on a session that is generating: refused, nothing changed (409).
struct SessionBusy : Error {
  explicit SessionBusy(const std::string& what) : Error(ErrorCode::kBadInput, what) {}
};

/// A submitted request. The HTTP thread waits on it; the scheduler fills it.
class Generation {
 public:
  /// The next event; false once the reply is complete (or failed: reply() rethrows).
  bool next_event(TokenEvent& ev);
  /// Blocks until the request joined the batch (its session is known, its prompt ran) or
  /// failed (rethrows); returns the session id.
  std::string wait_admitted();
  /// Blocks until the reply is complete; rethrows the request's error.
  const Reply& reply();
  /// Stops generation at the next step (a client that went away); the session stays consistent.
  void cancel();

 private:
  friend class Engine;
  void push(TokenEvent ev);
  void finish(std::exception_ptr err);
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<TokenEvent> events_;
  bool done_ = false, cancelled_ = false, admitted_ = false;
  std::string session_id_;
  std::exception_ptr error_;
  Reply reply_;
  // The scheduler's state of this request.
  ChatRequest req_;
  std::vector<std::vector<Token>> spans_;  // the request's spans (preamble first when any)
  std::vector<int> span_message_;          // message index of each span (-1: the preamble)
  std::vector<bool> guard_flags_;          // per message: the guard flagged it (taken at submit)
  std::string session_hint_;
  ServedSession* session_ = nullptr;
  std::vector<std::vector<Token>> todo_;   // the new spans still to prefill at admission
  size_t todo_next_ = 0;
  SpanId gen_span_ = 0;
  bool gen_open_ = false;                  // the generation span exists in the session
  Token next_ = 0;
  std::string emitted_;
  std::unique_ptr<Sampler> sampler_;
  std::unique_ptr<akv::Sha256> logits_hash_;
};

class Engine {
 public:
  /// Starts the scheduler over `backend` (which computes for `lm.model`).
  Engine(LoadedModel lm, std::unique_ptr<Backend> backend, EngineOptions opt);
  /// Finishes the requests in flight and queued, then stops (SIGTERM's drain, SV6).
  ~Engine();
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  const LoadedModel& model() const { return lm_; }
  BackendDescription backend_description() const { return desc_; }
  const EngineOptions& options() const { return opt_; }

  /// Queues `req` for the session named `session_id` ("" lets the engine pick the cached
  /// session sharing the longest prefix, or a new one). Throws, nothing queued:
  /// Error(kContextOverflow) with the counts; Error(kOutOfResources) when the queue is full
  /// (429); Error(kInvalidToken) for a raw id outside the vocabulary; GuardFailed when the
  /// guard command fails. The guard runs here, on the caller's thread, not the scheduler's.
  std::shared_ptr<Generation> submit(ChatRequest req, const std::string& session_id);

  /// POST /v1/sessions/{id}/evict: evicts the session's spans of messages `indexes` (indexes
  /// of the session's last request) at once (O3) and flags them, so a later request that
  /// carries them again has them dropped. Returns the eviction's stats. Errors:
  /// Error(kUnknownSpan) for an unknown session; Error(kBadInput) for an index out of range,
  /// repeated or already dropped.
  EvictStats evict(const std::string& session_id, const std::vector<size_t>& indexes);

  /// Requests queued or generating.
  size_t load() const;

 private:
  void loop();
  /// Finds or creates the request's session, drops flagged and guarded spans, evicts what the
  /// request no longer has (O3) and lists the new spans to prefill.
  void prepare(const std::shared_ptr<Generation>& g);
  /// Admits requests together: prepare each, then prefill their new spans and generation
  /// prompts in batched rounds; each joins the decode batch with its first token drawn.
  void admit(const std::vector<std::shared_ptr<Generation>>& gs);
  void on_logits(const std::shared_ptr<Generation>& g, std::span<const float> logits);
  void complete(const std::shared_ptr<Generation>& g, std::exception_ptr err);
  size_t bytes_per_token() const;

  LoadedModel lm_;
  std::unique_ptr<Backend> backend_;
  BackendDescription desc_;
  EngineOptions opt_;
  Guard guard_;
  SessionStore store_;
  // Guarded by mu_: the queue, the control requests (evict), stop.
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::shared_ptr<Generation>> pending_;
  struct Control;
  /// A POST /v1/sessions/{id}/evict, on the scheduler thread (SV3).
  EvictStats evict_now(const Control& c);
  std::deque<std::shared_ptr<Control>> controls_;
  bool stop_ = false;
  size_t active_count_ = 0;
  // The scheduler's own.
  std::vector<std::shared_ptr<Generation>> active_;
  std::thread thread_;
};

}  // namespace akv::serve
