#include "serve/engine.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <set>

#include "chat/tools.hpp"
#include "serve/constraint.hpp"
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

namespace {
// An error as values (ApiError::Data), made on the thread that caught it: another thread
// rethrows a copy it builds itself, sharing nothing with the original exception.
ApiError::Data failure_of(std::exception_ptr e) { return api_error_of(e).data(); }
}  // namespace

const Reply& Generation::reply() {
  std::unique_lock lk(mu_);
  cv_.wait(lk, [&] { return done_; });
  if (error_) throw ApiError(*error_);
  return reply_;
}

ReplyStats Generation::wait_admitted() {
  std::unique_lock lk(mu_);
  cv_.wait(lk, [&] { return admitted_ || done_; });
  if (error_) throw ApiError(*error_);
  return admitted_stats_;
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
  std::optional<ApiError::Data> f;
  if (err) f = failure_of(err);
  std::lock_guard lk(mu_);
  error_ = std::move(f);
  done_ = true;
  cv_.notify_all();
}

// ---- Engine

// A function the scheduler runs between two steps for another thread (the endpoints of
// /v1/sessions), with its error as values (ApiError::Data).
struct Engine::Task {
  std::function<void()> run;
  std::mutex mu;
  std::condition_variable cv;
  bool done = false;
  std::optional<ApiError::Data> error;
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

// The text of a reply so far, without a trailing incomplete UTF-8 sequence (utf8_text writes
// one as \xNN): what a stream may emit now and never take back.
std::string stable_prefix(const std::string& text) {
  size_t n = text.size();
  while (n >= 4 && text.compare(n - 4, 2, "\\x") == 0 && std::isxdigit(static_cast<unsigned char>(text[n - 2])) &&
         std::isxdigit(static_cast<unsigned char>(text[n - 1])))
    n -= 4;
  return text.substr(0, n);
}

// A request rendered by the model's template without some of its messages (spec/serving.md
// SV3, the rule of spec/operations.md O8): the template sees a conversation that never held
// them, so a preamble it adds for want of a leading system message comes back.
struct Rendered {
  std::vector<std::vector<Token>> spans;
  std::vector<int> message;  // the request's message index of each span; -1: the preamble
  size_t tokens = 0;
};

Rendered render_without(const ChatEncoder& enc, const Conversation& conv, const std::set<size_t>& drops) {
  Conversation c;
  c.source = conv.source;
  c.tools = conv.tools;  // rendered with the messages (CT14)
  std::vector<int> index;
  for (size_t i = 0; i < conv.messages.size(); ++i)
    if (!drops.count(i)) {
      c.messages.push_back(conv.messages[i]);
      index.push_back(static_cast<int>(i));
    }
  const EncodedConversation e = enc.encode(c);
  Rendered r;
  if (!e.preamble.empty()) {
    r.spans.push_back(e.preamble);
    r.message.push_back(-1);
  }
  for (size_t k = 0; k < e.spans.size(); ++k) {
    r.spans.push_back(e.spans[k]);
    r.message.push_back(index[k]);
  }
  r.tokens = e.tokens();
  return r;
}

// Tool calls are read from the reply (SV15) when the request offers tools and lets the model
// call them, and the template has a tool syntax.
bool tools_active(const ChatRequest& q) { return !q.conv.tools.empty() && q.tool_choice != ToolChoice::kNone; }

// The id of a reply's call i (SV15): the SHA-256 of what the model read and wrote (the cache
// and logits digests, the generated tokens) and i. Not of the request's bytes: a request that
// holds a dropped message (a flag, the guard: SV3, SV7) must get the ids of the cold reply to
// the request without it, since a host sends them back and the template renders them.
std::string call_id(const Reply& r, size_t i) {
  Sha256 h;
  const std::string head = "akv call id 1\n" + r.stats.cache_sha256 + "\n" + r.stats.logits_sha256 + "\n" + std::to_string(i) + "\n";
  h.add(head.data(), head.size());
  h.add(r.tokens.data(), r.tokens.size() * sizeof(Token));
  return "call_" + h.hex().substr(0, 24);
}

// The reply as a message (SV15): content outside the calls, the calls with their ids (call_id:
// a function of the request, never copied from the history), and the finish reason tool_calls
// when a reply that ended with calls.
void read_reply(const ChatRequest& q, const ChatEncoder& enc, Reply& r) {
  const ToolSyntax syntax = tools_active(q) ? enc.tool_syntax() : ToolSyntax::kNone;
  if (syntax == ToolSyntax::kNone) {
    r.content = r.text;
    r.has_content = true;
    return;
  }
  chat::ParsedReply p = chat::parse_reply(syntax, r.text, q.conv.tools, q.parallel_tool_calls);
  r.content = std::move(p.content);
  r.has_content = p.has_content;
  r.call_errors = std::move(p.errors);
  for (size_t i = 0; i < p.calls.size(); ++i)
    r.calls.push_back({call_id(r, i), p.calls[i].name, p.calls[i].arguments});
  if (!r.calls.empty() && r.finish_reason == "stop") r.finish_reason = "tool_calls";
}

std::vector<SpanOfMessage> span_map(const std::vector<std::vector<Token>>& spans, const std::vector<int>& message) {
  std::vector<SpanOfMessage> out;
  for (size_t k = 0; k < spans.size(); ++k) out.push_back({message[k], spans[k].size()});
  return out;
}
}  // namespace

std::string utf8_text(const std::string& bytes) { return readers::escape_invalid_utf8(bytes); }

std::string message_key(const Message& m) {
  const std::vector<Token> t = encode_message(m);
  Sha256 h;
  const char* tag = m.tokens ? "akv message key 1: raw" : "akv message key 1: fields";
  h.add(tag, std::strlen(tag) + 1);
  h.add(t.data(), t.size() * sizeof(Token));
  return h.hex();
}

Engine::Engine(LoadedModel lm, std::unique_ptr<Backend> backend, EngineOptions opt)
    : lm_(std::move(lm)), backend_(std::move(backend)), desc_(backend_->describe()), opt_(std::move(opt)), guard_(opt_.guard),
      store_({opt_.cache_budget, opt_.max_sessions, opt_.session_record_bytes}, bytes_per_token(), opt_.kv_type) {
  if (opt_.parallel < 1) throw Error(ErrorCode::kBadInput, "--parallel must be >= 1");
  if (opt_.max_sessions < 1) throw Error(ErrorCode::kBadInput, "--max-sessions must be >= 1");
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

const chat::GrammarVocabulary& Engine::grammar_vocabulary() {
  std::call_once(vocab_once_, [this] { vocab_ = std::make_unique<chat::GrammarVocabulary>(*lm_.encoder); });
  return *vocab_;
}

size_t Engine::bytes_per_token() const {
  const Config& c = lm_.model->config;
  return size_t{2} * static_cast<size_t>(c.n_layers) * kv_row_bytes(opt_.kv_type, c.kv_dim());  // K and V rows as stored (S5)
}

void Engine::set_audit(AuditSink sink) {
  std::lock_guard lk(mu_);
  audit_ = std::move(sink);
}

AuditSink Engine::audit_sink() const {
  std::lock_guard lk(mu_);
  return audit_;
}

size_t Engine::load() const {
  std::lock_guard lk(mu_);
  return pending_.size() + active_count_;
}

namespace {
// SV6: the request as it will be computed (dropped messages out), its generation prompt and
// one generated token fit the model's context.
void check_context(size_t tokens, size_t prompt, size_t dropped, const LoadedModel& lm) {
  const size_t ctx = static_cast<size_t>(lm.model->config.max_ctx);
  if (tokens + prompt + 1 > ctx)
    throw Error(ErrorCode::kContextOverflow,
                fmt::format("the request's {} tokens{} + {} of the generation prompt + 1 generated exceed the context of "
                            "model '{}' ({} tokens)",
                            tokens, dropped ? fmt::format(" (without its {} dropped message(s))", dropped) : "", prompt, lm.name, ctx));
}
}  // namespace

std::shared_ptr<Generation> Engine::submit(ChatRequest req, const std::string& session_id, const std::string& scope) {
  auto g = std::make_shared<Generation>();
  check_token_ids(req.conv, lm_.model->config.vocab);
  const size_t n = req.conv.messages.size();
  g->guard_flags_.assign(n, false);
  for (size_t i = 0; i < n; ++i) {
    g->keys_.push_back(message_key(req.conv.messages[i]));
    if (guard_.active() && req.conv.messages[i].role == "tool" && guard_.flags(req.conv.messages[i].content, scope)) {
      g->guard_flags_[i] = true;
      g->enc_drops_.insert(i);
    }
  }
  // Rendered here, off the scheduler; again at admission only if the session's flags drop more.
  // The context is checked on the request as it will be computed (SV6): here when no session is
  // named (an anonymous request is given no session with flags), at admission otherwise.
  Rendered r = render_without(*lm_.encoder, req.conv, g->enc_drops_);
  if (session_id.empty()) check_context(r.tokens, lm_.encoder->generation_prompt().size(), g->enc_drops_.size(), lm_);
  g->spans_ = std::move(r.spans);
  g->span_message_ = std::move(r.message);
  if (req.max_tokens == 0) req.max_tokens = opt_.default_max_tokens;
  g->sampler_ = std::make_unique<Sampler>(req.sampler);
  // SV14: compiled here, off the scheduler; a schema the engine does not enforce is 400 now.
  if (req.response_format != ResponseFormat::kText || (!req.conv.tools.empty() && req.tool_choice != ToolChoice::kNone))
    if (std::optional<chat::Grammar> gr = request_grammar(req, lm_.encoder->tool_syntax(), grammar_vocabulary()))
      g->matcher_ = std::make_unique<chat::GrammarMatcher>(*gr);
  if (req.sampler.temperature > 0) g->reply_.stats.seed = req.sampler.seed;  // reported: the default one too (SV4)
  g->req_ = std::move(req);
  g->scope_ = scope;
  g->session_hint_ = session_id;
  std::lock_guard lk(mu_);
  if (stop_) throw shutting_down();
  if (pending_.size() + active_count_ >= static_cast<size_t>(opt_.parallel) + opt_.queue)
    throw queue_full(fmt::format("{} requests are generating and {} waiting (--parallel {}, --queue {}); retry later",
                                 active_count_, pending_.size(), opt_.parallel, opt_.queue));
  pending_.push_back(g);
  cv_.notify_all();
  return g;
}

void Engine::on_scheduler(std::function<void()> f) {
  auto t = std::make_shared<Task>();
  t->run = std::move(f);
  {
    std::lock_guard lk(mu_);
    tasks_.push_back(t);
    cv_.notify_all();
  }
  std::unique_lock lk(t->mu);
  t->cv.wait(lk, [&] { return t->done; });
  if (t->error) throw ApiError(*t->error);
}

EvictResult Engine::evict(const EvictRequest& r) {
  EvictResult out;
  on_scheduler([&] { out = evict_now(r); });
  return out;
}

std::vector<SessionInfo> Engine::sessions(const std::string& scope) {
  std::vector<SessionInfo> out;
  on_scheduler([&] {
    for (const ServedSession* s : store_.list(scope))
      out.push_back({s->id, s->named, s->busy, s->session != nullptr, s->session ? s->session->size() : 0, s->keys.size(), s->flagged.size()});
  });
  return out;
}

void Engine::forget(const std::string& scope, const std::string& id) {
  on_scheduler([&] {
    const ServedSession* s = store_.get(scope, id);
    if (s == nullptr) throw Error(ErrorCode::kUnknownSpan, "session '" + id + "' is not known here (GET /v1/sessions lists yours)");
    if (s->busy) throw session_busy("session '" + id + "' is generating a reply; delete it after it completes (spec/serving.md SV3)");
    if (const AuditSink a = audit_sink()) a({"forget", scope, id});
    store_.erase(scope, id);
  });
}

EvictResult Engine::evict_now(const EvictRequest& r) {
  ServedSession* s = store_.get(r.scope, r.session);
  if (s == nullptr) throw Error(ErrorCode::kUnknownSpan, "session '" + r.session + "' is not known here (GET /v1/sessions lists yours)");
  if (s->busy) throw session_busy("session '" + r.session + "' is generating a reply; evict after it completes (spec/serving.md SV3)");
  const size_t n = s->keys.size();
  if (r.messages.empty() && r.tool_call_ids.empty())
    throw Error(ErrorCode::kBadInput, "no message named: give \"messages\" (indexes of the session's last request) or \"tool_call_ids\"");
  std::set<size_t> named;
  for (size_t i : r.messages) {
    if (i >= n)
      throw Error(ErrorCode::kBadInput,
                  fmt::format("messages: {} is out of range: the session's last request has {} message(s) (the template's own "
                              "preamble is no message of the request and is never evicted)",
                              i, n));
    if (!named.insert(i).second) throw Error(ErrorCode::kBadInput, fmt::format("messages: {} is named twice", i));
  }
  std::set<std::string> ids;
  for (const std::string& id : r.tool_call_ids) {
    if (!ids.insert(id).second) throw Error(ErrorCode::kBadInput, "tool_call_ids: '" + id + "' is named twice");
    bool found = false;
    for (size_t i = 0; i < n; ++i)
      if (s->tool_call_ids[i] == id) found = true, named.insert(i);
    if (!found)
      throw Error(ErrorCode::kBadInput, "tool_call_ids: no tool message of the session's last request answers call '" + id + "'");
  }
  for (size_t i : named)
    if (s->flagged.count(s->keys[i])) throw Error(ErrorCode::kBadInput, fmt::format("messages: {} is already flagged", i));
  EvictResult out;
  out.flagged.assign(named.begin(), named.end());
  for (size_t i : named) out.flagged_keys.push_back(s->keys[i]);
  std::set<std::string> flagged = s->flagged;
  for (size_t i : named) flagged.insert(s->keys[i]);
  std::set<size_t> drops;
  for (size_t i = 0; i < n; ++i)
    if (flagged.count(s->keys[i])) drops.insert(i);
  if (drops.size() == n)
    throw Error(ErrorCode::kBadInput, "evicting these would flag every message of the session's last request: what is left is an "
                                      "empty request, which a cold server refuses (spec/serving.md SV3)");
  // The last request rendered again without every flagged message; the cache follows it (O3).
  Rendered want;
  if (s->session) {
    want = render_without(*lm_.encoder, s->last, drops);
    check_context(want.tokens, lm_.encoder->generation_prompt().size(), drops.size(), lm_);
  }
  if (const AuditSink a = audit_sink()) {  // logged once it is sure to happen, before the session changes
    AuditEvent ev{"evict", r.scope, r.session};
    ev.flagged = &out.flagged;
    ev.flagged_keys = &out.flagged_keys;
    a(ev);
  }
  if (!s->session) {  // the budget dropped the cache: the flags are all there is to change
    s->flagged = std::move(flagged);
    out.cached = false;
    store_.release(s);
    return out;
  }
  const SyncPlan plan = plan_sync(s->spans, want.spans);
  if (!plan.evict.empty()) {
    std::vector<SpanId> spans;
    for (size_t j : plan.evict) spans.push_back(s->session->spans()[j].id);
    out.stats = s->session->evict(spans);
    for (auto it = plan.evict.rbegin(); it != plan.evict.rend(); ++it) s->spans.erase(s->spans.begin() + static_cast<std::ptrdiff_t>(*it));
  }
  s->flagged = std::move(flagged);
  s->span_message.assign(want.message.begin(), want.message.begin() + static_cast<std::ptrdiff_t>(s->spans.size()));
  for (size_t k = plan.first_new; k < want.spans.size(); ++k) {
    s->session->append(s->next_span++, want.spans[k], LogitRows::kLast);
    s->spans.push_back(want.spans[k]);
    s->span_message.push_back(want.message[k]);
    out.prefill_tokens += want.spans[k].size();
  }
  out.spans = span_map(s->spans, s->span_message);
  out.cache_sha256 = cache_sha256(s->session->cache());
  store_.release(s);
  return out;
}

void Engine::loop() {
  for (;;) {
    std::vector<std::shared_ptr<Generation>> admit_now;
    std::vector<std::shared_ptr<Task>> tasks;
    {
      std::unique_lock lk(mu_);
      cv_.wait(lk, [&] { return stop_ || !pending_.empty() || !tasks_.empty() || !active_.empty(); });
      if (stop_ && pending_.empty() && tasks_.empty() && active_.empty()) return;
      tasks.assign(tasks_.begin(), tasks_.end());
      tasks_.clear();
      // In arrival order; a request naming a session that is generating waits for it (its
      // flags and spans are the session's, SV3), and the requests behind it go first.
      std::set<std::pair<std::string, std::string>> claimed;
      for (auto it = pending_.begin(); it != pending_.end() && active_.size() + admit_now.size() < static_cast<size_t>(opt_.parallel);) {
        const std::string& hint = (*it)->session_hint_;
        if (!hint.empty()) {
          const ServedSession* s = store_.get((*it)->scope_, hint);
          if ((s != nullptr && s->busy) || !claimed.insert({(*it)->scope_, hint}).second) {
            ++it;
            continue;
          }
        }
        admit_now.push_back(*it);
        it = pending_.erase(it);
      }
      active_count_ = active_.size() + admit_now.size();
    }
    for (const auto& t : tasks) {
      std::optional<ApiError::Data> err;
      try {
        t->run();
      } catch (...) {
        err = failure_of(std::current_exception());
      }
      std::lock_guard lk(t->mu);
      t->error = std::move(err);
      t->done = true;
      t->cv.notify_all();
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
      if (cancelled) {
        g->reply_.cancelled = true;
        complete(g, nullptr);
      } else if (!g->done_) {
        step.push_back(g);
      }
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
  ServedSession* s = store_.find(g->scope_, g->session_hint_, g->spans_);
  if (s == nullptr) s = store_.create(*backend_, g->scope_, g->session_hint_);  // an unknown id: a new session
  s->busy = true;
  g->session_ = s;
  ReplyStats& st = g->reply_.stats;
  st.session = s->id;
  // The request less the messages flagged: by this session's earlier evictions, or now by the
  // guard; rendered again when the session's flags drop more than the guard did.
  std::set<size_t> drops = g->enc_drops_;
  for (size_t i = 0; i < g->keys_.size(); ++i)
    if (s->flagged.count(g->keys_[i])) drops.insert(i);
  if (!g->keys_.empty() && drops.size() == g->keys_.size())  // session unchanged yet
    throw Error(ErrorCode::kBadInput, "every message of the request is flagged for eviction: what is left is an empty request, "
                                      "which a cold server refuses (spec/serving.md SV3)");
  if (drops != g->enc_drops_) {
    Rendered r = render_without(*lm_.encoder, g->req_.conv, drops);
    g->spans_ = std::move(r.spans);
    g->span_message_ = std::move(r.message);
  }
  size_t tokens = 0;
  for (const auto& sp : g->spans_) tokens += sp.size();
  check_context(tokens, lm_.encoder->generation_prompt().size(), drops.size(), lm_);  // session unchanged yet
  // The guard's new flags join the session when the reply completes and is logged (SV9): a
  // request that is never answered changes no flag.
  for (size_t i = 0; i < g->keys_.size(); ++i)
    if (g->guard_flags_[i] && !s->flagged.count(g->keys_[i])) {
      st.guarded.push_back(i);
      g->new_flags_.push_back(g->keys_[i]);
    }
  st.dropped.assign(drops.begin(), drops.end());
  const SyncPlan plan = plan_sync(s->spans, g->spans_);
  if (!plan.evict.empty()) {
    std::vector<SpanId> ids;
    for (size_t j : plan.evict) ids.push_back(s->session->spans()[j].id);
    const EvictStats e = s->session->evict(ids);
    for (auto it = plan.evict.rbegin(); it != plan.evict.rend(); ++it) s->spans.erase(s->spans.begin() + static_cast<std::ptrdiff_t>(*it));
    st.recomputed_tokens = e.tokens_recomputed;
    st.evicted_tokens = e.tokens_evicted;
  }
  st.reused_tokens = s->session->size() - st.recomputed_tokens;
  s->span_message.assign(g->span_message_.begin(), g->span_message_.begin() + static_cast<std::ptrdiff_t>(s->spans.size()));
  g->todo_.assign(g->spans_.begin() + static_cast<std::ptrdiff_t>(plan.first_new), g->spans_.end());
  g->todo_next_ = 0;
  g->logits_hash_ = std::make_unique<Sha256>();
}

void Engine::admit(const std::vector<std::shared_ptr<Generation>>& gs) {
  std::vector<std::shared_ptr<Generation>> live;
  for (const auto& g : gs) {
    bool cancelled;
    {
      std::lock_guard lk(g->mu_);
      cancelled = g->cancelled_;
    }
    if (cancelled) {  // the client left while it waited: nothing is computed for it
      g->reply_.cancelled = true;
      complete(g, nullptr);
      continue;
    }
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
      st.spans = span_map(s->spans, s->span_message);
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
        ServedSession* s = g->session_;
        s->spans.push_back(g->todo_[g->todo_next_]);
        s->span_message.push_back(g->span_message_[s->spans.size() - 1]);
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
        g->admitted_stats_ = g->reply_.stats;
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
  Token t;
  if (g->matcher_) {
    // SV14: drawn among the ids the grammar allows; logprobs and the digest stay the model's.
    g->matcher_->fill_mask(g->mask_);
    t = g->sampler_->next(logits, g->mask_);  // throws on a non-finite logit
    if (!g->matcher_->accept(t)) throw std::logic_error("the grammar refused the token its own mask allowed (spec/serving.md SV14)");
  } else {
    t = g->sampler_->next(logits);  // throws on a non-finite logit
  }
  g->logits_hash_->add(logits.data(), logits.size_bytes());
  TokenEvent ev;
  if (g->req_.logprobs) ev.logprob = token_logprob(logits, t, g->req_.top_logprobs);
  if (t == lm_.encoder->end_of_turn()) {
    r.finish_reason = "stop";  // the end-of-turn token is not part of the reply, nor of its logprobs
  } else {
    r.tokens.push_back(t);
    ev.token_bytes = lm_.encoder->bytes({t});
    ev.token_text = utf8_text(ev.token_bytes);
    r.token_text.push_back(ev.token_text);
    r.token_bytes.push_back(ev.token_bytes);
    if (ev.logprob) r.logprobs.push_back(*ev.logprob);
    // Stop strings are matched on the generated bytes (not on their \xNN form), the earliest
    // match wins, and the text is cut before it.
    std::string bytes = lm_.encoder->bytes(r.tokens);
    size_t cut = std::string::npos;
    for (const std::string& stop : g->req_.stop) cut = std::min(cut, bytes.find(stop));
    if (cut != std::string::npos) {
      bytes.resize(cut);
      r.finish_reason = "stop";
    }
    // parallel_tool_calls false: the reply ends with its first call (SV15).
    const ToolSyntax syntax = tools_active(g->req_) ? lm_.encoder->tool_syntax() : ToolSyntax::kNone;
    if (syntax == ToolSyntax::kHermes && !g->req_.parallel_tool_calls && r.finish_reason.empty()) {
      const size_t open = bytes.find(chat::call_opener(syntax));
      const size_t close = open == std::string::npos ? open : bytes.find(chat::call_closer(syntax), open);
      if (close != std::string::npos) {
        bytes.resize(close + chat::call_closer(syntax).size());
        r.finish_reason = "stop";
      }
    }
    r.text = utf8_text(bytes);
    if (r.finish_reason.empty() && r.tokens.size() >= g->req_.max_tokens) r.finish_reason = "length";
    if (r.finish_reason.empty() && g->session_->session->size() + 1 > static_cast<size_t>(lm_.model->config.max_ctx))
      r.finish_reason = "length";
    // A stream emits only what no later token can change: not a tail that may still become a
    // stop string, nor an incomplete UTF-8 sequence (SV2: the chunks add up to the plain reply).
    // At the end of the reply all of the text is final (complete() sends what is left).
    // With tools, a stream also holds back a call (from its opener on: it is sent as a call when
    // the reply ends), a tail that may still become an opener, and trailing whitespace (a reply
    // that is only calls has null content).
    std::string now;
    if (r.finish_reason.empty()) {
      size_t keep = bytes.size() - stop_tail(bytes, g->req_.stop);
      if (syntax == ToolSyntax::kLlamaJson) keep = 0;  // the whole reply may be the call
      if (syntax == ToolSyntax::kHermes) {
        const std::string opener(chat::call_opener(syntax));
        keep = std::min({keep, bytes.find(opener), bytes.size() - stop_tail(bytes, {opener})});
        while (keep > 0 && std::isspace(static_cast<unsigned char>(bytes[keep - 1]))) --keep;
      }
      now = stable_prefix(utf8_text(bytes.substr(0, keep)));
    } else if (syntax == ToolSyntax::kNone) {
      now = r.text;  // the rest is sent now; with tools, complete() sends it once the reply is read
    }
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
  Reply& r = g->reply_;
  if (!err && g->logits_hash_) r.stats.logits_sha256 = g->logits_hash_->hex();
  if (!err && !r.cancelled) read_reply(g->req_, *lm_.encoder, r);
  const AuditSink a = err || r.cancelled || !g->session_ ? AuditSink() : audit_sink();
  if (a) {
    // Written before the reply is complete, in the order of the engine's events (SV9).
    try {
      AuditEvent ev{"chat", g->scope_, r.stats.session};
      ev.request = &g->req_;
      ev.reply = &r;
      a(ev);
    } catch (...) {
      err = std::current_exception();
    }
  }
  if (ServedSession* s = g->session_) {
    if (!err && !r.cancelled) {
      // The reply is complete (and logged): its request is the session's last, its guard's
      // verdicts the session's flags (SV3, SV9).
      s->flagged.insert(g->new_flags_.begin(), g->new_flags_.end());
      s->last = g->req_.conv;
      s->keys = g->keys_;
      s->tool_call_ids.clear();
      for (const Message& m : g->req_.conv.messages) s->tool_call_ids.push_back(m.role == "tool" ? m.tool_call_id : "");
    }
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
  // What the stream held back (a tail that could still have become a stop string, a partial
  // UTF-8 sequence, a tool call) is final now: the last event carries it (SV2, SV15).
  if (!err && !r.cancelled) {
    TokenEvent ev;
    const std::string& text = r.has_content ? r.content : g->emitted_;
    if (text.size() > g->emitted_.size() && text.compare(0, g->emitted_.size(), g->emitted_) == 0) {
      ev.delta = text.substr(g->emitted_.size());
      g->emitted_ = text;
    }
    ev.calls = r.calls;
    if (!ev.delta.empty() || !ev.calls.empty()) g->push(std::move(ev));
  }
  g->finish(err);
}

}  // namespace akv::serve
