#include "serve/engine.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <set>

#include "readers/tokenizer/pre_tokenizer.hpp"
#include "reference/error.hpp"

namespace akv::serve {

// ---- Generation: the HTTP thread's side

bool Generation::next_event(TokenEvent& ev) {
  std::unique_lock lk(mu_);
  cv_.wait(lk, [&] { return !events_.empty() || done_; });
  if (events_.empty()) return false;
  ev = std::move(events_.front());
  events_.pop_front();
  return true;
}

const Reply& Generation::reply() {
  std::unique_lock lk(mu_);
  cv_.wait(lk, [&] { return done_; });
  if (error_) std::rethrow_exception(error_);
  return reply_;
}

std::string Generation::wait_admitted() {
  std::unique_lock lk(mu_);
  cv_.wait(lk, [&] { return admitted_ || done_; });
  if (error_) std::rethrow_exception(error_);
  return session_id_;
}

void Generation::cancel() {
  std::lock_guard lk(mu_);
  cancelled_ = true;
}

void Generation::push(TokenEvent ev) {
  std::lock_guard lk(mu_);
  events_.push_back(std::move(ev));
  cv_.notify_all();
}

void Generation::finish(std::exception_ptr err) {
  std::lock_guard lk(mu_);
  error_ = err;
  done_ = true;
  cv_.notify_all();
}

// ---- Engine

struct Engine::Control {
  std::string session;
  std::vector<size_t> indexes;
  std::mutex mu;
  std::condition_variable cv;
  bool done = false;
  EvictStats stats;
  std::exception_ptr error;
};

namespace {
// The length of the longest tail of `bytes` that is a proper prefix of a stop string.
size_t stop_tail(const std::string& bytes, const std::vector<std::string>& stops) {
  size_t n = 0;
  for (const std::string& stop : stops)
    for (size_t k = std::min(stop.size() - 1, bytes.size()); k > n; --k)
      if (bytes.compare(bytes.size() - k, k, stop, 0, k) == 0) {
        n = k;
        break;
      }
  return n;
}

// The text of a reply so far, without a trailing incomplete UTF-8 sequence (render writes one
// as \xNN): what a stream may emit now and never take back.
std::string stable_prefix(const std::string& text) {
  size_t n = text.size();
  while (n >= 4 && text.compare(n - 4, 2, "\\x") == 0 && std::isxdigit(static_cast<unsigned char>(text[n - 2])) &&
         std::isxdigit(static_cast<unsigned char>(text[n - 1])))
    n -= 4;
  return text.substr(0, n);
}
}  // namespace

std::string utf8_text(const std::string& bytes) {
  std::string out;
  model::split_utf8(bytes, [&](std::string_view run, bool valid) {
    if (valid) {
      out += run;
    } else {
      static const char* hex = "0123456789ABCDEF";
      const auto b = static_cast<uint8_t>(run[0]);
      out += std::string("\\x") + hex[b >> 4] + hex[b & 15];
    }
  });
  return out;
}

Engine::Engine(LoadedModel lm, std::unique_ptr<Backend> backend, EngineOptions opt)
    : lm_(std::move(lm)), backend_(std::move(backend)), desc_(backend_->describe()), opt_(std::move(opt)),
      guard_(opt_.guard), store_(opt_.cache_budget, bytes_per_token(), opt_.kv_type) {
  if (opt_.parallel < 1) throw Error(ErrorCode::kBadInput, "--parallel must be >= 1");
  check_backend_kv_type(*backend_, opt_.kv_type);  // before any session: --kv-type the backend runs
  thread_ = std::thread([this] { loop(); });
}

Engine::~Engine() {
  {
    std::lock_guard lk(mu_);
    stop_ = true;
    cv_.notify_all();
  }
  thread_.join();
}

size_t Engine::bytes_per_token() const {
  const Config& c = lm_.model->config;
  return size_t{2} * static_cast<size_t>(c.n_layers) * kv_row_bytes(opt_.kv_type, c.kv_dim());  // K and V rows as stored (S5)
}

size_t Engine::load() const {
  std::lock_guard lk(mu_);
  return pending_.size() + active_count_;
}

std::shared_ptr<Generation> Engine::submit(ChatRequest req, const std::string& session_id) {
  auto g = std::make_shared<Generation>();
  check_token_ids(req.conv, lm_.model->config.vocab);
  const EncodedConversation enc = lm_.encoder->encode(req.conv);
  if (!enc.preamble.empty()) {
    g->spans_.push_back(enc.preamble);
    g->span_message_.push_back(-1);
  }
  for (size_t i = 0; i < enc.spans.size(); ++i) {
    g->spans_.push_back(enc.spans[i]);
    g->span_message_.push_back(static_cast<int>(i));
  }
  size_t tokens = enc.tokens();
  const size_t prompt = lm_.encoder->generation_prompt().size();
  const size_t ctx = static_cast<size_t>(lm_.model->config.max_ctx);
  if (tokens + prompt + 1 > ctx)
    throw Error(ErrorCode::kContextOverflow,
                fmt::format("the request's {} tokens + {} of the generation prompt + 1 generated exceed the context of "
                            "model '{}' ({} tokens)",
                            tokens, prompt, lm_.name, ctx));
  if (req.max_tokens == 0) req.max_tokens = opt_.default_max_tokens;
  g->guard_flags_.assign(req.conv.messages.size(), false);
  if (guard_.active())
    for (size_t i = 0; i < req.conv.messages.size(); ++i)
      if (req.conv.messages[i].role == "tool") g->guard_flags_[i] = guard_.flags(req.conv.messages[i].content);
  g->sampler_ = std::make_unique<Sampler>(req.sampler);
  g->req_ = std::move(req);
  g->session_hint_ = session_id;
  std::lock_guard lk(mu_);
  if (stop_) throw Error(ErrorCode::kOutOfResources, "the server is shutting down");
  if (pending_.size() + active_count_ >= static_cast<size_t>(opt_.parallel) + opt_.queue)
    throw Error(ErrorCode::kOutOfResources,
                fmt::format("{} requests are generating and {} waiting (--parallel {}, --queue {})", active_count_,
                            pending_.size(), opt_.parallel, opt_.queue));
  pending_.push_back(g);
  cv_.notify_all();
  return g;
}

EvictStats Engine::evict(const std::string& session_id, const std::vector<size_t>& indexes) {
  auto c = std::make_shared<Control>();
  c->session = session_id;
  c->indexes = indexes;
  {
    std::lock_guard lk(mu_);
    controls_.push_back(c);
    cv_.notify_all();
  }
  std::unique_lock lk(c->mu);
  c->cv.wait(lk, [&] { return c->done; });
  if (c->error) std::rethrow_exception(c->error);
  return c->stats;
}

// The span indexes an evict request names: at least one, each in range, none repeated.
static std::set<size_t> check_indexes(const std::vector<size_t>& indexes, size_t spans) {
  if (indexes.empty()) throw Error(ErrorCode::kBadInput, "messages: no message named");
  std::set<size_t> seen;
  for (size_t i : indexes) {
    if (i >= spans) throw Error(ErrorCode::kBadInput, fmt::format("messages: span {} out of range ({} spans)", i, spans));
    if (!seen.insert(i).second) throw Error(ErrorCode::kBadInput, fmt::format("messages: {} repeated", i));
  }
  return seen;
}

// Flags the spans `seen` of a session's span list and takes them out of it (SV3).
static void flag_spans(std::vector<std::vector<Token>>& spans, std::set<std::vector<Token>>& flagged, const std::set<size_t>& seen) {
  for (auto it = seen.rbegin(); it != seen.rend(); ++it) {
    flagged.insert(spans[*it]);
    spans.erase(spans.begin() + static_cast<std::ptrdiff_t>(*it));
  }
}

EvictStats Engine::evict_now(const Control& c) {
  ServedSession* s = store_.get(c.session);
  if (s == nullptr) {
    KeptSession* k = store_.kept(c.session);
    if (k == nullptr) throw Error(ErrorCode::kUnknownSpan, "session '" + c.session + "' is not cached here");
    // The cache is gone but the session is known: flag the spans, nothing to recompute.
    flag_spans(k->spans, k->flagged, check_indexes(c.indexes, k->spans.size()));
    return {};
  }
  if (s->busy) throw SessionBusy("session '" + c.session + "' is generating a reply; evict after it completes (spec/serving.md SV3)");
  s->named = true;
  // The session's spans are those of its last request's kept messages, in order.
  const std::set<size_t> seen = check_indexes(c.indexes, s->spans.size());
  std::vector<SpanId> ids;
  for (size_t i : seen) ids.push_back(s->session->spans()[i].id);
  const EvictStats st = s->session->evict(ids);
  flag_spans(s->spans, s->flagged, seen);
  return st;
}

void Engine::loop() {
  for (;;) {
    std::vector<std::shared_ptr<Generation>> admit_now;
    std::vector<std::shared_ptr<Control>> controls;
    {
      std::unique_lock lk(mu_);
      cv_.wait(lk, [&] { return stop_ || !pending_.empty() || !controls_.empty() || !active_.empty(); });
      if (stop_ && pending_.empty() && controls_.empty() && active_.empty()) return;
      controls.assign(controls_.begin(), controls_.end());
      controls_.clear();
      // In arrival order; a request naming a session that is generating waits for it (its
      // flags and spans are the session's, SV3), and the requests behind it go first.
      std::set<std::string> claimed;
      for (auto it = pending_.begin(); it != pending_.end() && active_.size() + admit_now.size() < static_cast<size_t>(opt_.parallel);) {
        const std::string& hint = (*it)->session_hint_;
        if (!hint.empty()) {
          const ServedSession* s = store_.get(hint);
          if ((s != nullptr && s->busy) || !claimed.insert(hint).second) {
            ++it;
            continue;
          }
        }
        admit_now.push_back(*it);
        it = pending_.erase(it);
      }
      active_count_ = active_.size() + admit_now.size();
    }
    for (const auto& c : controls) {
      try {
        c->stats = evict_now(*c);
      } catch (...) {
        c->error = std::current_exception();
      }
      std::lock_guard lk(c->mu);
      c->done = true;
      c->cv.notify_all();
    }
    admit(admit_now);
    // One decode step for every request that needs another token (continuous batching).
    std::vector<std::shared_ptr<Generation>> step;
    for (const auto& g : active_) {
      bool cancelled;
      {
        std::lock_guard lk(g->mu_);
        cancelled = g->cancelled_;
      }
      if (cancelled) complete(g, nullptr);
      else if (!g->done_) step.push_back(g);
    }
    if (!step.empty()) {
      std::vector<BatchAppend> items;
      for (const auto& g : step) items.push_back({g->session_->session.get(), g->gen_span_, std::span<const Token>(&g->next_, 1)});
      try {
        const std::vector<std::vector<float>> out = Session::append_batch(items);
        for (size_t i = 0; i < step.size(); ++i) {
          try {
            on_logits(step[i], out[i]);
          } catch (...) {
            complete(step[i], std::current_exception());
          }
        }
      } catch (...) {
        for (const auto& g : step) complete(g, std::current_exception());
      }
    }
    active_.erase(std::remove_if(active_.begin(), active_.end(), [](const auto& g) { return g->done_; }), active_.end());
    std::lock_guard lk(mu_);
    active_count_ = active_.size();
  }
}

void Engine::prepare(const std::shared_ptr<Generation>& g) {
  ServedSession* s = store_.find(g->session_hint_, g->spans_);
  if (s == nullptr) s = store_.create(*backend_, g->session_hint_);  // an unknown id: a new session
  s->busy = true;
  if (!g->session_hint_.empty()) s->named = true;  // named once: no anonymous request takes it over
  g->session_ = s;
  ReplyStats& st = g->reply_.stats;
  st.session = s->id;
  {
    std::lock_guard lk(g->mu_);
    g->session_id_ = s->id;
  }
  // The request's spans less those flagged: by this session's earlier evictions, or now by the guard.
  std::vector<std::vector<Token>> want;
  for (size_t k = 0; k < g->spans_.size(); ++k) {
    const int m = g->span_message_[k];
    bool drop = m >= 0 && s->flagged.count(g->spans_[k]);
    if (!drop && m >= 0 && g->guard_flags_[static_cast<size_t>(m)]) {
      drop = true;
      st.guarded.push_back(static_cast<size_t>(m));
      s->flagged.insert(g->spans_[k]);
    }
    if (drop) st.dropped.push_back(static_cast<size_t>(m));
    else want.push_back(g->spans_[k]);
  }
  const SyncPlan plan = plan_sync(s->spans, want);
  if (!plan.evict.empty()) {
    std::vector<SpanId> ids;
    for (size_t j : plan.evict) ids.push_back(s->session->spans()[j].id);
    const EvictStats e = s->session->evict(ids);
    for (auto it = plan.evict.rbegin(); it != plan.evict.rend(); ++it) s->spans.erase(s->spans.begin() + static_cast<std::ptrdiff_t>(*it));
    st.recomputed_tokens = e.tokens_recomputed;
    st.evicted_tokens = e.tokens_evicted;
  }
  st.reused_tokens = s->session->size() - st.recomputed_tokens;
  g->todo_.assign(want.begin() + static_cast<std::ptrdiff_t>(plan.first_new), want.end());
  g->todo_next_ = 0;
  g->logits_hash_ = std::make_unique<Sha256>();
}

void Engine::admit(const std::vector<std::shared_ptr<Generation>>& gs) {
  std::vector<std::shared_ptr<Generation>> live;
  for (const auto& g : gs) {
    try {
      prepare(g);
      live.push_back(g);
    } catch (...) {
      complete(g, std::current_exception());
    }
  }
  const std::vector<Token> prompt = lm_.encoder->generation_prompt();
  // The new spans of every admitted request, prefilled together: round r appends each
  // request's r-th new span (then its generation prompt) in one Session::append_batch. A
  // row's bits do not depend on the rows beside it (I1, O2), so this is each append alone.
  while (!live.empty()) {
    std::vector<BatchAppend> items;
    for (const auto& g : live) {
      ServedSession* s = g->session_;
      if (g->todo_next_ < g->todo_.size()) {
        items.push_back({s->session.get(), s->next_span++, g->todo_[g->todo_next_]});
        continue;
      }
      ReplyStats& st = g->reply_.stats;
      st.cache_sha256 = cache_sha256(s->session->cache());  // after the request's spans (SV2)
      st.prompt_tokens = s->session->size() + prompt.size();
      g->gen_span_ = s->next_span++;
      g->gen_open_ = true;
      items.push_back({s->session.get(), g->gen_span_, prompt});
    }
    std::vector<std::vector<float>> out;
    std::vector<std::exception_ptr> err(items.size());
    try {
      out = Session::append_batch(items);
    } catch (...) {
      // One item's error (rolled back for all): each alone, so that only its request fails.
      out.assign(items.size(), {});
      for (size_t i = 0; i < items.size(); ++i) {
        try {
          out[i] = items[i].session->append(items[i].id, items[i].tokens, LogitRows::kLast);
        } catch (...) {
          err[i] = std::current_exception();
        }
      }
    }
    std::vector<std::shared_ptr<Generation>> next;
    for (size_t i = 0; i < live.size(); ++i) {
      const auto& g = live[i];
      if (err[i]) {
        complete(g, err[i]);
        continue;
      }
      if (g->todo_next_ < g->todo_.size()) {
        g->session_->spans.push_back(g->todo_[g->todo_next_]);
        g->reply_.stats.prefill_tokens += g->todo_[g->todo_next_].size();
        ++g->todo_next_;
        next.push_back(g);
        continue;
      }
      g->reply_.stats.prefill_tokens += prompt.size();
      g->todo_.clear();
      active_.push_back(g);
      {
        std::lock_guard lk(g->mu_);
        g->admitted_ = true;
        g->cv_.notify_all();
      }
      try {
        on_logits(g, out[i]);
      } catch (...) {
        complete(g, std::current_exception());
      }
    }
    live = std::move(next);
  }
}

void Engine::on_logits(const std::shared_ptr<Generation>& g, std::span<const float> logits) {
  Reply& r = g->reply_;
  const Token t = g->sampler_->next(logits);  // throws on a non-finite logit
  g->logits_hash_->add(logits.data(), logits.size_bytes());
  TokenEvent ev;
  if (g->req_.logprobs) ev.logprob = token_logprob(logits, t, g->req_.top_logprobs);
  if (t == lm_.encoder->end_of_turn()) {
    r.finish_reason = "stop";
  } else {
    r.tokens.push_back(t);
    ev.token_bytes = lm_.encoder->render({t});
    ev.token_text = utf8_text(ev.token_bytes);
    r.token_text.push_back(ev.token_text);
    r.token_bytes.push_back(ev.token_bytes);
    if (ev.logprob) r.logprobs.push_back(*ev.logprob);
    // Stop strings are matched on the generated bytes (not on their \xNN form), the earliest
    // match wins, and the text is cut before it.
    std::string bytes = lm_.encoder->render(r.tokens);
    size_t cut = std::string::npos;
    for (const std::string& stop : g->req_.stop) cut = std::min(cut, bytes.find(stop));
    if (cut != std::string::npos) {
      bytes.resize(cut);
      r.finish_reason = "stop";
    }
    r.text = utf8_text(bytes);
    if (r.finish_reason.empty() && r.tokens.size() >= g->req_.max_tokens) r.finish_reason = "length";
    if (r.finish_reason.empty() && g->session_->session->size() + 1 > static_cast<size_t>(lm_.model->config.max_ctx))
      r.finish_reason = "length";
    // A stream emits only what no later token can change: not a tail that may still become a
    // stop string, nor an incomplete UTF-8 sequence (SV2: the chunks add up to the plain reply).
    const std::string now = r.finish_reason.empty() ? stable_prefix(utf8_text(bytes.substr(0, bytes.size() - stop_tail(bytes, g->req_.stop)))) : r.text;
    if (now.size() > g->emitted_.size() && now.compare(0, g->emitted_.size(), g->emitted_) == 0) {
      ev.delta = now.substr(g->emitted_.size());
      g->emitted_ = now;
    }
    g->push(std::move(ev));
  }
  if (!r.finish_reason.empty()) complete(g, nullptr);
  else g->next_ = t;
}

void Engine::complete(const std::shared_ptr<Generation>& g, std::exception_ptr err) {
  if (g->done_) return;
  if (ServedSession* s = g->session_) {
    // The generated tokens leave the cache: the session holds the request's spans only (the
    // generation span is the last one, so this truncates and recomputes nothing).
    try {
      if (g->gen_open_ && !s->session->spans().empty() && s->session->spans().back().id == g->gen_span_)
        s->session->evict(g->gen_span_);
    } catch (...) {
      if (!err) err = std::current_exception();
    }
    store_.release(s);
    g->session_ = nullptr;
  }
  if (!err && g->logits_hash_) g->reply_.stats.logits_sha256 = g->logits_hash_->hex();
  g->finish(err);
}

}  // namespace akv::serve
