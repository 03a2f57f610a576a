// The reference ops, one small function each (spec/model.md M6-M10). Plain loops, every
// reduction left to right from T(0): this order is the reference's arithmetic contract
// (spec/arithmetic.md A2). Written once over the scalar type T (float, the MPFR oracle, ...).
#pragma once
#include <cmath>
#include <cstddef>

#include "reference/scalar.hpp"

namespace akv::ref {

/// out (d,) = W (d, n) @ x (n,). M8. out must not alias x. W may be of another scalar type
/// than x (float weights under an interval oracle, spec/bounds.md B17); each product is W * T.
template <class T, class Wt = T>
void matmul(T* out, const T* x, const Wt* W, int n, int d) {
  for (int i = 0; i < d; ++i) {
    const Wt* row = W + static_cast<size_t>(i) * n;
    T acc = T(0);
    for (int j = 0; j < n; ++j) acc = acc + row[j] * x[j];
    out[i] = acc;
  }
}

/// out (n,) = x / sqrt(mean(x^2) + eps) * w. M7 (Zhang & Sennrich, RMSNorm, 2019). w may be of
/// another scalar type than x, as in matmul.
template <class T, class Wt = T>
void rmsnorm(T* out, const T* x, const Wt* w, int n, float eps) {
  T ss = T(0);
  for (int j = 0; j < n; ++j) ss = ss + x[j] * x[j];
  const T inv = T(1) / ScalarOps<T>::sqrt(ss / T(n) + T(eps));
  for (int j = 0; j < n; ++j) out[j] = (x[j] * inv) * w[j];
}

/// Rotates each of `n_heads` heads of x (n_heads, head_dim) in place, rotate-half. M6.
/// cos, sin: (head_dim/2,) rows of the one RopeTable at this token's position.
template <class T>
void rope(T* x, int n_heads, int head_dim, const float* cos, const float* sin) {
  const int half = head_dim / 2;
  for (int h = 0; h < n_heads; ++h) {
    T* v = x + static_cast<size_t>(h) * head_dim;
    for (int i = 0; i < half; ++i) {
      const T x0 = v[i], x1 = v[i + half], c = T(cos[i]), s = T(sin[i]);
      v[i] = x0 * c - x1 * s;
      v[i + half] = x0 * s + x1 * c;
    }
  }
}

/// In-place softmax of x (n,), max-subtracted. M9. n >= 1.
template <class T>
void softmax(T* x, int n) {
  T m = x[0];
  for (int j = 1; j < n; ++j) m = ScalarOps<T>::max(m, x[j]);
  T sum = T(0);
  for (int j = 0; j < n; ++j) {
    x[j] = ScalarOps<T>::exp(x[j] - m);
    sum = sum + x[j];
  }
  for (int j = 0; j < n; ++j) x[j] = x[j] / sum;
}

/// One query head attending causally to keys/values [0, n_pos). M9.
/// q, out: (head_dim,); k, v: the cache rows of one KV head, row p at p*stride.
/// att: scratch (n_pos,). mask: nullptr, or (n_pos,) bytes with mask[n_pos - 1] == 0: a key p
/// with mask[p] != 0 gets the score -inf, hence the weight exp(-inf - max) = +0 exactly, and
/// adds +0 to the sum and 0*v to the output: bitwise the attention over the unmasked keys
/// alone (spec/leakage.md L3).
template <class T>
void attention_head(T* out, const T* q, const T* k, const T* v, int n_pos, int stride,
                    int head_dim, T* att, const unsigned char* mask = nullptr) {
  const T scale = T(1) / ScalarOps<T>::sqrt(T(head_dim));
  for (int p = 0; p < n_pos; ++p) {
    const T* kp = k + static_cast<size_t>(p) * stride;
    T dot = T(0);
    for (int i = 0; i < head_dim; ++i) dot = dot + q[i] * kp[i];
    att[p] = dot * scale;
  }
  if (mask != nullptr)
    for (int p = 0; p < n_pos; ++p)
      if (mask[p]) att[p] = T(-INFINITY);
  softmax(att, n_pos);
  for (int i = 0; i < head_dim; ++i) out[i] = T(0);
  for (int p = 0; p < n_pos; ++p) {
    const T* vp = v + static_cast<size_t>(p) * stride;
    for (int i = 0; i < head_dim; ++i) out[i] = out[i] + att[p] * vp[i];
  }
}

/// SiLU(a) = a / (1 + exp(-a)). M10.
template <class T>
T silu(T a) {
  return a / (T(1) + ScalarOps<T>::exp(-a));
}

/// out (n,) = silu(gate) * up, elementwise. M10 (Shazeer, GLU variants, 2020).
template <class T>
void swiglu(T* out, const T* gate, const T* up, int n) {
  for (int j = 0; j < n; ++j) out[j] = silu(gate[j]) * up[j];
}

/// tanh-GELU (Hendrycks & Gimpel 2016, the tanh form), M17, written with the one exp:
/// 0.5·a·(1 + tanh(y)) = a / (1 + exp(-2y)) exactly in the reals, y = sqrt(2/pi)·(a + 0.044715·a³).
/// Float ops, in order: a3 = (a·a)·a; z = fl(2·sqrt(2/pi)) · (a + fl(0.044715)·a3);
/// out = a / (1 + exp(-z)). exp(-z) = +inf for z very negative gives -0 or +0 (the limit 0).
template <class T>
T gelu_tanh(T a) {
  const T a3 = (a * a) * a;
  const T z = T(1.5957691216057308f) * (a + T(0.044715f) * a3);
  return a / (T(1) + ScalarOps<T>::exp(-z));
}

/// out (n,) = gelu_tanh(gate) * up, elementwise. M17 (GeGLU, Shazeer 2020). out may alias gate.
template <class T>
void geglu(T* out, const T* gate, const T* up, int n) {
  for (int j = 0; j < n; ++j) out[j] = gelu_tanh(gate[j]) * up[j];
}

/// x (n,) *= s elementwise, one IEEE multiplication each: the embedding scale of M18.
template <class T>
void scale_inplace(T* x, float s, int n) {
  for (int j = 0; j < n; ++j) x[j] = x[j] * T(s);
}

/// x (n,) += y (n,). The residual add of M11, and M14's bias add (y then the weights' scalar
/// type, as in matmul).
template <class T, class Y = T>
void add_inplace(T* x, const Y* y, int n) {
  for (int j = 0; j < n; ++j) x[j] = x[j] + y[j];
}

}  // namespace akv::ref
