#include "serve/session_store.hpp"

#include <fmt/format.h>

namespace akv::serve {

SyncPlan plan_sync(const std::vector<std::vector<Token>>& have, const std::vector<std::vector<Token>>& want) {
  SyncPlan p;
  size_t i = 0;
  for (size_t j = 0; j < have.size(); ++j) {
    if (i < want.size() && have[j] == want[i]) {
      p.kept_tokens += have[j].size();
      ++i;
    } else {
      p.evict.push_back(j);
    }
  }
  p.first_new = i;
  return p;
}

size_t ServedSession::record_bytes() const {
  size_t n = sizeof(ServedSession) + scope.size() + id.size();
  for (const auto& s : spans) n += s.size() * sizeof(Token) + sizeof(s);
  n += span_message.size() * sizeof(int);
  for (const Message& m : last.messages) {
    n += sizeof(Message) + m.role.size() + m.content.size() + m.name.size() + m.tool_call_id.size() + m.refusal.size();
    for (const ToolCall& c : m.tool_calls) n += sizeof(ToolCall) + c.id.size() + c.name.size() + c.arguments.size();
    if (m.tokens) n += m.tokens->size() * sizeof(Token);
  }
  for (const std::string& k : keys) n += sizeof(k) + k.size();
  for (const std::string& k : tool_call_ids) n += sizeof(k) + k.size();
  n += flagged.size() * (sizeof(std::string) + 64 + 32);  // the key and the set node
  return n;
}

ServedSession* SessionStore::get(const std::string& scope, const std::string& id) {
  auto it = sessions_.find({scope, id});
  return it == sessions_.end() ? nullptr : it->second.get();
}

ServedSession* SessionStore::find(const std::string& scope, const std::string& id, const std::vector<std::vector<Token>>& want) {
  if (!id.empty()) {
    ServedSession* s = get(scope, id);
    return s && s->session && !s->busy ? s : nullptr;
  }
  ServedSession* best = nullptr;
  size_t best_spans = 0;
  for (auto it = sessions_.lower_bound({scope, ""}); it != sessions_.end() && it->first.first == scope; ++it) {
    ServedSession& s = *it->second;
    // A session with flagged messages drops them from its requests (SV3): only a request that
    // names it may get that, or an anonymous reply would depend on the cache's state (SV1).
    // A session a client named is that client's: never handed to another request.
    if (s.busy || !s.session || !s.flagged.empty() || s.named) continue;
    size_t k = 0;
    while (k < s.spans.size() && k < want.size() && s.spans[k] == want[k]) ++k;
    if (k > best_spans) best = &s, best_spans = k;
  }
  return best;
}

ServedSession* SessionStore::create(Backend& backend, const std::string& scope, const std::string& id) {
  ServedSession* s = id.empty() ? nullptr : get(scope, id);
  if (s == nullptr) {
    auto fresh = std::make_unique<ServedSession>();
    fresh->scope = scope;
    fresh->named = !id.empty();
    fresh->id = id;
    if (id.empty()) {  // counted per scope: an id says nothing of another caller's requests (SV10)
      uint64_t& next = next_id_[scope];
      do fresh->id = fmt::format("s{:06}", ++next);
      while (sessions_.count({scope, fresh->id}));
    }
    s = fresh.get();
    sessions_[{scope, s->id}] = std::move(fresh);
  }
  // A record whose cache the budget dropped: its flags and keys stay, its cache starts empty.
  s->session = std::make_unique<Session>(backend, kv_);
  s->spans.clear();
  s->span_message.clear();
  s->next_span = 0;
  s->busy = true;
  s->last_use = ++clock_;
  return s;
}

bool SessionStore::erase(const std::string& scope, const std::string& id) { return sessions_.erase({scope, id}) != 0; }

std::vector<const ServedSession*> SessionStore::list(const std::string& scope) const {
  std::vector<const ServedSession*> out;
  for (auto it = sessions_.lower_bound({scope, ""}); it != sessions_.end() && it->first.first == scope; ++it) out.push_back(it->second.get());
  return out;
}

size_t SessionStore::cache_bytes() const {
  size_t n = 0;
  for (const auto& [_, s] : sessions_)
    if (s->session) n += s->session->size() * per_token_;
  return n;
}

size_t SessionStore::record_bytes() const {
  size_t n = 0;
  for (const auto& [_, s] : sessions_) n += s->record_bytes();
  return n;
}

void SessionStore::release(ServedSession* s) {
  s->busy = false;
  s->last_use = ++clock_;
  enforce();
}

void SessionStore::enforce() {
  using It = decltype(sessions_)::iterator;
  // The idle entry that goes first among those `eligible` picks: the least recently used.
  auto oldest = [&](auto eligible) {
    It best = sessions_.end();
    for (It it = sessions_.begin(); it != sessions_.end(); ++it)
      if (!it->second->busy && eligible(*it->second) && (best == sessions_.end() || it->second->last_use < best->second->last_use)) best = it;
    return best;
  };
  // The caches: a cache is a speed-up, a flag changes the reply (SV3), so a cache goes before
  // its record does.
  while (cache_bytes() > lim_.cache_bytes) {
    const It it = oldest([](const ServedSession& s) { return s.session != nullptr; });
    if (it == sessions_.end()) break;
    ServedSession& gone = *it->second;
    if (!gone.named && gone.flagged.empty()) {
      sessions_.erase(it);  // nothing of it is left to keep
      continue;
    }
    gone.session.reset();
    gone.spans.clear();
    gone.span_message.clear();
    gone.last = {};
  }
  // The records (SV12), bounded per caller (the scope up to its '/'): one caller's sessions
  // never push out another's flags. Those without flags go first, then those with.
  std::map<std::string, std::pair<size_t, size_t>> use;  // caller -> (records, bytes)
  for (const auto& [k, s] : sessions_) {
    auto& u = use[caller_of(k.first)];
    ++u.first;
    u.second += s->record_bytes();
  }
  for (auto& entry : use) {
    const std::string& caller = entry.first;  // a named variable: Clang 14 cannot capture a structured binding
    auto& u = entry.second;
    while (u.first > lim_.max_sessions || u.second > lim_.record_bytes) {
      auto mine = [&](const ServedSession& s) { return caller_of(s.scope) == caller; };
      It it = oldest([&](const ServedSession& s) { return mine(s) && s.flagged.empty(); });
      if (it == sessions_.end()) it = oldest(mine);
      if (it == sessions_.end()) break;
      --u.first;
      u.second -= it->second->record_bytes();
      sessions_.erase(it);
    }
  }
}

std::string caller_of(const std::string& scope) { return scope.substr(0, scope.find('/')); }

}  // namespace akv::serve
