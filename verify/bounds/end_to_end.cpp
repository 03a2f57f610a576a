#include "verify/bounds/end_to_end.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstring>

#include "reference/backend.hpp"
#include "reference/error.hpp"
#include "verify/bounds/enclosure.hpp"
#include "verify/oracle/oracle_forward.hpp"

namespace akv::bounds {

namespace {
double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

void check_tokens(const Config& c, std::span<const Token> tokens) {
  if (tokens.empty()) throw Error(ErrorCode::kEmptyInput, "no tokens to run");
  if (tokens.size() > static_cast<size_t>(c.max_ctx))
    throw Error(ErrorCode::kContextOverflow, fmt::format("{} tokens exceed max_ctx {}", tokens.size(), c.max_ctx));
  for (Token t : tokens)
    if (t < 0 || t >= c.vocab) throw Error(ErrorCode::kInvalidToken, fmt::format("token {} outside [0, {})", t, c.vocab));
}
}  // namespace

BoundsReport run_bounds(const std::shared_ptr<const Model>& model, uint64_t seed, std::span<const Token> tokens) {
  const Config& c = model->config;
  check_tokens(c, tokens);
  BoundsReport r;
  r.model = c.name;
  r.seed = seed;
  r.tokens = tokens.size();
  r.oracle_bits = oracle::oracle_bits();
  const size_t vocab = static_cast<size_t>(c.vocab);

  // The float reference, through the product's own backend.
  auto t0 = std::chrono::steady_clock::now();
  auto backend = make_reference_backend(model);
  KVCache cache(c);
  std::vector<float> all(tokens.size() * vocab);
  backend->forward(cache, tokens, all);
  const std::span<const float> ref(all.data() + (tokens.size() - 1) * vocab, vocab);
  r.ms_float = ms_since(t0);

  t0 = std::chrono::steady_clock::now();
  const ModelT<Enc> em = convert_model<Enc>(*model);
  const std::vector<Enc> enc = oracle::last_logits(em, tokens);
  r.ms_enclosure = ms_since(t0);

  t0 = std::chrono::steady_clock::now();
  const std::vector<oracle::Real> exact = oracle::oracle_logits(*model, tokens);
  r.ms_oracle = ms_since(t0);

  std::vector<float> enc_values(vocab);
  std::vector<double> ratios;
  r.logits.resize(vocab);
  for (size_t i = 0; i < vocab; ++i) {
    LogitBound& l = r.logits[i];
    l.value = ref[i];
    l.exact = oracle::to_double(exact[i]);
    l.error = oracle::abs_err_up(ref[i], exact[i]);
    l.bound = enc[i].e;
    enc_values[i] = enc[i].v;
    if (l.error > l.bound * (1 + 0x1p-200)) ++r.violations;
    if (l.error == 0) ++r.exact_logits;
    else ratios.push_back(l.bound / l.error);
    r.max_error = std::max(r.max_error, l.error);
    r.max_bound = std::max(r.max_bound, l.bound);
  }
  r.enclosure_bitwise = std::memcmp(enc_values.data(), ref.data(), vocab * sizeof(float)) == 0;
  if (!ratios.empty()) {
    std::sort(ratios.begin(), ratios.end());
    r.min_ratio = ratios.front();
    r.median_ratio = ratios[ratios.size() / 2];
    r.max_ratio = ratios.back();
  }
  return r;
}

nlohmann::json to_json(const BoundsReport& r) {
  nlohmann::json j = {{"model", r.model}, {"seed", r.seed}, {"tokens", r.tokens}, {"oracle_bits", r.oracle_bits},
                      {"enclosure_bitwise", r.enclosure_bitwise}, {"violations", r.violations},
                      {"exact_logits", r.exact_logits}, {"max_error", r.max_error}, {"max_bound", r.max_bound},
                      {"min_ratio", r.min_ratio}, {"median_ratio", r.median_ratio}, {"max_ratio", r.max_ratio},
                      {"ms_float", r.ms_float}, {"ms_enclosure", r.ms_enclosure}, {"ms_oracle", r.ms_oracle},
                      {"sound", r.sound()}};
  nlohmann::json ls = nlohmann::json::array();
  for (size_t i = 0; i < r.logits.size(); ++i) {
    const LogitBound& l = r.logits[i];
    ls.push_back({{"index", i}, {"value", l.value}, {"exact", l.exact}, {"error", l.error}, {"bound", l.bound},
                  {"ratio", l.error > 0 ? nlohmann::json(l.bound / l.error) : nlohmann::json(nullptr)}});
  }
  j["logits"] = std::move(ls);
  return j;
}

std::string to_text(const BoundsReport& r) {
  std::string s = fmt::format("{:>5} {:>15} {:>24} {:>10} {:>10} {:>10}\n", "logit", "float", "exact", "error",
                              "bound", "ratio");
  for (size_t i = 0; i < r.logits.size(); ++i) {
    const LogitBound& l = r.logits[i];
    const std::string ratio = l.error > 0 ? fmt::format("{:.3g}", l.bound / l.error) : "exact";
    s += fmt::format("{:>5} {:>15.9g} {:>24.17g} {:>10.3g} {:>10.3g} {:>10}\n", i, l.value, l.exact, l.error, l.bound,
                     ratio);
  }
  s += fmt::format(
      "{}: model {} seed {}, {} tokens, {} logits: {} violations, enclosure bitwise {}, max error {:.3g}, "
      "max bound {:.3g}, ratio bound/error min {:.3g} median {:.3g} max {:.3g} ({} exact); oracle {} bits; "
      "float {:.0f} ms, enclosure {:.0f} ms, oracle {:.0f} ms\n",
      r.sound() ? "SOUND" : "VIOLATED", r.model, r.seed, r.tokens, r.logits.size(), r.violations,
      r.enclosure_bitwise ? "yes" : "NO", r.max_error, r.max_bound, r.min_ratio, r.median_ratio, r.max_ratio,
      r.exact_logits, r.oracle_bits, r.ms_float, r.ms_enclosure, r.ms_oracle);
  return s;
}

}  // namespace akv::bounds
