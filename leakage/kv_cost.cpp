#include "leakage/kv_cost.hpp"

#include <fmt/format.h>

#include <cmath>

#include "leakage/leakage.hpp"
#include "reference/error.hpp"
#include "reference/session.hpp"
#include "runtime/models.hpp"
#include "verify/witness.hpp"

namespace akv {

namespace {
constexpr SpanId kGenSpan = UINT64_MAX - 1;  // the generation prompt and the continuation

struct Run {
  std::vector<float> next;
  std::vector<Token> continuation;
};

Run run_type(Backend& b, KvType t, const EncodedConversation& enc, const std::vector<Token>& prompt, size_t n) {
  Session s(b, t);
  build_session(s, enc);
  Run r;
  r.next = s.append(kGenSpan, prompt, LogitRows::kLast);
  std::vector<float> last = r.next;
  for (size_t i = 0; i < n; ++i) {
    const Token tok = static_cast<Token>(argmax(last));
    r.continuation.push_back(tok);
    if (i + 1 < n) last = s.append(kGenSpan, std::span<const Token>(&tok, 1), LogitRows::kLast);
  }
  return r;
}

std::string text_of(const ChatEncoder& enc, const std::vector<Token>& t) { return enc.render(t); }
}  // namespace

KvCostReport run_kv_cost(const Conversation& conv, const std::string& file, const KvCostOptions& opt) {
  const LoadedModel lm = load_model(opt.model, opt.seed);
  const Config& c = lm.model->config;
  auto backend = make_backend(opt.backend, lm.model, opt.backend_options);
  for (KvType t : opt.types) check_backend_kv_type(*backend, t);
  const EncodedConversation enc = lm.encoder->encode(conv);
  const std::vector<Token> prompt = lm.encoder->generation_prompt();
  const size_t need = enc.tokens() + prompt.size() + opt.continuation;
  if (need > static_cast<size_t>(c.max_ctx))
    throw Error(ErrorCode::kContextOverflow, fmt::format("{}: {} tokens + {} prompt + {} continuation exceed model '{}' ({} tokens)",
                                                         file, enc.tokens(), prompt.size(), opt.continuation, lm.name, c.max_ctx));
  KvCostReport r;
  r.file = file;
  r.model = lm.name;
  const BackendDescription d = backend->describe();
  r.backend = d.name;
  r.isa = describe_isa_threads(d);
  r.tokens = enc.tokens();
  r.f32_bytes_per_token = 2 * static_cast<size_t>(c.n_layers) * kv_row_bytes(KvType::kF32, c.kv_dim());
  const Run base = run_type(*backend, KvType::kF32, enc, prompt, opt.continuation);
  r.f32_continuation_text = text_of(*lm.encoder, base.continuation);
  for (KvType t : opt.types) {
    const Run run = run_type(*backend, t, enc, prompt, opt.continuation);
    const LogitsCompare cmp = compare_next(base.next, run.next);
    KvTypeCost k;
    k.type = t;
    k.max_abs = cmp.max_abs;
    k.non_finite = cmp.non_finite;
    k.kl = cmp.kl;
    k.top1_agree = cmp.top1_agree;
    k.rank_of_f32_top = cmp.rank;
    for (size_t i = 0; i < run.continuation.size() && k.first_diff < 0; ++i)
      if (run.continuation[i] != base.continuation[i]) k.first_diff = static_cast<int64_t>(i);
    k.bytes_per_token = 2 * static_cast<size_t>(c.n_layers) * kv_row_bytes(t, c.kv_dim());
    k.continuation_text = text_of(*lm.encoder, run.continuation);
    r.types.push_back(std::move(k));
  }
  return r;
}

nlohmann::json to_json(const KvCostReport& r) {
  nlohmann::json types = nlohmann::json::array();
  for (const KvTypeCost& k : r.types)
    types.push_back({{"kv_type", kv_type_name(k.type)},
                     {"max_abs", std::isnan(k.max_abs) ? nlohmann::json(nullptr) : nlohmann::json(k.max_abs)},
                     {"non_finite", k.non_finite},
                     {"kl", k.kl},
                     {"top1_agree", k.top1_agree},
                     {"rank_of_f32_top", k.rank_of_f32_top},
                     {"first_diff", k.first_diff},
                     {"bytes_per_token", k.bytes_per_token},
                     {"continuation_text", k.continuation_text}});
  return {{"file", r.file}, {"model", r.model}, {"backend", r.backend}, {"isa", r.isa}, {"tokens", r.tokens},
          {"f32_bytes_per_token", r.f32_bytes_per_token}, {"f32_continuation_text", r.f32_continuation_text}, {"types", types}};
}

std::string kv_cost_markdown(const std::vector<KvCostReport>& reports) {
  std::string s =
      "| conversation | tokens | type | bytes / token (f32's) | max\\|Δ\\| | KL(f32‖type) | top-1 | rank | first diff of 64 |\n"
      "|---|---|---|---|---|---|---|---|---|\n";
  for (const KvCostReport& r : reports) {
    std::string name = r.file.substr(r.file.find_last_of('/') + 1);
    if (name.size() > 5 && name.substr(name.size() - 5) == ".json") name.resize(name.size() - 5);
    for (const KvTypeCost& k : r.types)
      s += fmt::format("| {} | {} | {} | {} ({:.2f}x) | {:.4g} | {:.3g} | {} | {} | {} |\n", name, r.tokens, kv_type_name(k.type),
                       k.bytes_per_token, static_cast<double>(k.bytes_per_token) / static_cast<double>(r.f32_bytes_per_token),
                       k.max_abs, k.kl, k.top1_agree ? "same" : "**differs**", k.rank_of_f32_top,
                       k.first_diff < 0 ? std::string("none") : fmt::format("**{}**", k.first_diff));
  }
  return s;
}

}  // namespace akv
