#include "leakage/leakage.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <fmt/format.h>
#include <set>

#include "leakage/approx_evict.hpp"
#include "reference/error.hpp"
#include "reference/session.hpp"
#include "runtime/backends.hpp"
#include "verify/compare.hpp"
#include "runtime/digest.hpp"
#include "leakage/leak_strings.hpp"
#include "runtime/models.hpp"
#include "verify/witness.hpp"

namespace akv {

namespace {
// L10: the 1-based numbers of the secrets found (substring) in `text`, each occurrence then
// shown in `text` as "[secret N]".
std::vector<size_t> secrets_in(const std::vector<std::string>& secrets, std::string& text) {
  std::vector<size_t> out;
  for (size_t i = 0; i < secrets.size(); ++i) {
    if (text.find(secrets[i]) == std::string::npos) continue;
    out.push_back(i + 1);
    const std::string label = fmt::format("[secret {}]", i + 1);
    for (size_t at = 0; (at = text.find(secrets[i], at)) != std::string::npos; at += label.size()) text.replace(at, secrets[i].size(), label);
  }
  return out;
}
using Clock = std::chrono::steady_clock;
double ms_since(Clock::time_point t0) { return std::chrono::duration<double, std::milli>(Clock::now() - t0).count(); }

/// The span id of the generation prompt and the continuation.
constexpr SpanId kGenSpan = UINT64_MAX - 1;

// log-softmax of x in binary64 (L9): (x_i - max) - log(sum exp(x_j - max)), sums left to right.
std::vector<double> log_softmax(const std::vector<float>& x) {
  double mx = x[0];
  for (float v : x) mx = std::max(mx, static_cast<double>(v));
  double sum = 0;
  for (float v : x) sum += std::exp(static_cast<double>(v) - mx);
  const double ls = std::log(sum);
  std::vector<double> out(x.size());
  for (size_t i = 0; i < x.size(); ++i) out[i] = (static_cast<double>(x[i]) - mx) - ls;
  return out;
}

struct Run {
  std::vector<float> next;          // logits after the generation prompt
  std::vector<Token> continuation;  // greedy
};

// Appends the generation prompt, then decodes n tokens greedily (L9).
Run generate(Session& s, const std::vector<Token>& prompt, size_t n) {
  Run r;
  r.next = s.append(kGenSpan, prompt, LogitRows::kLast);
  std::vector<float> last = r.next;
  for (size_t i = 0; i < n; ++i) {
    const Token t = static_cast<Token>(argmax(last));
    r.continuation.push_back(t);
    if (i + 1 < n) last = s.append(kGenSpan, std::span<const Token>(&t, 1), LogitRows::kLast);
  }
  return r;
}

}  // namespace

size_t argmax(const std::vector<float>& x) {
  size_t best = 0;
  for (size_t i = 1; i < x.size(); ++i)
    if (x[i] > x[best]) best = i;
  return best;
}

LogitsCompare compare_next(const std::vector<float>& p, const std::vector<float>& q) {
  LogitsCompare c;
  // A5: a NaN or an Inf makes the comparison empty: not identical, max|delta| NaN.
  const Diff d = compare(p, q);
  c.identical = d.equal();
  c.non_finite = d.non_finite;
  c.max_abs = d.comparable() ? d.max_abs : NAN;
  const std::vector<double> lp = log_softmax(p), lq = log_softmax(q);
  for (size_t i = 0; i < p.size(); ++i) {
    const double P = std::exp(lp[i]);
    if (P > 0) c.kl += P * (lp[i] - lq[i]);
  }
  const size_t t = argmax(p);
  c.top1_agree = argmax(q) == t;
  for (size_t j = 0; j < q.size(); ++j)
    if (q[j] > q[t] || (q[j] == q[t] && j < t)) ++c.rank;
  return c;
}

bool LeakageReport::exact_ok() const {
  for (const PolicyResult& r : policies)
    if (r.policy == EvictPolicy::kExact)
      return r.logits_identical && r.non_finite == 0 && r.max_abs == 0 && r.kl == 0 && r.top1_agree && r.rank_of_never_top == 0 &&
             r.first_diff == -1 && r.prefix_untouched;
  return true;
}

LeakageReport run_leakage(const Conversation& conv, const std::string& file, const LeakageOptions& opt) {
  const std::vector<size_t> evicted = checked_evict_indexes(conv, opt.evict);
  for (size_t i = 0; i < opt.secrets.size(); ++i)
    if (opt.secrets[i].empty()) throw Error(ErrorCode::kBadInput, fmt::format("--secret {}: the string is empty", i + 1));
  if (opt.policies.empty()) throw Error(ErrorCode::kBadInput, "--policies: no policy");
  const LoadedModel lm = load_model(opt.model, opt.seed);
  const EncodedConversation enc = lm.encoder->encode(conv);
  check_never_shown_rendering(*lm.encoder, conv, enc, {evicted.begin(), evicted.end()});
  const std::vector<Token> prompt = lm.encoder->generation_prompt();
  const size_t need = enc.tokens() + prompt.size() + opt.continuation;
  if (need > static_cast<size_t>(lm.model->config.max_ctx))
    throw Error(ErrorCode::kContextOverflow,
                fmt::format("{}: {} tokens + {} prompt + {} continuation exceed model '{}' ({} tokens)", file, enc.tokens(),
                            prompt.size(), opt.continuation, lm.name, lm.model->config.max_ctx));
  auto backend = make_backend(opt.backend, lm.model, opt.backend_options);

  LeakageReport r;
  r.file = file;
  r.model = lm.name;
  r.model_source = lm.source;
  const BackendDescription desc = backend->describe();
  r.backend = desc.name;
  r.isa = describe_isa_threads(desc);
  r.evicted = evicted;
  r.messages = conv.messages.size();
  r.candidates = leak_candidates(conv, evicted);
  r.secrets = opt.secrets.size();
  const std::set<size_t> doomed(evicted.begin(), evicted.end());

  Session poisoned(*backend);
  auto t0 = Clock::now();
  build_session(poisoned, enc);
  r.ms_build_poisoned = ms_since(t0);
  r.tokens_poisoned = poisoned.size();
  r.span_start = SIZE_MAX;
  for (const SpanInfo& s : poisoned.spans())
    if (s.id != kPreambleSpan && doomed.count(s.id)) r.span_start = std::min(r.span_start, s.start);

  Session never(*backend);
  t0 = Clock::now();
  build_session(never, enc, doomed);
  r.ms_build_never = ms_since(t0);
  r.tokens_never = never.size();
  const Run nr = generate(never, prompt, opt.continuation);
  r.never_continuation.assign(nr.continuation.begin(), nr.continuation.end());
  r.never_continuation_text = lm.encoder->render(nr.continuation);
  r.never_found = found_in(r.candidates, r.never_continuation_text);
  r.never_secrets_found = secrets_in(opt.secrets, r.never_continuation_text);

  const std::vector<SpanId> ids(evicted.begin(), evicted.end());
  for (EvictPolicy pol : opt.policies) {
    Session s = poisoned;
    PolicyResult pr;
    pr.policy = pol;
    const std::string before = cache_prefix_sha256(s.cache(), r.span_start);
    t0 = Clock::now();
    const EvictStats st = evict_under(s, ids, pol);
    pr.ms_evict = ms_since(t0);
    pr.prefix_untouched = cache_prefix_sha256(s.cache(), r.span_start) == before;
    pr.truncated_at = st.truncated_at;
    pr.tokens_evicted = st.tokens_evicted;
    pr.tokens_recomputed = st.tokens_recomputed;
    const Run run = generate(s, prompt, opt.continuation);
    const LogitsCompare c = compare_next(nr.next, run.next);
    pr.max_abs = c.max_abs;
    pr.kl = c.kl;
    pr.top1_agree = c.top1_agree;
    pr.rank_of_never_top = c.rank;
    pr.logits_identical = c.identical;
    pr.non_finite = c.non_finite;
    pr.continuation.assign(run.continuation.begin(), run.continuation.end());
    pr.continuation_text = lm.encoder->render(run.continuation);
    for (size_t i = 0; i < run.continuation.size(); ++i)
      if (run.continuation[i] != nr.continuation[i]) {
        pr.first_diff = static_cast<int64_t>(i);
        break;
      }
    pr.found = found_in(r.candidates, pr.continuation_text);
    pr.secrets_found = secrets_in(opt.secrets, pr.continuation_text);
    r.policies.push_back(std::move(pr));
  }

  if (opt.positions) {  // the price of each policy, eviction at the start, middle and end (L9)
    const size_t n = conv.messages.size();
    const std::vector<std::pair<std::string, size_t>> where = {{"start", 0}, {"middle", n / 2}, {"end", n - 1}};
    for (const auto& [name, msg] : where) {
      Session rebuilt(*backend);
      t0 = Clock::now();
      build_session(rebuilt, enc, {msg});
      const double ms_rebuild = ms_since(t0);
      for (EvictPolicy pol : opt.policies) {
        Session s = poisoned;
        CostResult cr;
        cr.where = name;
        cr.message = msg;
        cr.policy = pol;
        cr.tokens_rebuild = rebuilt.size();
        cr.ms_rebuild = ms_rebuild;
        t0 = Clock::now();
        const SpanId id = msg;
        const EvictStats st = evict_under(s, std::span<const SpanId>(&id, 1), pol);
        cr.ms_evict = ms_since(t0);
        cr.tokens_evicted = enc.spans[msg].size();
        cr.tokens_recomputed = st.tokens_recomputed;
        r.costs.push_back(cr);
      }
    }
  }
  return r;
}

}  // namespace akv
