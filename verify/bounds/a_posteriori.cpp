#include "verify/bounds/a_posteriori.hpp"

#include <mpfi.h>
#include <mpfr.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>

#include <fmt/format.h>

#include "reference/backend.hpp"
#include "reference/error.hpp"
#include "runtime/backends.hpp"
#include "verify/bounds/end_to_end.hpp"
#include "verify/json_number.hpp"
#include "verify/oracle/interval.hpp"

namespace akv::bounds {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

// An MPFR temporary of the intervals' precision plus room for one float's 24 bits.
class Mp {
 public:
  Mp() { mpfr_init2(v_, 400); }
  ~Mp() { mpfr_clear(v_); }
  Mp(const Mp&) = delete;
  Mp& operator=(const Mp&) = delete;
  mpfr_ptr get() { return v_; }

 private:
  mpfr_t v_;
};

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

bool PosterioriReport::sound() const {
  if (backends.empty() || logits.empty() || wide > 0) return false;
  for (const PosterioriBackend& b : backends)
    if (b.non_finite > 0) return false;
  return true;
}

std::string PosterioriReport::verdict() const {
  for (const PosterioriBackend& b : backends)
    if (b.non_finite > 0) return "VIOLATED";
  return sound() ? "SOUND" : "WIDE";
}

PosterioriReport run_a_posteriori(const std::shared_ptr<const Model>& model, std::span<const Token> tokens,
                                  const std::vector<std::string>& backends, const std::string& model_name,
                                  long bits, KvType kv) {
  check_tokens(model->config, tokens);
  PosterioriReport r;
  r.model = model_name;
  r.tokens = tokens.size();

  auto t0 = std::chrono::steady_clock::now();
  std::vector<std::vector<float>> outs;
  for (const std::string& n : backends) {
    const std::vector<KvType> runs = make_backend(n, model)->kv_types();
    if (std::find(runs.begin(), runs.end(), kv) == runs.end()) continue;
    outs.push_back(next_logits(n, model, tokens, kv));
    r.backends.push_back({n});
  }
  r.ms_backends = ms_since(t0);

  t0 = std::chrono::steady_clock::now();
  const std::vector<oracle::Interval> enc = oracle::interval_logits(*model, tokens, bits);
  r.ms_enclosure = ms_since(t0);
  r.bits = static_cast<long>(mpfi_get_prec(enc.front().backend().data()));

  Mp lo, hi, mid, f, a, b;
  std::vector<double> widths;
  std::vector<std::vector<double>> ratios(backends.size());
  r.logits.resize(enc.size());
  for (size_t i = 0; i < enc.size(); ++i) {
    EnclosedLogit& L = r.logits[i];
    mpfi_get_left(lo.get(), enc[i].backend().data());
    mpfi_get_right(hi.get(), enc[i].backend().data());
    const bool finite = mpfr_number_p(lo.get()) && mpfr_number_p(hi.get());
    mpfr_sub(a.get(), hi.get(), lo.get(), MPFR_RNDU);
    L.width = finite ? mpfr_get_d(a.get(), MPFR_RNDU) : kInf;
    mpfr_add(mid.get(), lo.get(), hi.get(), MPFR_RNDN);
    mpfr_div_2ui(mid.get(), mid.get(), 1, MPFR_RNDN);
    L.exact = mpfr_get_d(mid.get(), MPFR_RNDN);
    if (!(L.width <= kEnclosureWidthLimit)) ++r.wide;
    widths.push_back(L.width);
    r.max_width = std::max(r.max_width, L.width);
    for (size_t k = 0; k < outs.size(); ++k) {
      const float v = outs[k][i];
      PosterioriBackend& B = r.backends[k];
      L.values.push_back(v);
      if (!std::isfinite(v) || !finite) {
        if (!std::isfinite(v)) ++B.non_finite;
        L.certified.push_back(kInf);
        continue;
      }
      mpfr_set_flt(f.get(), v, MPFR_RNDN);  // exact
      mpfr_sub(a.get(), f.get(), lo.get(), MPFR_RNDU);
      mpfr_sub(b.get(), hi.get(), f.get(), MPFR_RNDU);
      mpfr_max(a.get(), a.get(), b.get(), MPFR_RNDU);
      const double cert = mpfr_get_d(a.get(), MPFR_RNDU);
      mpfr_sub(b.get(), f.get(), mid.get(), MPFR_RNDN);
      const double obs = std::fabs(mpfr_get_d(b.get(), MPFR_RNDN));
      L.certified.push_back(cert);
      B.max_certified = std::max(B.max_certified, cert);
      B.max_observed = std::max(B.max_observed, obs);
      if (obs > 0) ratios[k].push_back(cert / obs);
    }
  }
  r.median_width = median(widths);
  // Widths scale with 2^-bits while they are small: the bits that would bring the widest under
  // the limit, with 8 to spare; twice the bits when some width is not even finite.
  if (r.wide > 0)
    r.bits_needed = std::isfinite(r.max_width)
                        ? r.bits + static_cast<long>(std::ceil(std::log2(r.max_width / kEnclosureWidthLimit))) + 8
                        : 2 * r.bits;
  for (size_t k = 0; k < backends.size(); ++k) {
    r.backends[k].median_ratio = median(ratios[k]);
    r.backends[k].max_ratio = ratios[k].empty() ? 0 : *std::max_element(ratios[k].begin(), ratios[k].end());
  }
  return r;
}

nlohmann::json to_json(const PosterioriReport& r) {
  nlohmann::json j;
  j["kind"] = "a-posteriori";
  j["model"] = r.model;
  j["tokens"] = r.tokens;
  j["bits"] = r.bits;
  j["width_limit"] = kEnclosureWidthLimit;
  j["max_width"] = json_number(r.max_width);
  j["median_width"] = json_number(r.median_width);
  j["wide"] = r.wide;
  j["bits_needed"] = r.bits_needed;
  j["verdict"] = r.verdict();
  j["sound"] = r.sound();
  j["ms_backends"] = r.ms_backends;
  j["ms_enclosure"] = r.ms_enclosure;
  nlohmann::json bs = nlohmann::json::array();
  for (const PosterioriBackend& b : r.backends)
    bs.push_back({{"name", b.name},
                  {"max_certified", json_number(b.max_certified)},
                  {"max_observed", json_number(b.max_observed)},
                  {"median_ratio", json_number(b.median_ratio)},
                  {"max_ratio", json_number(b.max_ratio)},
                  {"non_finite", b.non_finite}});
  j["backends"] = std::move(bs);
  nlohmann::json ls = nlohmann::json::array();
  for (size_t i = 0; i < r.logits.size(); ++i) {
    const EnclosedLogit& L = r.logits[i];
    nlohmann::json cert = nlohmann::json::array(), vals = nlohmann::json::array();
    for (double c : L.certified) cert.push_back(json_number(c));
    for (float v : L.values) vals.push_back(json_number(v));
    ls.push_back({{"index", i}, {"exact", json_number(L.exact)}, {"width", json_number(L.width)}, {"values", vals},
                  {"certified", cert}});
  }
  j["logits"] = std::move(ls);
  return j;
}

std::string to_text(const PosterioriReport& r) {
  std::string o = fmt::format("a-posteriori enclosure (spec/bounds.md B17): {}, {} tokens, {}-bit intervals\n", r.model,
                              r.tokens, r.bits);
  std::vector<size_t> order(r.logits.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return r.logits[a].exact > r.logits[b].exact; });
  o += fmt::format("{:>7} {:>22} {:>10}", "logit", "exact (midpoint)", "width");
  for (const PosterioriBackend& b : r.backends) o += fmt::format(" {:>24}", b.name + " certified");
  o += "\n";
  for (size_t n = 0; n < std::min<size_t>(8, order.size()); ++n) {
    const EnclosedLogit& L = r.logits[order[n]];
    o += fmt::format("{:>7} {:>22.15g} {:>10.3g}", order[n], L.exact, L.width);
    for (double c : L.certified) o += fmt::format(" {:>24.3g}", c);
    o += "\n";
  }
  for (const PosterioriBackend& b : r.backends)
    o += fmt::format("  backend {:<10} max certified error {:.3g} (observed {:.3g}), certified / observed median {:.6g}, "
                     "max {:.6g}{}\n",
                     b.name, b.max_certified, b.max_observed, b.median_ratio, b.max_ratio,
                     b.non_finite ? fmt::format(", {} logits NaN or Inf", b.non_finite) : "");
  o += fmt::format("{}: {} logits enclosed, width max {:.3g} median {:.3g} (limit {:.0e}), {} too wide; {:.1f} s "
                   "backends, {:.1f} s enclosure\n",
                   r.verdict(), r.logits.size(), r.max_width, r.median_width, kEnclosureWidthLimit, r.wide,
                   r.ms_backends / 1000, r.ms_enclosure / 1000);
  if (r.wide > 0) o += fmt::format("  the enclosure is too wide at {} bits: rerun with --bits {}\n", r.bits, r.bits_needed);
  return o;
}

}  // namespace akv::bounds
