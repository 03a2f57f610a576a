// Per-op error bounds (spec/bounds.md B1-B9, B14): for each op a backend computes, a bound B on
// |op_float - op_exact| over the op's float32 inputs, valid for ANY summation order, with or
// without FMA, with gradual underflow. Two conforming backends given identical inputs thus
// differ by at most 2 B (B10). All sizes are element counts; every result is an upper bound
// computed with outward rounding (verify/bounds/rigorous.hpp); +inf when an assumption of the
// clause fails (n u >= 1/2, a zero RMS denominator, overflow).
#pragma once
#include <span>
#include <vector>

namespace akv::bounds {

/// B1 given sum_abs >= sum|x_i y_i|: gamma_n sum_abs + (1 + gamma_n) n 2^-150. Valid for any
/// inputs whose sum of |products| is at most sum_abs (a box of inputs: its upper magnitudes).
double dot_bound_from_abs(double sum_abs, int n);

/// B1. Dot product x (n,) . y (n,), x[i*sx], y[i*sy]: gamma_n sum|x_i y_i| +
/// (1 + gamma_n) n 2^-150. A matmul row is one dot product (Higham §3.1, eq. 3.5).
double dot_bound(const float* x, int sx, const float* y, int sy, int n);
/// An upper bound of sum|x_i y_i| over x, y (n,), fast enough for every row of a real model's
/// matmuls (B16): each |x_i y_i| is exact in double, the sum runs in eight partial sums in
/// round-to-nearest double (error <= gamma53(n) of the sum in any order), then it is divided
/// by 1 - gamma53(n) rounded outward. dot_bound_from_abs(abs_dot_up(x, y, n), n) >= B1.
double abs_dot_up(const float* x, const float* y, int n);

/// sum|x_i y_i| in double, eight partial sums, round to nearest (no outward rounding): within
/// gamma53(n + 8) of the true sum, below or above. abs_dot_up and matmul_bounds widen it.
double abs_dot_nearest(const float* x, const float* y, int n);

/// B1 of every output of Y (M, d) = X (M, n) W^T, W (d, n) row-major, into out (M, d):
/// out[m d + j] >= dot_bound(X_m, W_j), from abs_dot_up's sum with gamma_n / (1 - gamma53)
/// and the underflow term taken once per call (two outward roundings an output).
void matmul_bounds(const float* X, const float* W, int M, int n, int d, double* out);

inline double dot_bound(std::span<const float> x, std::span<const float> y) {
  return dot_bound(x.data(), 1, y.data(), 1, static_cast<int>(x.size()));
}

/// B2. RMSNorm y_j = x_j w_j / sqrt(sum x^2 / n + eps): bound of each y_j, x, w (n,).
std::vector<double> rmsnorm_bounds(std::span<const float> x, std::span<const float> w, float eps);

/// B2 maximised over a box: every x_j in [xc_j - xr_j, xc_j + xr_j] (xr >= 0), w fixed.
/// The bound of each y_j holds for every x in the box (B11 uses it on enclosed inputs).
std::vector<double> rmsnorm_bounds_box(std::span<const double> xc, std::span<const double> xr,
                                       std::span<const float> w, float eps);

/// B3. RoPE of one head x (head_dim,) with table rows cos, sin (head_dim/2,): bound of each
/// output element.
std::vector<double> rope_bounds(std::span<const float> x, const float* cos, const float* sin);

/// B4. Score q (d,) . k (d,) / sqrt(d).
double score_bound(std::span<const float> q, std::span<const float> k);

/// B4 given sum_abs >= sum|q_i k_i| and k_abs >= sum|k_i|, d = head_dim.
double score_bound_from_abs(double sum_abs, double k_abs, int d);

/// B5. Max-subtracted exp of scores s (n,): bound of each akv::exp(s_j - max s).
std::vector<double> shifted_exp_bounds(std::span<const float> s);

/// B6. Normalisation p_j = e_j / sum e of e (n,), e_j >= 0, sum e > 0: bound of each p_j,
/// p_j ((1 + u)^2 / (1 - gamma_{n-1}) - 1) + (1 + (1 + u) e_j) 2^-150, for a division or a
/// reciprocal and a product (Coq: B6_normalise_bound).
std::vector<double> normalise_bounds(std::span<const float> e);

/// B5 + B6 composed: the whole softmax of scores s (n,) against the exact softmax of s.
std::vector<double> softmax_bounds(std::span<const float> s);

/// B7. Weighted sum of values sum_p a_p v[p*stride + i] for one output element i:
/// B1 with x = a (n_pos,), y = the value column.
inline double weighted_sum_bound(const float* a, const float* v_col, int n_pos, int stride) {
  return dot_bound(a, 1, v_col, stride, n_pos);
}

/// B8. SwiGLU element silu(g) * up = g up / (1 + e^-g), with akv::exp.
double swiglu_bound(float g, float up);

/// B8 maximised over a box: g in [gc - gr, gc + gr], up in [uc - ur, uc + ur].
double swiglu_bound_box(double gc, double gr, double uc, double ur);

/// B9. Logits: final RMSNorm of the residual x (n,) with weight wn (n,), then W (vocab, n)
/// row-major. Bound of each logit against the exact composite, for any conforming order.
std::vector<double> logits_bounds(std::span<const float> x, std::span<const float> wn, float eps,
                                  std::span<const float> W, int vocab);

/// B14. How a conforming attention kernel rounds one output element of one head over n keys
/// (spec/bounds.md B14). Counts, not sizes: the bound is valid for any kernel whose every
/// key weight and every term obey them.
struct AttnRounding {
  int k = 0;  // relative roundings on any term's path into the numerator or the denominator
              // (products, FMAs, additions, rescaling products, a distributed normalisation)
  int r = 0;  // rescalings of a key's weight: akv::exp of a difference of two running maxima
  int a = 0;  // absolute (underflow) events on the path to the output element, each <= 2^-150
};

/// B14 counts of the reference (spec/model.md M9, arithmetic.md A2): e_p / S then a_p v_p
/// summed left to right: k = n + 2, r = 0, a = 2n. n_keys >= 1.
AttnRounding attn_rounding_reference(int n_keys);
/// B14 counts of an online-softmax kernel in key blocks of `block` (spec/kernels-cpu.md K4),
/// B = ceil(n / block) blocks, each block's l_b, acc_b summed from +0 and folded into l, acc by
/// one FMA with alpha per block: k = min(n, block) + B, r = B - 1, a = n + 2B.
AttnRounding attn_rounding_online(int n_keys, int block);
/// B14 counts of a split-KV kernel with splits of `split` keys merged by FMA chains
/// (spec/kernels-cuda.md G5), C = ceil(n / split): k = min(n, split) + C, r = 1, a = n + 2C.
AttnRounding attn_rounding_split(int n_keys, int split);
/// B14 counts that cover every kernel above, whatever its block or split size (the gate's
/// model of a plugin, spec/gate.md GT3): k = 2n + 2, r = n, a = 3n.
AttnRounding attn_rounding_any_block(int n_keys);

/// B14. Attention output of one query head, q (head_dim,) over keys and values k, v
/// (n_keys rows of head_dim, row p at p * stride), scores q.k_p / sqrt(head_dim) computed as
/// in B4: bound of each output element (head_dim,) of any kernel rounding as `how` says,
/// against the exact sum_p softmax(q.K / sqrt(d))_p v_p. +inf when an assumption fails.
std::vector<double> attention_bounds(const float* q, const float* k, const float* v, int n_keys, int stride,
                                     int head_dim, AttnRounding how);

/// B14 maximised over a box: q_i in qc_i +- qr_i (head_dim,), k and v rows p (n_keys) at
/// p * stride in kc +- kr, vc +- vr. Each output element's bound holds for every q, K, V in
/// the box and every kernel rounding as `how` says (B11 uses it on enclosed inputs).
std::vector<double> attention_bounds_box(const double* qc, const double* qr, const double* kc, const double* kr,
                                         const double* vc, const double* vr, int n_keys, int stride, int head_dim,
                                         AttnRounding how);

}  // namespace akv::bounds
