#include "verify/witness.hpp"

#include <algorithm>
#include <chrono>
#include <fmt/format.h>
#include <limits>
#include <set>

#include "optimized/cpu/isa.hpp"
#include "optimized/cpu/kernels.hpp"
#include "optimized/cpu/localise.hpp"
#include "reference/error.hpp"
#include "reference/strict.hpp"
#include "reference/session.hpp"
#include "runtime/backends.hpp"
#include "verify/compare.hpp"
#include "runtime/digest.hpp"
#include "verify/json_number.hpp"
#include "runtime/models.hpp"

namespace akv {

namespace {
using Clock = std::chrono::steady_clock;
double ms_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}
}  // namespace

WitnessReport run_witness(const Conversation& conv, const WitnessOptions& opt) {
  const BackendFactory make = [&](std::shared_ptr<const Model> m) {
    return make_backend(opt.backend, std::move(m), opt.backend_options);
  };
  if (opt.same_config) return run_witness(conv, opt, make);
  return run_witness(conv, opt, make, [&](std::shared_ptr<const Model> m) {
    const BackendDescription first = make_backend(opt.backend, m, opt.backend_options)->describe();
    return make_backend(opt.backend, std::move(m),
                        cross_config_options(opt.backend, first, opt.backend_options, opt.cross_threads, opt.cross_isa));
  });
}

BackendOptions cross_config_options(const std::string& backend, const BackendDescription& first, const BackendOptions& options,
                                    int cross_threads, const std::string& cross_isa) {
  BackendOptions o = options;
  const int other_threads = cross_threads ? cross_threads : first.threads == 1 ? 2 : 1;
  // A kernel library is run at another thread count too (its set_threads; a library without
  // one ignores the count), so a thread-split reduction in it shows here, not only in the gate.
  if (backend == "kernels" || !options.kernels.empty()) {
    o.threads = other_threads;
    return o;
  }
  if (backend != "cpu") {
    if (cross_threads) o.threads = cross_threads;
    return o;
  }
  o.threads = other_threads;
  if (!cross_isa.empty()) {
    o.isa = cross_isa;
    return o;
  }
  // Another ISA of this CPU, the fastest first: native ones, then the AVX-512 source through
  // SIMDe, then portable (scalar, slow); the same ISA only when the CPU runs no other.
  std::vector<cpu::Isa> order = {cpu::Isa::kAvx512, cpu::Isa::kAvx2, cpu::Isa::kAvx512Simde, cpu::Isa::kPortable};
  for (cpu::Isa i : order)
    if (cpu::isa_supported(i) && first.isa != cpu::isa_name(i)) {
      o.isa = cpu::isa_name(i);
      return o;
    }
  o.isa = first.isa;
  return o;
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

namespace {
// The tokens of a session built by build_session(enc, skip), in cache order.
std::vector<Token> flat_tokens(const EncodedConversation& enc, const std::set<size_t>& skip) {
  std::vector<Token> t(enc.preamble.begin(), enc.preamble.end());
  for (size_t i = 0; i < enc.spans.size(); ++i)
    if (!skip.count(i)) t.insert(t.end(), enc.spans[i].begin(), enc.spans[i].end());
  return t;
}

}  // namespace

void check_never_shown_rendering(const ChatEncoder& encoder, const Conversation& conv, const EncodedConversation& enc,
                                 const std::set<size_t>& doomed) {
  Conversation without = conv;
  without.messages.clear();
  for (size_t i = 0; i < conv.messages.size(); ++i)
    if (!doomed.count(i)) without.messages.push_back(conv.messages[i]);
  const std::vector<Token> spans = flat_tokens(enc, doomed), real = flat_tokens(encoder.encode(without), {});
  if (real == spans) return;
  std::string ids;
  for (size_t i : doomed) ids += (ids.empty() ? "" : ",") + std::to_string(i);
  const bool system0 = doomed.count(0) && conv.messages[0].role == "system";
  throw Error(ErrorCode::kBadInput,
              fmt::format("--evict {}: without {} the chat template renders the rest as {} tokens{}, not as the {} tokens the "
                          "other spans hold, so no real run never showed {}; akv refuses an eviction it could only compare "
                          "with a rendering nobody runs (spec/operations.md O8)",
                          ids, doomed.size() > 1 ? "these messages" : "that message", real.size(),
                          system0 ? " (its default system prompt takes the system message's place)" : "", spans.size(),
                          doomed.size() > 1 ? "them" : "it"));
}

void build_session(Session& s, const EncodedConversation& enc, const std::set<size_t>& skip, LogitRows rows,
                   const WitnessProgress& progress, const std::string& phase) {
  const size_t total = flat_tokens(enc, skip).size();
  if (!enc.preamble.empty()) s.append(kPreambleSpan, enc.preamble, rows);
  for (size_t i = 0; i < enc.spans.size(); ++i) {
    if (skip.count(i)) continue;
    if (progress) progress(phase, s.size(), total);
    s.append(i, enc.spans[i], rows);
  }
  if (progress) progress(phase, total, total);
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

// "K of layer 2, entry 17, index 3: nan" for the first non-finite value of the cache, or "".
std::string cache_non_finite(const KVCache& c) {
  const size_t n = c.size() * static_cast<size_t>(c.kv_dim());
  std::vector<float> kb, vb;  // a typed cache's values as attention reads them (S8)
  for (int l = 0; l < c.n_layers(); ++l)
    for (const auto& [name, data] : {std::pair{"K", c.k_rows(l, 0, c.size(), kb)}, std::pair{"V", c.v_rows(l, 0, c.size(), vb)}})
      if (const size_t i = first_non_finite({data, n}); i < n)
        return fmt::format("{} of layer {}, entry {}, index {}: {}", name, l, i / c.kv_dim(), i % c.kv_dim(), data[i]);
  return {};
}

// Where a non-finite value of a run first appears: a replay of its tokens from position 0 on
// the cpu backend's fastest native table, op step by op step (localise.hpp).
std::string replay_non_finite(const std::shared_ptr<const Model>& m, const std::vector<Token>& tokens) {
  if (tokens.empty() || tokens.size() > static_cast<size_t>(m->config.max_ctx)) return "no replay (no tokens)";
  const cpu::Isa isa = cpu::resolve_isa("auto");
  const auto s = cpu::first_non_finite_step(m, tokens, cpu::kernels_for(isa));
  if (!s)
    return fmt::format("a replay of its {} tokens on the cpu backend ({}) is finite at every op step: the backend under test made it",
                       tokens.size(), cpu::isa_name(isa));
  return fmt::format("first at {} (a replay of its {} tokens on the cpu backend, {})", cpu::describe_non_finite(*s), tokens.size(),
                     cpu::isa_name(isa));
}

// The write serials of entries [0, n).
std::vector<uint64_t> serials(const KVCache& c, size_t n) {
  return {c.write_serials().begin(), c.write_serials().begin() + static_cast<std::ptrdiff_t>(n)};
}

// What the witness does to the poisoned session and what it compares it with: an eviction
// (O3: the doomed messages; never-shown = the other spans) or a redaction (O10: the edited
// messages re-encoded; never-shown = the edited conversation's rendering).
struct Plan {
  std::set<size_t> doomed;          // evicted message indexes (empty for a redaction)
  std::vector<SpanEdit> edits;      // O10's edited spans, ascending
  std::vector<RedactionCount> counts;
  EncodedConversation never;        // what the never-shown run appends, less `never_skip`
  std::set<size_t> never_skip;
};

Plan plan_redaction(const Conversation& conv, const WitnessOptions& opt, const ChatEncoder& encoder,
                    const EncodedConversation& enc) {
  if (!opt.evict.empty()) throw Error(ErrorCode::kBadInput, "--redact excludes --evict: one edit per witness");
  if (opt.policy != EvictPolicy::kExact)
    throw Error(ErrorCode::kBadInput, fmt::format("--redact: only the exact policy re-runs a message (not {})", policy_name(opt.policy)));
  Plan p;
  p.never = encoder.encode(redacted(conv, opt.redact, &p.counts));
  std::set<size_t> edited;
  for (const Redaction& r : opt.redact) edited.insert(r.message);
  bool same = p.never.preamble == enc.preamble && p.never.spans.size() == enc.spans.size();
  for (size_t i = 0; same && i < enc.spans.size(); ++i) same = edited.count(i) || p.never.spans[i] == enc.spans[i];
  if (!same)
    throw Error(ErrorCode::kBadInput, "--redact: without the string the chat template renders other messages differently too, "
                                      "so re-running the edited message is not the never-shown run (spec/operations.md O10)");
  for (size_t i : edited) {
    if (p.never.spans[i].empty())
      throw Error(ErrorCode::kBadInput, fmt::format("--redact {}: without the string message {} has no tokens; evict it instead", i, i));
    p.edits.push_back({i, p.never.spans[i]});
  }
  return p;
}

Plan plan_eviction(const Conversation& conv, const WitnessOptions& opt, const ChatEncoder& encoder, const EncodedConversation& enc) {
  const std::vector<size_t> evicted = checked_evict_indexes(conv, opt.evict);
  Plan p;
  p.doomed = {evicted.begin(), evicted.end()};
  check_never_shown_rendering(encoder, conv, enc, p.doomed);
  p.never = enc;
  p.never_skip = p.doomed;
  return p;
}
}  // namespace

WitnessReport run_witness(const Conversation& conv, const WitnessOptions& opt, const BackendFactory& make,
                          const BackendFactory& make_cross) {
  // The request's bad input is refused before the model loads; a policy without its eviction (a
  // library caller's mistake) after the plan, so that the request's own problem is named first.
  if (opt.redact.empty()) (void)checked_evict_indexes(conv, opt.evict);
  else if (opt.evict.empty() && opt.policy == EvictPolicy::kExact) (void)redacted(conv, opt.redact);
  const LoadedModel lm = load_model(opt.model, opt.seed);
  const auto& model = lm.model;
  const EncodedConversation enc = lm.encoder->encode(conv);
  const Plan plan = opt.redact.empty() ? plan_eviction(conv, opt, *lm.encoder, enc) : plan_redaction(conv, opt, *lm.encoder, enc);
  if (opt.policy != EvictPolicy::kExact && !opt.approximate)
    throw Error(ErrorCode::kBadInput, fmt::format("policy {}: no approximate eviction given (WitnessOptions::approximate)",
                                                  policy_name(opt.policy)));
  const std::set<size_t>& doomed = plan.doomed;
  const size_t total = enc.tokens();
  for (const size_t n : {total, plan.never.tokens()})
    if (n > static_cast<size_t>(model->config.max_ctx))
      throw Error(ErrorCode::kContextOverflow, fmt::format("conversation is {} tokens, more than model '{}' holds ({})", n,
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
  r.kv_type = kv_type_name(opt.kv_type);
  r.seed = opt.seed;
  r.evicted.assign(doomed.begin(), doomed.end());
  r.redacted = plan.counts;
  r.messages = conv.messages.size();
  r.ignored_fields = conv.ignored;
  r.ignored_fields.insert(r.ignored_fields.end(), enc.ignored.begin(), enc.ignored.end());  // the template's (CT6)

  // The poisoned session, message by message: span id = message index.
  Session poisoned(*backend_p, opt.kv_type);
  auto t0 = Clock::now();
  build_session(poisoned, enc, {}, opt.logit_rows, opt.progress, "poisoned run");
  r.ms_build_poisoned = ms_since(t0);
  r.tokens_poisoned = poisoned.size();
  const std::vector<float> poison_logits(poisoned.logits().begin(), poisoned.logits().end());

  // E3/E4 measured on the cache itself: its bytes and write serials of [0, f) and its write
  // counter, read before and after the eviction. The session's statistics are only reported.
  const std::vector<SpanId> ids(r.evicted.begin(), r.evicted.end());
  std::set<size_t> edited;
  for (const SpanEdit& e : plan.edits) edited.insert(e.id), r.tokens_inserted += e.tokens.size();
  const Cut cut = cut_of(enc, plan.edits.empty() ? doomed : edited);
  r.truncated_at = cut.first;
  r.tokens_evicted = cut.evicted;
  r.tokens_survivors = total - cut.first - cut.evicted;
  // What the operation may write: O3 the survivors, O10 the edited spans' new tokens and the
  // survivors, L4 the entries each shift moves, L2/L3 nothing.
  r.writes_expected = opt.policy == EvictPolicy::kExact ? r.tokens_survivors + r.tokens_inserted
                      : opt.policy == EvictPolicy::kKShift ? cut.shifted
                                                          : 0;
  const KVCache& cache = poisoned.cache();
  const std::string prefix_before = cache_prefix_sha256(cache, cut.first);
  const std::vector<uint64_t> serials_before = serials(cache, cut.first);
  const uint64_t written_before = cache.entries_written();
  t0 = Clock::now();
  if (opt.progress) opt.progress("eviction", 0, r.writes_expected);
  const EvictStats st = !plan.edits.empty()                  ? poisoned.replace(plan.edits)
                        : opt.policy == EvictPolicy::kExact ? poisoned.evict(ids)
                                                            : opt.approximate(poisoned, ids, opt.policy);
  if (opt.progress) opt.progress("eviction", r.writes_expected, r.writes_expected);
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
  Session never(*backend_n, opt.kv_type);
  t0 = Clock::now();
  build_session(never, plan.never, plan.never_skip, opt.logit_rows, opt.progress, "never-shown run");
  r.ms_build_never = ms_since(t0);
  r.tokens_never = never.size();
  const std::vector<float> never_last(never.logits().begin(), never.logits().end());
  const std::string never_cache_sha = cache_sha256(never.cache());  // before any probe (non-exact policies)
  const size_t never_size = never.size();
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
  r.logits_identical = e.equal();
  r.evict_vs_never_max_abs = e.comparable() ? e.max_abs : NAN;
  r.poison_vs_never_max_abs = p.comparable() ? p.max_abs : NAN;
  r.control_moved = p.comparable() && p.max_abs > 0;
  r.cache_sha256_evicted = cache_sha256(poisoned.cache());
  r.cache_sha256_never = cache_sha256(never.cache());
  r.caches_identical = r.cache_sha256_evicted == r.cache_sha256_never && poisoned.size() == never.size();

  // A5: a NaN or an Inf anywhere makes the comparison empty; say where it first appears.
  const std::vector<Token> all = flat_tokens(enc, {}), kept = flat_tokens(plan.never, plan.never_skip);
  const struct {
    const char* run;
    std::span<const float> logits;
    const KVCache& cache;
    const std::vector<Token>& tokens;
  } runs[] = {{"the poisoned run", poison_logits, poisoned.cache(), all},
              {"the never-shown run", never.logits(), never.cache(), kept},
              {"the evicted run", poisoned.logits(), poisoned.cache(), kept}};
  for (const auto& run : runs) {
    const size_t i = first_non_finite(run.logits);
    std::string where;
    if (i < run.logits.size())
      where = fmt::format("{}'s logits hold {} at vocab index {} of {}", run.run, run.logits[i],
                          i % static_cast<size_t>(model->config.vocab), run.logits.size());
    else if (std::string c = cache_non_finite(run.cache); !c.empty())
      where = fmt::format("{}'s cache holds {}", run.run, c);
    if (where.empty()) continue;
    r.non_finite = where + "; " + replay_non_finite(model, run.tokens);
    r.caches_identical = false;
    r.logits_identical = false;
    break;
  }
  // O5's second configuration: the never-shown run again, under other threads and ISA with
  // scratch poisoned, must give the same bits (I1, K0): invariance is part of the certificate.
  r.same_config = !make_cross;
  if (make_cross) {
    auto backend_c = make_cross(model);
    backend_c->set_scratch_poison(std::numeric_limits<float>::quiet_NaN());
    const BackendDescription dc = backend_c->describe();
    r.cross_config = describe_isa_threads(dc) + ", scratch NaN";
    Session cross(*backend_c, opt.kv_type);
    t0 = Clock::now();
    build_session(cross, plan.never, plan.never_skip, opt.logit_rows, opt.progress, "never-shown run again");
    r.ms_build_cross = ms_since(t0);
    const Diff d = compare(never_last, cross.logits());
    const bool caches = cache_sha256(cross.cache()) == never_cache_sha && cross.size() == never_size;
    r.cross_config_identical = d.equal() && caches;
    if (!caches) r.cross_config_diff = "the caches differ";
    else if (!d.equal())
      r.cross_config_diff = d.comparable() ? fmt::format("the logits differ (max|delta| {:g})", d.max_abs)
                                           : std::string("the logits hold a NaN or an Inf");
  }
  r.logits_sha256_evicted = sha256_floats(poisoned.logits());
  r.logits_sha256_never = sha256_floats(never.logits());
  r.logits_sha256_poisoned = sha256_floats(poison_logits);
  return r;
}

namespace {
nlohmann::json redaction_json(const std::vector<RedactionCount>& counts) {
  nlohmann::json a = nlohmann::json::array();
  for (const RedactionCount& c : counts) a.push_back({{"message", c.message}, {"bytes", c.bytes}, {"occurrences", c.occurrences}});
  return a;
}

// The report's first line's edit: "evicting message(s) 3,5 (40 tokens)" or the redactions,
// which never show the string.
std::string edit_line(const WitnessReport& r) {
  if (r.redacted.empty()) {
    std::string ev;
    for (size_t i : r.evicted) ev += (ev.empty() ? "" : ",") + std::to_string(i);
    return fmt::format("evicting message(s) {} ({} tokens)", ev, r.tokens_evicted);
  }
  std::string what;
  for (const RedactionCount& c : r.redacted)
    what += fmt::format("{}message {}: {} bytes x {}", what.empty() ? "" : "; ", c.message, c.bytes, c.occurrences);
  return fmt::format("redacting {} string(s), not shown ({}); the edited message(s) go from {} to {} tokens", r.redacted.size(),
                     what, r.tokens_evicted, r.tokens_inserted);
}
}  // namespace

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
      {"kv_type", r.kv_type},
      {"seed", r.seed},
      {"messages", r.messages},
      {"evicted", r.evicted},
      {"redacted", redaction_json(r.redacted)},
      {"tokens_inserted", r.tokens_inserted},
      {"exact", r.exact()},
      {"passed", r.passed()},
      {"evict_vs_never_max_abs", json_number(r.evict_vs_never_max_abs)},
      {"poison_vs_never_max_abs", json_number(r.poison_vs_never_max_abs)},
      {"control_moved", r.control_moved},
      {"non_finite", r.non_finite.empty() ? nlohmann::json(nullptr) : nlohmann::json(r.non_finite)},
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
      {"same_config", r.same_config},
      {"cross_config", r.same_config ? nlohmann::json(nullptr) : nlohmann::json(r.cross_config)},
      {"cross_config_identical", r.cross_config_identical},
      {"ms_build_cross", r.ms_build_cross},
  };
}

std::string to_text(const WitnessReport& r) {
  std::string s;
  const std::string src = r.model_source.rfind("synthetic", 0) == 0 ? fmt::format("seed {}", r.seed) : r.model_source;
  s += fmt::format("model {} ({}), backend {}{}{}: {} messages, {} tokens; {}\n", r.model, src, r.backend,
                   r.isa.empty() ? "" : " (" + r.isa + ")", r.kv_type == "f32" ? "" : ", cache " + r.kv_type, r.messages,
                   r.tokens_poisoned, edit_line(r));
  if (r.policy != "exact")
    s += fmt::format("  policy {} (spec/leakage.md): compared after both read the {}-token reply prompt\n", r.policy,
                     r.tokens_probe);
  if (r.tokens_preamble)
    s += fmt::format("  preamble: {} template tokens before message 0 (never evicted)\n", r.tokens_preamble);
  s += fmt::format("  evict-vs-never  max|delta| = {:g}   {}\n", r.evict_vs_never_max_abs,
                   r.exact() ? "(bitwise identical: caches and logits)" : "(NOT identical)");
  s += fmt::format("  poison-vs-never max|delta| = {:g}   {}\n", r.poison_vs_never_max_abs,
                   r.control_moved ? "(the span moved the logits)"
                   : std::isnan(r.poison_vs_never_max_abs) ? "(NOT comparable: a non-finite value)"
                                                          : "(the span did not move the logits: the check proves nothing)");
  if (!r.non_finite.empty()) s += "  non-finite: " + r.non_finite + "\n";
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
  if (r.same_config)
    s += "  one configuration only (--same-config): invariance across threads and ISAs is not part of this certificate\n";
  else
    s += fmt::format("  never-shown again under {}: {}\n", r.cross_config,
                     r.cross_config_identical ? "bitwise identical (invariance across configurations, I1)"
                                              : "NOT identical: " + r.cross_config_diff);
  s += fmt::format("  time: build poisoned {:.1f} ms, evict {:.1f} ms, build never-shown {:.1f} ms{}\n", r.ms_build_poisoned,
                   r.ms_evict, r.ms_build_never,
                   r.same_config ? std::string() : fmt::format(", again {:.1f} ms", r.ms_build_cross));
  if (!r.ignored_fields.empty()) {
    std::string list;
    for (size_t i = 0; i < r.ignored_fields.size() && i < 8; ++i) list += (i ? ", " : "") + printable(r.ignored_fields[i], 60);
    if (r.ignored_fields.size() > 8) list += fmt::format(", ... ({} in all)", r.ignored_fields.size());
    s += "  ignored (never reach a model): " + list + "\n";
  }
  if (r.passed())
    return s + fmt::format("PASS{}: {} == never, bit for bit{}; prefix untouched; only {} recomputed\n",
                           r.same_config ? " (one configuration)" : "", r.redacted.empty() ? "evict" : "redact",
                           r.same_config ? "" : ", under two configurations",
                           r.redacted.empty() ? "the survivors" : "the edited message(s) and the survivors");
  std::string why;
  if (!r.non_finite.empty()) why += "a NaN or an Inf reached the comparison, which then compares nothing (A5)";
  else if (!r.exact())
    why += fmt::format("{} != never{}", r.redacted.empty() ? "evict" : "redact", r.policy == "exact" ? "" : " (policy " + r.policy + ")");
  if (r.non_finite.empty() && !r.control_moved)
    why += std::string(why.empty() ? "" : "; ") + "the control did not move: the evicted span(s) left the logits as they were, so "
                                                 "evict == never proves nothing about them (E2)";
  if (!r.same_config && !r.cross_config_identical && r.non_finite.empty())
    why += std::string(why.empty() ? "" : "; ") + "the never-shown run differs under " + r.cross_config + " (I1)";
  if (!r.prefix_untouched) why += std::string(why.empty() ? "" : "; ") + "the prefix was written (E3)";
  if (!r.writes_as_expected())
    why += std::string(why.empty() ? "" : "; ") + fmt::format("{} entries written, not {} (E4)", r.tokens_recomputed, r.writes_expected);
  s += "FAIL: " + why + "\n";
  return s;
}

}  // namespace akv
