#include "reference/session.hpp"

#include <algorithm>
#include <map>
#include <set>
#include <string>

#include "reference/error.hpp"

namespace akv {

namespace {
std::string span_name(SpanId id) { return "span " + std::to_string(id); }
}  // namespace

namespace {
const Config& checked(const Backend& backend, KvType t) {
  check_backend_kv_type(backend, t);
  return backend.model().config;
}
}  // namespace

Session::Session(Backend& backend, KvType kv_type) : backend_(&backend), cache_(checked(backend, kv_type), kv_type) {}

void Session::check_tokens(std::span<const Token> tokens) const {
  const Config& c = model().config;
  if (tokens.empty()) throw Error(ErrorCode::kEmptyInput, "append: no tokens");
  for (size_t i = 0; i < tokens.size(); ++i) {
    if (tokens[i] < 0 || tokens[i] >= c.vocab)
      throw Error(ErrorCode::kInvalidToken, "append: token " + std::to_string(tokens[i]) + " at index " +
                                                std::to_string(i) + " is outside [0, " + std::to_string(c.vocab) + ")");
  }
  if (cache_.size() + tokens.size() > static_cast<size_t>(c.max_ctx))
    throw Error(ErrorCode::kContextOverflow, "append: " + std::to_string(cache_.size()) + " cached + " +
                                                 std::to_string(tokens.size()) + " new tokens exceed the context of " +
                                                 std::to_string(c.max_ctx));
}

std::vector<float> Session::run(std::span<const Token> tokens, RowList rows) {
  const size_t vocab = static_cast<size_t>(model().config.vocab);
  const size_t before = cache_.size();
  std::vector<float> logits((rows.empty() ? tokens.size() : rows.size()) * vocab);
  try {
    backend_->forward_rows(cache_, tokens, rows, logits);
  } catch (...) {
    cache_.truncate(before);  // a failed backend call leaves no partial entries
    throw;
  }
  return logits;
}

bool Session::check_append(SpanId id, std::span<const Token> tokens) const {
  check_tokens(tokens);
  if (evicted_.count(id)) throw Error(ErrorCode::kSpanEvicted, "append: " + span_name(id) + " was evicted");
  const bool extend = !spans_.empty() && spans_.back().id == id;
  if (!extend && std::any_of(spans_.begin(), spans_.end(), [&](const SpanInfo& s) { return s.id == id; }))
    throw Error(ErrorCode::kSpanNotAtTail, "append: " + span_name(id) + " is not the last span; only the last can grow");
  return extend;
}

void Session::record_append(SpanId id, std::span<const Token> tokens, size_t start, bool extend,
                            std::span<const float> last) {
  tokens_.insert(tokens_.end(), tokens.begin(), tokens.end());
  entry_span_.insert(entry_span_.end(), tokens.size(), id);
  if (extend) {
    spans_.back().length += tokens.size();
  } else {
    spans_.push_back({id, start, tokens.size()});
    span_last_logits_.emplace_back();
  }
  span_last_logits_.back().assign(last.begin(), last.end());
}

std::vector<float> Session::append(SpanId id, std::span<const Token> tokens, LogitRows want) {
  const bool extend = check_append(id, tokens);
  const size_t start = cache_.size();
  const uint32_t last = static_cast<uint32_t>(tokens.size() - 1);
  std::vector<float> logits = want == LogitRows::kAll ? run(tokens, {}) : run(tokens, RowList(&last, 1));
  const size_t vocab = static_cast<size_t>(model().config.vocab);
  record_append(id, tokens, start, extend, std::span<const float>(logits).last(vocab));
  return logits;
}

std::vector<std::vector<float>> Session::append_batch(std::span<const BatchAppend> items) {
  std::vector<std::vector<float>> out(items.size());
  if (items.empty()) return out;
  std::vector<bool> extend(items.size());
  std::vector<size_t> start(items.size());
  std::vector<uint32_t> last(items.size());
  std::set<const Session*> seen;
  Backend* backend = items[0].session->backend_;
  for (size_t i = 0; i < items.size(); ++i) {
    const BatchAppend& it = items[i];
    const std::string which = "append_batch: item " + std::to_string(i);
    if (!seen.insert(it.session).second) throw Error(ErrorCode::kBadInput, which + ": its session is named twice");
    if (it.session->backend_ != backend) throw Error(ErrorCode::kBadInput, which + ": its session runs on another backend");
    try {
      extend[i] = it.session->check_append(it.id, it.tokens);
    } catch (const Error& e) {
      throw Error(e.code(), which + ": " + e.what());
    }
    start[i] = it.session->cache_.size();
    last[i] = static_cast<uint32_t>(it.tokens.size() - 1);
  }
  const size_t vocab = static_cast<size_t>(items[0].session->model().config.vocab);
  std::vector<BatchItem> batch(items.size());
  for (size_t i = 0; i < items.size(); ++i) {
    out[i].resize(vocab);
    batch[i] = {&items[i].session->cache_, items[i].tokens, out[i], RowList(&last[i], 1)};
  }
  try {
    backend->forward_batch(batch);
  } catch (...) {
    for (size_t i = 0; i < items.size(); ++i) items[i].session->cache_.truncate(start[i]);
    throw;
  }
  for (size_t i = 0; i < items.size(); ++i)
    items[i].session->record_append(items[i].id, items[i].tokens, start[i], extend[i], out[i]);
  return out;
}

size_t Session::check_evict(std::span<const SpanId> ids, std::set<SpanId>& doomed) const {
  if (ids.empty()) throw Error(ErrorCode::kEmptyInput, "evict: no spans named");
  size_t first = spans_.size();  // index in spans_ of the first evicted span
  for (SpanId id : ids) {
    if (!doomed.insert(id).second) throw Error(ErrorCode::kDuplicateSpan, "evict: " + span_name(id) + " named twice");
    if (evicted_.count(id)) throw Error(ErrorCode::kSpanEvicted, "evict: " + span_name(id) + " was already evicted");
    auto it = std::find_if(spans_.begin(), spans_.end(), [&](const SpanInfo& s) { return s.id == id; });
    if (it == spans_.end()) throw Error(ErrorCode::kUnknownSpan, "evict: " + span_name(id) + " is not in the session");
    first = std::min(first, static_cast<size_t>(it - spans_.begin()));
  }
  return first;
}

std::vector<SpanInfo> Session::spans_to_evict(std::span<const SpanId> ids) const {
  std::set<SpanId> doomed;
  const size_t first = check_evict(ids, doomed);
  std::vector<SpanInfo> named;
  for (size_t i = first; i < spans_.size(); ++i)
    if (doomed.count(spans_[i].id)) named.push_back(spans_[i]);
  return named;
}

Session::Tail Session::tail_without(size_t first, const std::set<SpanId>& gone,
                                    const std::map<SpanId, const SpanEdit*>& edits) const {
  Tail t;
  for (size_t i = first; i < spans_.size(); ++i) {
    const SpanInfo& s = spans_[i];
    if (gone.count(s.id)) continue;
    const size_t at = t.x.size();
    if (const auto e = edits.find(s.id); e != edits.end())
      t.x.insert(t.x.end(), e->second->tokens.begin(), e->second->tokens.end());
    else
      t.x.insert(t.x.end(), tokens_.begin() + static_cast<std::ptrdiff_t>(s.start),
                 tokens_.begin() + static_cast<std::ptrdiff_t>(s.start + s.length));
    t.moved.push_back({s.id, spans_[first].start + at, t.x.size() - at});
    t.index.push_back(i);
  }
  return t;
}

void Session::rerun_tail(size_t first, size_t from, const Tail& t) {
  const size_t f = spans_[first].start;
  std::vector<SpanInfo> kept(spans_.begin(), spans_.begin() + static_cast<std::ptrdiff_t>(first));
  std::vector<std::vector<float>> kept_logits(span_last_logits_.begin(),
                                              span_last_logits_.begin() + static_cast<std::ptrdiff_t>(first));
  cache_.truncate(from);
  tokens_.resize(f);
  entry_span_.resize(f);
  // Only each recomputed span's last row is read: the rest skip the classifier.
  std::vector<uint32_t> rows;
  std::vector<size_t> has_row;  // moved spans whose last row is recomputed
  for (size_t j = 0; j < t.moved.size(); ++j) {
    const SpanInfo& s = t.moved[j];
    if (s.start + s.length - 1 < from) continue;
    rows.push_back(static_cast<uint32_t>(s.start + s.length - 1 - from));
    has_row.push_back(j);
  }
  std::vector<float> logits;
  if (from < f + t.x.size())
    logits = run(std::span<const Token>(t.x).subspan(from - f), rows);
  const size_t vocab = static_cast<size_t>(model().config.vocab);
  for (size_t j = 0, got = 0; j < t.moved.size(); ++j) {
    const SpanInfo& s = t.moved[j];
    kept.push_back(s);
    if (got < has_row.size() && has_row[got] == j) {
      const auto row = logits.begin() + static_cast<std::ptrdiff_t>(got++ * vocab);
      kept_logits.emplace_back(row, row + static_cast<std::ptrdiff_t>(vocab));
    } else {  // placed in place (GT6's edit, L4's shift): its logits are those computed before
      kept_logits.push_back(span_last_logits_[t.index[j]]);
    }
    tokens_.insert(tokens_.end(), t.x.begin() + static_cast<std::ptrdiff_t>(s.start - f),
                   t.x.begin() + static_cast<std::ptrdiff_t>(s.start - f + s.length));
    entry_span_.insert(entry_span_.end(), s.length, s.id);
  }
  spans_ = std::move(kept);
  span_last_logits_ = std::move(kept_logits);
}

// GT6: a backend may edit the cache itself when the evicted entries [f, f + g) are one
// contiguous run with survivors after it and no span masked earlier (L3) among them: it places
// the survivors [f, r) and only those from r on are recomputed. Returns r; f when it does not.
size_t Session::placed_by_backend(size_t first, const std::set<SpanId>& doomed, size_t g) {
  const size_t f = spans_[first].start;
  bool survivor = false;  // a surviving span seen after the first evicted one
  for (size_t i = first; i < spans_.size(); ++i) {
    const bool evicted = doomed.count(spans_[i].id) != 0;
    if (evicted_.count(spans_[i].id) || (evicted && survivor)) return f;
    survivor = survivor || !evicted;
  }
  if (!survivor || g == 0) return f;
  const auto r = backend_->edit_for_evict(cache_, f, f + g);
  return r ? *r : f;
}

EvictStats Session::evict(std::span<const SpanId> ids) {
  std::set<SpanId> doomed;
  const size_t first = check_evict(ids, doomed);
  EvictStats st;
  st.truncated_at = spans_[first].start;
  for (const SpanInfo& s : spans_)
    if (doomed.count(s.id)) st.tokens_evicted += s.length;
  // The survivors after the cut, re-run at their new positions; spans masked earlier (L3) go with the cut.
  std::set<SpanId> gone = doomed;
  gone.insert(evicted_.begin(), evicted_.end());
  const Tail t = tail_without(first, gone);
  const size_t from = placed_by_backend(first, doomed, st.tokens_evicted);
  st.tokens_recomputed = t.x.size() - (from - st.truncated_at);
  // From here on nothing can fail but allocation in the backend.
  rerun_tail(first, from, t);
  evicted_.insert(doomed.begin(), doomed.end());
  recomputed_ += st.tokens_recomputed;
  return st;
}

void Session::evict_in_place(std::span<const SpanId> ids, EvictedRows rows, const std::function<void(KVCache&)>& edit) {
  std::set<SpanId> doomed;
  const size_t first = check_evict(ids, doomed);
  edit(cache_);
  if (rows == EvictedRows::kDropped) {  // the edit moved the rest down: the table follows, nothing re-run
    const Tail t = tail_without(first, doomed);
    rerun_tail(first, spans_[first].start + t.x.size(), t);
  }
  evicted_.insert(doomed.begin(), doomed.end());
}

EvictStats Session::replace(std::span<const SpanEdit> edits) {
  if (edits.empty()) throw Error(ErrorCode::kEmptyInput, "replace: no spans named");
  std::map<SpanId, const SpanEdit*> by_id;
  size_t first = spans_.size(), grown = cache_.size(), old = 0;
  for (const SpanEdit& e : edits) {
    if (!by_id.emplace(e.id, &e).second) throw Error(ErrorCode::kDuplicateSpan, "replace: " + span_name(e.id) + " named twice");
    if (evicted_.count(e.id)) throw Error(ErrorCode::kSpanEvicted, "replace: " + span_name(e.id) + " was evicted");
    auto it = std::find_if(spans_.begin(), spans_.end(), [&](const SpanInfo& s) { return s.id == e.id; });
    if (it == spans_.end()) throw Error(ErrorCode::kUnknownSpan, "replace: " + span_name(e.id) + " is not in the session");
    if (e.tokens.empty()) throw Error(ErrorCode::kEmptyInput, "replace: no tokens for " + span_name(e.id));
    for (size_t i = 0; i < e.tokens.size(); ++i)
      if (e.tokens[i] < 0 || e.tokens[i] >= model().config.vocab)
        throw Error(ErrorCode::kInvalidToken, "replace: " + span_name(e.id) + ": token " + std::to_string(e.tokens[i]) +
                                                  " at index " + std::to_string(i) + " is outside [0, " +
                                                  std::to_string(model().config.vocab) + ")");
    first = std::min(first, static_cast<size_t>(it - spans_.begin()));
    grown = grown - it->length + e.tokens.size();
    old += it->length;
  }
  if (grown > static_cast<size_t>(model().config.max_ctx))
    throw Error(ErrorCode::kContextOverflow, "replace: the edited spans make " + std::to_string(grown) +
                                                 " tokens, more than the context of " + std::to_string(model().config.max_ctx));
  EvictStats st;
  st.truncated_at = spans_[first].start;
  st.tokens_evicted = old;
  const Tail t = tail_without(first, evicted_, by_id);  // spans masked earlier (L3) go with the cut, as O3
  st.tokens_recomputed = t.x.size();
  // From here on nothing can fail but allocation in the backend.
  rerun_tail(first, st.truncated_at, t);
  recomputed_ += st.tokens_recomputed;
  return st;
}

std::span<const float> Session::logits() const {
  if (spans_.empty()) throw Error(ErrorCode::kEmptyCache, "logits: the session holds no tokens");
  return span_last_logits_.back();
}

}  // namespace akv
