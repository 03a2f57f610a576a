// The K/V rounding of a cache type (spec/bounds.md B18) and the clauses it enters: B4's score
// with a stored key, B7's weighted sum with stored values, B14's attention head over a typed
// cache. Each is a bound against the exact value on the UNROUNDED float32 rows (the model whose
// cache keeps every key and value exactly), evaluated with outward rounding like B1-B14.
#pragma once
#include <span>
#include <vector>

#include "reference/kv_types.hpp"
#include "verify/bounds/op_bounds.hpp"

namespace akv::bounds {

/// B18. |read(store_t(x)) - x| for one element x, |x| <= x_abs, of a row whose q8_0 block holds
/// values of magnitude <= block_amax (>= x_abs; ignored for f16). f32: 0. f16: 2^-11 x_abs +
/// 2^-25, +inf from 65520 on. q8_0: (d(1 + 2^-11) + 2^-25)(1/2 + eta) + x_abs ((1 + u)^2
/// (1 + 2^-11) - 1) + 127 (1 + u)^2 / (1 - u) 2^-25 with d = (block_amax / 127)(1 + u); 0 for a
/// zero block; +inf when that d reaches 65520 (the binary16 scale would overflow).
double kv_round_bound(KvType t, double x_abs, double block_amax);

/// B18 of every element of a stored row x (n,) (q8_0: n a multiple of 32, blocks from x[0]).
std::vector<double> kv_round_bounds(KvType t, std::span<const float> x);

/// B18 over a box: element j of magnitude <= mag[j] (n,; q8_0 blocks from mag[0]). B11's rule.
std::vector<double> kv_round_bounds_box(KvType t, std::span<const double> mag);

/// The float32 values attention reads after storing x as type t (S6-S8): decode(encode(x)).
std::vector<float> kv_round_trip(KvType t, std::span<const float> x);

/// B4 with a stored key: the score q . k~ / sqrt(d) a backend computes from the stored key k~ of
/// the unrounded key k (d,; q8_0: d a multiple of 32), against the exact q . k / sqrt(d):
/// score_bound(q, k~) + sum_i |q_i| eps_i / sqrt(d), eps = B18 of k.
double score_bound_kv(std::span<const float> q, std::span<const float> k, KvType t);

/// B7 with stored values: sum_p a_p v~_p of one output element against the exact sum_p a_p v_p,
/// given the stored column v~ (at v_col[p * stride]) and B18 of each unrounded value (eps[p *
/// eps_stride]): B1 of (a, v~) + sum_p |a_p| eps_p.
double weighted_sum_bound_kv(std::span<const float> a, const float* v_col, int stride, const double* eps, int eps_stride);

/// B14 over a typed cache: one query head q (d,) over the UNROUNDED keys and values k, v (n rows
/// of d at p * stride; q8_0: d a multiple of 32, each row's head slice its own blocks), a kernel
/// rounding as `how` says on the stored rows k~, v~, against the exact attention on k, v:
/// B14(q, k~, v~) + sum_p U_p eps^V_{p,i} + (e^{2 sigma_K} - 1) sum_p U_p (|v~_{p,i}| + eps^V_{p,i}),
/// sigma_K = max_p sum_i |q_i| eps^K_{p,i} / sqrt(d), U_p >= softmax(q . k~ / sqrt d)_p.
std::vector<double> attention_bounds_kv(const float* q, const float* k, const float* v, int n_keys, int stride, int head_dim,
                                        AttnRounding how, KvType t);

}  // namespace akv::bounds
