#include "verify/bounds/affine_ops.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <vector>

#include "reference/ops.hpp"
#include "verify/bounds/kv_bounds.hpp"
#include "verify/bounds/rigorous.hpp"

namespace akv::bounds {

namespace {
constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr int kKernelBlock = 64;  // K4's key block and G5's split, the kernels B14 covers
constexpr double kNoOverflow = 0x1p126;  // sums of magnitudes below this cannot overflow a float

// An upper bound of |c| + r: the magnitude of anything in the box.
double mag(const Aff& x) { return add_up(std::fabs(x.c), x.r); }

Aff vacuous(float v) {
  Aff y(v);
  y.r = kInf;
  return y;
}

}  // namespace

Linearised linearise_rsqrt(const Aff& x) {
  const double lo = sub_dn(x.c, x.r);
  Linearised f;
  f.F = 1.0 / std::sqrt(x.c);
  f.eF = mul_up(0x1p-51, f.F);
  f.D = -0.5 * f.F * f.F * f.F;
  f.eD = mul_up(0x1p-49, std::fabs(f.D));
  f.M2 = div_up(0.75, mul_dn(mul_dn(lo, lo), sqrt_dn(lo)));  // (3/4) x^(-5/2)
  return f;
}

Linearised linearise_silu(const Aff& g) {
  const double x = g.c;
  const double e = std::exp(-x);  // +inf for x < -709: then s = 0 and silu(x) = -0
  const double s = 1.0 / (1.0 + e);
  Linearised f;
  f.F = x * s;
  // A few double roundings and libm's exp (< 1 ulp): relative 2^-48 on s and on x s.
  // 2^-1000 covers a subnormal s (x near -709), whose error is absolute.
  f.eF = std::isinf(e) ? mul_up(std::fabs(x), exp_up(x)) : add_up(mul_up(0x1p-47, std::fabs(f.F)), 0x1p-1000);
  f.D = s * (1.0 + x * (1.0 - s));
  f.eD = mul_up(0x1p-46, add_up(1.0, std::fabs(x)));
  f.M2 = 0.5;
  return f;
}

namespace {
// The float values of x (n,).
std::vector<float> values(const Aff* x, size_t n) {
  std::vector<float> f(n);
  for (size_t i = 0; i < n; ++i) f[i] = x[i].v;
  return f;
}

// The rules read weights as float constants: each must be one (no terms, centre = value).
std::vector<float> weights(const Aff* w, size_t n) {
  for (size_t i = 0; i < n; ++i)
    if (w[i].r != 0 || !w[i].t.empty() || w[i].c != static_cast<double>(w[i].v))
      throw std::logic_error("affine: a weight is not an exact float constant");
  return values(w, n);
}

// sum_j w_j x_j (n,) with float constants w, as the float value v: the exact linear map, and
// B1's rounding for n terms at the boxes; vacuous where a partial sum of some order could
// overflow (B1 assumes none). A matmul row, or a RoPE output (B3 is B1 with n = 2).
Aff dot_const(AffBuilder& b, const Aff* x, const float* w, int n, float v) {
  double sum_abs = 0;
  for (int j = 0; j < n; ++j) {
    b.add_center(static_cast<double>(w[j]) * x[j].c);
    b.add_terms(x[j], w[j]);
    sum_abs = add_up(sum_abs, mul_up(std::fabs(static_cast<double>(w[j])), mag(x[j])));
  }
  return b.finish(v, sum_abs < kNoOverflow ? dot_bound_from_abs(sum_abs, n) : kInf);
}
}  // namespace

AttnRounding attn_rounding_any(int n) {
  const AttnRounding a = attn_rounding_reference(n), b = attn_rounding_online(n, kKernelBlock),
                     c = attn_rounding_split(n, kKernelBlock);
  return {std::max({a.k, b.k, c.k}), std::max({a.r, b.r, c.r}), std::max({a.a, b.a, c.a})};
}

void matmul(Aff* out, const Aff* x, const Aff* W, int n, int d) {
  AffineContext& ctx = AffineContext::current();
  const std::vector<float> xf = values(x, n), wf = weights(W, static_cast<size_t>(n) * d);
  std::vector<float> of(d);
  ref::matmul(of.data(), xf.data(), wf.data(), n, d);
  AffBuilder b(ctx);
  for (int i = 0; i < d; ++i) out[i] = dot_const(b, x, wf.data() + static_cast<size_t>(i) * n, n, of[i]);
}

void rmsnorm(Aff* out, const Aff* x, const Aff* w, int n, float eps) {
  AffineContext& ctx = AffineContext::current();
  const std::vector<float> xf = values(x, n), wf = weights(w, n);
  std::vector<float> of(n);
  ref::rmsnorm(of.data(), xf.data(), wf.data(), n, eps);
  // m = sum x^2 / n + eps, then r = 1 / sqrt(m), then y_j = x_j r w_j.
  AffBuilder b(ctx);
  for (int j = 0; j < n; ++j) b.add_product(x[j], x[j], 1.0);
  const Aff ss = b.finish(0.0f, 0.0);
  const double inv_n = 1.0 / n;
  b.add_center(ss.c * inv_n);
  b.add_terms(ss, inv_n);
  b.add_center(eps);
  const Aff m = b.finish(0.0f, 0.0);
  std::vector<double> xc(n), xr(n);
  for (int j = 0; j < n; ++j) {
    xc[j] = x[j].c;
    xr[j] = x[j].r;
  }
  const std::vector<double> rounding = rmsnorm_bounds_box(xc, xr, wf, eps);
  if (!(m.r < kInf) || !(sub_dn(m.c, m.r) > 0)) {
    for (int j = 0; j < n; ++j) out[j] = vacuous(of[j]);
    return;
  }
  const Aff r = apply(b, m, linearise_rsqrt(m));
  std::vector<Aff> y(n);
  for (int j = 0; j < n; ++j) {
    b.add_product(x[j], r, wf[j]);
    y[j] = b.finish(of[j], rounding[j]);
  }
  std::move(y.begin(), y.end(), out);
}

void rope(Aff* x, int n_heads, int head_dim, const float* cos, const float* sin) {
  AffineContext& ctx = AffineContext::current();
  const int half = head_dim / 2;
  std::vector<float> xf = values(x, static_cast<size_t>(n_heads) * head_dim);
  ref::rope(xf.data(), n_heads, head_dim, cos, sin);
  AffBuilder b(ctx);
  for (int h = 0; h < n_heads; ++h) {
    Aff* v = x + static_cast<size_t>(h) * head_dim;
    const float* vf = xf.data() + static_cast<size_t>(h) * head_dim;
    for (int i = 0; i < half; ++i) {
      // x0 c - x1 s and x0 s + x1 c: two-term dot products with the table's constants (B3).
      const Aff pair[2] = {v[i], v[i + half]};
      const float first[2] = {cos[i], -sin[i]}, second[2] = {sin[i], cos[i]};
      v[i] = dot_const(b, pair, first, 2, vf[i]);
      v[i + half] = dot_const(b, pair, second, 2, vf[i + half]);
    }
  }
}

void attention_head(Aff* out, const Aff* q, const Aff* k, const Aff* v, int n_pos, int stride, int head_dim,
                    Aff* /*att*/, const unsigned char* mask) {
  if (mask != nullptr) throw std::logic_error("bounds: attention masks are not covered (spec/leakage.md L3)");
  AffineContext& ctx = AffineContext::current();
  const int d = head_dim;
  const size_t nd = static_cast<size_t>(n_pos) * d;
  // The float reference's head, on contiguous copies of the float values.
  std::vector<float> qf = values(q, d), kf(nd), vf(nd), of(d), attf(n_pos);
  std::vector<double> qc(d), qr(d), kc(nd), kr(nd), vc(nd), vr(nd);
  double v_sum = 0;  // bounds every partial sum of weights (<= 1 each) times values
  for (int i = 0; i < d; ++i) {
    qc[i] = q[i].c;
    qr[i] = q[i].r;
  }
  for (int p = 0; p < n_pos; ++p)
    for (int i = 0; i < d; ++i) {
      const Aff& kk = k[static_cast<size_t>(p) * stride + i];
      const Aff& vv = v[static_cast<size_t>(p) * stride + i];
      const size_t o = static_cast<size_t>(p) * d + i;
      kf[o] = kk.v;
      vf[o] = vv.v;
      kc[o] = kk.c;
      kr[o] = kk.r;
      vc[o] = vv.c;
      vr[o] = vv.r;
      v_sum = add_up(v_sum, add_up(std::fabs(vv.c), vv.r));
    }
  ref::attention_head(of.data(), qf.data(), kf.data(), vf.data(), n_pos, d, d, attf.data());
  const std::vector<double> rounding =
      attention_bounds_box(qc.data(), qr.data(), kc.data(), kr.data(), vc.data(), vr.data(), n_pos, d, d,
                           attn_rounding_any(n_pos));
  auto give_up = [&] {
    for (int i = 0; i < d; ++i) out[i] = vacuous(of[i]);
  };
  for (double e : rounding)
    if (!(e < kInf)) return give_up();
  if (!(v_sum < kNoOverflow)) return give_up();  // B14 assumes the kernel does not overflow

  // Scores s_p = alpha q.k_p, alpha = 1/sqrt(d) in double: |alpha_d - alpha| <= 2^-52 alpha_d.
  const double alpha = 1.0 / std::sqrt(static_cast<double>(d));
  std::vector<Aff> s(n_pos);
  double shift = -kInf, R = 0;
  AffBuilder b(ctx);
  for (int p = 0; p < n_pos; ++p) {
    const Aff* kp = k + static_cast<size_t>(p) * stride;
    double qk_mag = 0;
    for (int i = 0; i < d; ++i) {
      b.add_product(q[i], kp[i], alpha);
      qk_mag = add_up(qk_mag, mul_up(mag(q[i]), mag(kp[i])));
    }
    b.add_rem(mul_up(mul_up(0x1p-51, alpha), qk_mag));
    if (!(qk_mag < kNoOverflow)) b.add_rem(kInf);  // the kernel's dot could overflow
    s[p] = b.finish(0.0f, 0.0);
    if (!(s[p].r < kInf)) return give_up();
    shift = std::max(shift, s[p].c);
    R = std::max(R, s[p].r);  // every score moves by at most R
  }
  // P = softmax(s) linearised at the centres s^ as one op: dP_p = P_p (ds_p - sum_j P_j ds_j),
  // so out_i = y_i + sum_p P_p (v_{p,i} - y_i) ds_p + sum_p P_p dv_{p,i} + remainder. With
  // g(t) = P_p(s^ + t ds), g'' = g ((ds_p - <P, ds>)^2 - Var_P(ds)), |g''| <= 4 R^2 g and
  // g <= P_p(s^) e^{2R}: the Taylor remainder of P_p is <= 2 R^2 e^{2R} P_p(s^), and
  // |P_p(s) - P_p(s^)| <= (e^{2R} - 1) P_p(s^).
  std::vector<double> P(n_pos);
  double sum = 0, dt_max = 0;
  for (int p = 0; p < n_pos; ++p) {
    const double t = s[p].c - shift;  // <= 0
    if (t < -700) return give_up();    // e^t would underflow in double: no relative bound
    dt_max = std::max(dt_max, mul_up(0x1p-53, std::fabs(t)));
    P[p] = std::exp(t);
    sum += P[p];
  }
  for (int p = 0; p < n_pos; ++p) P[p] /= sum;
  // |P^_p - P_p(s^)| <= eps_P P^_p: each e^t within 2^-40 + 2 dt (libm, the rounded t), the sum
  // gamma_n, the division 2^-53; the 1.01 covers the products of these small terms.
  const double eta_e = add_up(0x1p-40, mul_up(2.0, dt_max));
  const double eps_p = mul_up(1.01, add_up(mul_up(2.0, eta_e), mul_up(2.0, add_up(gamma53(n_pos + 1), 0x1p-53))));
  const double grow = expm1_up(mul_up(2.0, R));                                     // e^{2R} - 1
  const double taylor = mul_up(mul_up(2.0, mul_up(R, R)), add_up(1.0, grow));        // 2 R^2 e^{2R}
  const double moved = add_up(mul_up(add_up(1.0, eps_p), grow), eps_p);             // |P_p(s) - P^_p| / P^_p
  for (int i = 0; i < d; ++i) {
    double y = 0, y_abs = 0;
    for (int p = 0; p < n_pos; ++p) {
      const double vv = v[static_cast<size_t>(p) * stride + i].c;
      y += P[p] * vv;
      y_abs = add_up(y_abs, mul_up(P[p], std::fabs(vv)));
    }
    // |y^ - y(s^)| <= (eps_P + gamma_{n+1}) sum P^|v^| (the weights' error and the double sum).
    const double e_y = mul_up(add_up(mul_up(eps_p, 1.01), gamma53(n_pos + 1)), y_abs);
    b.add_center(y, e_y);
    for (int p = 0; p < n_pos; ++p) {
      const Aff& vp = v[static_cast<size_t>(p) * stride + i];
      const double dv = vp.c - y;
      b.add_terms(s[p], P[p] * dv);
      b.add_terms(vp, P[p]);
      // The weights' own error (P^ and y^ stand for P(s^) and y(s^)), the Taylor remainder,
      // and the product of the moves of P_p and v_{p,i}.
      const double w_err = add_up(mul_up(mul_up(eps_p, P[p]), add_up(std::fabs(dv), e_y)), mul_up(P[p], e_y));
      b.add_rem(mul_up(mul_up(w_err, 1.01), s[p].r));
      b.add_rem(mul_up(mul_up(eps_p, P[p]), vp.r));
      // The Taylor remainders rho_p sum to 0 (so do P and its linear part), so sum_p rho_p v_p =
      // sum_p rho_p (v_p - y) for the constant y.
      b.add_rem(mul_up(mul_up(taylor, mul_up(P[p], add_up(1.0, eps_p))), std::fabs(dv)));
      b.add_rem(mul_up(mul_up(moved, P[p]), vp.r));
    }
    out[i] = b.finish(of[i], rounding[i]);
  }
}

void geglu(Aff*, const Aff*, const Aff*, int) {
  throw std::logic_error("the end-to-end bounds cover the llama block only: GeGLU (spec/model.md M17) has no rule");
}

void scale_inplace(Aff*, float, int) {
  throw std::logic_error("the end-to-end bounds cover the llama block only: the embedding scale (spec/model.md M18) has no rule");
}

void swiglu(Aff* out, const Aff* gate, const Aff* up, int n) {
  AffineContext& ctx = AffineContext::current();
  const std::vector<float> gf = values(gate, n), uf = values(up, n);
  std::vector<float> of(n);
  ref::swiglu(of.data(), gf.data(), uf.data(), n);
  AffBuilder b(ctx);
  for (int j = 0; j < n; ++j) {
    const double rounding = swiglu_bound_box(gate[j].c, gate[j].r, up[j].c, up[j].r);
    const Aff sg = apply(b, gate[j], linearise_silu(gate[j]));
    b.add_product(sg, up[j], 1.0);
    out[j] = b.finish(of[j], rounding);  // out may alias gate: gate[j] is not read again
  }
}

void kv_round_row(Aff* row, int n, int /*head_dim*/, KvType t) {
  if (t == KvType::kF32) return;
  AffineContext& ctx = AffineContext::current();
  const std::vector<float> rounded = kv_round_trip(t, values(row, static_cast<size_t>(n)));
  std::vector<double> m(static_cast<size_t>(n));
  for (int j = 0; j < n; ++j) m[j] = mag(row[j]);
  const std::vector<double> eps = kv_round_bounds_box(t, m);  // q8_0: blocks from row[0], whole heads (S7)
  AffBuilder b(ctx);
  for (int j = 0; j < n; ++j) {
    if (!(eps[j] < kInf)) {
      row[j] = vacuous(rounded[j]);
      continue;
    }
    b.add_center(row[j].c);
    b.add_terms(row[j], 1.0);
    row[j] = b.finish(rounded[j], eps[j]);
  }
}

void add_inplace(Aff* x, const Aff* y, int n) {
  AffineContext& ctx = AffineContext::current();
  AffBuilder b(ctx);
  for (int j = 0; j < n; ++j) {
    const float v = x[j].v + y[j].v;
    const double c = x[j].c + y[j].c;
    // |fl(a + b) - (a + b)| <= u |a + b|, and |a + b| <= |c| (1 + 2^-52) + r_x + r_y.
    const double m = add_up(add_up(mul_up(std::fabs(c), 1.0 + 0x1p-52), x[j].r), y[j].r);
    b.add_center(x[j].c);
    b.add_center(y[j].c);
    b.add_terms(x[j], 1.0);
    b.add_terms(y[j], 1.0);
    x[j] = b.finish(v, mul_up(kU, m));
  }
}

}  // namespace akv::bounds
