#include "verify/bounds/affine.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

#include "verify/bounds/rigorous.hpp"

namespace akv::bounds {

namespace {
constexpr double kInf = std::numeric_limits<double>::infinity();
thread_local AffineContext* g_current = nullptr;
}  // namespace

AffineContext::AffineContext(size_t max_terms) : max_terms_(std::max<size_t>(1, max_terms)) {}

uint32_t AffineContext::new_symbol(Sym kind) {
  if (kind_.size() >= std::numeric_limits<uint32_t>::max()) throw std::length_error("affine: too many symbols");
  kind_.push_back(static_cast<uint8_t>(kind));
  return static_cast<uint32_t>(kind_.size() - 1);
}

double AffineContext::distance_bound(const Aff& x) const {
  if (!(x.r < kInf)) return kInf;
  double b = 0;
  for (const Term& t : x.t) {
    const double a = std::fabs(t.a);
    b = add_up(b, kind(t.id) == Sym::kRounding ? a : mul_up(2.0, a));
  }
  return b;
}

AffineContext& AffineContext::current() {
  if (g_current == nullptr) throw std::logic_error("affine: no AffineScope is active on this thread");
  return *g_current;
}

AffineScope::AffineScope(AffineContext& ctx) : prev_(g_current) { g_current = &ctx; }
AffineScope::~AffineScope() { g_current = prev_; }

namespace {
// A fresh generation: stamps of earlier builders no longer count as touched.
void next_generation(uint32_t& gen, std::vector<uint32_t>& stamp) {
  if (++gen == 0) {  // wrapped: clear the stamps once every 2^32 forms
    std::fill(stamp.begin(), stamp.end(), 0u);
    gen = 1;
  }
}
}  // namespace

AffBuilder::AffBuilder(AffineContext& ctx) : ctx_(ctx) {
  if (ctx_.building_) throw std::logic_error("affine: one builder per context at a time");
  ctx_.building_ = true;
  next_generation(ctx_.generation_, ctx_.stamp_);
  ctx_.touched_.clear();
}

AffBuilder::~AffBuilder() {
  // Abandoned (an exception): leave the scratch clean for the next builder.
  for (uint32_t id : ctx_.touched_) ctx_.acc_[id] = 0;
  ctx_.touched_.clear();
  ctx_.building_ = false;
}

void AffBuilder::add_center(double value, double err) {
  if (!std::isfinite(value) || !(err < kInf)) vacuous_ = true;
  center_ += value;
  center_abs_ = add_up(center_abs_, std::fabs(value));
  rem_ = add_up(rem_, err);
  ++center_n_;
}

void AffBuilder::add_terms(const Aff& x, double w) {
  if (!(x.r < kInf) || !std::isfinite(w)) {
    vacuous_ = true;
    return;
  }
  if (w == 0 || x.t.empty()) return;
  if (ctx_.acc_.size() < ctx_.kind_.size()) {
    ctx_.acc_.resize(ctx_.kind_.size(), 0.0);
    ctx_.stamp_.resize(ctx_.kind_.size(), 0u);
  }
  const uint32_t gen = ctx_.generation_;
  for (const Term& t : x.t) {
    if (ctx_.stamp_[t.id] != gen) {
      ctx_.stamp_[t.id] = gen;
      ctx_.touched_.push_back(t.id);
    }
    ctx_.acc_[t.id] += w * t.a;
  }
  weighted_r_ = add_up(weighted_r_, mul_up(std::fabs(w), x.r));
  ++terms_n_;
}

void AffBuilder::add_product(const Aff& x, const Aff& y, double w) {
  add_center(w * x.c * y.c);
  add_terms(x, w * y.c);
  add_terms(y, w * x.c);
  add_rem(mul_up(std::fabs(w), mul_up(x.r, y.r)));
}

void AffBuilder::add_rem(double e) {
  if (!(e < kInf)) vacuous_ = true;
  else rem_ = add_up(rem_, e);
}

Aff AffBuilder::finish(float v, double rounding) {
  Aff y;
  y.v = v;
  y.c = center_;
  std::vector<Term>& out = y.t;
  out.reserve(ctx_.touched_.size() + 2);
  for (uint32_t id : ctx_.touched_) {
    const double a = ctx_.acc_[id];
    ctx_.acc_[id] = 0;
    if (a != 0) out.push_back({id, a});
  }
  ctx_.touched_.clear();
  next_generation(ctx_.generation_, ctx_.stamp_);
  const bool vacuous = vacuous_ || !std::isfinite(center_) || !(rounding < kInf);
  double rem = rem_;
  const double weighted_r = weighted_r_, center_abs = center_abs_;
  const int terms_n = terms_n_, center_n = center_n_;
  center_ = center_abs_ = rem_ = weighted_r_ = 0;
  center_n_ = terms_n_ = 0;
  vacuous_ = false;
  if (vacuous) {
    y.r = kInf;
    y.t.clear();
    return y;
  }
  // The double arithmetic's own error: each coefficient is a sum of at most terms_n_ products
  // w a (w itself with <= 2 roundings): gamma_{2n+4} sum |w| x.r over the inputs; the centre
  // a sum of center_n_ values of <= 2 roundings each: gamma_{n+3} sum |value|.
  rem = add_up(rem, mul_up(gamma53(2.0 * terms_n + 4), weighted_r));
  rem = add_up(rem, mul_up(gamma53(center_n + 3.0), center_abs));
  // Condense: keep the max_terms largest, fold the rest into one fresh symbol per kind.
  if (out.size() > ctx_.max_terms_) {
    auto by_mag = [](const Term& a, const Term& b) { return std::fabs(a.a) > std::fabs(b.a); };
    std::nth_element(out.begin(), out.begin() + static_cast<std::ptrdiff_t>(ctx_.max_terms_), out.end(), by_mag);
    double folded[2] = {0, 0};
    for (size_t i = ctx_.max_terms_; i < out.size(); ++i) {
      double& f = folded[static_cast<int>(ctx_.kind(out[i].id))];
      f = add_up(f, std::fabs(out[i].a));
    }
    out.resize(ctx_.max_terms_);
    // Dropped rounding terms vanish in the exact run, so their sum is a rounding symbol too.
    if (folded[0] > 0) out.push_back({ctx_.new_symbol(Sym::kRounding), folded[0]});
    if (folded[1] > 0) out.push_back({ctx_.new_symbol(Sym::kOther), folded[1]});
  }
  if (rem > 0) out.push_back({ctx_.new_symbol(Sym::kOther), rem});
  if (rounding > 0) out.push_back({ctx_.new_symbol(Sym::kRounding), rounding});
  // sum |a| in plain double, then widened: the computed sum of m >= 0 terms is >= (1 - gamma_m)
  // times the true one, and 1 / (1 - g) <= 1 + 2 g for g <= 1/2.
  double r = 0;
  for (const Term& t : out) r += std::fabs(t.a);
  y.r = mul_up(r, add_up(1.0, mul_up(2.0, gamma53(static_cast<double>(out.size())))));
  // The B-clauses assume the backend does not overflow: an op output whose box reaches 2^126
  // (or a sum of magnitudes that does, add_rem(+inf) by the caller) leaves nothing proven.
  if (!(add_up(std::fabs(y.c), y.r) < 0x1p126)) {
    y.r = kInf;
    y.t.clear();
  }
  return y;
}

Aff apply(AffBuilder& b, const Aff& x, const Linearised& f) {
  b.add_center(f.F, f.eF);
  b.add_terms(x, f.D);
  b.add_rem(mul_up(f.eD, x.r));
  b.add_rem(mul_up(0.5, mul_up(f.M2, mul_up(x.r, x.r))));
  return b.finish(0.0f, 0.0);
}

}  // namespace akv::bounds
