// The formulas of spec/bounds.md B1-B9 and B14, each evaluated with outward rounding.
#include "verify/bounds/op_bounds.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "reference/ops.hpp"
#include "verify/bounds/exp_error.hpp"
#include "verify/bounds/rigorous.hpp"

namespace akv::bounds {

namespace {
constexpr double kInf = std::numeric_limits<double>::infinity();

// |a b| of two floats: exact in double (48 significant bits, exponent >= -298).
double abs_prod(float a, float b) { return std::fabs(static_cast<double>(a) * static_cast<double>(b)); }

// Underflow term of n rounded products (or FMAs), each carried through <= n roundings.
double underflow(int n) { return mul_up(add_up(1.0, gamma(n)), mul_up(n, kEta)); }

// B8's underflow events: the quotient g / d (or the product g up before it) times up, the final
// product, and a subnormal reciprocal fl(1 / d) times g and up:
// eta ((1 + u)(|up| + 1) + 1 + (1 + u)^2 |g up|), given gu >= |g up|, au >= |up|.
double swiglu_underflow(double gu, double au) {
  const double base = add_up(mul_up(1.0 + kU, add_up(au, 1.0)), 1.0);
  return mul_up(kEta, add_up(base, mul_up(mul_up(1.0 + kU, 1.0 + kU), gu)));
}

// (1+a)/(1-b) - 1 = (a + b)/(1 - b), rounded up, a, b >= 0, b < 1 (no cancellation: within a few
// ulps of the formula, which tests/test_bounds_coq.cpp holds to 2^-40).
double ratio_minus_one(double a, double b) {
  if (b >= 1) return kInf;
  return div_up(add_up(a, b), sub_dn(1.0, b));
}

// B8's relative factor: fl(1 + e^) errs by eps_d relative, then <= 3 roundings (÷ or a
// reciprocal, x g, x up): (1 + u)^3 / (1 - eps_d) - 1.
double swiglu_rel() {
  const double eps_d = add_up(add_up(mul_up(kExpRel, 1.0 + kU), kU), mul_up(kExpAbs, 1.0 + kU));
  return ratio_minus_one(rel_k(3), eps_d);
}
}  // namespace

double dot_bound_from_abs(double sum_abs, int n) { return add_up(mul_up(gamma(n), sum_abs), underflow(n)); }

double dot_bound(const float* x, int sx, const float* y, int sy, int n) {
  double s = 0;
  for (int i = 0; i < n; ++i) s = add_up(s, abs_prod(x[static_cast<size_t>(i) * sx], y[static_cast<size_t>(i) * sy]));
  return dot_bound_from_abs(s, n);
}

double abs_dot_nearest(const float* x, const float* y, int n) {
  double p[8] = {0, 0, 0, 0, 0, 0, 0, 0};  // independent chains: the bound holds for any order
  int i = 0;
  for (; i + 8 <= n; i += 8)
    for (int j = 0; j < 8; ++j) p[j] += std::fabs(static_cast<double>(x[i + j]) * static_cast<double>(y[i + j]));
  for (; i < n; ++i) p[0] += std::fabs(static_cast<double>(x[i]) * static_cast<double>(y[i]));
  return ((p[0] + p[1]) + (p[2] + p[3])) + ((p[4] + p[5]) + (p[6] + p[7]));
}

double abs_dot_up(const float* x, const float* y, int n) {
  const double s = abs_dot_nearest(x, y, n);
  if (!std::isfinite(s)) return kInf;
  return div_up(s, down(1.0 - gamma53(n + 8)));
}

void matmul_bounds(const float* X, const float* W, int M, int n, int d, double* out) {
  // gamma_n * S <= gamma_n / (1 - gamma53(n + 8)) * s for the computed s of S (abs_dot_nearest).
  const double c = div_up(gamma(n), down(1.0 - gamma53(n + 8))), uf = underflow(n);
  for (int m = 0; m < M; ++m)
    for (int j = 0; j < d; ++j) {
      const double s = abs_dot_nearest(X + static_cast<size_t>(m) * n, W + static_cast<size_t>(j) * n, n);
      out[static_cast<size_t>(m) * d + j] = std::isfinite(s) ? add_up(mul_up(c, s), uf) : kInf;
    }
}

std::vector<double> rmsnorm_bounds(std::span<const float> x, std::span<const float> w, float eps) {
  const std::vector<double> xc(x.begin(), x.end()), xr(x.size(), 0.0);
  return rmsnorm_bounds_box(xc, xr, w, eps);
}

std::vector<double> rmsnorm_bounds_box(std::span<const double> xc, std::span<const double> xr,
                                       std::span<const float> w, float eps) {
  const int n = static_cast<int>(xc.size());
  // m = sum x^2 / n + eps >= m_lo, x_j anywhere in its box: |x_j| >= max(0, |xc_j| - xr_j).
  double ss_lo = 0;
  for (int j = 0; j < n; ++j) {
    const double lo = sub_dn(std::fabs(xc[j]), xr[j]);
    if (lo > 0) ss_lo = add_dn(ss_lo, mul_dn(lo, lo));
  }
  const double m_lo = add_dn(div_dn(ss_lo, n), eps);
  std::vector<double> out(xc.size(), kInf);
  if (!(m_lo > 0)) return out;
  // Relative error of the rounded m: gamma_{n+2} + 2^-148 / m (underflow of the sum and of ÷n).
  const double eps_m = add_up(gamma(n + 2), div_up(0x1p-148, m_lo));
  if (eps_m >= 1) return out;
  // r = 1/sqrt(m): one sqrt, one division: |r^ / r - 1| <= eps_r = (1+u) / ((1-u) s) - 1,
  // s = sqrt(1 - eps_m), evaluated as (2u + (1-u) eps_m / (1 + s)) / ((1-u) s): the same number
  // without subtracting 1 from a number near 1 (tests/test_bounds_coq.cpp holds it to 2^-40).
  const double s = sqrt_dn(sub_dn(1.0, eps_m));
  const double eps_r = div_up(add_up(2 * kU, mul_up(1.0 - kU, div_up(eps_m, add_dn(1.0, s)))), mul_dn(1.0 - kU, s));
  // y = x r w with two more roundings, in either association: (1 + eps_r)(1 + u)^2 - 1.
  const double rel = add_up(mul_up(eps_r, mul_up(1.0 + kU, 1.0 + kU)), rel_k(2));
  const double r_hi = div_up(1.0, sqrt_dn(m_lo));
  for (int j = 0; j < n; ++j) {
    const double ax = add_up(std::fabs(xc[j]), xr[j]), aw = std::fabs(static_cast<double>(w[j]));
    const double mag = mul_up(mul_up(ax, aw), r_hi);
    const double uf = mul_up(kEta, add_up(mul_up(1.0 + kU, std::max(ax, aw)), 1.0));
    out[j] = add_up(mul_up(rel, mag), uf);
  }
  return out;
}

std::vector<double> rope_bounds(std::span<const float> x, const float* cos, const float* sin) {
  const int half = static_cast<int>(x.size()) / 2;
  std::vector<double> out(x.size());
  for (int i = 0; i < half; ++i) {
    const float x0 = x[i], x1 = x[i + half];
    // x0 c - x1 s and x0 s + x1 c: dot products of length 2.
    out[i] = dot_bound_from_abs(add_up(abs_prod(x0, cos[i]), abs_prod(x1, sin[i])), 2);
    out[i + half] = dot_bound_from_abs(add_up(abs_prod(x0, sin[i]), abs_prod(x1, cos[i])), 2);
  }
  return out;
}

double score_bound(std::span<const float> q, std::span<const float> k) {
  const int d = static_cast<int>(q.size());
  double s = 0, k_abs = 0;
  for (int i = 0; i < d; ++i) {
    s = add_up(s, abs_prod(q[i], k[i]));
    k_abs = add_up(k_abs, std::fabs(static_cast<double>(k[i])));
  }
  return score_bound_from_abs(s, k_abs, d);
}

double score_bound_from_abs(double sum_abs, double k_abs, int d) {
  // gamma_{d+3} |q||k| / sqrt(d): the dot's d roundings, and <= 3 on the scale's path.
  const double rel = mul_up(gamma(d + 3), div_up(sum_abs, sqrt_dn(d)));
  // Underflow: d products and the final product (eta each), and for q pre-scaled the
  // pre-scalings' eta each multiplied by its k_i.
  const double events = add_up(2 * d + 1, mul_up(1.0 + kU, k_abs));
  const double uf = mul_up(add_up(1.0, gamma(d + 3)), mul_up(events, kEta));
  return add_up(rel, uf);
}

std::vector<double> shifted_exp_bounds(std::span<const float> s) {
  float m = s[0];
  for (float v : s) m = std::max(m, v);
  std::vector<double> out(s.size());
  for (size_t j = 0; j < s.size(); ++j) {
    // t = s_j - m <= 0 is rounded once: |t^ - t| <= u |t|; then akv::exp (B0).
    const double at = up(static_cast<double>(m) - static_cast<double>(s[j]));  // >= |t|
    const double et = exp_up(-down(static_cast<double>(m) - static_cast<double>(s[j])) );  // >= e^t
    const double grow = exp_up(mul_up(kU, at));                                            // >= e^{u|t|}
    // e^t (e^{u|t|} - 1) + kExpRel e^t e^{u|t|} + kExpAbs
    const double a = mul_up(et, sub_up(grow, 1.0));
    const double b = mul_up(kExpRel, mul_up(et, grow));
    out[j] = add_up(add_up(a, b), kExpAbs);
  }
  return out;
}

std::vector<double> normalise_bounds(std::span<const float> e) {
  const int n = static_cast<int>(e.size());
  double s_lo = 0;
  for (float v : e) s_lo = add_dn(s_lo, v);
  std::vector<double> out(e.size(), kInf);
  if (!(s_lo > 0)) return out;
  // p^ = e_j / S^ (1 + delta) or e_j * fl(1/S^): |p^ - p| <= p ((1+u)^2 / (1 - gamma_{n-1}) - 1) + 2^-150,
  // plus (1 + u) e_j 2^-150 for the reciprocal form, whose fl(1/S^) is subnormal when S^ > 2^126.
  const double rel = ratio_minus_one(rel_k(2), gamma(n - 1));
  for (int j = 0; j < n; ++j)
    out[j] = add_up(add_up(mul_up(rel, div_up(e[j], s_lo)), kEta), mul_up(mul_up(1.0 + kU, e[j]), kEta));
  return out;
}

std::vector<double> softmax_bounds(std::span<const float> s) {
  // e^_j within E_j of e_j (B5); then |e^_j/A - e_j/B| <= E_j/A + (e^_j + E_j)/(A - sum E) * sum E / A,
  // A = sum e^ (exact), B = sum e; plus the normalisation's own rounding (B6).
  std::vector<float> e(s.begin(), s.end());
  float m = s[0];
  for (float v : s) m = std::max(m, v);
  for (size_t j = 0; j < s.size(); ++j) e[j] = akv::exp(s[j] - m);
  const std::vector<double> E = shifted_exp_bounds(s);
  const std::vector<double> N = normalise_bounds(e);
  double a_lo = 0, sum_e = 0;
  for (size_t j = 0; j < e.size(); ++j) {
    a_lo = add_dn(a_lo, e[j]);
    sum_e = add_up(sum_e, E[j]);
  }
  std::vector<double> out(s.size(), kInf);
  const double b_lo = sub_dn(a_lo, sum_e);
  if (!(b_lo > 0)) return out;
  for (size_t j = 0; j < s.size(); ++j) {
    const double t1 = div_up(E[j], a_lo);
    const double t2 = mul_up(div_up(add_up(e[j], E[j]), b_lo), div_up(sum_e, a_lo));
    out[j] = add_up(add_up(t1, t2), N[j]);
  }
  return out;
}

double swiglu_bound(float g, float up_v) {
  const double gu = abs_prod(g, up_v);
  if (std::isinf(akv::exp(-g))) {
    // 1 + e^-g overflows: the float result is +-0, the exact one is below |g up| e^g.
    return mul_up(gu, exp_up(g));
  }
  const double rel = swiglu_rel();
  const double mag = div_up(gu, add_dn(1.0, exp_dn(-static_cast<double>(g))));
  return add_up(mul_up(rel, mag), swiglu_underflow(gu, std::fabs(up_v)));
}

double swiglu_bound_box(double gc, double gr, double uc, double ur) {
  const double g_lo = sub_dn(gc, gr), g_hi = add_up(gc, gr);
  const double au = add_up(std::fabs(uc), ur);
  // sup |silu(g)| = sup |g| / (1 + e^-g) over [g_lo, g_hi]: silu increases on g >= -1.2785 and
  // |silu| increases towards g = -1.2785 from below, where |silu| peaks at 0.27846 < 0.2785.
  // The minimum of silu is -0.278465 at g* = -1.2784645 (in (-1.2785, -1.2784)).
  auto silu_abs_up = [](double g) { return div_up(std::fabs(g), add_dn(1.0, exp_dn(-g))); };
  double s = std::max(silu_abs_up(g_lo), silu_abs_up(g_hi));
  if (g_lo <= -1.2784 && g_hi >= -1.2785) s = std::max(s, 0.2785);
  const double rel = swiglu_rel();
  const double ag = std::max(std::fabs(g_lo), std::fabs(g_hi));
  double b = add_up(mul_up(rel, mul_up(s, au)), swiglu_underflow(mul_up(ag, au), au));
  if (g_lo < -88.72283935546875) {
    // akv::exp(-g) may overflow: the float result is +-0, the exact one below |g up| e^g, and
    // |g| e^g increases on g < -1, so it is below |g_lo| e^min(g_hi, -88) there.
    b = std::max(b, mul_up(au, mul_up(std::fabs(g_lo), exp_up(std::min(g_hi, -88.0)))));
  }
  return b;
}

std::vector<double> logits_bounds(std::span<const float> x, std::span<const float> wn, float eps,
                                  std::span<const float> W, int vocab) {
  const int n = static_cast<int>(x.size());
  std::vector<float> y(x.size());
  ref::rmsnorm(y.data(), x.data(), wn.data(), n, eps);
  const std::vector<double> b2 = rmsnorm_bounds(x, wn, eps);
  std::vector<double> out(vocab);
  for (int i = 0; i < vocab; ++i) {
    const float* row = W.data() + static_cast<size_t>(i) * n;
    // Any backend's normed y' is within B2 of the exact y, hence within 2 B2 of ours.
    double s_abs = 0, prop = 0;
    for (int j = 0; j < n; ++j) {
      const double aw = std::fabs(static_cast<double>(row[j]));
      s_abs = add_up(s_abs, mul_up(aw, add_up(std::fabs(y[j]), mul_up(2.0, b2[j]))));
      prop = add_up(prop, mul_up(aw, b2[j]));
    }
    out[i] = add_up(dot_bound_from_abs(s_abs, n), prop);
  }
  return out;
}

AttnRounding attn_rounding_reference(int n) { return {n + 2, 0, 2 * n}; }

AttnRounding attn_rounding_online(int n, int block) {
  const int b = (n + block - 1) / block;
  return {std::min(n, block) + b, b - 1, n + 2 * b};
}

AttnRounding attn_rounding_split(int n, int split) {
  const int c = (n + split - 1) / split;
  return {std::min(n, split) + c, 1, n + 2 * c};
}

AttnRounding attn_rounding_any_block(int n) { return {2 * n + 2, n, 3 * n}; }

std::vector<double> attention_bounds(const float* q, const float* k, const float* v, int n, int stride, int d,
                                     AttnRounding how) {
  // The box variant with zero radii: floats as centres (exact in double).
  const size_t nd = static_cast<size_t>(std::max(n, 0)) * d;
  std::vector<double> qc(q, q + d), kc(nd), vc(nd), zero(std::max(nd, static_cast<size_t>(d)), 0.0);
  for (int p = 0; p < n; ++p)
    for (int i = 0; i < d; ++i) {
      kc[static_cast<size_t>(p) * d + i] = k[static_cast<size_t>(p) * stride + i];
      vc[static_cast<size_t>(p) * d + i] = v[static_cast<size_t>(p) * stride + i];
    }
  return attention_bounds_box(qc.data(), zero.data(), kc.data(), zero.data(), vc.data(), zero.data(), n, d, d, how);
}

std::vector<double> attention_bounds_box(const double* qc, const double* qr, const double* kc, const double* kr,
                                         const double* vc, const double* vr, int n, int stride, int d,
                                         AttnRounding how) {
  if (n < 1 || how.k < 0 || how.r < 0 || how.a < 0) return std::vector<double>(d, kInf);
  // c_p = qc.kc_p / sqrt(d) in double (d products, d - 1 sums, sqrt, division: d + 3 roundings
  // of 2^-53); the exact score of any q, k_p in the box is within tau_p of it.
  const double gd = gamma53(d + 3);
  const double sq_lo = sqrt_dn(d), sq = std::sqrt(static_cast<double>(d));
  std::vector<double> c(n), tau(n);
  double sigma = 0, hi = -kInf, cmax = -kInf;
  for (int p = 0; p < n; ++p) {
    const size_t o = static_cast<size_t>(p) * stride;
    double dot = 0, sabs = 0, spread = 0, mag = 0, k_abs = 0;
    for (int i = 0; i < d; ++i) {
      const double aq = std::fabs(qc[i]), ak = std::fabs(kc[o + i]);
      k_abs = add_up(k_abs, add_up(ak, kr[o + i]));
      dot += qc[i] * kc[o + i];
      sabs = add_up(sabs, mul_up(aq, ak));
      // |q k - qc kc| <= |qc| kr + |kc| qr + qr kr
      spread = add_up(spread, add_up(add_up(mul_up(aq, kr[o + i]), mul_up(ak, qr[i])), mul_up(qr[i], kr[o + i])));
      mag = add_up(mag, mul_up(add_up(aq, qr[i]), add_up(ak, kr[o + i])));
    }
    c[p] = dot / sq;
    tau[p] = add_up(mul_up(gd, div_up(sabs, sq_lo)), div_up(spread, sq_lo));
    sigma = std::max(sigma, score_bound_from_abs(mag, k_abs, d));
    hi = std::max(hi, up(c[p] + tau[p]));
    cmax = std::max(cmax, c[p]);
  }
  // The rest is B14 given c_p, tau_p >= |s_p - c_p| for the exact score of any input in the box,
  // sigma >= every B4 score bound, and |v_{p,i}| <= |vc| + vr.
  std::vector<double> out(d, kInf);
  if (!std::isfinite(sigma) || !std::isfinite(hi)) return out;
  const double two_sigma = mul_up(2.0, sigma);
  // U_p >= P_p = softmax(s)_p; W_p = e^{2 sigma} U_p >= P^_p = softmax(s^)_p, the exact
  // softmax of the kernel's float scores.
  double den = 0;
  for (int p = 0; p < n; ++p) den = add_dn(den, exp_dn(down(down(c[p] - tau[p]) - cmax)));
  const double e2s = exp_up(two_sigma);
  // Per key: rho_p >= (1 + Phi_p)(1 + gamma_k) - 1, Phi_p the relative error of the key's
  // weight after r + 1 exps of rounded differences whose exact values telescope to
  // s^_p - max s^ (B5 per stage: sum |t| = max s^ - s^_p <= L_p).
  const double gk = gamma(how.k);
  double exp_growth = 1.0, abs_growth = 1.0;  // (1 + kExpRel)^{r+1}, (1 + kExpRel + kExpAbs)^r
  for (int j = 0; j <= how.r; ++j) exp_growth = mul_up(exp_growth, 1.0 + kExpRel);
  for (int j = 0; j < how.r; ++j) abs_growth = mul_up(abs_growth, add_up(1.0 + kExpRel, kExpAbs));
  // Xi: the absolute part of a weight (each exp's kExpAbs, carried by the later stages).
  const double xi = mul_up(mul_up(how.r + 1, kExpAbs), abs_growth);
  const double g = mul_up(add_up(1.0, gk), abs_growth);  // growth of one absolute event
  const double xi_g = mul_up(xi, add_up(1.0, gk));
  std::vector<double> W(n), rho(n);
  double rd = mul_up(xi_g, n);
  for (int p = 0; p < n; ++p) {
    const double num = exp_up(up(up(c[p] + tau[p]) - cmax));
    W[p] = mul_up(e2s, std::min(1.0, div_up(num, den)));
    const double L = add_up(up(hi - down(c[p] - tau[p])), two_sigma);
    const double one_phi = mul_up(exp_growth, exp_up(mul_up(kU, L)));
    rho[p] = sub_up(mul_up(one_phi, add_up(1.0, gk)), 1.0);
    rd = add_up(rd, mul_up(W[p], rho[p]));
  }
  const double a_eta_g = mul_up(mul_up(how.a, kEta), g);
  const double denom = sub_dn(sub_dn(1.0, rd), a_eta_g);
  if (!(denom > 0)) return out;
  const double score_part = expm1_up(two_sigma);
  for (int i = 0; i < d; ++i) {
    double vmax = 0, vsum = 0, y = 0, rn = 0;
    for (int p = 0; p < n; ++p) {
      const size_t o = static_cast<size_t>(p) * stride + i;
      const double av = add_up(std::fabs(vc[o]), vr[o]);
      vmax = std::max(vmax, av);
      vsum = add_up(vsum, av);
      const double wv = mul_up(W[p], av);
      y = add_up(y, wv);
      rn = add_up(rn, mul_up(wv, rho[p]));
    }
    rn = add_up(rn, mul_up(xi_g, vsum));
    // (R_N + Y R_D + a eta G (1 + V + Y)) / (1 - R_D - a eta G): the weights' and the sums'
    // rounding through the quotient N^ / D^.
    const double absorb = mul_up(a_eta_g, add_up(add_up(1.0, vmax), y));
    const double e = div_up(add_up(add_up(rn, mul_up(y, rd)), absorb), denom);
    // + the final division (u |N^/D^| + eta) + the scores' error (e^{2 sigma} - 1) Y.
    const double fin = add_up(mul_up(kU, add_up(y, e)), kEta);
    out[i] = add_up(add_up(e, fin), mul_up(score_part, y));
  }
  return out;
}

}  // namespace akv::bounds
