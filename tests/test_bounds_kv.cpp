// spec/bounds.md B18: the K/V rounding of a cache type, and B4, B7, B14, B11 with it, each
// against the exact value on the UNROUNDED rows (the MPFR oracle, GMP for the weighted sum): the
// stored element within its bound; a score, a weighted sum and an attention head computed from
// stored rows within the typed bound of the exact op; the end-to-end enclosure of a typed run.
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "bounds_support.hpp"
#include "cpu_support.hpp"
#include "reference/ops.hpp"
#include "verify/bounds/end_to_end.hpp"
#include "verify/bounds/kv_bounds.hpp"
#include "verify/bounds/op_bounds.hpp"
#include "runtime/models.hpp"
#include "verify/oracle/exact_sum.hpp"
#include "verify/oracle/oracle_forward.hpp"
#include "verify/oracle/real.hpp"

using namespace akv;
using namespace akv::bounds;
using akv::oracle::Real;
using akv::test::Family;

namespace {
bool within(double err, double bound) { return err <= bound * (1 + 0x1p-200); }

// Values a cache stores: the bounds families, with the range family kept below binary16's
// overflow (B18 is +inf from 65520 on, and every bound checked here must be finite).
std::vector<float> kv_values(Family f, int n) {
  std::vector<float> v = test::gen_values(f, n);
  if (f == Family::kRange)
    for (float& x : v) {
      int e = 0;
      x = std::ldexp(std::frexp(x, &e) / 2, *rc::gen::inRange(-40, 15));
    }
  return v;
}

rc::Gen<KvType> gen_type() { return rc::gen::element(KvType::kF16, KvType::kQ8_0); }

// d for type t: a multiple of 32 for q8_0 (S5).
int gen_dim(KvType t) { return t == KvType::kQ8_0 ? *rc::gen::element(32, 64, 128) : *rc::gen::element(8, 32, 64, 128); }
}  // namespace

TEST(B18_KvRounding, EveryStoredElementWithinItsBound) {
  // Exact in double: both the float32 value and the stored value are floats.
  SplitMix64 g{18};
  double worst[3] = {0, 0, 0};
  size_t n = 0;
  for (KvType t : {KvType::kF16, KvType::kQ8_0}) {
    for (int row = 0; row < 4000; ++row) {
      std::vector<float> x(64);
      const int kind = row % 5, e = static_cast<int>(g.next() % 56) - 40;
      for (int j = 0; j < 64; ++j) {
        const float u = g.uniform();
        x[j] = kind == 0 ? std::ldexp(u, e)                                          // one binade a row
               : kind == 1 ? std::ldexp(u, static_cast<int>(g.next() % 56) - 40)     // every binade
               : kind == 2 ? (j == 9 ? std::ldexp(1.0f, std::min(e, 15)) : u * 1e-3f) // an outlier
               : kind == 3 ? std::ldexp(u, -26 + static_cast<int>(g.next() % 13))     // binary16 subnormals
                           : 65519.0f * u;                                            // up to the overflow edge
      }
      const std::vector<float> r = kv_round_trip(t, x);
      const std::vector<double> b = kv_round_bounds(t, x);
      for (int j = 0; j < 64; ++j) {
        ASSERT_TRUE(std::isfinite(b[j])) << kv_type_name(t) << " " << x[j];
        const double err = std::fabs(static_cast<double>(r[j]) - static_cast<double>(x[j]));
        ASSERT_LE(err, b[j]) << kv_type_name(t) << " x " << std::hexfloat << x[j] << " stored " << r[j];
        if (err > 0) worst[static_cast<int>(t)] = std::max(worst[static_cast<int>(t)], err / b[j]);
        ++n;
      }
    }
  }
  EXPECT_GT(worst[1], 0.0);
  EXPECT_GT(worst[2], 0.0);
  std::cout << "[ B18 ] " << n << " elements; largest error / bound: f16 " << worst[1] << ", q8_0 " << worst[2] << "\n";
  // The bound's cases: 0 for f32 and for a zero block; +inf at binary16's overflow and at a
  // scale that would overflow it.
  EXPECT_EQ(kv_round_bound(KvType::kF32, 1e30, 1e30), 0.0);
  EXPECT_EQ(kv_round_bound(KvType::kQ8_0, 0.0, 0.0), 0.0);
  EXPECT_TRUE(std::isinf(kv_round_bound(KvType::kF16, 65520.0, 0)));
  EXPECT_TRUE(std::isfinite(kv_round_bound(KvType::kF16, 65519.0, 0)));
  EXPECT_TRUE(std::isinf(kv_round_bound(KvType::kQ8_0, 1.0, 127.0 * 65520.0)));
}

RC_GTEST_PROP(B18_KvRounding, ScoreFromAStoredKeyWithinB4PlusTheKeysRounding, ()) {
  const KvType t = *gen_type();
  const Family f = *test::gen_family();
  const int d = gen_dim(t);
  const auto q = kv_values(f, d), k = kv_values(f, d);
  const std::vector<float> kt = kv_round_trip(t, k);
  float dot = 0;  // the reference's score on the stored key
  for (int i = 0; i < d; ++i) dot = dot + q[i] * kt[i];
  const float s = dot * (1.0f / std::sqrt(static_cast<float>(d)));
  Real e = 0;  // the exact score on the unrounded key
  for (int i = 0; i < d; ++i) e += Real(q[i]) * Real(k[i]);
  e /= boost::multiprecision::sqrt(Real(d));
  const double b = score_bound_kv(q, k, t);
  RC_ASSERT(std::isfinite(b));
  RC_ASSERT(within(oracle::abs_err_up(s, e), b));
}

RC_GTEST_PROP(B18_KvRounding, WeightedSumOfStoredValuesWithinB7PlusTheValuesRounding, ()) {
  const KvType t = *gen_type();
  const int n = *rc::gen::inRange(1, 300), d = 32;
  auto a = test::gen_values(Family::kPlain, n);
  for (auto& x : a) x = std::fabs(x) / static_cast<float>(n);
  const auto v = kv_values(*test::gen_family(), n * d);  // rows of d, column 5 summed
  std::vector<float> vt(v.size());
  std::vector<double> eps(v.size());
  for (int p = 0; p < n; ++p) {
    const std::span<const float> row(v.data() + static_cast<size_t>(p) * d, d);
    const std::vector<float> r = kv_round_trip(t, row);
    const std::vector<double> b = kv_round_bounds(t, row);
    std::copy(r.begin(), r.end(), vt.begin() + static_cast<ptrdiff_t>(p) * d);
    std::copy(b.begin(), b.end(), eps.begin() + static_cast<ptrdiff_t>(p) * d);
  }
  float out = 0;  // the reference's accumulation of one output column on the stored values
  for (int p = 0; p < n; ++p) out = out + a[p] * vt[static_cast<size_t>(p) * d + 5];
  Real e = 0;  // exact on the unrounded values
  for (int p = 0; p < n; ++p) e += Real(a[p]) * Real(v[static_cast<size_t>(p) * d + 5]);
  const double b = weighted_sum_bound_kv(a, vt.data() + 5, d, eps.data() + 5, d);
  RC_ASSERT(std::isfinite(b));
  RC_ASSERT(within(oracle::abs_err_up(out, e), b));
}

RC_GTEST_PROP(B18_KvRounding, HeadOverATypedCacheWithinItsBoundForTheReferenceAndTheCpuKernel, ()) {
  const KvType t = *gen_type();
  const int d = t == KvType::kQ8_0 ? *rc::gen::element(32, 64) : *rc::gen::element(8, 32, 64);
  const int n = *rc::gen::weightedOneOf<int>({{4, rc::gen::inRange(1, 80)}, {1, rc::gen::inRange(64, 300)}});
  auto q = test::gen_values(Family::kPlain, d);
  for (auto& x : q) x *= *rc::gen::element(0.5f, 4.0f);
  const auto k = kv_values(Family::kPlain, n * d), v = kv_values(*test::gen_family(), n * d);
  std::vector<float> kt(k.size()), vt(v.size());
  for (int p = 0; p < n; ++p) {
    const auto a = kv_round_trip(t, std::span<const float>(k.data() + static_cast<size_t>(p) * d, d));
    const auto b = kv_round_trip(t, std::span<const float>(v.data() + static_cast<size_t>(p) * d, d));
    std::copy(a.begin(), a.end(), kt.begin() + static_cast<ptrdiff_t>(p) * d);
    std::copy(b.begin(), b.end(), vt.begin() + static_cast<ptrdiff_t>(p) * d);
  }
  const std::vector<Real> exact = oracle::exact_attention_head(q.data(), k.data(), v.data(), n, d);  // unrounded
  // The reference (M9) on the stored rows.
  std::vector<float> out(d), att(n);
  ref::attention_head(out.data(), q.data(), kt.data(), vt.data(), n, d, d, att.data());
  const auto br = attention_bounds_kv(q.data(), k.data(), v.data(), n, d, d, attn_rounding_reference(n), t);
  for (int i = 0; i < d; ++i) {
    RC_ASSERT(std::isfinite(br[i]));
    RC_ASSERT(within(oracle::abs_err_up(out[i], exact[i]), br[i]));
  }
  // The cpu kernel (K4 online softmax) reading the typed rows themselves (K16).
  std::vector<uint8_t> kq(n * kv_row_bytes(t, d)), vq(kq.size());
  for (int p = 0; p < n; ++p) {
    kv_encode_row(t, k.data() + static_cast<size_t>(p) * d, d, kq.data() + p * kv_row_bytes(t, d));
    kv_encode_row(t, v.data() + static_cast<size_t>(p) * d, d, vq.data() + p * kv_row_bytes(t, d));
  }
  std::vector<float> cpu_out(d, NAN);
  cpu::AttnArgs a{q.data(), nullptr, nullptr, cpu_out.data(), n - 1, d, d, 1, 1.0f / std::sqrt(static_cast<float>(d))};
  a.kv = t, a.kq = kq.data(), a.vq = vq.data(), a.row_bytes = kv_row_bytes(t, d);
  cpu::kernels_for(cpu::resolve_isa("auto")).attention(a);
  const auto bc = attention_bounds_kv(q.data(), k.data(), v.data(), n, d, d, attn_rounding_online(n, cpu::kKeyBlock), t);
  for (int i = 0; i < d; ++i) RC_ASSERT(within(oracle::abs_err_up(cpu_out[i], exact[i]), bc[i]));
}

TEST(B18_KvRounding, TheBoundGrowsWithTheRoundingItCovers) {
  // Without the K/V terms the typed head can fall outside B14 of the exact model: the terms are
  // needed, not slack. Keys of one binade where f16 moves every score.
  const int d = 64, n = 40;
  std::vector<float> q(d), k(static_cast<size_t>(n) * d), v(k.size());
  SplitMix64 g{7};
  // Small queries keep the scores' own bound small; values near 1000, where binary16's spacing
  // is 0.5 and a Q8_0 step 8, make the stored values' rounding the dominant error.
  for (float& x : q) x = 0.01f * g.uniform();
  for (float& x : k) x = 3.0f + g.uniform();
  for (float& x : v) x = 1000.0f + 10.0f * g.uniform();
  const std::vector<double> f32 = attention_bounds(q.data(), k.data(), v.data(), n, d, d, attn_rounding_reference(n));
  for (KvType t : {KvType::kF16, KvType::kQ8_0}) {
    const std::vector<double> typed = attention_bounds_kv(q.data(), k.data(), v.data(), n, d, d, attn_rounding_reference(n), t);
    std::vector<float> kt(k.size()), vt(v.size()), out(d), att(n);
    for (int p = 0; p < n; ++p) {
      const auto a = kv_round_trip(t, std::span<const float>(k.data() + static_cast<size_t>(p) * d, d));
      const auto b = kv_round_trip(t, std::span<const float>(v.data() + static_cast<size_t>(p) * d, d));
      std::copy(a.begin(), a.end(), kt.begin() + static_cast<ptrdiff_t>(p) * d);
      std::copy(b.begin(), b.end(), vt.begin() + static_cast<ptrdiff_t>(p) * d);
    }
    ref::attention_head(out.data(), q.data(), kt.data(), vt.data(), n, d, d, att.data());
    const std::vector<Real> exact = oracle::exact_attention_head(q.data(), k.data(), v.data(), n, d);
    int outside_f32 = 0;
    for (int i = 0; i < d; ++i) {
      const double err = oracle::abs_err_up(out[i], exact[i]);
      EXPECT_TRUE(within(err, typed[i])) << kv_type_name(t) << " element " << i;
      outside_f32 += err > f32[i];
    }
    EXPECT_GT(outside_f32, d / 2) << kv_type_name(t) << ": B14 without B18 would have held: the test shows nothing";
  }
}

TEST(B18_EndToEnd, TypedRunsOfEveryBackendWithinTheEnclosureOfTheExactModel) {
  // B11 with B18's store rule: f16 on tiny; q8_0 on a one-layer shape of head_dim 32 (with two
  // layers the q8_0 enclosure is +inf from the second token: docs/bounds.md). Every
  // backend that runs the type (reference, cpu, cuda-emu) within the bound of the exact logits
  // (the model whose cache keeps every value); the enclosure's values are the typed reference's.
  struct Case {
    const char* model;
    KvType t;
  };
  for (const Case c : {Case{"tiny", KvType::kF16}, Case{"synthetic:hidden=32,layers=1,heads=2,kv_heads=1,head_dim=32,ffn=64,vocab=288",
                                                        KvType::kQ8_0}}) {
    auto m = load_model(c.model, 1).model;
    const std::vector<Token> toks = check::tokens(12, 3, m->config.vocab);
    BoundsOptions o;
    o.kv = c.t;
    const BoundsReport r = run_bounds(m, 1, toks, o);
    EXPECT_TRUE(r.sound()) << c.model << " " << kv_type_name(c.t) << ": " << to_text(r).substr(0, 2000);
    EXPECT_EQ(r.vacuous, 0u);
    EXPECT_TRUE(r.enclosure_bitwise);
    EXPECT_GE(r.backends.size(), 2u);  // the reference and the cpu backend at least
    // The typed run is farther from the exact model than the f32 run, and the bound covers it.
    BoundsOptions f;
    f.all_backends = false;
    const BoundsReport r32 = run_bounds(m, 1, toks, f);
    EXPECT_GT(r.max_error, r32.max_error) << kv_type_name(c.t);
    EXPECT_GT(r.max_bound, r32.max_bound) << kv_type_name(c.t);  // the store rule's symbols are charged
    if (c.t == KvType::kQ8_0) {  // and needed: the f32 enclosure would not hold the q8_0 run
      size_t outside = 0;
      for (size_t i = 0; i < r.logits.size(); ++i) outside += r.logits[i].error > r32.logits[i].bound;
      EXPECT_GT(outside, 0u);
    }
    std::cout << "[ B18 ] " << c.model << " " << kv_type_name(c.t) << ": max error " << r.max_error << " (f32 " << r32.max_error
              << "), max bound " << r.max_bound << ", median bound/error " << r.median_ratio << "\n";
  }
}
