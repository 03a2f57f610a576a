#include "verify/witness.hpp"

#include <algorithm>
#include <chrono>
#include <fmt/format.h>
#include <set>

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
  return run_witness(conv, opt,
                     [&](std::shared_ptr<const Model> m) { return make_backend(opt.backend, std::move(m), opt.backend_options); });
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

void build_session(Session& s, const EncodedConversation& enc, const std::set<size_t>& skip, LogitRows rows) {
  if (!enc.preamble.empty()) s.append(kPreambleSpan, enc.preamble, rows);
  for (size_t i = 0; i < enc.spans.size(); ++i)
    if (!skip.count(i)) s.append(i, enc.spans[i], rows);
}

namespace {
// Where the doomed spans sit in the encoded conversation, counted from its spans, not from a
// session's span table: f (the first evicted entry), |S|, and the entries kshift moves (each
// doomed span, last first, moves the survivors after it: L4).
struct Cut {
  size_t first = 0, evicted = 0, shifted = 0;
};
Cut cut_of(const EncodedConversation& enc, const std::set<size_t>& doomed) {
  Cut c{enc.preamble.size(), 0};
  bool before = true;
  for (size_t i = 0; i < enc.spans.size(); ++i) {
    before = before && !doomed.count(i);
    if (before) c.first += enc.spans[i].size();
    if (doomed.count(i)) c.evicted += enc.spans[i].size();
  }
  size_t after = 0;  // survivors after span i
  for (size_t i = enc.spans.size(); i-- > 0;) {
    if (doomed.count(i)) c.shifted += after;
    else after += enc.spans[i].size();
  }
  return c;
}

// The write serials of entries [0, n).
std::vector<uint64_t> serials(const KVCache& c, size_t n) {
  return {c.write_serials().begin(), c.write_serials().begin() + static_cast<std::ptrdiff_t>(n)};
}
}  // namespace

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
  const BackendDescription desc = backend_p->describe();
  r.backend = desc.name;
  r.isa = describe_isa_threads(desc);
  r.seed = opt.seed;
  r.evicted = evicted;
  r.messages = conv.messages.size();
  r.ignored_fields = conv.ignored;

  // The poisoned session, message by message: span id = message index.
  Session poisoned(*backend_p);
  auto t0 = Clock::now();
  build_session(poisoned, enc, {}, opt.logit_rows);
  r.ms_build_poisoned = ms_since(t0);
  r.tokens_poisoned = poisoned.size();
  const std::vector<float> poison_logits(poisoned.logits().begin(), poisoned.logits().end());

  // E3/E4 measured on the cache itself: its bytes and write serials of [0, f) and its write
  // counter, read before and after the eviction. The session's statistics are only reported.
  const std::vector<SpanId> ids(r.evicted.begin(), r.evicted.end());
  const Cut cut = cut_of(enc, doomed);
  r.truncated_at = cut.first;
  r.tokens_evicted = cut.evicted;
  r.tokens_survivors = total - cut.first - cut.evicted;
  r.writes_expected = opt.policy == EvictPolicy::kExact ? r.tokens_survivors : opt.policy == EvictPolicy::kKShift ? cut.shifted : 0;
  const KVCache& cache = poisoned.cache();
  const std::string prefix_before = cache_prefix_sha256(cache, cut.first);
  const std::vector<uint64_t> serials_before = serials(cache, cut.first);
  const uint64_t written_before = cache.entries_written();
  t0 = Clock::now();
  const EvictStats st = poisoned.evict(ids, opt.policy);
  r.ms_evict = ms_since(t0);
  r.tokens_recomputed = static_cast<size_t>(cache.entries_written() - written_before);
  r.session_reported_recomputed = st.tokens_recomputed;
  const bool prefix_kept = cache.size() >= cut.first;
  const std::vector<uint64_t> serials_after = serials(cache, prefix_kept ? cut.first : cache.size());
  for (size_t p = 0; p < cut.first; ++p)
    r.prefix_entries_rewritten += p >= serials_after.size() || serials_after[p] != serials_before[p];
  r.prefix_untouched =
      prefix_kept && r.prefix_entries_rewritten == 0 && cache_prefix_sha256(cache, cut.first) == prefix_before;

  // The never-shown session.
  Session never(*backend_n);
  t0 = Clock::now();
  build_session(never, enc, doomed, opt.logit_rows);
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
      {"passed", r.passed()},
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
      {"tokens_survivors", r.tokens_survivors},
      {"tokens_recomputed", r.tokens_recomputed},
      {"writes_expected", r.writes_expected},
      {"writes_as_expected", r.writes_as_expected()},
      {"prefix_entries_rewritten", r.prefix_entries_rewritten},
      {"session_reported_recomputed", r.session_reported_recomputed},
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
  s += fmt::format("  prefix [0, {}) untouched: {}\n", r.truncated_at,
                   r.prefix_untouched ? "yes (bytes and write serials unchanged)"
                                      : fmt::format("NO ({} of its entries written again)", r.prefix_entries_rewritten));
  if (r.policy == "exact")
    s += fmt::format("  recomputed {} tokens (entries the cache wrote), a full rebuild takes {} ({:.1f}%)\n", r.tokens_recomputed,
                     r.tokens_never, r.tokens_never ? 100.0 * r.tokens_recomputed / r.tokens_never : 0.0);
  else
    s += fmt::format("  the eviction wrote {} entries (policy {} recomputes nothing)\n", r.tokens_recomputed, r.policy);
  if (!r.writes_as_expected())
    s += fmt::format("  expected {} written ({} survivors after the span, policy {}): NOT as claimed\n", r.writes_expected,
                     r.tokens_survivors, r.policy);
  if (r.policy == "exact" && r.session_reported_recomputed != r.tokens_recomputed)
    s += fmt::format("  the session reported {} recomputed; the cache counted {}\n", r.session_reported_recomputed,
                     r.tokens_recomputed);
  s += fmt::format("  time: build poisoned {:.1f} ms, evict {:.1f} ms, build never-shown {:.1f} ms\n", r.ms_build_poisoned,
                   r.ms_evict, r.ms_build_never);
  if (!r.ignored_fields.empty()) {
    std::string list;
    for (size_t i = 0; i < r.ignored_fields.size() && i < 8; ++i) list += (i ? ", " : "") + printable(r.ignored_fields[i], 60);
    if (r.ignored_fields.size() > 8) list += fmt::format(", ... ({} in all)", r.ignored_fields.size());
    s += "  ignored (never reach a model): " + list + "\n";
  }
  if (r.passed()) return s + "PASS: evict == never, bit for bit; prefix untouched; only the survivors recomputed\n";
  std::string why;
  if (!r.exact()) why += fmt::format("evict != never{}", r.policy == "exact" ? "" : " (policy " + r.policy + ")");
  if (!r.prefix_untouched) why += std::string(why.empty() ? "" : "; ") + "the prefix was written (E3)";
  if (!r.writes_as_expected())
    why += std::string(why.empty() ? "" : "; ") + fmt::format("{} entries written, not {} (E4)", r.tokens_recomputed, r.writes_expected);
  s += "FAIL: " + why + "\n";
  return s;
}

}  // namespace akv
