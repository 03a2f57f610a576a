// The whole-op rules of the end-to-end enclosure (spec/bounds.md B11). ref::forward_token<Aff>
// (reference/forward.hpp) finds them by argument-dependent lookup: a non-template overload
// beats the reference's template, so the reference's dataflow (layers, cache, GQA, positions)
// runs unchanged while every op M7-M11 is replaced by its rule here. The rules are per op,
// not per scalar operation, because a conforming backend is defined per op: each op's float
// output lies within that op's proven bound (B1-B8, B14) of the exact op on the backend's own
// float inputs, in any summation order.
//
// Each rule, for output y = f(inputs):
//   float value  ref::op<float> on the inputs' float values (the reference's bits);
//   form         f linearised around the input centres (exactly, for the linear ops), with
//                the remainder of every nonlinear step (products, exp, 1/x, 1/sqrt x, SiLU)
//                bounded over the inputs' boxes;
//   rounding     a fresh rounding symbol whose coefficient is the op's B-clause bound
//                maximised over the inputs' boxes (op_bounds.hpp, *_box).
// The active AffineContext (AffineScope) holds the symbols. Every rule returns vacuous forms
// (r = +inf) when an assumption fails (a denominator's box reaching 0).
#pragma once
#include "reference/kv_types.hpp"
#include "verify/bounds/affine.hpp"
#include "verify/bounds/op_bounds.hpp"

namespace akv::bounds {

/// B14 counts covering every attention kernel akv has over n keys: componentwise max of the
/// reference, the online kernel in blocks of 64 (K4) and split-KV with splits of 64 (G5).
AttnRounding attn_rounding_any(int n_keys);

/// 1/sqrt(x) linearised over x's box (x.c - x.r > 0): M2 = (3/4) (x.c - x.r)^(-5/2).
Linearised linearise_rsqrt(const Aff& x);
/// silu(g) = g / (1 + e^-g) linearised over g's box: M2 = 1/2, as |silu''| <= 1/2 everywhere
/// (silu'' = s(1 - s)(2 - g tanh(g/2)), s = sigmoid(g): s(1 - s) <= 1/4, g tanh(g/2) >= 0, and
/// s(1 - s) g tanh(g/2) <= |g| / (4 cosh^2(g/2)) < 1/4).
Linearised linearise_silu(const Aff& g);

/// M8 matmul, out (d,) = W (d, n) x (n,). Rounding: B1 (any order, FMA or not).
void matmul(Aff* out, const Aff* x, const Aff* W, int n, int d);
/// M7 RMSNorm of x (n,) with weight w (n,). Rounding: B2 over the box.
void rmsnorm(Aff* out, const Aff* x, const Aff* w, int n, float eps);
/// M6 RoPE of n_heads heads of x (n_heads, head_dim) in place. Rounding: B3 (two-term dots).
void rope(Aff* x, int n_heads, int head_dim, const float* cos, const float* sin);
/// M9 one query head over n_pos cached keys/values (row p at p * stride), fused: scores,
/// softmax and the weighted sum as one op. Rounding: B14 with attn_rounding_any. att: unused.
/// mask: must be nullptr (the bounds cover unmasked attention only; spec/leakage.md L3);
/// a mask throws std::logic_error.
void attention_head(Aff* out, const Aff* q, const Aff* k, const Aff* v, int n_pos, int stride, int head_dim,
                    Aff* att, const unsigned char* mask = nullptr);
/// M10 out = silu(gate) * up, elementwise (out may alias gate). Rounding: B8 over the box.
void swiglu(Aff* out, const Aff* gate, const Aff* up, int n);
/// M17 GeGLU and M18's embedding scale: the end-to-end bounds cover the llama block only
/// (Config::extended() models are refused before any forward); each throws std::logic_error.
void geglu(Aff* out, const Aff* gate, const Aff* up, int n);
void scale_inplace(Aff* x, float s, int n);
/// M11 residual x += y: one IEEE addition each, rounding u |x + y| (A1; no underflow error).
void add_inplace(Aff* x, const Aff* y, int n);
/// The store of a K or V row (n,) = (n_kv_heads, head_dim) into a cache of type t (spec/state.md
/// S6, S7), found by ref::forward_token through argument-dependent lookup: each element keeps its
/// form and gains a rounding symbol of B18's bound over the box (q8_0: over its block's boxes);
/// its float value becomes the stored row's as attention reads it (S8), the reference's bits.
/// f32: nothing changes.
void kv_round_row(Aff* row, int n, int head_dim, KvType t);

}  // namespace akv::bounds
