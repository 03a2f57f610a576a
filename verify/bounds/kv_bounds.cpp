// The formulas of spec/bounds.md B18 and its uses in B4, B7 and B14, with outward rounding.
#include "verify/bounds/kv_bounds.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "verify/bounds/rigorous.hpp"

namespace akv::bounds {

namespace {
constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kU16 = 0x1p-11;     // binary16's unit roundoff (11 significant bits)
constexpr double kHalf16 = 0x1p-25;  // half binary16's subnormal spacing 2^-24

// (1 + u)^2 (1 + 2^-11) - 1: the relative error of x * id * d16 against x (three roundings).
double q8_rel() { return sub_up(mul_up(mul_up(1.0 + kU, 1.0 + kU), 1.0 + kU16), 1.0); }
}  // namespace

double kv_round_bound(KvType t, double x_abs, double block_amax) {
  switch (t) {
    case KvType::kF32: return 0.0;
    case KvType::kF16:
      // Normal binary16: |fl16(x) - x| <= 2^-11 |x| (also from 65504 to 65520, where fl16 = 65504);
      // subnormal: half the spacing 2^-24. 65520 and above round to inf.
      if (!(x_abs < 65520.0)) return kInf;
      return add_up(mul_up(kU16, x_abs), kHalf16);
    case KvType::kQ8_0: {
      if (block_amax == 0) return 0.0;  // a zero block is stored and read as zeros
      const double d = mul_up(div_up(block_amax, 127.0), 1.0 + kU);  // >= fl(amax / 127)
      if (!(d < 65520.0)) return kInf;                                // the binary16 scale would be inf
      const double d16 = add_up(mul_up(d, 1.0 + kU16), kHalf16);      // >= fl16(d)
      // |q - t| d16 <= d16 / 2, and the underflow of t = fl(x id) carried by d16 (eta d16);
      // |t d16 - x| <= |x| ((1+u)^2 (1+2^-11) - 1) + 127 (1+u)^2 / (1-u) 2^-25 (fl16's absolute
      // part through x id, |x| id <= 127 (1+u) / (1-u)).
      const double round_q = mul_up(d16, add_up(0.5, kEta));
      const double scale = mul_up(div_up(mul_up(127.0, mul_up(1.0 + kU, 1.0 + kU)), sub_dn(1.0, kU)), kHalf16);
      return add_up(add_up(round_q, mul_up(x_abs, q8_rel())), scale);
    }
  }
  return kInf;
}

std::vector<double> kv_round_bounds_box(KvType t, std::span<const double> mag) {
  const size_t n = mag.size();
  std::vector<double> out(n, 0.0);
  if (t == KvType::kQ8_0 && n % kKvQ8Block != 0) return std::vector<double>(n, kInf);
  for (size_t b = 0; b < n; b += (t == KvType::kQ8_0 ? kKvQ8Block : n)) {
    const size_t e = t == KvType::kQ8_0 ? b + kKvQ8Block : n;
    double amax = 0;
    for (size_t j = b; j < e; ++j) amax = std::max(amax, mag[j]);
    for (size_t j = b; j < e; ++j) out[j] = kv_round_bound(t, mag[j], amax);
  }
  return out;
}

std::vector<double> kv_round_bounds(KvType t, std::span<const float> x) {
  std::vector<double> mag(x.size());
  for (size_t j = 0; j < x.size(); ++j) mag[j] = std::fabs(static_cast<double>(x[j]));
  return kv_round_bounds_box(t, mag);
}

std::vector<float> kv_round_trip(KvType t, std::span<const float> x) {
  const int n = static_cast<int>(x.size());
  std::vector<uint8_t> b(kv_row_bytes(t, n));
  std::vector<float> out(x.size());
  kv_encode_row(t, x.data(), n, b.data());
  kv_decode_row(t, b.data(), n, out.data());
  return out;
}

double score_bound_kv(std::span<const float> q, std::span<const float> k, KvType t) {
  const std::vector<float> kr = kv_round_trip(t, k);
  const std::vector<double> eps = kv_round_bounds(t, k);
  double shift = 0;  // sum |q_i| eps_i: how far the stored key moves the exact dot
  for (size_t i = 0; i < q.size(); ++i) shift = add_up(shift, mul_up(std::fabs(static_cast<double>(q[i])), eps[i]));
  return add_up(score_bound(q, kr), div_up(shift, sqrt_dn(static_cast<double>(q.size()))));
}

double weighted_sum_bound_kv(std::span<const float> a, const float* v_col, int stride, const double* eps, int eps_stride) {
  const int n = static_cast<int>(a.size());
  double shift = 0;
  for (int p = 0; p < n; ++p)
    shift = add_up(shift, mul_up(std::fabs(static_cast<double>(a[p])), eps[static_cast<size_t>(p) * eps_stride]));
  return add_up(weighted_sum_bound(a.data(), v_col, n, stride), shift);
}

std::vector<double> attention_bounds_kv(const float* q, const float* k, const float* v, int n, int stride, int d,
                                        AttnRounding how, KvType t) {
  std::vector<double> out(static_cast<size_t>(d), kInf);
  if (n < 1 || (t == KvType::kQ8_0 && d % kKvQ8Block != 0)) return out;
  // The stored rows (what every kernel reads) and each element's B18.
  const size_t nd = static_cast<size_t>(n) * d;
  std::vector<float> kt(nd), vt(nd);
  std::vector<double> ek(nd), ev(nd);
  for (int p = 0; p < n; ++p) {
    const std::span<const float> kp(k + static_cast<size_t>(p) * stride, d), vp(v + static_cast<size_t>(p) * stride, d);
    const std::vector<float> a = kv_round_trip(t, kp), b = kv_round_trip(t, vp);
    const std::vector<double> x = kv_round_bounds(t, kp), y = kv_round_bounds(t, vp);
    std::copy(a.begin(), a.end(), kt.begin() + static_cast<ptrdiff_t>(p) * d);
    std::copy(b.begin(), b.end(), vt.begin() + static_cast<ptrdiff_t>(p) * d);
    std::copy(x.begin(), x.end(), ek.begin() + static_cast<ptrdiff_t>(p) * d);
    std::copy(y.begin(), y.end(), ev.begin() + static_cast<ptrdiff_t>(p) * d);
  }
  const std::vector<double> base = attention_bounds(q, kt.data(), vt.data(), n, d, d, how);
  // U_p >= softmax(s~)_p, s~ the exact scores on the stored keys: c_p within tau_p of s~_p.
  const double sq = std::sqrt(static_cast<double>(d)), sq_lo = sqrt_dn(d), gd = gamma53(d + 3);
  std::vector<double> c(n), tau(n);
  double cmax = -kInf, sigma_k = 0;
  for (int p = 0; p < n; ++p) {
    double dot = 0, sabs = 0, shift = 0;
    for (int i = 0; i < d; ++i) {
      const size_t o = static_cast<size_t>(p) * d + i;
      dot += static_cast<double>(q[i]) * kt[o];
      sabs = add_up(sabs, std::fabs(static_cast<double>(q[i]) * kt[o]));
      shift = add_up(shift, mul_up(std::fabs(static_cast<double>(q[i])), ek[o]));
    }
    c[p] = dot / sq;
    tau[p] = mul_up(gd, div_up(sabs, sq_lo));
    cmax = std::max(cmax, c[p]);
    sigma_k = std::max(sigma_k, div_up(shift, sq_lo));  // |s~_p - s_p| for the unrounded key
  }
  if (!std::isfinite(sigma_k) || !std::isfinite(cmax)) return out;
  double den = 0;
  for (int p = 0; p < n; ++p) den = add_dn(den, exp_dn(down(down(c[p] - tau[p]) - cmax)));
  std::vector<double> U(n);
  for (int p = 0; p < n; ++p) U[p] = std::min(1.0, div_up(exp_up(up(up(c[p] + tau[p]) - cmax)), den));
  const double moved = expm1_up(mul_up(2.0, sigma_k));  // |P_p - P~_p| <= (e^{2 sigma_K} - 1) P~_p
  for (int i = 0; i < d; ++i) {
    double values = 0, weights = 0;
    for (int p = 0; p < n; ++p) {
      const size_t o = static_cast<size_t>(p) * d + i;
      values = add_up(values, mul_up(U[p], ev[o]));
      weights = add_up(weights, mul_up(U[p], add_up(std::fabs(static_cast<double>(vt[o])), ev[o])));
    }
    out[static_cast<size_t>(i)] = add_up(add_up(base[static_cast<size_t>(i)], values), mul_up(moved, weights));
  }
  return out;
}

}  // namespace akv::bounds
