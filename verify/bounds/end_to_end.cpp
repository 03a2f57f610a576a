#include "verify/bounds/end_to_end.hpp"

#include <cmath>

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstring>

#include "reference/backend.hpp"
#include "reference/error.hpp"
#include "runtime/backends.hpp"
#include "verify/bounds/affine_ops.hpp"
#include "verify/json_number.hpp"
#include "verify/oracle/oracle_forward.hpp"

namespace akv::bounds {

namespace {
double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

void check_tokens(const Config& c, std::span<const Token> tokens) {
  if (tokens.empty()) throw Error(ErrorCode::kEmptyInput, "no tokens to run");
  if (tokens.size() > static_cast<size_t>(c.max_ctx))
    throw Error(ErrorCode::kContextOverflow, fmt::format("{} tokens exceed max_ctx {}", tokens.size(), c.max_ctx));
  for (Token t : tokens)
    if (t < 0 || t >= c.vocab) throw Error(ErrorCode::kInvalidToken, fmt::format("token {} outside [0, {})", t, c.vocab));
}


std::vector<float> next_logits(const std::string& name, const std::shared_ptr<const Model>& model,
                               std::span<const Token> tokens, KvType kv) {
  const size_t vocab = static_cast<size_t>(model->config.vocab);
  auto backend = make_backend(name, model);
  check_backend_kv_type(*backend, kv);
  KVCache cache(model->config, kv);
  std::vector<float> all(tokens.size() * vocab);
  backend->forward(cache, tokens, all);
  return std::vector<float>(all.end() - static_cast<std::ptrdiff_t>(vocab), all.end());
}

BoundsReport run_bounds(const std::shared_ptr<const Model>& model, uint64_t seed, std::span<const Token> tokens,
                        const BoundsOptions& opt) {
  const Config& c = model->config;
  check_tokens(c, tokens);
  BoundsReport r;
  r.model = c.name;
  r.seed = seed;
  r.tokens = tokens.size();
  r.kv_type = kv_type_name(opt.kv);
  r.oracle_bits = oracle::oracle_bits();
  r.max_terms = opt.max_terms;
  const size_t vocab = static_cast<size_t>(c.vocab);

  auto t0 = std::chrono::steady_clock::now();
  std::vector<std::string> names = {"reference"}, kept;
  if (opt.all_backends) names = backend_names();
  std::vector<std::vector<float>> outs;
  for (const std::string& n : names) {
    auto probe = make_backend(n, model);  // B18 covers the backends that run the type; the others are not conforming to it
    const std::vector<KvType> runs = probe->kv_types();
    if (n != "reference" && std::find(runs.begin(), runs.end(), opt.kv) == runs.end()) continue;
    kept.push_back(n);
    outs.push_back(next_logits(n, model, tokens, opt.kv));
  }
  names = kept;
  const std::vector<float>& ref = outs.front();
  r.ms_float = ms_since(t0);

  t0 = std::chrono::steady_clock::now();
  AffineContext ctx(opt.max_terms);
  std::vector<Aff> enc;
  {
    AffineScope scope(ctx);
    const ModelT<Aff> em = convert_model<Aff>(*model);
    enc = oracle::last_logits(em, tokens, opt.kv);
  }
  r.symbols = ctx.symbols();
  r.ms_enclosure = ms_since(t0);

  t0 = std::chrono::steady_clock::now();
  const std::vector<oracle::Real> exact = oracle::oracle_logits(*model, tokens);
  r.ms_oracle = ms_since(t0);

  std::vector<float> enc_values(vocab);
  std::vector<double> ratios;
  r.logits.resize(vocab);
  r.backends.resize(names.size());
  for (size_t b = 0; b < names.size(); ++b) r.backends[b].name = names[b];
  for (size_t i = 0; i < vocab; ++i) {
    LogitBound& l = r.logits[i];
    l.value = ref[i];
    l.exact = oracle::to_double(exact[i]);
    l.bound = ctx.distance_bound(enc[i]);
    enc_values[i] = enc[i].v;
    for (size_t b = 0; b < names.size(); ++b) {
      BackendBound& bb = r.backends[b];
      // A5: a non-finite output is a violation, never a pass (NaN > bound is false).
      const bool finite = std::isfinite(outs[b][i]);
      const double err = finite ? oracle::abs_err_up(outs[b][i], exact[i]) : INFINITY;
      if (b == 0) l.error = err;
      if (!finite) ++r.non_finite;
      if (!(err <= l.bound * (1 + 0x1p-200))) ++bb.violations;
      bb.max_error = std::max(bb.max_error, err);
      bb.max_fraction = std::max(bb.max_fraction, l.bound > 0 ? err / l.bound : (err > 0 ? 1e300 : 0.0));
    }
    if (!std::isfinite(l.bound)) ++r.vacuous;
    if (l.error == 0) ++r.exact_logits;
    else ratios.push_back(l.bound / l.error);
    r.max_error = std::max(r.max_error, l.error);
    r.max_bound = std::max(r.max_bound, l.bound);
  }
  for (const BackendBound& bb : r.backends) r.violations += bb.violations;
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
  nlohmann::json j = {{"model", r.model}, {"seed", r.seed}, {"tokens", r.tokens}, {"kv_type", r.kv_type}, {"oracle_bits", r.oracle_bits},
                      {"enclosure_bitwise", r.enclosure_bitwise}, {"violations", r.violations},
                      {"exact_logits", r.exact_logits}, {"max_error", json_number(r.max_error)}, {"max_bound", json_number(r.max_bound)},
                      {"non_finite", r.non_finite},
                      {"min_ratio", r.min_ratio}, {"median_ratio", r.median_ratio}, {"max_ratio", r.max_ratio},
                      {"ms_float", r.ms_float}, {"ms_enclosure", r.ms_enclosure}, {"ms_oracle", r.ms_oracle},
                      {"max_terms", r.max_terms}, {"symbols", r.symbols}, {"sound", r.sound()},
                      {"vacuous", r.vacuous}, {"verdict", r.verdict()}};
  nlohmann::json bs = nlohmann::json::array();
  for (const BackendBound& b : r.backends)
    bs.push_back({{"name", b.name}, {"max_error", json_number(b.max_error)}, {"max_fraction_of_bound", json_number(b.max_fraction)},
                  {"violations", b.violations}});
  j["backends"] = std::move(bs);
  nlohmann::json ls = nlohmann::json::array();
  for (size_t i = 0; i < r.logits.size(); ++i) {
    const LogitBound& l = r.logits[i];
    ls.push_back({{"index", i}, {"value", json_number(l.value)}, {"exact", json_number(l.exact)}, {"error", json_number(l.error)},
                  {"bound", json_number(l.bound)},
                  {"ratio", l.error > 0 ? json_number(l.bound / l.error) : nlohmann::json("exact")}});
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
      "{}: model {}{} seed {}, {} tokens, {} logits: {} violations, {} vacuous (+inf) bounds, enclosure bitwise {}, max error {:.3g}, "
      "max bound {:.3g}, ratio bound/error min {:.3g} median {:.3g} max {:.3g} ({} exact); oracle {} bits; "
      "float {:.0f} ms, enclosure {:.0f} ms, oracle {:.0f} ms\n",
      r.verdict(), r.model, r.kv_type == "f32" ? "" : " (cache " + r.kv_type + ", against the exact f32 model)", r.seed, r.tokens, r.logits.size(), r.violations, r.vacuous,
      r.enclosure_bitwise ? "yes" : "NO", r.max_error, r.max_bound, r.min_ratio, r.median_ratio, r.max_ratio,
      r.exact_logits, r.oracle_bits, r.ms_float, r.ms_enclosure, r.ms_oracle);
  for (const BackendBound& b : r.backends)
    s += fmt::format("  backend {:<10} max error {:.3g}, max error/bound {:.3g}, {} violations\n", b.name, b.max_error,
                     b.max_fraction, b.violations);
  s += fmt::format("  enclosure: {} symbols, at most {} terms per value\n", r.symbols, r.max_terms);
  if (r.vacuous > 0)
    s += fmt::format("  VACUOUS: {} of {} bounds are +inf, so they check nothing; more --terms or fewer --max-tokens "
                     "may give finite bounds\n",
                     r.vacuous, r.logits.size());
  return s;
}

}  // namespace akv::bounds
