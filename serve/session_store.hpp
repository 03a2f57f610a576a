// The server's sessions (spec/serving.md SV3, SV10, SV12): each a Session with the token spans
// of the messages it holds, scoped to the caller that made it, its K/V kept under a byte budget
// and its record (flags, the last request's message keys) under a count and a byte bound,
// least recently used dropped first.
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "reference/chat.hpp"
#include "reference/session.hpp"

namespace akv::serve {

/// One cached conversation. `scope` is its caller's (SV10): sessions, anonymous reuse and their
/// counts never cross scopes.
struct ServedSession {
  std::string scope, id;
  /// The cache; null once the budget dropped it (the record, its flags, stay: SV3).
  std::unique_ptr<Session> session;
  std::vector<std::vector<Token>> spans;  // parallel to session->spans()
  std::vector<int> span_message;          // index in `last` of each live span's message; -1: the template's preamble
  SpanId next_span = 0;
  /// The last request's messages as sent (dropped ones included): what /evict's indexes and
  /// tool_call_ids name, re-rendered without the flagged ones (SV3). Empty once the cache is dropped.
  Conversation last;
  std::vector<std::string> keys;  // message_key() of each message of the last request
  std::vector<std::string> tool_call_ids;  // of each message of the last request ("" but for tool messages)
  /// Keys of the messages flagged for eviction (the endpoint, the guard): a later request of
  /// this session that carries one has it dropped (SV3).
  std::set<std::string> flagged;
  uint64_t last_use = 0;
  bool busy = false;
  bool named = false;  // the id came from a client (x-akv-session): only its requests use it
  /// Bytes of the record (tokens, the last request's text, keys, flags), not of the cache.
  size_t record_bytes() const;
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

/// The caller of a scope (SV10): the scope up to its '/' (its cache key after it).
std::string caller_of(const std::string& scope);

/// The bounds of a store (SV12): K/V bytes of idle caches (all callers); records (sessions
/// known, cached or not) by count and by bytes, per caller.
struct StoreLimits {
  size_t cache_bytes = size_t{2} << 30;
  size_t max_sessions = 4096;
  size_t record_bytes = size_t{256} << 20;
};

/// Sessions under their bounds. Not thread-safe: the engine's scheduler thread owns it.
class SessionStore {
 public:
  /// Sessions are made with caches of type `kv` (spec/state.md S5); bytes_per_token is theirs.
  SessionStore(StoreLimits limits, size_t bytes_per_token, KvType kv = KvType::kF32)
      : lim_(limits), per_token_(bytes_per_token), kv_(kv) {}
  /// With `id`: the session `id` of `scope` when its cache is held and it is idle, else
  /// nullptr. With `id` empty: the idle, unnamed, unflagged cached session of `scope` whose
  /// spans share the longest token prefix with `want` (at least one whole span); else nullptr.
  ServedSession* find(const std::string& scope, const std::string& id, const std::vector<std::vector<Token>>& want);
  /// The record `id` of `scope`, cached or not; nullptr when unknown.
  ServedSession* get(const std::string& scope, const std::string& id);
  /// A session with an empty cache over `backend`, busy: the record `id` of `scope` when it
  /// exists (its flags and message keys kept), else a new one named `id` (a fresh id when empty).
  ServedSession* create(Backend& backend, const std::string& scope, const std::string& id);
  /// Marks `s` idle and used now, then applies the bounds (enforce()).
  void release(ServedSession* s);
  /// Forgets the record `id` of `scope`. False when unknown; the caller checks it is idle.
  bool erase(const std::string& scope, const std::string& id);
  /// The sessions of `scope`, by id.
  std::vector<const ServedSession*> list(const std::string& scope) const;
  size_t size() const { return sessions_.size(); }
  /// K/V bytes of the caches held.
  size_t cache_bytes() const;
  /// Bytes of the records.
  size_t record_bytes() const;

 private:
  /// Drops idle caches, oldest first, while their bytes exceed the budget (a record with
  /// neither a name nor a flag goes with its cache); then idle records, oldest first and those
  /// without flags before those with, while they exceed the count or byte bound.
  void enforce();
  StoreLimits lim_;
  size_t per_token_;
  KvType kv_;
  uint64_t clock_ = 0;
  std::map<std::string, uint64_t> next_id_;  // per scope: the last anonymous session id given
  std::map<std::pair<std::string, std::string>, std::unique_ptr<ServedSession>> sessions_;
};

}  // namespace akv::serve
