// The server's cached sessions (spec/serving.md SV3): each a Session with the token spans of
// the messages it holds, kept under a byte budget, least recently used dropped first.
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "reference/session.hpp"

namespace akv::serve {

/// One cached conversation: the Session and, per live span, the tokens it was appended with.
struct ServedSession {
  std::string id;
  std::unique_ptr<Session> session;
  std::vector<std::vector<Token>> spans;  // parallel to session->spans()
  SpanId next_span = 0;
  /// Message spans evicted through POST /v1/sessions/{id}/evict or the guard: a later request
  /// that carries one of them again has it dropped (SV3).
  std::set<std::vector<Token>> flagged;
  uint64_t last_use = 0;
  bool busy = false;
  bool named = false;  // the id came from a client (x-akv-session): only its requests use it
};

/// What stays of a session whose cache the budget dropped: its spans' tokens (what /evict's
/// indexes name) and its flags, which change replies and so never go with a cache (SV3).
struct KeptSession {
  std::vector<std::vector<Token>> spans;
  std::set<std::vector<Token>> flagged;
  uint64_t age = 0;
};

/// How a request's spans meet a cached session (SV3): the cached spans to evict (those not in
/// the request, in a greedy in-order match) and the request's spans to append after the kept
/// ones.
struct SyncPlan {
  std::vector<size_t> evict;   // indexes into ServedSession::spans
  size_t first_new = 0;        // request spans [first_new, ...) are appended
  size_t kept_tokens = 0;      // tokens of the kept spans
};

/// The plan for `want` (the request's spans in order) over `have` (the session's): walk
/// `have` in order, keep a span when it equals the next wanted one, evict it otherwise.
SyncPlan plan_sync(const std::vector<std::vector<Token>>& have, const std::vector<std::vector<Token>>& want);

/// Sessions under a byte budget. Not thread-safe: the engine's lock guards it.
class SessionStore {
 public:
  /// Sessions are made with caches of type `kv` (spec/state.md S5); bytes_per_token is theirs.
  SessionStore(size_t budget_bytes, size_t bytes_per_token, KvType kv = KvType::kF32)
      : budget_(budget_bytes), per_token_(bytes_per_token), kv_(kv) {}
  /// The session named `id` when cached and idle; else, with `id` empty, the idle session whose
  /// spans share the longest token prefix with `want` (at least one whole span); else nullptr.
  ServedSession* find(const std::string& id, const std::vector<std::vector<Token>>& want);
  ServedSession* get(const std::string& id);
  /// A new empty session over `backend` with `id` (a fresh id when empty or taken), with the
  /// flags `id` had when the budget dropped its cache.
  ServedSession* create(Backend& backend, std::string id);
  /// Marks `s` idle and used now, then drops idle sessions, oldest first, while the cache
  /// bytes exceed the budget.
  void release(ServedSession* s);
  /// The kept record of `id` when its cache was dropped, else nullptr.
  KeptSession* kept(const std::string& id);
  size_t size() const { return sessions_.size(); }
  size_t bytes() const;

 private:
  size_t budget_, per_token_;
  KvType kv_;
  uint64_t clock_ = 0, next_id_ = 1;
  std::map<std::string, std::unique_ptr<ServedSession>> sessions_;
  std::map<std::string, KeptSession> kept_;
  uint64_t kept_clock_ = 0;
};

}  // namespace akv::serve
