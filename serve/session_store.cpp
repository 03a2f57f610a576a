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

ServedSession* SessionStore::get(const std::string& id) {
  auto it = sessions_.find(id);
  return it == sessions_.end() ? nullptr : it->second.get();
}

KeptSession* SessionStore::kept(const std::string& id) {
  auto it = kept_.find(id);
  return it == kept_.end() ? nullptr : &it->second;
}

ServedSession* SessionStore::find(const std::string& id, const std::vector<std::vector<Token>>& want) {
  if (!id.empty()) {
    ServedSession* s = get(id);
    return s && !s->busy ? s : nullptr;
  }
  ServedSession* best = nullptr;
  size_t best_spans = 0;
  for (auto& [_, s] : sessions_) {
    // A session with flagged messages drops them from its requests (SV3): only a request that
    // names it may get that, or an anonymous reply would depend on the cache's state (SV1).
    // A session a client named is that client's: never handed to another request.
    if (s->busy || !s->flagged.empty() || s->named) continue;
    size_t k = 0;
    while (k < s->spans.size() && k < want.size() && s->spans[k] == want[k]) ++k;
    if (k > best_spans) best = s.get(), best_spans = k;
  }
  return best;
}

ServedSession* SessionStore::create(Backend& backend, std::string id) {
  const bool named = !id.empty() && !sessions_.count(id);
  if (!named) {  // a fresh id: neither cached nor holding the flags of a dropped cache
    do id = fmt::format("s{:06}", next_id_++);
    while (sessions_.count(id) || kept_.count(id));
  }
  auto s = std::make_unique<ServedSession>();
  s->id = id;
  s->named = named;
  if (auto k = kept_.find(id); k != kept_.end()) {  // its cache is gone, its flags come back
    s->flagged = std::move(k->second.flagged);
    kept_.erase(k);
  }
  s->session = std::make_unique<Session>(backend, kv_);
  s->busy = true;
  s->last_use = ++clock_;
  ServedSession* raw = s.get();
  sessions_[id] = std::move(s);
  return raw;
}

size_t SessionStore::bytes() const {
  size_t n = 0;
  for (const auto& [_, s] : sessions_) n += s->session->size() * per_token_;
  return n;
}

void SessionStore::release(ServedSession* s) {
  s->busy = false;
  s->last_use = ++clock_;
  while (bytes() > budget_) {
    auto oldest = sessions_.end();
    for (auto it = sessions_.begin(); it != sessions_.end(); ++it)
      if (!it->second->busy && (oldest == sessions_.end() || it->second->last_use < oldest->second->last_use)) oldest = it;
    if (oldest == sessions_.end()) break;
    // The cache goes; the flags stay (a cache is a speed-up, a flag changes the reply, SV3).
    ServedSession& gone = *oldest->second;
    if (gone.named || !gone.flagged.empty()) {
      kept_[oldest->first] = {std::move(gone.spans), std::move(gone.flagged), ++kept_clock_};
      // Bounded: past 65536 records the oldest without flags goes (a flag is never dropped).
      if (kept_.size() > 65536) {
        auto drop = kept_.end();
        for (auto it = kept_.begin(); it != kept_.end(); ++it)
          if (it->second.flagged.empty() && (drop == kept_.end() || it->second.age < drop->second.age)) drop = it;
        if (drop != kept_.end()) kept_.erase(drop);
      }
    }
    sessions_.erase(oldest);
  }
}

}  // namespace akv::serve
