#include "verify/witness.hpp"

#include <algorithm>
#include <chrono>
#include <fmt/format.h>
#include <set>

#include "optimized/cpu/cpu_backend.hpp"
#include "reference/error.hpp"
#include "reference/strict.hpp"
#include "reference/session.hpp"
#include "verify/backends.hpp"
#include "verify/compare.hpp"
#include "verify/digest.hpp"
#include "verify/models.hpp"

namespace akv {

namespace {
using Clock = std::chrono::steady_clock;
double ms_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}
}  // namespace

WitnessReport run_witness(const Conversation& conv, const WitnessOptions& opt) {
  const BackendOptions bo{opt.isa, opt.threads};
  return run_witness(conv, opt, [&](std::shared_ptr<const Model> m) { return make_backend(opt.backend, std::move(m), bo); });
}

std::vector<size_t> checked_evict_indexes(const Conversation& conv, const std::vector<size_t>& requested) {
  if (conv.messages.empty()) throw Error(ErrorCode::kBadInput, "conversation: no messages");
  const std::vector<size_t>& evict = requested.empty() ? conv.poisoned : requested;
  if (evict.empty())
    throw Error(ErrorCode::kBadInput, "nothing to evict: the conversation's \"poisoned\" list is missing or empty; name messages with --evict");
  std::set<size_t> doomed;
  for (size_t i : evict) {
    if (i >= conv.messages.size())
      throw Error(ErrorCode::kBadInput, fmt::format("--evict: message index {} out of range ({} messages)", i, conv.messages.size()));
    if (!doomed.insert(i).second) throw Error(ErrorCode::kBadInput, fmt::format("--evict: message index {} repeated", i));
  }
  if (doomed.size() == conv.messages.size())
    throw Error(ErrorCode::kBadInput, "--evict: evicting every message leaves nothing to compare");
  return {doomed.begin(), doomed.end()};
}

void build_session(Session& s, const EncodedConversation& enc, const std::set<size_t>& skip) {
  if (!enc.preamble.empty()) s.append(kPreambleSpan, enc.preamble, LogitRows::kLast);
  for (size_t i = 0; i < enc.spans.size(); ++i)
    if (!skip.count(i)) s.append(i, enc.spans[i], LogitRows::kLast);
}

WitnessReport run_witness(const Conversation& conv, const WitnessOptions& opt, const BackendFactory& make) {
  const std::vector<size_t> evicted = checked_evict_indexes(conv, opt.evict);
  const std::set<size_t> doomed(evicted.begin(), evicted.end());

  const LoadedModel lm = load_model(opt.model, opt.seed);
  const auto& model = lm.model;
  const EncodedConversation enc = lm.encoder->encode(conv);
  const size_t total = enc.tokens();
  if (total > static_cast<size_t>(model->config.max_ctx))
    throw Error(ErrorCode::kContextOverflow, fmt::format("conversation is {} tokens, more than model '{}' holds ({})", total,
                                                         lm.name, model->config.max_ctx));
  auto backend_p = make(model);
  auto backend_n = make(model);

  WitnessReport r;
  r.model = lm.name;
  r.policy = policy_name(opt.policy);
  r.model_source = lm.source;
  r.encoder = lm.encoder->name();
  r.tokens_preamble = enc.preamble.size();
  r.backend = backend_p->name();
  if (const auto* cb = dynamic_cast<const cpu::CpuBackend*>(backend_p.get()))
    r.isa = fmt::format("{}, {} threads", cpu::isa_name(cb->isa()), cb->threads());
  r.seed = opt.seed;
  r.evicted = evicted;
  r.messages = conv.messages.size();
  r.ignored_fields = conv.ignored;

  // The poisoned session, message by message: span id = message index.
  Session poisoned(*backend_p);
  auto t0 = Clock::now();
  build_session(poisoned, enc);
  r.ms_build_poisoned = ms_since(t0);
  r.tokens_poisoned = poisoned.size();
  const std::vector<float> poison_logits(poisoned.logits().begin(), poisoned.logits().end());

  std::vector<SpanId> ids(r.evicted.begin(), r.evicted.end());
  const size_t first_start = std::min_element(poisoned.spans().begin(), poisoned.spans().end(),
                                              [&](const SpanInfo& a, const SpanInfo& b) {
                                                return (doomed.count(a.id) ? a.start : SIZE_MAX) <
                                                       (doomed.count(b.id) ? b.start : SIZE_MAX);
                                              })->start;
  const std::string prefix_before = cache_prefix_sha256(poisoned.cache(), first_start);
  t0 = Clock::now();
  const EvictStats st = poisoned.evict(ids, opt.policy);
  r.ms_evict = ms_since(t0);
  r.truncated_at = st.truncated_at;
  r.tokens_evicted = st.tokens_evicted;
  r.tokens_recomputed = st.tokens_recomputed;
  r.prefix_untouched = cache_prefix_sha256(poisoned.cache(), first_start) == prefix_before;

  // The never-shown session.
  Session never(*backend_n);
  t0 = Clock::now();
  build_session(never, enc, doomed);
  r.ms_build_never = ms_since(t0);
  r.tokens_never = never.size();
  const std::vector<float> never_last(never.logits().begin(), never.logits().end());
  if (opt.policy != EvictPolicy::kExact) {
    // An approximate policy recomputes nothing, so the session's last logits are stale: both
    // sessions read the reply prompt, and those logits are what the policy is judged on.
    const std::vector<Token> probe = lm.encoder->generation_prompt();
    poisoned.append(conv.messages.size(), probe, LogitRows::kLast);
    never.append(conv.messages.size(), probe, LogitRows::kLast);
    r.tokens_probe = probe.size();
  }

  const Diff e = compare(poisoned.logits(), never.logits());
  const Diff p = compare(poison_logits, never_last);
  r.logits_identical = e.bitwise_equal;
  r.evict_vs_never_max_abs = e.max_abs;
  r.poison_vs_never_max_abs = p.max_abs;
  r.cache_sha256_evicted = cache_sha256(poisoned.cache());
  r.cache_sha256_never = cache_sha256(never.cache());
  r.caches_identical = r.cache_sha256_evicted == r.cache_sha256_never && poisoned.size() == never.size();
  r.logits_sha256_evicted = sha256_floats(poisoned.logits());
  r.logits_sha256_never = sha256_floats(never.logits());
  r.logits_sha256_poisoned = sha256_floats(poison_logits);
  return r;
}

nlohmann::json to_json(const WitnessReport& r) {
  return {
      {"model", r.model},
      {"model_source", r.model_source},
      {"policy", r.policy},
      {"tokens_probe", r.tokens_probe},
      {"encoder", r.encoder},
      {"tokens_preamble", r.tokens_preamble},
      {"backend", r.backend},
      {"isa", r.isa},
      {"seed", r.seed},
      {"messages", r.messages},
      {"evicted", r.evicted},
      {"exact", r.exact()},
      {"evict_vs_never_max_abs", r.evict_vs_never_max_abs},
      {"poison_vs_never_max_abs", r.poison_vs_never_max_abs},
      {"logits_identical", r.logits_identical},
      {"caches_identical", r.caches_identical},
      {"prefix_untouched", r.prefix_untouched},
      {"cache_sha256_evicted", r.cache_sha256_evicted},
      {"cache_sha256_never", r.cache_sha256_never},
      {"logits_sha256_evicted", r.logits_sha256_evicted},
      {"logits_sha256_never", r.logits_sha256_never},
      {"logits_sha256_poisoned", r.logits_sha256_poisoned},
      {"tokens_poisoned", r.tokens_poisoned},
      {"tokens_never", r.tokens_never},
      {"truncated_at", r.truncated_at},
      {"tokens_evicted", r.tokens_evicted},
      {"tokens_recomputed", r.tokens_recomputed},
      {"tokens_full_rebuild", r.tokens_never},
      {"ms_build_poisoned", r.ms_build_poisoned},
      {"ms_evict", r.ms_evict},
      {"ms_build_never", r.ms_build_never},
      {"ignored_fields", r.ignored_fields},
  };
}

std::string to_text(const WitnessReport& r) {
  std::string ev;
  for (size_t i : r.evicted) ev += (ev.empty() ? "" : ",") + std::to_string(i);
  std::string s;
  const std::string src = r.model_source.rfind("synthetic", 0) == 0 ? fmt::format("seed {}", r.seed) : r.model_source;
  s += fmt::format("model {} ({}), backend {}{}: {} messages, {} tokens; evicting message(s) {} ({} tokens)\n", r.model, src,
                   r.backend, r.isa.empty() ? "" : " (" + r.isa + ")", r.messages, r.tokens_poisoned, ev, r.tokens_evicted);
  if (r.policy != "exact")
    s += fmt::format("  policy {} (spec/leakage.md): compared after both read the {}-token reply prompt\n", r.policy,
                     r.tokens_probe);
  if (r.tokens_preamble)
    s += fmt::format("  preamble: {} template tokens before message 0 (never evicted)\n", r.tokens_preamble);
  s += fmt::format("  evict-vs-never  max|delta| = {:g}   {}\n", r.evict_vs_never_max_abs,
                   r.exact() ? "(bitwise identical: caches and logits)" : "(NOT identical)");
  s += fmt::format("  poison-vs-never max|delta| = {:g}   {}\n", r.poison_vs_never_max_abs,
                   r.poison_vs_never_max_abs > 0 ? "(the span moved the logits)" : "(the span did not move the logits)");
  s += fmt::format("  cache  sha256  evicted {}\n                 never   {}\n", r.cache_sha256_evicted, r.cache_sha256_never);
  s += fmt::format("  logits sha256  evicted {}\n                 never   {}\n", r.logits_sha256_evicted, r.logits_sha256_never);
  s += fmt::format("  prefix [0, {}) untouched: {}\n", r.truncated_at, r.prefix_untouched ? "yes" : "NO");
  s += fmt::format("  recomputed {} tokens, a full rebuild takes {} ({:.1f}%)\n", r.tokens_recomputed, r.tokens_never,
                   r.tokens_never ? 100.0 * r.tokens_recomputed / r.tokens_never : 0.0);
  s += fmt::format("  time: build poisoned {:.1f} ms, evict {:.1f} ms, build never-shown {:.1f} ms\n", r.ms_build_poisoned,
                   r.ms_evict, r.ms_build_never);
  if (!r.ignored_fields.empty()) {
    std::string list;
    for (size_t i = 0; i < r.ignored_fields.size() && i < 8; ++i) list += (i ? ", " : "") + printable(r.ignored_fields[i], 60);
    if (r.ignored_fields.size() > 8) list += fmt::format(", ... ({} in all)", r.ignored_fields.size());
    s += "  ignored (never reach a model): " + list + "\n";
  }
  s += r.exact() ? "PASS: evict == never, bit for bit\n"
                 : fmt::format("FAIL: evict != never{}\n", r.policy == "exact" ? "" : " (policy " + r.policy + ")");
  return s;
}

}  // namespace akv
