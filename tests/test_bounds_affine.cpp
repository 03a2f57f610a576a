// spec/bounds.md B11: the affine enclosure's op rules against the MPFR oracle, and end to end
// on the tiny model: every backend's logits lie within the bound of the exact (MPFR) logits.
//
// A rule is sound when, for every value of the input symbols, the exact op and every conforming
// float evaluation of it at the inputs' values lie in the output form for some value of the
// symbols the op created. The checks draw the input symbols' values, make the inputs' values
// floats (each input has a private symbol that absorbs the rounding to float), and test that
// |value - (c + sum_old a e)| <= sum_new |a|, all in MPFR.
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <sys/wait.h>
#include <vector>

#include "bounds_support.hpp"
#include "reference/ops.hpp"
#include "support.hpp"
#include "verify/bounds/affine_ops.hpp"
#include "verify/bounds/end_to_end.hpp"
#include "verify/bounds/rigorous.hpp"
#include "verify/oracle/real.hpp"

using namespace akv;
using namespace akv::bounds;
using akv::oracle::Real;

namespace {

Real draw_unit() { return Real(*rc::gen::inRange(-1000, 1001)) / 1000; }  // in [-1, 1]

// The symbols of one check and a value for each.
struct Harness {
  AffineContext ctx{size_t{1} << 20};
  AffineScope scope{ctx};
  std::vector<Real> eps;          // by symbol id
  std::vector<uint32_t> shared;   // symbols inputs draw from

  explicit Harness(int n_shared) {
    for (int i = 0; i < n_shared; ++i) shared.push_back(symbol(*rc::gen::arbitrary<bool>() ? Sym::kRounding : Sym::kOther, draw_unit()));
  }
  uint32_t symbol(Sym kind, const Real& value) {
    const uint32_t id = ctx.new_symbol(kind);
    eps.resize(id + 1);
    eps[id] = value;
    return id;
  }

  // An input near `centre` with terms of total size ~`radius` on shared symbols, whose value at
  // eps is a float (the private symbol's value is solved for).
  Aff input(double centre, double radius) {
    std::vector<Term> terms;
    const int m = shared.empty() ? 0 : *rc::gen::inRange(0, 4);
    for (int i = 0; i < m; ++i) {
      const uint32_t id = shared[*rc::gen::inRange<size_t>(0, shared.size())];
      bool dup = false;
      for (const Term& t : terms) dup = dup || t.id == id;
      if (!dup) terms.push_back({id, radius * static_cast<double>(draw_unit()) / 2});
    }
    return input_terms(centre, radius, std::move(terms));
  }

  // An input with the given terms on shared symbols, made a float by a private symbol.
  Aff input_terms(double centre, double radius, std::vector<Term> terms) {
    Aff x;
    x.c = centre;
    x.t = std::move(terms);
    // Private symbol: coefficient >= 2 ulp of the value, so the float rounding moves it <= 1/2.
    double mag = std::fabs(centre) + 2 * radius + 1e-30;
    for (const Term& t : x.t) mag += std::fabs(t.a);
    const double priv = std::max({radius / 4, std::ldexp(1.0, std::ilogb(mag) - 21), 0x1p-147});
    const Real e0 = draw_unit() / 2;
    const uint32_t id = symbol(Sym::kRounding, e0);
    x.t.push_back({id, priv});
    const Real value = eval(x, ctx.symbols());
    x.v = static_cast<float>(oracle::to_double(value));
    eps[id] = e0 + (Real(x.v) - value) / Real(priv);
    double r = 0;
    for (const Term& t : x.t) r = add_up(r, std::fabs(t.a));
    x.r = r;
    RC_ASSERT(abs(eps[id]) <= 1);
    return x;
  }

  // c + sum over symbols older than `first_new` of a e.
  Real eval(const Aff& y, size_t first_new) const {
    Real s = y.c;
    for (const Term& t : y.t)
      if (t.id < first_new) s += Real(t.a) * eps[t.id];
    return s;
  }
  // A rule's outputs y against the float reference's op (ref, its bits) and the exact op:
  // y's float values are ref's bits, and y contains both the exact and the float result.
  void check(const std::vector<Aff>& y, const std::vector<float>& ref, const std::vector<Real>& exact,
             size_t first_new) const {
    for (size_t i = 0; i < y.size(); ++i) {
      RC_ASSERT(std::memcmp(&y[i].v, &ref[i], sizeof(float)) == 0);
      RC_ASSERT(contains(y[i], exact[i], first_new));
      RC_ASSERT(contains(y[i], Real(ref[i]), first_new));
    }
  }

  // The output contains `value` for some value of the symbols made since `first_new`.
  bool contains(const Aff& y, const Real& value, size_t first_new) const {
    if (!(y.r < std::numeric_limits<double>::infinity())) return true;  // vacuous: contains all
    double free = 0;
    for (const Term& t : y.t)
      if (t.id >= first_new) free = add_up(free, std::fabs(t.a));
    return abs(value - eval(y, first_new)) <= Real(free) * (1 + Real(0x1p-200));
  }
};

double gen_centre(int lo_exp, int hi_exp) {
  return std::ldexp(static_cast<double>(draw_unit()), *rc::gen::inRange(lo_exp, hi_exp + 1));
}
// Radius relative to the magnitude: 2^-22 (one float rounding's scale) up to 2^-5 (where the
// nonlinear remainders matter).
double gen_radius(double centre) { return std::fabs(centre) * std::ldexp(1.0, *rc::gen::inRange(-22, -4)) + 1e-12; }

// n centres of an input family (bounds_support.hpp): plain, cancellation (pairs c, -c(1 + 1e-6 t)),
// large dynamic range (2^+-40), near underflow (2^-80..2^-60: products of two are subnormal).
std::vector<double> gen_centres(test::Family f, int n) {
  const std::vector<float> v = test::gen_values(f, n);
  return std::vector<double>(v.begin(), v.end());
}

std::vector<float> floats(const std::vector<Aff>& v) {
  std::vector<float> f(v.size());
  for (size_t i = 0; i < v.size(); ++i) f[i] = v[i].v;
  return f;
}

}  // namespace

RC_GTEST_PROP(B11_AffineRules, MatmulIsSound, ()) {
  Harness h(*rc::gen::inRange(0, 6));
  const test::Family f = *test::gen_family();
  const int n = *rc::gen::inRange(1, 65), d = *rc::gen::inRange(1, 5);
  std::vector<Aff> x(n), W(static_cast<size_t>(n) * d), out(d);
  const std::vector<double> xc = gen_centres(f, n);
  for (int j = 0; j < n; ++j) x[j] = h.input(xc[j], gen_radius(xc[j]));
  // Weights of the same family for the near-underflow case (subnormal products), else O(1).
  std::vector<float> wf = test::gen_values(f == test::Family::kTiny ? f : test::Family::kPlain, n * d);
  for (size_t i = 0; i < W.size(); ++i) W[i] = Aff(wf[i]);
  const size_t first = h.ctx.symbols();
  bounds::matmul(out.data(), x.data(), W.data(), n, d);
  const std::vector<float> xf = floats(x);
  std::vector<float> ref(d);
  ref::matmul(ref.data(), xf.data(), wf.data(), n, d);
  std::vector<Real> exact(d);
  const std::vector<Real> xr = test::to_real(xf), wr = test::to_real(wf);
  ref::matmul(exact.data(), xr.data(), wr.data(), n, d);
  h.check(out, ref, exact, first);
  for (int i = 0; i < d; ++i) {
    const float other = test::dot_pairwise_fma(wf.data() + static_cast<size_t>(i) * n, 1, xf.data(), 1, n);
    RC_ASSERT(h.contains(out[i], Real(other), first));
  }
}

RC_GTEST_PROP(B11_AffineRules, RMSNormIsSound, ()) {
  Harness h(*rc::gen::inRange(0, 6));
  const test::Family f = *test::gen_family();
  const int n = *rc::gen::inRange(1, 65);
  std::vector<Aff> x(n), w(n), out(n);
  std::vector<float> wf(n);
  const std::vector<double> xc = gen_centres(f, n);
  for (int j = 0; j < n; ++j) {
    x[j] = h.input(xc[j], gen_radius(xc[j]));
    w[j] = Aff(wf[j] = static_cast<float>(1 + gen_centre(-4, -1)));
  }
  const float eps = 1e-5f;
  const size_t first = h.ctx.symbols();
  bounds::rmsnorm(out.data(), x.data(), w.data(), n, eps);
  const std::vector<float> xf = floats(x);
  std::vector<float> ref(n);
  ref::rmsnorm(ref.data(), xf.data(), wf.data(), n, eps);
  std::vector<Real> exact(n);
  const std::vector<Real> xr = test::to_real(xf), wr = test::to_real(wf);
  ref::rmsnorm(exact.data(), xr.data(), wr.data(), n, eps);
  h.check(out, ref, exact, first);
}

RC_GTEST_PROP(B11_AffineRules, RopeIsSound, ()) {
  Harness h(*rc::gen::inRange(0, 6));
  const int hd = 2 * *rc::gen::inRange(1, 9), heads = *rc::gen::inRange(1, 3);
  std::vector<float> cs(hd / 2), sn(hd / 2);
  for (int i = 0; i < hd / 2; ++i) {
    const double a = *rc::gen::inRange(0, 6284) / 1000.0;
    cs[i] = static_cast<float>(std::cos(a));
    sn[i] = static_cast<float>(std::sin(a));
  }
  std::vector<Aff> x(static_cast<size_t>(heads) * hd);
  for (auto& a : x) {
    const double c = gen_centre(-4, 3);
    a = h.input(c, gen_radius(c));
  }
  std::vector<float> xf = floats(x);
  std::vector<Real> exact = test::to_real(xf);
  const size_t first = h.ctx.symbols();
  bounds::rope(x.data(), heads, hd, cs.data(), sn.data());
  ref::rope(xf.data(), heads, hd, cs.data(), sn.data());
  ref::rope(exact.data(), heads, hd, cs.data(), sn.data());
  h.check(x, xf, exact, first);
}

RC_GTEST_PROP(B11_AffineRules, AttentionHeadIsSound, ()) {
  Harness h(*rc::gen::inRange(0, 8));
  const int d = 2 * *rc::gen::inRange(1, 9), n = *rc::gen::inRange(1, 25);
  const int q_exp = *rc::gen::inRange(-4, 3);  // score spread from near-uniform to one-hot
  std::vector<Aff> q(d), k(static_cast<size_t>(n) * d), v(k.size()), out(d), att(n);
  for (auto& a : q) {
    const double c = gen_centre(q_exp - 1, q_exp);
    a = h.input(c, gen_radius(c));
  }
  for (size_t i = 0; i < k.size(); ++i) {
    const double ck = gen_centre(-1, 1), cv = gen_centre(-3, 2);
    k[i] = h.input(ck, gen_radius(ck));
    v[i] = h.input(cv, gen_radius(cv));
  }
  const size_t first = h.ctx.symbols();
  bounds::attention_head(out.data(), q.data(), k.data(), v.data(), n, d, d, att.data());
  const std::vector<float> qf = floats(q), kf = floats(k), vf = floats(v);
  std::vector<float> ref(d), attf(n);
  ref::attention_head(ref.data(), qf.data(), kf.data(), vf.data(), n, d, d, attf.data());
  const std::vector<Real> qr = test::to_real(qf), kr = test::to_real(kf), vr = test::to_real(vf);
  std::vector<Real> exact(d), attr(n);
  ref::attention_head(exact.data(), qr.data(), kr.data(), vr.data(), n, d, d, attr.data());
  for (int i = 0; i < d; ++i) RC_ASSERT(std::isfinite(out[i].r));
  h.check(out, ref, exact, first);
}

RC_GTEST_PROP(B11_AffineRules, AttentionSoftmaxRemainderIsSound, ()) {
  // Exact q and v, keys with wide boxes: the scores move by up to ~1 and the only slack left is
  // the softmax's own Taylor remainder (2 R^2 e^{2R} P_p) and the kernel's rounding.
  Harness h(*rc::gen::inRange(1, 4));
  const int d = 2 * *rc::gen::inRange(1, 5), n = *rc::gen::inRange(2, 12);
  std::vector<Aff> q(d), k(static_cast<size_t>(n) * d), v(k.size()), out(d), att(n);
  for (auto& a : q) a = Aff(static_cast<float>(gen_centre(0, 1)));
  for (size_t i = 0; i < k.size(); ++i) {
    const double ck = gen_centre(-1, 0);
    k[i] = h.input(ck, std::fabs(ck) * std::ldexp(1.0, *rc::gen::inRange(-6, -1)) + 1e-9);
    v[i] = Aff(static_cast<float>(gen_centre(-1, 1)));
  }
  const size_t first = h.ctx.symbols();
  bounds::attention_head(out.data(), q.data(), k.data(), v.data(), n, d, d, att.data());
  const std::vector<Real> qr = test::to_real(floats(q)), kr = test::to_real(floats(k)), vr = test::to_real(floats(v));
  std::vector<Real> exact(d), attr(n);
  ref::attention_head(exact.data(), qr.data(), kr.data(), vr.data(), n, d, d, attr.data());
  for (int i = 0; i < d; ++i) RC_ASSERT(h.contains(out[i], exact[i], first));
}

// Second-order terms that only a product remainder can cover: inputs centred at 0, so the
// linear part of the product vanishes and the whole value is the remainder.
RC_GTEST_PROP(B11_AffineRules, ProductRemaindersAreCharged, ()) {
  Harness h(0);
  const Real e0 = draw_unit();
  const uint32_t s0 = h.symbol(Sym::kRounding, e0);
  const int d = 2 * *rc::gen::inRange(1, 5), n = *rc::gen::inRange(2, 8);
  // Attention: q = a e0, k_p = b_p e0, so s_p = a b_p d e0^2 / sqrt(d), all remainder.
  std::vector<Aff> q(d), k(static_cast<size_t>(n) * d), v(k.size()), out(d), att(n);
  const double a = *rc::gen::inRange(1, 5);
  for (auto& x : q) x = h.input_terms(0, 0, {{s0, a}});
  for (int p = 0; p < n; ++p)
    for (int i = 0; i < d; ++i) {
      k[static_cast<size_t>(p) * d + i] = h.input_terms(0, 0, {{s0, 0.5 * p}});
      v[static_cast<size_t>(p) * d + i] = Aff(static_cast<float>(p + i));
    }
  size_t first = h.ctx.symbols();
  bounds::attention_head(out.data(), q.data(), k.data(), v.data(), n, d, d, att.data());
  const std::vector<Real> qr = test::to_real(floats(q)), kr = test::to_real(floats(k)), vr = test::to_real(floats(v));
  std::vector<Real> exact(d), attr(n);
  ref::attention_head(exact.data(), qr.data(), kr.data(), vr.data(), n, d, d, attr.data());
  for (int i = 0; i < d; ++i) RC_ASSERT(h.contains(out[i], exact[i], first));
  // RMSNorm: x = c e0, so sum x^2 = n c^2 e0^2, all remainder.
  std::vector<Aff> x(d), w(d), y(d);
  for (int j = 0; j < d; ++j) {
    x[j] = h.input_terms(0, 0, {{s0, 0.25 * (j + 1)}});
    w[j] = Aff(1.0f);
  }
  first = h.ctx.symbols();
  bounds::rmsnorm(y.data(), x.data(), w.data(), d, 1e-5f);
  const std::vector<Real> xr = test::to_real(floats(x)), wr = test::to_real(floats(w));
  std::vector<Real> yr(d);
  ref::rmsnorm(yr.data(), xr.data(), wr.data(), d, 1e-5f);
  for (int j = 0; j < d; ++j) RC_ASSERT(h.contains(y[j], yr[j], first));
}

RC_GTEST_PROP(B11_AffineRules, AttentionCrossTermIsCharged, ()) {
  // Key p and value p move with the same symbol e_p and the values' centres are equal, so the
  // output moves by sum_p (P_p(s) - P_p(s^)) dv_p = a b Var_P(e) > 0: only the cross remainder
  // (e^{2R} - 1) P_p r_v covers it.
  Harness h(0);
  const int d = 2 * *rc::gen::inRange(1, 5), n = *rc::gen::inRange(2, 8);
  std::vector<Aff> q(d), k(static_cast<size_t>(n) * d), v(k.size()), out(d), att(n);
  for (auto& x : q) x = Aff(1.0f);
  const double a = std::ldexp(1.0, *rc::gen::inRange(-3, 0)), bv = std::ldexp(1.0, *rc::gen::inRange(-3, 0));
  for (int p = 0; p < n; ++p) {
    const uint32_t ep = h.symbol(Sym::kRounding, draw_unit());
    for (int i = 0; i < d; ++i) {
      k[static_cast<size_t>(p) * d + i] = h.input_terms(0.25, 0, {{ep, a}});
      v[static_cast<size_t>(p) * d + i] = h.input_terms(1.0, 0, {{ep, bv}});
    }
  }
  const size_t first = h.ctx.symbols();
  bounds::attention_head(out.data(), q.data(), k.data(), v.data(), n, d, d, att.data());
  const std::vector<Real> qr = test::to_real(floats(q)), kr = test::to_real(floats(k)), vr = test::to_real(floats(v));
  std::vector<Real> exact(d), attr(n);
  ref::attention_head(exact.data(), qr.data(), kr.data(), vr.data(), n, d, d, attr.data());
  for (int i = 0; i < d; ++i) RC_ASSERT(h.contains(out[i], exact[i], first));
}

RC_GTEST_PROP(B11_AffineRules, LinearisedFunctionsAreSound, ()) {
  // 1/sqrt(x) and silu(x) over boxes up to half their centre wide: the Lagrange remainder
  // M2 r^2 / 2 is what keeps f(x) inside.
  Harness h(*rc::gen::inRange(1, 4));
  const double cm = std::ldexp(1.0 + static_cast<double>(draw_unit()) / 2, *rc::gen::inRange(-10, 10));
  const Aff m = h.input(cm, cm * std::ldexp(1.0, *rc::gen::inRange(-20, -2)));
  const double cg = gen_centre(-2, 5);
  const Aff g = h.input(cg, std::fabs(cg) * std::ldexp(1.0, *rc::gen::inRange(-20, -1)) + 1e-9);
  const size_t first = h.ctx.symbols();
  AffBuilder b(h.ctx);
  const Aff rs = apply(b, m, linearise_rsqrt(m));
  const Aff sg = apply(b, g, linearise_silu(g));
  const Real mv = Real(m.v), gv = Real(g.v);
  RC_ASSERT(h.contains(rs, 1 / boost::multiprecision::sqrt(mv), first));
  RC_ASSERT(h.contains(sg, gv / (1 + boost::multiprecision::exp(-gv)), first));
}

RC_GTEST_PROP(B11_AffineRules, SwigluIsSound, ()) {
  Harness h(*rc::gen::inRange(0, 6));
  const int n = *rc::gen::inRange(1, 33);
  const int g_exp = *rc::gen::element(2, 5, 7);  // gates to +-4, +-32, +-128 (exp overflow)
  std::vector<Aff> g(n), u(n), out(n);
  for (int j = 0; j < n; ++j) {
    const double cg = gen_centre(-3, g_exp), cu = gen_centre(-3, 2);
    g[j] = h.input(cg, gen_radius(cg));
    u[j] = h.input(cu, gen_radius(cu));
  }
  const std::vector<float> gf = floats(g), uf = floats(u);
  const size_t first = h.ctx.symbols();
  bounds::swiglu(out.data(), g.data(), u.data(), n);
  std::vector<float> ref(n);
  ref::swiglu(ref.data(), gf.data(), uf.data(), n);
  std::vector<Real> exact(n);
  const std::vector<Real> gr = test::to_real(gf), ur = test::to_real(uf);
  ref::swiglu(exact.data(), gr.data(), ur.data(), n);
  h.check(out, ref, exact, first);
}

RC_GTEST_PROP(B11_AffineRules, ResidualAddIsSound, ()) {
  Harness h(*rc::gen::inRange(0, 6));
  const int n = *rc::gen::inRange(1, 33);
  std::vector<Aff> x(n), y(n);
  for (int j = 0; j < n; ++j) {
    const double cx = gen_centre(-3, 2), cy = gen_centre(-3, 2);
    x[j] = h.input(cx, gen_radius(cx));
    y[j] = h.input(cy, gen_radius(cy));
  }
  const std::vector<float> xf = floats(x), yf = floats(y);
  const size_t first = h.ctx.symbols();
  bounds::add_inplace(x.data(), y.data(), n);
  std::vector<float> sum(n);
  std::vector<Real> exact(n);
  for (int j = 0; j < n; ++j) {
    sum[j] = xf[j] + yf[j];
    exact[j] = Real(xf[j]) + Real(yf[j]);
  }
  h.check(x, sum, exact, first);
}

TEST(B11_AffineRules, DistanceBoundCountsOtherSymbolsTwice) {
  AffineContext ctx(8);
  Aff x(1.0f);
  x.t = {{ctx.new_symbol(Sym::kRounding), 0.25}, {ctx.new_symbol(Sym::kOther), -0.125}};
  x.r = 0.375;
  EXPECT_GE(ctx.distance_bound(x), 0.25 + 2 * 0.125);  // counted once it would be 0.375
  EXPECT_LT(ctx.distance_bound(x), 0.25 + 3 * 0.125);
  x.r = std::numeric_limits<double>::infinity();
  EXPECT_EQ(ctx.distance_bound(x), std::numeric_limits<double>::infinity());
}

TEST(B11_AffineRules, CondensingKeepsTheLargestTermsAndTheMass) {
  AffineContext ctx(2);
  AffineScope scope(ctx);
  Aff x(0.0f);
  double mass = 0;
  for (int i = 0; i < 5; ++i) {
    x.t.push_back({ctx.new_symbol(i % 2 ? Sym::kOther : Sym::kRounding), std::ldexp(1.0, -i)});
    mass += std::ldexp(1.0, -i);
  }
  x.r = mass;
  const size_t first = ctx.symbols();
  AffBuilder b(ctx);
  b.add_terms(x, 1.0);
  const Aff y = b.finish(0.0f, 0.0);
  // Kept: the two largest (ids 0 and 1); folded: 2^-2 + 2^-4 (rounding), 2^-3 (other), plus the
  // arithmetic's own remainder symbol.
  size_t kept = 0;
  double folded_rounding = 0, folded_other = 0;
  for (const Term& t : y.t) {
    if (t.id < first) {
      ++kept;
      EXPECT_LT(t.id, 2u);
    } else if (ctx.kind(t.id) == Sym::kRounding) {
      folded_rounding += t.a;
    } else if (t.a > 1e-10) {
      folded_other += t.a;
    }
  }
  EXPECT_EQ(kept, 2u);
  EXPECT_GE(folded_rounding, 0.25 + 0.0625);
  EXPECT_GE(folded_other, 0.125);
  EXPECT_GE(y.r, mass);
}

// --- end to end -----------------------------------------------------------------------------

TEST(B11_EndToEnd, TinySingleTokensEveryBackendWithinTheBound) {
  for (Token t : {0, 65, 256, 287}) {
    const std::vector<Token> tokens = {t};
    const BoundsReport r = run_bounds(test::tiny(), 1, tokens);
    EXPECT_TRUE(r.enclosure_bitwise);
    EXPECT_EQ(r.violations, 0u);
    EXPECT_TRUE(std::isfinite(r.max_bound)) << t;
    EXPECT_GT(r.max_error, 0.0);  // a real comparison, not 0 vs 0
    ASSERT_GE(r.backends.size(), 2u);  // the reference and at least the cpu backend
    for (const BackendBound& b : r.backends) EXPECT_LE(b.max_fraction, 1.0) << b.name;
  }
}

RC_GTEST_PROP(B11_EndToEnd, TinySequencesSound, ()) {
  const auto tokens = *rc::gen::container<std::vector<Token>>(*rc::gen::inRange<size_t>(1, 9), rc::gen::inRange(0, 288));
  BoundsOptions opt;
  opt.max_terms = 256;  // looser, faster; still sound
  const BoundsReport r = run_bounds(test::tiny(), 1, tokens, opt);
  RC_ASSERT(r.enclosure_bitwise);
  RC_ASSERT(r.violations == 0u);
  RC_ASSERT(std::isfinite(r.max_bound));
}

TEST(B11_EndToEnd, ConversationPrefixMatchesSessionAndIsBounded) {
  // The float values the report shows are the Session's own next-token logits, and every
  // backend's logits lie within the finite bound.
  const auto spans = test::spans_of("ad01_banking_ut0_gpt4omini.json");
  std::vector<Token> tokens(spans[0].begin(), spans[0].begin() + 24);
  const BoundsReport r = run_bounds(test::tiny(), 1, tokens);
  auto backend = make_reference_backend(test::tiny());
  Session s(*backend);
  s.append(0, tokens);
  const std::span<const float> l = s.logits();
  ASSERT_EQ(l.size(), r.logits.size());
  for (size_t i = 0; i < l.size(); ++i) EXPECT_EQ(std::memcmp(&l[i], &r.logits[i].value, sizeof(float)), 0) << i;
  EXPECT_EQ(r.violations, 0u);
  EXPECT_TRUE(std::isfinite(r.max_bound));
}

TEST(B11_EndToEnd, ARunThatSkippedATokenIsOutsideTheBound) {
  // The bound separates rounding from a wrong computation: the logits of the sequence with one
  // token left out (what a wrong eviction or a dropped key would give) miss the exact logits
  // of the full sequence by more than the bound.
  const auto spans = test::spans_of("ad01_banking_ut0_gpt4omini.json");
  std::vector<Token> tokens(spans[0].begin(), spans[0].begin() + 12);
  const BoundsReport r = run_bounds(test::tiny(), 1, tokens);
  ASSERT_EQ(r.violations, 0u);
  std::vector<Token> skipped = tokens;
  skipped.erase(skipped.begin() + 5);
  auto backend = make_reference_backend(test::tiny());
  KVCache cache(test::tiny()->config);
  std::vector<float> all(skipped.size() * r.logits.size());
  backend->forward(cache, skipped, all);
  size_t outside = 0;
  for (size_t i = 0; i < r.logits.size(); ++i) {
    const float wrong = all[(skipped.size() - 1) * r.logits.size() + i];
    if (std::fabs(static_cast<double>(wrong) - r.logits[i].exact) > r.logits[i].bound) ++outside;
  }
  EXPECT_GT(outside, r.logits.size() / 2);
}

TEST(B11_BoundsCommand, ExitCodes) {
  auto run = [](const std::string& args) {
    const int s = std::system((std::string(AKV_CLI) + " bounds " + args + " > /dev/null 2>&1").c_str());
    return WEXITSTATUS(s);
  };
  const std::string conv = test::example("ad01_banking_ut0_gpt4omini.json");
  EXPECT_EQ(run(conv + " --max-tokens 1 --json"), 0);
  EXPECT_EQ(run(conv + " --max-tokens 2 --terms 64"), 0);
  EXPECT_EQ(run(conv + " --max-tokens 1 --terms 0"), 2);
  EXPECT_EQ(run(conv + " --max-tokens 1 --model huge"), 2);
  EXPECT_EQ(run(test::source_dir() + "/no/such/file.json"), 2);
}
