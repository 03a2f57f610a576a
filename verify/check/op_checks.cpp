#include "verify/check/op_checks.hpp"

#include <cmath>
#include <cstring>

#include "optimized/cpu/kernels.hpp"
#include "reference/rope.hpp"
#include "verify/check/edges.hpp"
#include "verify/check/same_bits.hpp"
#include "verify/oracle/exact_sum.hpp"
#include "verify/oracle/oracle_forward.hpp"
#include "verify/oracle/real.hpp"

namespace akv::check {

namespace {

// A check against the reference does not apply to the reference itself.
bool is_reference(const OpTable& t, Report& r) {
  if (t.label == reference_ops().label) r.skipped = "the reference compared with itself checks nothing";
  return !r.skipped.empty();
}

std::string shape(int M, int n, int d) { return std::to_string(M) + "x" + std::to_string(n) + "x" + std::to_string(d); }

// Uniform floats in [lo, hi) from a seed.
std::vector<float> uniform(size_t n, uint64_t seed, float lo, float hi) {
  std::vector<float> v = family_values(Family::kPlain, n, seed);  // [-2, 2)
  for (float& x : v) x = lo + (x + 2.0f) * 0.25f * (hi - lo);
  return v;
}

// One head of a at its last position, through t's attention op (M = 1, one head).
std::vector<float> attention_head(const OpTable& t, const AttnInput& a) {
  std::vector<float> out(a.d, NAN);
  t.attention(out.data(), a.q.data(), a.k.data(), a.v.data(), 1, a.n - 1, 1, 1, a.d);
  return out;
}

// The MPFR oracle's own error is below 2^-200 of the bound it is compared with (B12).
bool within(double err, double bound) { return err <= bound * (1 + 0x1p-200); }

}  // namespace

// ---- The reference's bits where every conforming order rounds alike

Report matmul_integers_equal_reference(const OpTable& t) {
  Report r;
  if (is_reference(t, r)) return r;
  for (const MatmulShape& s : matmul_edge_shapes()) {
    const auto X = int_values(static_cast<size_t>(s.M) * s.n, s.M + s.n, s.k), W = int_values(static_cast<size_t>(s.d) * s.n, s.d, s.k);
    std::vector<float> Y(static_cast<size_t>(s.M) * s.d, NAN), R(Y.size(), NAN);
    t.matmul(Y.data(), X.data(), W.data(), s.M, s.n, s.d);
    reference_ops().matmul(R.data(), X.data(), W.data(), s.M, s.n, s.d);
    r.same(same_bits(Y, R).what(), "matmul " + shape(s.M, s.n, s.d));
    bool any = false;  // an all-zero result must not pass
    for (float y : Y) any = any || y != 0.0f;
    r.expect(any, "every output is zero", "matmul " + shape(s.M, s.n, s.d));
  }
  return r;
}

Report rmsnorm_integers_equal_reference(const OpTable& t) {
  Report r;
  if (is_reference(t, r)) return r;
  // 64 rows a width, each at its own scale: ss is exact in every order, and ss / n differs
  // from ss * (1/n) on some rows of every width that is not a power of two.
  constexpr int kRows = 64;
  std::vector<int> e(kRows);
  for (int i = 0; i < kRows; ++i) e[i] = i % 4 == 3 ? (i * 37) % 81 - 40 : -(i % 7);
  std::vector<int> widths = boundaries(reduction_lanes(), {1, 2, 4, 24});
  widths.insert(widths.end(), {1, 3, 5, 7, 8});
  for (int w : layer_widths())
    if (w <= 2048) widths.push_back(w);
  for (int n : widths) {
    const auto x = exact_square_rows(kRows, n, n + 2, e), w = uniform(n, n + 1, 0.75f, 1.5f);
    for (float eps : {1e-5f, 1e-6f}) {
      std::vector<float> a(x.size(), NAN), b(x.size(), NAN);
      t.rmsnorm(a.data(), x.data(), w.data(), kRows, n, eps);
      reference_ops().rmsnorm(b.data(), x.data(), w.data(), kRows, n, eps);
      r.same(same_bits(a, b).what(), "rmsnorm n " + std::to_string(n) + " eps " + std::to_string(eps));
    }
  }
  return r;
}

Report rope_equals_reference(const OpTable& t) {
  Report r;
  if (is_reference(t, r)) return r;
  const int heads = 3, M = 40;
  for (int hd : cpu::kAttentionCheckHeadDims) {
    const RopeTable tab = make_rope_table(hd, 10000.0f, 5000);
    for (int pos0 : {0, 1, 777, 5000 - M}) {
      auto x = uniform(static_cast<size_t>(M) * heads * hd, hd + pos0, -4.0f, 4.0f), y = x;
      std::vector<int32_t> pos(M);
      for (int r = 0; r < M; ++r) pos[r] = pos0 + r;
      t.rope(x.data(), M, heads, hd, pos.data(), tab.cos_rows(tab.max_pos), tab.sin_rows(tab.max_pos));
      reference_ops().rope(y.data(), M, heads, hd, pos.data(), tab.cos_rows(tab.max_pos), tab.sin_rows(tab.max_pos));
      r.same(same_bits(x, y).what(), "rope hd " + std::to_string(hd) + " rows from position " + std::to_string(pos0));
    }
  }
  return r;
}

Report swiglu_add_equal_reference(const OpTable& t) {
  Report r;
  if (is_reference(t, r)) return r;
  for (int n : {5, 64, 688, 2048, 4096}) {
    auto g = uniform(n, n, -120.0f, 120.0f);
    const auto u = uniform(n, n + 1, -3.0f, 3.0f);
    for (int j = 0; j < n; j += 3) g[j] *= 1.0f / 64;  // the ordinary range too
    std::vector<float> a(n, NAN), b(n, NAN);
    t.swiglu(a.data(), g.data(), u.data(), n);
    reference_ops().swiglu(b.data(), g.data(), u.data(), n);
    r.same(same_bits(a, b).what(), "swiglu n " + std::to_string(n));
    a = g;
    b = g;
    t.add(a.data(), u.data(), n);
    reference_ops().add(b.data(), u.data(), n);
    r.same(same_bits(a, b).what(), "add n " + std::to_string(n));
  }
  return r;
}

Report attention_dominant_key_equals_reference(const OpTable& t) {
  Report r;
  if (is_reference(t, r)) return r;
  const OpTable& R = reference_ops();
  // Positions on and either side of every key block's and split's edge, in a partial fifth block.
  const int n = 5 * key_blocks().back() - 20;
  std::vector<int> at_edges{0, 5, n - 1};
  for (int b : key_blocks()) at_edges.insert(at_edges.end(), {b - 1, b, 2 * b + 2});
  // One head: q = 1024 e_1, key p's second element +-1: the winner's score exceeds the
  // others' by 2048 / sqrt(hd). Queries at several positions, the winner among [0, pos].
  for (int hd : cpu::kAttentionCheckHeadDims) {
    std::vector<float> k(static_cast<size_t>(n) * hd, 0.0f), q(hd, 0.0f);
    const auto v = uniform(static_cast<size_t>(n) * hd, 9, -5.0f, 5.0f);
    q[1] = 1024.0f;
    for (int pos : at_edges) {
      const int winner = (pos * 7) % (pos + 1);
      for (int p = 0; p <= pos; ++p) k[static_cast<size_t>(p) * hd + 1] = (p == winner) ? 1.0f : -1.0f;
      std::vector<float> out(hd, NAN), ref(hd, NAN);
      t.attention(out.data(), q.data(), k.data(), v.data(), 1, pos, 1, 1, hd);
      R.attention(ref.data(), q.data(), k.data(), v.data(), 1, pos, 1, 1, hd);
      const std::string at = "hd " + std::to_string(hd) + " pos " + std::to_string(pos);
      r.same(same_bits(out, ref).what(), at);
      r.expect(std::memcmp(out.data(), v.data() + static_cast<size_t>(winner) * hd, hd * sizeof(float)) == 0,
               "the output is not the winning key's value row", at);
    }
  }
  // Two query heads on one KV head, q = 1, small-integer keys with one hot row of 200s (score
  // 3200 / 4 = 800), the hot key in the first, a middle and the last (partial) block or split,
  // and either side of each block edge.
  const int heads = 2, hd = 16;
  const std::vector<float> q(heads * hd, 1.0f);
  for (int hot : at_edges) {
    auto k = int_values(static_cast<size_t>(n) * hd, hot, 2);
    for (int i = 0; i < hd; ++i) k[static_cast<size_t>(hot) * hd + i] = 200.0f;
    const auto v = uniform(static_cast<size_t>(n) * hd, hot + 1, -5.0f, 5.0f);
    std::vector<float> out(heads * hd, NAN), ref(heads * hd, NAN);
    t.attention(out.data(), q.data(), k.data(), v.data(), 1, n - 1, heads, 1, hd);
    R.attention(ref.data(), q.data(), k.data(), v.data(), 1, n - 1, heads, 1, hd);
    const std::string at = "two heads, hot key " + std::to_string(hot);
    r.same(same_bits(out, ref).what(), at);
    r.expect(std::memcmp(out.data(), v.data() + static_cast<size_t>(hot) * hd, hd * sizeof(float)) == 0,
             "the output is not the hot key's value row", at);
  }
  return r;
}

Report attention_uniform_equals_reference(const OpTable& t) {
  Report r;
  if (is_reference(t, r)) return r;
  const int heads = 4, kvh = 2, hd = 8;
  std::vector<int> lengths{1, 2, 4};  // powers of two: 1/n is exact; up to eight blocks or splits
  for (int b : key_blocks())
    for (int m : {1, 2, 4, 8}) lengths.push_back(b * m);
  for (int n : lengths) {
    const auto k = uniform(static_cast<size_t>(n) * kvh * hd, n, -1.0f, 1.0f), v = int_values(static_cast<size_t>(n) * kvh * hd, n + 3, 50);
    const std::vector<float> q(heads * hd, 0.0f);
    std::vector<float> out(heads * hd, NAN), ref(heads * hd, NAN);
    t.attention(out.data(), q.data(), k.data(), v.data(), 1, n - 1, heads, kvh, hd);
    reference_ops().attention(ref.data(), q.data(), k.data(), v.data(), 1, n - 1, heads, kvh, hd);
    r.same(same_bits(out, ref).what(), "uniform scores over " + std::to_string(n) + " keys");
  }
  return r;
}

// ---- Within its own bound of the exact value

std::string head_within_b14_of_exact(const float* out, const AttnInput& a, const bounds::AttnRounding& rounding,
                                     Closeness* tally) {
  const auto ex = oracle::exact_attention_head(a.q.data(), a.k.data(), a.v.data(), a.n, a.d);
  const auto b = bounds::attention_bounds(a.q.data(), a.k.data(), a.v.data(), a.n, a.d, a.d, rounding);
  for (int i = 0; i < a.d; ++i) {
    const double err = std::isfinite(out[i]) ? oracle::abs_err_up(out[i], ex[i]) : INFINITY;
    const std::string at = " at element " + std::to_string(i) + " (" + std::to_string(out[i]) + ") of n = " +
                           std::to_string(a.n) + ", d = " + std::to_string(a.d);
    if (!std::isfinite(b[i])) return "the bound is not finite" + at;
    if (!within(err, b[i])) return "error " + std::to_string(err) + " > B14 " + std::to_string(b[i]) + at;
    if (tally) tally->add(err, 0, b[i]);
  }
  return "";
}

std::string attention_vs_exact(const OpTable& t, const AttnInput& a, Closeness* tally) {
  const auto out = attention_head(t, a);
  const std::string failed = head_within_b14_of_exact(out.data(), a, t.attention_rounding(a.n), tally);
  return failed.empty() ? "" : t.label + ": " + failed;
}

Report attention_long_within_b14_of_exact(const OpTable& t) {
  Report r;
  Closeness c;
  for (int n : {2048, 4100})
    for (Family vf : {Family::kPlain, Family::kCancel, Family::kDeep}) {
      const AttnInput a = attn_input(n, 8, 1.0f, Family::kPlain, vf, static_cast<uint64_t>(n) + static_cast<int>(vf));
      r.same(attention_vs_exact(t, a, &c), std::to_string(n) + " keys, values " + family_name(vf));
    }
  r.expect(c.nonzero > 0, "every error is 0: the case is exact and checks no rounding");
  r.observed.push_back({"B14 long, " + t.label + " vs exact", c});
  return r;
}

}  // namespace akv::check
