// The serving engine (spec/serving.md SV1-SV5, SV10-SV12): one scheduler thread owns the
// backend and the cached sessions; requests join the running batch at the next decode step
// (continuous batching through Session::append_batch / Backend::forward_batch). By I1 and E1 a
// reply is a function of the request's spans only: not of the batch, the cache or an earlier
// edit.
#pragma once
#include <condition_variable>
#include <deque>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "chat/grammar.hpp"
#include "reference/backend.hpp"
#include "reference/chat_encoder.hpp"
#include "reference/error.hpp"
#include "serve/api_error.hpp"
#include "serve/chat_request.hpp"
#include "serve/guard.hpp"
#include "serve/sampler.hpp"
#include "serve/session_store.hpp"
#include "runtime/digest.hpp"
#include "runtime/models.hpp"

namespace akv::serve {

struct EngineOptions {
  int parallel = 4;                        // requests decoded together
  size_t queue = 64;                       // requests waiting beyond those; more: 429 (SV6)
  size_t cache_budget = size_t{2} << 30;   // bytes of K/V kept by idle sessions (LRU)
  KvType kv_type = KvType::kF32;           // every session's cache type (spec/state.md S5), fixed for the server's life
  size_t max_sessions = 4096;              // session records kept, cached or not (SV12)
  size_t session_record_bytes = size_t{256} << 20;  // bytes of those records (SV12)
  size_t default_max_tokens = 256;         // when a request names no max_tokens
  /// The guard (SV7): a tool message it flags is dropped from the request (evicted from its
  /// session) and reported.
  GuardOptions guard;
};

/// One span of a session's cache and the message it holds (SV3): `message` is the request's
/// message index, -1 for the template's own preamble (ChatML's default system prompt).
struct SpanOfMessage {
  int message = -1;
  size_t tokens = 0;
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
  std::vector<SpanOfMessage> spans;  // the cache's spans in order, before the generation prompt
  std::string cache_sha256;      // the cache after the request's spans, before the generation prompt
  std::string logits_sha256;     // the logits rows the generated tokens were drawn from
  std::optional<uint64_t> seed;  // the draw's seed (the request's, or kDefaultSeed); none when greedy
};

/// A tool call of a reply (SV15): its id (derived from the request, never from the history),
/// the function and its arguments as a JSON text.
struct ReplyCall {
  std::string id, name, arguments;
};

struct Reply {
  std::vector<Token> tokens;       // generated, without the end-of-turn token
  std::vector<std::string> token_text;   // each token alone, as utf8_text()
  std::vector<std::string> token_bytes;  // each token's exact bytes (ChatEncoder::bytes)
  std::string text;                // all of them, as utf8_text(), cut before a stop string
  std::string finish_reason;       // "stop" | "length" | "tool_calls"; "" when cancelled
  // The reply read as a message (SV15): `text` outside the tool calls (null when only
  // whitespace), the calls, and what could not be read as a call.
  bool has_content = true;
  std::string content;
  std::vector<ReplyCall> calls;
  std::vector<std::string> call_errors;
  bool cancelled = false;          // the client went away: no reply was sent (SV6)
  std::vector<TokenLogprob> logprobs;  // when asked
  ReplyStats stats;
};

/// One token as it is generated, for streaming: the text it adds (held back while it may
/// still become a stop string or ends inside a UTF-8 sequence) and its log-probability when
/// asked. The last event of a reply carries what was held back (SV2: the deltas join to the
/// plain reply's text).
struct TokenEvent {
  std::string delta;
  std::vector<ReplyCall> calls;  // the last event: the reply's tool calls (SV15)
  std::optional<TokenLogprob> logprob;
  std::string token_text, token_bytes;
};

/// `bytes` as valid UTF-8: each byte that starts no valid sequence written as \xNN (the rule
/// of spec/tokenizer.md CT4), so that a reply is always JSON.
std::string utf8_text(const std::string& bytes);

/// A message's identity for flags (SV3): the SHA-256 of its fields as akv serialises them
/// (spec/input.md IN1, the fixture's span), whatever the model's template makes of it.
std::string message_key(const Message& m);

/// A submitted request. The HTTP thread waits on it; the scheduler fills it.
class Generation {
 public:
  /// The next event; false once the reply is complete (or failed: reply() rethrows).
  bool next_event(TokenEvent& ev);
  /// Blocks until the request joined the batch (its session is known, its prompt ran) or
  /// failed (rethrows); returns the reply's stats as they stand then: the session, the
  /// dropped and guarded messages, the spans and cache_sha256 (not yet logits_sha256).
  ReplyStats wait_admitted();
  /// Blocks until the reply is complete; rethrows the request's error.
  const Reply& reply();
  /// Stops generation at the next step (a client that went away); the session stays
  /// consistent and the reply is marked cancelled.
  void cancel();

 private:
  friend class Engine;
  void push(TokenEvent ev);
  void finish(std::exception_ptr err);
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<TokenEvent> events_;
  bool done_ = false, cancelled_ = false, admitted_ = false;
  ReplyStats admitted_stats_;
  std::optional<ApiError::Data> error_;
  Reply reply_;
  // The scheduler's state of this request.
  ChatRequest req_;
  std::string scope_, session_hint_;
  std::vector<std::string> keys_;          // message_key of each message
  std::vector<bool> guard_flags_;          // per message: the guard flagged it (taken at submit)
  std::vector<std::string> new_flags_;     // keys the guard flags in this request; the session's when the reply completes
  std::set<size_t> enc_drops_;             // the messages enc_ was rendered without
  std::vector<std::vector<Token>> spans_;  // the request's spans without enc_drops_ (preamble first when any)
  std::vector<int> span_message_;          // message index of each span (-1: the preamble)
  ServedSession* session_ = nullptr;
  std::vector<std::vector<Token>> todo_;   // the new spans still to prefill at admission
  size_t todo_next_ = 0;
  SpanId gen_span_ = 0;
  bool gen_open_ = false;                  // the generation span exists in the session
  Token next_ = 0;
  std::string emitted_;
  std::unique_ptr<Sampler> sampler_;
  std::unique_ptr<chat::GrammarMatcher> matcher_;  // SV14: the reply's grammar, when it has one
  std::vector<uint32_t> mask_;                     // the matcher's mask of this step
  std::unique_ptr<akv::Sha256> logits_hash_;
};

/// POST /v1/sessions/{id}/evict: the messages to flag, by their index in the session's last
/// request or by the `tool_call_id` of a tool message.
struct EvictRequest {
  std::string scope, session;
  std::vector<size_t> messages;
  std::vector<std::string> tool_call_ids;
};

struct EvictResult {
  EvictStats stats;                    // the eviction (O3) of the flagged spans and any re-rendered one
  size_t prefill_tokens = 0;           // spans the re-rendered request adds (a default system prompt)
  std::vector<size_t> flagged;         // message indexes flagged by this call, ascending
  std::vector<std::string> flagged_keys;  // their message_key()s, for the audit log (SV9)
  std::vector<SpanOfMessage> spans;    // the cache's spans after it
  bool cached = true;                  // false: the budget had dropped the cache; only flags changed
  std::string cache_sha256;            // the cache after it ("" when not cached)
};

/// An event the audit log records (SV9), given on the scheduler thread in the order the engine
/// makes them: a reply (before it is reported complete), an eviction (before it changes the
/// session), a forgotten session. Pointers are valid during the call only.
struct AuditEvent {
  std::string kind;  // "chat" | "evict" | "forget"
  std::string scope, session;
  const ChatRequest* request = nullptr;          // chat
  const Reply* reply = nullptr;                  // chat
  const std::vector<size_t>* flagged = nullptr;  // evict: message indexes of the session's last request
  const std::vector<std::string>* flagged_keys = nullptr;  // evict: their message_key()s
};
/// Writes an event; throws (audit_log_failed) when it cannot, and the event fails: a reply
/// with 500 and not sent, an eviction or a deletion with 500 and nothing changed.
using AuditSink = std::function<void(const AuditEvent&)>;

/// GET /v1/sessions: one of the caller's sessions.
struct SessionInfo {
  std::string id;
  bool named = false, busy = false, cached = false;
  size_t cached_tokens = 0, messages = 0, flagged = 0;
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

  /// Queues `req` for the session `session_id` of `scope` ("" lets the engine pick the cached
  /// session of `scope` sharing the longest prefix, or a new one; SV10). The guard runs here,
  /// on the caller's thread, not the scheduler's. Throws, nothing queued: Error(kContextOverflow)
  /// with the counts of the request as it will be computed (guarded messages dropped);
  /// queue_full(); shutting_down(); Error(kInvalidToken) for a raw id outside the vocabulary;
  /// GuardFailed when the guard command fails.
  std::shared_ptr<Generation> submit(ChatRequest req, const std::string& session_id, const std::string& scope = "");

  /// POST /v1/sessions/{id}/evict (SV3): flags the named messages of the session's last
  /// request and brings its cache to that request rendered again without every flagged message
  /// (O3 from the first span that differs; a template's preamble comes back when a leading
  /// system message goes). Errors, session unchanged: Error(kUnknownSpan) for an unknown session
  /// (404); Error(kBadInput) for no message named, an index out of range or repeated, a message
  /// already flagged, a tool_call_id no tool message carries; session_busy() while it generates.
  EvictResult evict(const EvictRequest& r);

  /// GET /v1/sessions: the sessions of `scope`.
  std::vector<SessionInfo> sessions(const std::string& scope);
  /// DELETE /v1/sessions/{id}: forgets the session (cache, flags, keys). Error(kUnknownSpan)
  /// when unknown, session_busy() while it generates.
  void forget(const std::string& scope, const std::string& id);

  /// Requests queued or generating.
  size_t load() const;

  /// Sets where audit events go (SV9); an empty sink stops them.
  void set_audit(AuditSink sink);

 private:
  void loop();
  /// Runs `f` on the scheduler thread between two steps and waits for it; rethrows.
  void on_scheduler(std::function<void()> f);
  /// Finds or creates the request's session, drops flagged and guarded messages (rendering
  /// the request again without them), evicts what the request no longer has (O3) and lists
  /// the new spans to prefill.
  void prepare(const std::shared_ptr<Generation>& g);
  /// Admits requests together: prepare each, then prefill their new spans and generation
  /// prompts in batched rounds; each joins the decode batch with its first token drawn.
  void admit(const std::vector<std::shared_ptr<Generation>>& gs);
  void on_logits(const std::shared_ptr<Generation>& g, std::span<const float> logits);
  void complete(const std::shared_ptr<Generation>& g, std::exception_ptr err);
  EvictResult evict_now(const EvictRequest& r);
  AuditSink audit_sink() const;
  size_t bytes_per_token() const;
  /// The model's vocabulary as the grammar engine reads it, built on the first constrained
  /// request (SmolLM2: tens of ms) and kept; thread-safe.
  const chat::GrammarVocabulary& grammar_vocabulary();

  LoadedModel lm_;
  std::unique_ptr<Backend> backend_;
  BackendDescription desc_;
  EngineOptions opt_;
  Guard guard_;
  SessionStore store_;
  // Guarded by mu_: the queue, the control tasks, stop.
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::shared_ptr<Generation>> pending_;
  struct Task;
  std::deque<std::shared_ptr<Task>> tasks_;
  bool stop_ = false;
  size_t active_count_ = 0;
  AuditSink audit_;
  std::once_flag vocab_once_;
  std::unique_ptr<chat::GrammarVocabulary> vocab_;
  // The scheduler's own.
  std::vector<std::shared_ptr<Generation>> active_;
  std::thread thread_;
};

}  // namespace akv::serve
