// The cache as a state machine (rc::state): commands Append, Decode, Evict, Logits and
// BadEvict on a Session; the model is the list of visible spans. After every command the
// session's state and logits are bitwise those of a fresh build of the visible spans (E1
// for any sequence of evictions and appends), and every eviction re-runs exactly |X| (E4).
#include <rapidcheck/state.h>

#include <algorithm>
#include <set>
#include <sstream>

#include "reference/error.hpp"
#include "runtime/digest.hpp"
#include "verify/gen/gen.hpp"
#include "verify/props/bits.hpp"
#include "verify/props/fixture.hpp"
#include "verify/props/registry.hpp"

namespace akv::prop {

namespace {

struct VisibleSpan {
  SpanId id = 0;
  std::vector<Token> tokens;
};

// The model: what the session should hold.
struct CacheModel {
  std::vector<VisibleSpan> visible;  // in cache order
  std::set<SpanId> evicted;
  SpanId next_id = 0;
  size_t size = 0;
  size_t budget = 0;
  uint64_t recomputed = 0;
};

// The system under test, plus the log that becomes the counterexample.
struct Sut {
  std::string backend;
  gen::ModelChoice choice;
  std::shared_ptr<const Model> model;
  std::unique_ptr<Backend> engine;
  std::unique_ptr<Session> session;
  gen::GenConversation all;  // every span ever appended, index = span id, decodes included
  std::ostringstream log;

  void note() {
    std::vector<size_t> ev(session->evicted().begin(), session->evicted().end());
    note_case({choice, all, ev, "stateful: " + log.str(), {}});
  }
};

using Cmd = rc::state::Command<CacheModel, Sut>;

// A fresh session holding the visible spans; returns the logits of its last append.
std::vector<float> fresh_build(const CacheModel& m, Sut& sut, Session& fresh) {
  std::vector<float> last;
  for (const VisibleSpan& v : m.visible) last = fresh.append(v.id, v.tokens);
  (void)sut;
  return last;
}

// After a command: the session equals a fresh build of `m`'s visible spans.
void check_against_fresh(const CacheModel& m, Sut& sut, const std::vector<float>* rows) {
  auto engine = backend_for(sut.backend, sut.model);
  Session fresh(*engine, sut.choice.kv);
  const std::vector<float> last = fresh_build(m, sut, fresh);
  RC_ASSERT(state_diff(*sut.session, fresh) == std::string());
  RC_ASSERT(sut.session->tokens_recomputed() == m.recomputed);
  if (rows) {
    // The rows an append returned are the fresh build's rows for the same tokens.
    RC_ASSERT(rows->size() <= last.size());
    RC_ASSERT(same_bits(*rows, std::vector<float>(last.end() - static_cast<std::ptrdiff_t>(rows->size()), last.end())));
  }
}

struct Append : Cmd {
  std::vector<Token> tokens;
  explicit Append(const CacheModel& m) {
    RC_PRE(m.size < m.budget);
    const size_t n = *rc::gen::inRange<size_t>(1, std::min<size_t>(48, m.budget - m.size) + 1);
    tokens = *rc::gen::container<std::vector<Token>>(n, gen::token());
  }
  // Checked again on every shrink: a shorter sequence must still fit the budget.
  void checkPreconditions(const CacheModel& m) const override { RC_PRE(m.size + tokens.size() <= m.budget); }
  void apply(CacheModel& m) const override {
    m.visible.push_back({m.next_id++, tokens});
    m.size += tokens.size();
  }
  void run(const CacheModel& m, Sut& sut) const override {
    sut.all.spans.push_back({gen::Role::kUser, tokens});
    sut.log << "append span " << m.next_id << " " << gen::quote_tokens(tokens) << "; ";
    sut.note();
    const std::vector<float> rows = sut.session->append(m.next_id, tokens);
    check_against_fresh(nextState(m), sut, &rows);
  }
  void show(std::ostream& os) const override { os << "Append(" << tokens.size() << " tokens " << gen::quote_tokens(tokens) << ")"; }
};

struct Decode : Cmd {
  Token token = 0;
  explicit Decode(const CacheModel& m) {
    RC_PRE(!m.visible.empty() && m.size < m.budget);
    token = *gen::token();
  }
  void checkPreconditions(const CacheModel& m) const override { RC_PRE(!m.visible.empty() && m.size < m.budget); }
  void apply(CacheModel& m) const override {
    m.visible.back().tokens.push_back(token);
    m.size += 1;
  }
  void run(const CacheModel& m, Sut& sut) const override {
    const SpanId id = m.visible.back().id;
    sut.all.spans[id].tokens.push_back(token);
    sut.log << "decode " << token << " into span " << id << "; ";
    sut.note();
    const std::vector<float> rows = sut.session->append(id, std::vector<Token>{token});
    check_against_fresh(nextState(m), sut, &rows);
  }
  void show(std::ostream& os) const override { os << "Decode(" << token << ")"; }
};

struct Evict : Cmd {
  std::vector<SpanId> ids;
  explicit Evict(const CacheModel& m) {
    RC_PRE(!m.visible.empty());
    gen::GenConversation shape;
    shape.spans.resize(m.visible.size());
    for (size_t i : (*gen::evict_request(shape)).spans) ids.push_back(m.visible[i].id);
  }
  void checkPreconditions(const CacheModel& m) const override {
    for (SpanId id : ids)
      RC_PRE(std::any_of(m.visible.begin(), m.visible.end(), [&](const VisibleSpan& v) { return v.id == id; }));
  }
  void apply(CacheModel& m) const override {
    std::vector<VisibleSpan> kept;
    bool cut = false;
    for (const VisibleSpan& v : m.visible) {
      if (std::find(ids.begin(), ids.end(), v.id) != ids.end()) {
        cut = true;
        m.size -= v.tokens.size();
        m.evicted.insert(v.id);
        continue;
      }
      if (cut) m.recomputed += v.tokens.size();
      kept.push_back(v);
    }
    m.visible = std::move(kept);
  }
  void run(const CacheModel& m, Sut& sut) const override {
    sut.log << "evict {";
    for (size_t i = 0; i < ids.size(); ++i) sut.log << (i ? ", " : "") << ids[i];
    sut.log << "}; ";
    const uint64_t before = sut.session->tokens_recomputed();
    sut.session->evict(ids);
    sut.note();
    const CacheModel next = nextState(m);
    RC_ASSERT(sut.session->tokens_recomputed() - before == next.recomputed - m.recomputed);  // E4
    check_against_fresh(next, sut, nullptr);
  }
  void show(std::ostream& os) const override {
    os << "Evict({";
    for (size_t i = 0; i < ids.size(); ++i) os << (i ? ", " : "") << ids[i];
    os << "})";
  }
};

struct Logits : Cmd {
  void run(const CacheModel& m, Sut& sut) const override {
    if (m.visible.empty()) {
      RC_ASSERT_THROWS_AS((void)sut.session->logits(), Error);
      return;
    }
    auto engine = backend_for(sut.backend, sut.model);
    Session fresh(*engine, sut.choice.kv);
    fresh_build(m, sut, fresh);
    const auto a = sut.session->logits(), b = fresh.logits();
    RC_ASSERT(same_bits(std::vector<float>(a.begin(), a.end()), std::vector<float>(b.begin(), b.end())));
  }
  void show(std::ostream& os) const override { os << "Logits"; }
};

// Evicting an evicted or never-seen span: an error, and nothing changes.
struct BadEvict : Cmd {
  SpanId id = 0;
  bool was_evicted = false;
  explicit BadEvict(const CacheModel& m) {
    was_evicted = !m.evicted.empty() && *rc::gen::arbitrary<bool>();
    id = was_evicted ? *rc::gen::elementOf(m.evicted) : m.next_id + *rc::gen::inRange<SpanId>(0, 1000);
  }
  void checkPreconditions(const CacheModel& m) const override {
    const bool ok = was_evicted ? m.evicted.count(id) != 0 : id >= m.next_id;
    RC_PRE(ok);
  }
  void run(const CacheModel& m, Sut& sut) const override {
    const std::string before = session_state_sha256(*sut.session);
    try {
      sut.session->evict(id);
      RC_FAIL("an invalid eviction was accepted");
    } catch (const Error& e) {
      RC_ASSERT(e.code() == (was_evicted ? ErrorCode::kSpanEvicted : ErrorCode::kUnknownSpan));
    }
    RC_ASSERT(session_state_sha256(*sut.session) == before);
    (void)m;
  }
  void show(std::ostream& os) const override { os << "BadEvict(" << id << (was_evicted ? ", evicted" : ", unknown") << ")"; }
};

void command_sequences(const Context& ctx) {
  Sut sut;
  sut.backend = ctx.backend;
  sut.choice = ctx.kv_types.empty() ? *gen::model_choice(ctx.profile) : *gen::model_choice_typed(ctx.profile, ctx.kv_types);
  sut.model = model_for(sut.choice);
  sut.engine = backend_for(ctx.backend, sut.model);
  sut.session = std::make_unique<Session>(*sut.engine, sut.choice.kv);
  CacheModel initial;
  initial.budget = gen::state_budget_for(ctx.profile, sut.choice);
  const int max_cmds = static_cast<int>(ctx.profile.max_commands);
  const auto cmds = *rc::gen::withSize([=](int size) {
    return rc::gen::resize(std::min(size, max_cmds),
                           rc::state::gen::commands(initial, rc::state::gen::execOneOfWithArgs<Append, Append, Decode, Evict, Logits, BadEvict>()));
  });
  sut.note();
  rc::state::runAll(cmds, initial, sut);
}

}  // namespace

void add_stateful_properties(std::vector<PropertyDef>& v) {
  v.push_back({"E1_PropStateMachine", "CommandSequences",
               "after every Append/Decode/Evict/Logits/BadEvict the session equals a fresh build of the visible spans",
               command_sequences});
}

}  // namespace akv::prop
