// The cache types (spec/state.md S5-S8, spec/kernels-cpu.md K16): a session's type is fixed and
// checked; f16 rounds each value to nearest even, q8_0 quantizes blocks of 32 by ggml's rule, both
// once, on write, by one encoder that every ISA's kernel table reproduces bit for bit; attention
// reads a typed row through an exact conversion, then runs K2/K4 unchanged, so the typed kernels
// give the f32 kernels' bits on the converted rows, and decode equals prefill within a type.
#include <gtest/gtest.h>

#include <cpuid.h>
#include <immintrin.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "cpu_support.hpp"
#include "optimized/cpu/kernels.hpp"
#include "reference/error.hpp"
#include "reference/kv_types.hpp"
#include "reference/ops.hpp"
#include "reference/session.hpp"
#include "reference/stored_weights.hpp"
#include "runtime/backends.hpp"
#include "verify/check/run.hpp"
#include "runtime/digest.hpp"
#include "runtime/models.hpp"

using namespace akv;
using namespace akv::test;

namespace {

float bits_float(uint32_t b) { return std::bit_cast<float>(b); }
uint32_t float_bits(float f) { return std::bit_cast<uint32_t>(f); }

std::vector<uint8_t> encode(KvType t, const std::vector<float>& x) {
  std::vector<uint8_t> out(kv_row_bytes(t, static_cast<int>(x.size())));
  kv_encode_row(t, x.data(), static_cast<int>(x.size()), out.data());
  return out;
}

std::vector<float> decode(KvType t, const std::vector<uint8_t>& b, int n) {
  std::vector<float> out(static_cast<size_t>(n));
  kv_decode_row(t, b.data(), n, out.data());
  return out;
}

// Round to nearest, ties to even, by exact comparison in double (independent of the encoder):
// the finite binary16 nearest to x, the even one on a tie; inf at or beyond 65520.
uint16_t rne_half(float x) {
  const double a = std::fabs(static_cast<double>(x));
  const uint16_t sign = std::signbit(x) ? 0x8000 : 0;
  if (a >= 65520.0) return sign | 0x7c00;
  uint16_t lo = 0;  // the largest half magnitude <= a, by bisection over the ordered bit patterns
  for (uint16_t step = 0x4000; step != 0; step >>= 1)
    if (lo + step <= 0x7bff && static_cast<double>(half_bits_to_float(static_cast<uint16_t>(lo + step))) <= a) lo += step;
  const double vl = half_bits_to_float(lo), vh = lo == 0x7bff ? 65536.0 : static_cast<double>(half_bits_to_float(lo + 1));
  if (a - vl < vh - a) return sign | lo;
  if (a - vl > vh - a) return lo == 0x7bff ? (sign | 0x7c00) : static_cast<uint16_t>(sign | (lo + 1));
  return (lo & 1) == 0 ? (sign | lo) : static_cast<uint16_t>(sign | (lo + 1));  // a tie: even
}

// The floats every f16 check sweeps: every binary16 value, every exact tie between neighbours and
// its float neighbours, the overflow and underflow edges, a stride over all finite patterns.
std::vector<float> f16_sweep() {
  std::vector<float> v;
  for (uint32_t h = 0; h < 0x7c00; ++h) {
    const float a = half_bits_to_float(static_cast<uint16_t>(h));
    const float b = h + 1 < 0x7c00 ? half_bits_to_float(static_cast<uint16_t>(h + 1)) : 65536.0f;
    const float mid = static_cast<float>((static_cast<double>(a) + b) / 2);  // exact: 12 significant bits
    for (float x : {a, mid, std::nextafter(mid, 0.0f), std::nextafter(mid, INFINITY)}) {
      v.push_back(x);
      v.push_back(-x);
    }
  }
  for (uint32_t b = 0; b < 0x7f800000u; b += 65521) v.push_back(bits_float(b)), v.push_back(-bits_float(b));
  for (float x : {65504.0f, 65519.99f, 65520.0f, 1e30f, 0x1p-25f, std::nextafter(0x1p-25f, 1.0f), 0x1p-26f, 1e-40f, 0.0f, -0.0f})
    v.push_back(x), v.push_back(-x);
  return v;
}

// Blocks that reach every branch of the Q8_0 rule: zero blocks, ties of roundf, an outlier,
// every binade, the scale's binary16 subnormals, signed zeros.
std::vector<float> q8_sweep() {
  std::vector<float> v;
  SplitMix64 g{46};
  for (int b = 0; b < 2048; ++b) {
    const int kind = b % 6;
    const float amax = std::ldexp(1.0f, static_cast<int>(g.next() % 48) - 32);
    for (int j = 0; j < kKvQ8Block; ++j) {
      const float u = g.uniform();  // [-1, 1)
      float x = 0.0f;
      if (kind == 0) x = u * amax;
      else if (kind == 1) x = (std::floor(u * 126.0f) + 0.5f) * (amax / 127.0f);  // roundf's ties
      else if (kind == 2) x = j == 5 ? amax : u * amax * 1e-4f;                  // one outlier
      else if (kind == 3) x = u * 1e-6f;                                         // the scale's binary16 subnormals
      else if (kind == 4) x = (j % 2) ? -0.0f : 0.0f;                            // a zero block
      else x = std::ldexp(u, static_cast<int>(g.next() % 30) - 15);             // every binade in one block
      v.push_back(x);
    }
  }
  return v;
}

// decode(encode(x)) written out here, independent of verify/bounds' helper.
std::vector<float> bounds_free_round_trip(KvType t, const std::vector<float>& x) { return decode(t, encode(t, x), static_cast<int>(x.size())); }

bool has_f16c() {
  unsigned a, b, c, d;
  return __get_cpuid(1, &a, &b, &c, &d) && (c & bit_F16C) != 0;
}

__attribute__((target("f16c"))) uint16_t hw_half(float x) {
  return static_cast<uint16_t>(_cvtss_sh(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
}

class KvKernels : public VariantTest {
 protected:
  const cpu::Kernels& K() const { return cpu::kernels_for(cpu::parse_isa(GetParam().isa)); }
};

}  // namespace

// ---- S5: the type of a session

TEST(S5_CacheType, NamesRowBytesAndTheChecks) {
  EXPECT_EQ(kv_type_names(), (std::vector<std::string>{"f32", "f16", "q8_0"}));
  for (const std::string& n : kv_type_names()) EXPECT_EQ(kv_type_name(parse_kv_type(n)), n);
  for (const char* bad : {"", "F16", "q8", "f16 ", "bf16"}) EXPECT_THROW((void)parse_kv_type(bad), Error) << bad;
  EXPECT_EQ(kv_row_bytes(KvType::kF32, 192), 768u);
  EXPECT_EQ(kv_row_bytes(KvType::kF16, 192), 384u);
  EXPECT_EQ(kv_row_bytes(KvType::kQ8_0, 192), 204u);  // 6 blocks of 2 + 32 bytes
  Config tiny = config_by_name("tiny");                // head_dim 8: no whole Q8_0 block per head
  EXPECT_NO_THROW(check_kv_type(KvType::kF16, tiny));
  try {
    check_kv_type(KvType::kQ8_0, tiny);
    FAIL() << "q8_0 accepted a head_dim of 8";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kBadInput);
    EXPECT_NE(std::string(e.what()).find("head_dim 8"), std::string::npos) << e.what();
  }
}

TEST(S5_CacheType, ASessionKeepsItsTypeAndABackendWithoutItRefusesBeforeAnyWork) {
  auto small_m = small();
  auto ref = make_backend("reference", small_m);
  for (KvType t : {KvType::kF32, KvType::kF16, KvType::kQ8_0}) {
    Session s(*ref, t);
    EXPECT_EQ(s.kv_type(), t);
    s.append(0, std::vector<Token>{1, 2, 3});
    s.append(1, std::vector<Token>{4, 5});
    s.evict(SpanId{0});
    EXPECT_EQ(s.kv_type(), t);
    EXPECT_EQ(s.cache().type(), t);
    EXPECT_EQ(s.cache().row_bytes(), kv_row_bytes(t, small_m->config.kv_dim()));
    if (t != KvType::kF32) {
      EXPECT_THROW((void)s.cache().k(0), std::logic_error);  // float rows of a typed cache
    }
  }
  // A backend that keeps f32 only (the kernel ABI's own cuda device backend; here a stand-in).
  struct F32Only final : Backend {
    std::unique_ptr<Backend> b;
    std::string name() const override { return "f32-only"; }
    const Model& model() const override { return b->model(); }
    BackendDescription describe() const override { return b->describe(); }
    void forward_rows(KVCache& c, std::span<const Token> t, RowList r, std::span<float> l) override { b->forward_rows(c, t, r, l); }
    void set_scratch_poison(std::optional<float> v) override { b->set_scratch_poison(v); }
  } only;
  only.b = make_backend("reference", small_m);
  EXPECT_NO_THROW(Session(only, KvType::kF32));
  try {
    Session s(only, KvType::kF16);
    FAIL() << "an f16 session on an f32-only backend";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kBadInput);
    EXPECT_NE(std::string(e.what()).find("f32-only"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("f16"), std::string::npos) << e.what();
  }
  auto tiny_ref = make_backend("reference", check::tiny_model());
  EXPECT_THROW(Session(*tiny_ref, KvType::kQ8_0), Error);
}

TEST(S5_CacheType, TheDigestReadsTheStoredBytesAndTheF32DigestIsTheFloats) {
  auto m = small();
  auto ref = make_backend("reference", m);
  const std::vector<Token> toks = check::tokens(40, 5, m->config.vocab);
  for (KvType t : {KvType::kF32, KvType::kF16, KvType::kQ8_0}) {
    const check::Run r = check::run_chunked(*ref, toks, {40}, t);
    Sha256 h;
    const size_t bytes = r.cache.size() * kv_row_bytes(t, m->config.kv_dim());
    for (int l = 0; l < r.cache.n_layers(); ++l) h.add(r.cache.k_bytes(l), bytes), h.add(r.cache.v_bytes(l), bytes);
    EXPECT_EQ(cache_sha256(r.cache), h.hex()) << kv_type_name(t);
    if (t == KvType::kF32) {  // S4 as before the types: kv_dim float32 a row
      Sha256 f;
      for (int l = 0; l < r.cache.n_layers(); ++l)
        f.add(r.cache.k(l), r.cache.size() * m->config.kv_dim() * 4), f.add(r.cache.v(l), r.cache.size() * m->config.kv_dim() * 4);
      EXPECT_EQ(cache_sha256(r.cache), f.hex());
    }
  }
}

TEST(S5_CacheType, LayerZeroRowsAreTheEncodedF32Rows) {
  // Layer 0's K and V depend on the token and its position only, not on earlier rows: a typed
  // cache's layer-0 rows are the encoder's bytes of the f32 cache's (rounded once, on write: S6, S7).
  auto m = small();
  for (const std::string& name : {std::string("reference"), std::string("cpu")}) {
    auto b = make_backend(name, m);
    const std::vector<Token> toks = check::tokens(70, 9, m->config.vocab);
    const check::Run f32 = check::run_chunked(*b, toks, {70});
    const int kvd = m->config.kv_dim();
    for (KvType t : {KvType::kF16, KvType::kQ8_0}) {
      const check::Run typed = check::run_chunked(*b, toks, {30, 40}, t);
      for (size_t p = 0; p < toks.size(); ++p) {
        const std::vector<float> k(f32.cache.k(0) + p * kvd, f32.cache.k(0) + (p + 1) * kvd);
        const std::vector<float> v(f32.cache.v(0) + p * kvd, f32.cache.v(0) + (p + 1) * kvd);
        const size_t rb = typed.cache.row_bytes();
        ASSERT_EQ(std::memcmp(encode(t, k).data(), typed.cache.k_bytes(0) + p * rb, rb), 0) << name << " " << kv_type_name(t) << " p " << p;
        ASSERT_EQ(std::memcmp(encode(t, v).data(), typed.cache.v_bytes(0) + p * rb, rb), 0) << name << " " << kv_type_name(t) << " p " << p;
      }
    }
  }
}

// ---- S6: binary16, round to nearest even

TEST(S6_F16, RoundsToNearestEvenOnEveryHalfTieAndEdge) {
  size_t n = 0;
  for (float x : f16_sweep()) {
    ASSERT_EQ(float_to_half_bits(x), rne_half(x)) << std::hexfloat << x;
    ++n;
  }
  EXPECT_GT(n, 300000u);
  // Every finite half round-trips; NaN is quiet with its top payload bits; inf stays inf.
  for (uint32_t h = 0; h < 0x10000; ++h) {
    const uint16_t b = static_cast<uint16_t>(h);
    const float f = half_bits_to_float(b);
    if ((b & 0x7c00) != 0x7c00) {
      ASSERT_EQ(float_to_half_bits(f), b) << std::hex << h;
    }
  }
  EXPECT_EQ(float_to_half_bits(INFINITY), 0x7c00);
  EXPECT_EQ(float_to_half_bits(-INFINITY), 0xfc00);
  EXPECT_EQ(float_to_half_bits(bits_float(0x7fc00000u)), 0x7e00);  // quiet NaN
  EXPECT_EQ(float_to_half_bits(bits_float(0x7f802000u)), 0x7e01);  // signalling NaN: quietened, top payload kept
  EXPECT_EQ(float_to_half_bits(bits_float(0xffa00000u)), 0xfe00 | (0x200000u >> 13));
  EXPECT_EQ(float_to_half_bits(65519.99f), 0x7bff);
  EXPECT_EQ(float_to_half_bits(65520.0f), 0x7c00);
  EXPECT_EQ(float_to_half_bits(0x1p-25f), 0x0000);  // a tie with 0: even
  EXPECT_EQ(float_to_half_bits(std::nextafter(0x1p-25f, 1.0f)), 0x0001);
  EXPECT_EQ(float_to_half_bits(-0.0f), 0x8000);
}

TEST(S6_F16, EqualsTheHardwareConversionWhereTheCpuHasOne) {
  if (!has_f16c()) GTEST_SKIP() << "no F16C on this CPU: the exact comparison above stands alone";
  for (float x : f16_sweep()) ASSERT_EQ(float_to_half_bits(x), hw_half(x)) << std::hexfloat << x;
  for (uint32_t nan : {0x7fc00000u, 0x7f800001u, 0x7fbfffffu, 0xffc12345u, 0x7fffe000u})
    ASSERT_EQ(float_to_half_bits(bits_float(nan)), hw_half(bits_float(nan))) << std::hex << nan;
}

// ---- S7: Q8_0 blocks, ggml's rule

TEST(S7_Q8_0, GgmlsRuleOnBlocksWorkedByHand) {
  std::vector<float> x(32, 0.0f);
  // A zero block: d = 0, id = 0, every q 0.
  std::vector<uint8_t> b = encode(KvType::kQ8_0, x);
  for (uint8_t byte : b) EXPECT_EQ(byte, 0);
  // amax 127: d = 1 (binary16 0x3c00), id = 1, q = roundf(x): half away from zero.
  for (int j = 0; j < 32; ++j) x[j] = static_cast<float>(j) - 15.5f;  // -15.5 .. 15.5: every q a tie
  x[31] = 127.0f;
  b = encode(KvType::kQ8_0, x);
  EXPECT_EQ(b[0] | (b[1] << 8), 0x3c00);
  for (int j = 0; j < 31; ++j) EXPECT_EQ(static_cast<int8_t>(b[2 + j]), static_cast<int>(std::round(x[j]))) << j;
  EXPECT_EQ(static_cast<int8_t>(b[2 + 0]), -16);  // -15.5 -> -16, away from zero
  EXPECT_EQ(static_cast<int8_t>(b[2 + 31]), 127);
  // The scale from float arithmetic, rounded to binary16 only when stored: q uses id = 1/d of
  // the float d (amax 1: d = 1/127, its binary16 0x2008), as ggml's quantize_row_q8_0_ref.
  std::fill(x.begin(), x.end(), 0.25f);
  x[7] = -1.0f;
  b = encode(KvType::kQ8_0, x);
  const float d = 1.0f / 127.0f, id = 1.0f / d;
  EXPECT_EQ(b[0] | (b[1] << 8), float_to_half_bits(d));
  EXPECT_EQ(static_cast<int8_t>(b[2 + 7]), -127);
  EXPECT_EQ(static_cast<int8_t>(b[2]), static_cast<int>(std::round(0.25f * id)));  // 31.75 -> 32
  // Decoding is float(q) * float(d): exact (|q| <= 127, d a binary16), so the value is q times
  // the stored scale, never the float d.
  const std::vector<float> y = decode(KvType::kQ8_0, b, 32);
  EXPECT_EQ(y[7], -127.0f * half_bits_to_float(float_to_half_bits(d)));
}

TEST(S7_Q8_0, DecodingIsExactForEveryQuantAndScale) {
  for (uint32_t h = 0; h < 0x7c00; h += 7) {
    std::vector<uint8_t> blk(34);
    blk[0] = static_cast<uint8_t>(h & 0xff), blk[1] = static_cast<uint8_t>(h >> 8);
    for (int q = -127; q <= 127; q += 32) {
      for (int j = 0; j < 32; ++j) blk[2 + j] = static_cast<uint8_t>(static_cast<int8_t>(std::clamp(q + j, -127, 127)));
      const std::vector<float> y = decode(KvType::kQ8_0, blk, 32);
      for (int j = 0; j < 32; ++j)
        ASSERT_EQ(static_cast<double>(y[j]), static_cast<double>(static_cast<int8_t>(blk[2 + j])) * half_bits_to_float(static_cast<uint16_t>(h)))
            << "scale " << std::hex << h;
    }
  }
}

TEST(S7_Q8_0, ANonFiniteOrOutOfRangeProductStoresZero) {
  std::vector<float> x(32, 1e-40f);  // d = amax / 127 is a float subnormal: id = 1/d overflows to inf
  x[3] = -1e-40f;
  x[4] = 0.0f;  // 0 * inf = NaN
  const std::vector<uint8_t> b = encode(KvType::kQ8_0, x);
  EXPECT_EQ(b[0] | (b[1] << 8), 0);  // the binary16 scale underflows to 0
  for (int j = 0; j < 32; ++j) EXPECT_EQ(b[2 + j], 0) << j;
  for (float v : decode(KvType::kQ8_0, b, 32)) EXPECT_EQ(v, 0.0f);
}

// ---- S8: a typed session is the f32 model on the rows as stored

TEST(S8_ReadBack, ATypedSessionIsM11OnRowsRoundedWhenWrittenAndReadExactly) {
  // M11 written out with the ops of reference/ops.hpp, keeping every K and V row as the float32
  // values kv_round_trip gives (S6/S7 on write, S8 on read): the reference backend's typed
  // session must give these logits bit for bit, token after token.
  auto m = load_model("synthetic:hidden=32,layers=2,heads=2,kv_heads=1,head_dim=32,ffn=64,vocab=288", 3).model;
  const Config& c = m->config;
  const int d = c.hidden, hd = c.head_dim, kvd = c.kv_dim(), qd = c.q_dim();
  const std::vector<Token> toks = check::tokens(70, 4, c.vocab);
  for (KvType t : {KvType::kF16, KvType::kQ8_0}) {
    auto ref = make_backend("reference", m);
    Session s(*ref, t);
    std::vector<std::vector<float>> K(c.n_layers), V(c.n_layers);  // (pos, kv_dim) as read back
    for (size_t pos = 0; pos < toks.size(); ++pos) {
      std::vector<float> x(m->weights.tok_emb.begin() + static_cast<ptrdiff_t>(toks[pos]) * d,
                           m->weights.tok_emb.begin() + static_cast<ptrdiff_t>(toks[pos] + 1) * d);
      std::vector<float> xb(d), q(qd), k(kvd), v(kvd), att(qd), h1(c.ffn), h3(c.ffn), scratch(pos + 1);
      for (int l = 0; l < c.n_layers; ++l) {
        const auto& w = m->weights.layers[l];
        ref::rmsnorm(xb.data(), x.data(), w.attn_norm.data(), d, c.rms_eps);
        ref::matmul(q.data(), xb.data(), w.wq.data(), d, qd);
        ref::matmul(k.data(), xb.data(), w.wk.data(), d, kvd);
        ref::matmul(v.data(), xb.data(), w.wv.data(), d, kvd);
        ref::rope(q.data(), c.n_heads, hd, m->rope->cos_at(static_cast<int>(pos)), m->rope->sin_at(static_cast<int>(pos)));
        ref::rope(k.data(), c.n_kv_heads, hd, m->rope->cos_at(static_cast<int>(pos)), m->rope->sin_at(static_cast<int>(pos)));
        const std::vector<float> kr = bounds_free_round_trip(t, k), vr = bounds_free_round_trip(t, v);
        K[l].insert(K[l].end(), kr.begin(), kr.end());
        V[l].insert(V[l].end(), vr.begin(), vr.end());
        for (int h = 0; h < c.n_heads; ++h) {
          const size_t g = static_cast<size_t>(h / (c.n_heads / c.n_kv_heads)) * hd;
          ref::attention_head(att.data() + static_cast<size_t>(h) * hd, q.data() + static_cast<size_t>(h) * hd, K[l].data() + g,
                              V[l].data() + g, static_cast<int>(pos + 1), kvd, hd, scratch.data());
        }
        ref::matmul(xb.data(), att.data(), w.wo.data(), qd, d);
        ref::add_inplace(x.data(), xb.data(), d);
        ref::rmsnorm(xb.data(), x.data(), w.ffn_norm.data(), d, c.rms_eps);
        ref::matmul(h1.data(), xb.data(), w.w1.data(), d, c.ffn);
        ref::matmul(h3.data(), xb.data(), w.w3.data(), d, c.ffn);
        ref::swiglu(h1.data(), h1.data(), h3.data(), c.ffn);
        ref::matmul(xb.data(), h1.data(), w.w2.data(), c.ffn, d);
        ref::add_inplace(x.data(), xb.data(), d);
      }
      std::vector<float> logits(c.vocab);
      ref::rmsnorm(xb.data(), x.data(), m->weights.final_norm.data(), d, c.rms_eps);
      ref::matmul(logits.data(), xb.data(), classifier(m->weights).data(), d, c.vocab);
      const std::vector<float> got = s.append(pos, std::vector<Token>{toks[pos]});
      ASSERT_TRUE(same_bits(got, logits)) << kv_type_name(t) << " position " << pos;
    }
    // And the cache's rows read back are those values.
    std::vector<float> buf;
    for (int l = 0; l < c.n_layers; ++l)
      ASSERT_EQ(std::memcmp(s.cache().k_rows(l, 0, toks.size(), buf), K[l].data(), K[l].size() * 4), 0) << kv_type_name(t);
  }
}

// ---- K16 / S6-S8 per ISA: the kernels' encoder and decoder are the reference's, bit for bit

using K16_TypedRows = KvKernels;
TEST_P(K16_TypedRows, EncodeAndDecodeEqualTheReferenceOnEveryIsa) {
  const std::vector<float> f = f16_sweep();
  for (KvType t : {KvType::kF32, KvType::kF16}) {
    for (int n : {1, 15, 16, 17, 64, 70}) {  // the SIMD chunks and the scalar tail
      for (size_t at = 0; at + n <= f.size(); at += 997 * n) {
        const std::vector<float> row(f.begin() + static_cast<ptrdiff_t>(at), f.begin() + static_cast<ptrdiff_t>(at + n));
        std::vector<uint8_t> got(kv_row_bytes(t, n), 0xAB);
        K().kv_encode(t, row.data(), n, got.data());
        const std::vector<uint8_t> want = encode(t, row);
        ASSERT_EQ(got, want) << kv_type_name(t) << " n " << n << " at " << at;
        std::vector<float> back(static_cast<size_t>(n), NAN);
        K().kv_decode(t, got.data(), n, back.data());
        const std::vector<float> ref = decode(t, want, n);
        ASSERT_EQ(std::memcmp(back.data(), ref.data(), 4 * static_cast<size_t>(n)), 0) << kv_type_name(t) << " n " << n;
      }
    }
  }
  // Every binary16 pattern the encoder writes decodes as half_bits_to_float: every non-NaN and
  // every quiet NaN. (A signalling one, which S6 never stores, would be quietened by F16C.)
  std::vector<uint8_t> all(2 * 65536);
  for (uint32_t h = 0; h < 65536; ++h) all[2 * h] = static_cast<uint8_t>(h & 0xff), all[2 * h + 1] = static_cast<uint8_t>(h >> 8);
  std::vector<float> got(65536);
  K().kv_decode(KvType::kF16, all.data(), 65536, got.data());
  for (uint32_t h = 0; h < 65536; ++h) {
    if ((h & 0x7c00) == 0x7c00 && (h & 0x3ff) != 0 && (h & 0x200) == 0) continue;  // signalling NaN
    const float want = half_bits_to_float(static_cast<uint16_t>(h));
    ASSERT_EQ(float_bits(got[h]), float_bits(want)) << std::hex << h;
  }
  const std::vector<float> q = q8_sweep();
  for (int n : {32, 64, 192}) {
    for (size_t at = 0; at + n <= q.size(); at += 4 * n) {
      const std::vector<float> row(q.begin() + static_cast<ptrdiff_t>(at), q.begin() + static_cast<ptrdiff_t>(at + n));
      std::vector<uint8_t> b(kv_row_bytes(KvType::kQ8_0, n));
      K().kv_encode(KvType::kQ8_0, row.data(), n, b.data());
      ASSERT_EQ(b, encode(KvType::kQ8_0, row)) << "q8_0 n " << n << " at " << at;
      std::vector<float> back(static_cast<size_t>(n));
      K().kv_decode(KvType::kQ8_0, b.data(), n, back.data());
      const std::vector<float> ref = decode(KvType::kQ8_0, b, n);
      ASSERT_EQ(std::memcmp(back.data(), ref.data(), 4 * static_cast<size_t>(n)), 0);
    }
  }
}

// ---- K16: typed attention is the f32 kernel on the converted rows, on every path

namespace {
struct TypedCache {
  std::vector<uint8_t> k, v;  // n rows of kv_row_bytes(t, kvh * hd)
  std::vector<float> kf, vf;  // the same rows as float32 (S8)
  size_t rb = 0;
};

TypedCache typed_cache(KvType t, int n, int kvh, int hd, uint64_t seed) {
  const int kvd = kvh * hd;
  TypedCache c;
  c.rb = kv_row_bytes(t, kvd);
  const std::vector<float> k = randu(static_cast<size_t>(n) * kvd, seed, -3, 3), v = randu(k.size(), seed + 1, -2, 2);
  c.k.resize(n * c.rb), c.v.resize(n * c.rb), c.kf.resize(k.size()), c.vf.resize(k.size());
  for (int p = 0; p < n; ++p) {
    kv_encode_row(t, k.data() + static_cast<size_t>(p) * kvd, kvd, c.k.data() + p * c.rb);
    kv_encode_row(t, v.data() + static_cast<size_t>(p) * kvd, kvd, c.v.data() + p * c.rb);
    kv_decode_row(t, c.k.data() + p * c.rb, kvd, c.kf.data() + static_cast<size_t>(p) * kvd);
    kv_decode_row(t, c.v.data() + p * c.rb, kvd, c.vf.data() + static_cast<size_t>(p) * kvd);
  }
  return c;
}

// a: an f32 item on c.kf / c.vf at KV head g; the same item on the typed rows.
cpu::AttnArgs typed_args(cpu::AttnArgs a, KvType t, const TypedCache& c, int g) {
  a.kv = t;
  a.k = a.v = nullptr;
  a.kq = c.k.data() + kv_row_bytes(t, a.head_dim) * g;
  a.vq = c.v.data() + kv_row_bytes(t, a.head_dim) * g;
  a.row_bytes = c.rb;
  return a;
}
}  // namespace

TEST_P(K16_TypedRows, AttentionEqualsTheF32KernelOnTheConvertedRows) {
  for (KvType t : {KvType::kF16, KvType::kQ8_0}) {
    for (int hd : cpu::kAttentionCheckHeadDims) {
      if (t == KvType::kQ8_0 && hd % kKvQ8Block != 0) continue;
      const int kvh = 2, kvd = kvh * hd, n = 160;
      const TypedCache c = typed_cache(t, n, kvh, hd, static_cast<uint64_t>(hd) * 3 + static_cast<uint64_t>(t));
      for (int group : {1, 40}) {  // 40 x rows >= 12: the lane path; below it the state path
        const int qs = group * hd + 5, os = group * hd + 3;
        const auto q = randu(static_cast<size_t>(n) * qs, group + hd, -2, 2);
        for (auto [pos, rows] : {std::pair{0, 1}, {64, 1}, {5, 16}, {57, 8}, {120, 40}}) {
          if (group * rows > 400) continue;  // 40 x 8 already splits the tokens (kMaxAttnStates); cheaper on portable
          std::vector<uint8_t> mask(static_cast<size_t>(n), 0);
          for (int p = 3; p < n; p += 7) mask[p] = 1;
          for (bool masked : {false, true}) {
            std::vector<float> want(static_cast<size_t>(rows) * os, -1.0f), got(want.size(), -1.0f);
            const float scale = 1.0f / std::sqrt(static_cast<float>(hd));
            cpu::AttnArgs a{q.data(), c.kf.data() + hd, c.vf.data() + hd, want.data(), pos, kvd, hd, group, scale};
            a.rows = rows, a.q_stride = static_cast<size_t>(qs), a.out_stride = static_cast<size_t>(os);
            if (masked) a.mask = mask.data();
            K().attention(a);
            cpu::AttnArgs b = typed_args(a, t, c, 1);
            b.out = got.data();
            K().attention(b);
            ASSERT_TRUE(same_bits(got, want)) << kv_type_name(t) << " hd " << hd << " group " << group << " pos " << pos
                                              << " rows " << rows << (masked ? " masked" : "");
          }
        }
      }
      // The decode split (K4): the typed phases over any ranges give the f32 item's bits.
      if (hd != 32 && hd != 64 && hd != 128) continue;
      for (int group : {1, 3, 6}) {
        const auto q = randu(static_cast<size_t>(group) * hd, group + 77, -3, 3);
        for (int pos : {64, 130, 159}) {
          std::vector<float> want(static_cast<size_t>(group) * hd, NAN), got(want.size(), NAN);
          cpu::AttnArgs a{q.data(), c.kf.data() + hd, c.vf.data() + hd, want.data(), pos, kvd, hd, group,
                          1.0f / std::sqrt(static_cast<float>(hd))};
          K().attention(a);
          cpu::AttnArgs b = typed_args(a, t, c, 1);
          b.out = got.data();
          ASSERT_TRUE(cpu::split_attention_applies(b));
          const int nbk = cpu::split_blocks(b);
          for (int cb : {1, 2}) {
            std::vector<float> s(static_cast<size_t>(group) * nbk * 64, NAN), mb(static_cast<size_t>(group) * nbk, NAN),
                lb(mb.size(), NAN), acc(mb.size() * hd, NAN);
            std::fill(got.begin(), got.end(), NAN);
            for (int b0 = (nbk - 1) / cb * cb; b0 >= 0; b0 -= cb) K().attention_split_scores(b, b0, std::min(nbk, b0 + cb), s.data(), mb.data());
            std::vector<float> mr(mb.size(), NAN);
            cpu::split_running_maxes(mb.data(), group, nbk, mr.data());
            for (int b0 = (nbk - 1) / cb * cb; b0 >= 0; b0 -= cb)
              K().attention_split_values(b, b0, std::min(nbk, b0 + cb), s.data(), mr.data(), lb.data(), acc.data());
            K().attention_split_fold(b, mr.data(), lb.data(), acc.data());
            ASSERT_TRUE(same_bits(got, want)) << "split " << kv_type_name(t) << " hd " << hd << " group " << group << " pos " << pos;
          }
        }
      }
    }
  }
}

TEST_P(K16_TypedRows, DecodeEqualsPrefillWithinATypeOnTwoAndThreeThreads) {
  // K9 within a type: 150 tokens in one call, in chunks, and one by one (the decode split over key
  // blocks from position 64 on, with 2 and 3 threads) give the same cache bytes and logits.
  auto m = load_model("synthetic:hidden=48,layers=2,heads=3,kv_heads=1,head_dim=64,ffn=40,vocab=300", 1).model;
  const std::vector<Token> toks = check::tokens(150, 46, m->config.vocab);
  for (KvType t : {KvType::kF16, KvType::kQ8_0}) {
    auto one = make_backend("cpu", m, {GetParam().isa, 2, ""});
    const check::Run whole = check::run_chunked(*one, toks, {150}, t);
    for (int threads : {2, 3}) {
      auto b = make_backend("cpu", m, {GetParam().isa, threads, ""});
      const check::Run steps = check::run_chunked(*b, toks, std::vector<size_t>(150, 1), t);
      ASSERT_EQ(check::run_diff(steps, whole), "") << kv_type_name(t) << " " << threads << " threads";
    }
    const check::Run chunks = check::run_chunked(*one, toks, {1, 63, 2, 64, 20}, t);
    ASSERT_EQ(check::run_diff(chunks, whole), "") << kv_type_name(t);
  }
}

INSTANTIATE_TEST_SUITE_P(, K16_TypedRows, ::testing::ValuesIn(cpu_isa_variants()), variant_name);

TEST(K8_TypedBatch, SessionsOfEveryTypeInOneBatchGetTheirBitsAlone) {
  // K8 with cache types: one forward_batch holding an f32, an f16 and a q8_0 session (each item
  // reads its own cache as its own type) gives each the bits it gets alone, on 2 and 3 threads,
  // decode steps included (the split path once past 64 keys).
  auto m = load_model("synthetic:hidden=48,layers=2,heads=3,kv_heads=1,head_dim=64,ffn=40,vocab=300", 2).model;
  const KvType types[3] = {KvType::kF32, KvType::kF16, KvType::kQ8_0};
  std::vector<std::vector<Token>> prompts;
  for (int i = 0; i < 3; ++i) prompts.push_back(check::tokens(70 + 5 * i, 10 + i, m->config.vocab));
  for (int threads : {2, 3}) {
    auto b = make_backend("cpu", m, {"auto", threads, ""});
    auto alone = make_backend("cpu", m, {"auto", 1, ""});
    Session s0(*b, types[0]), s1(*b, types[1]), s2(*b, types[2]);
    Session* ss[3] = {&s0, &s1, &s2};
    std::vector<BatchAppend> batch;
    for (int i = 0; i < 3; ++i) batch.push_back({ss[i], 0, prompts[i]});
    std::vector<std::vector<float>> got = Session::append_batch(batch);
    for (int step = 0; step < 3; ++step) {  // decode steps, all three in one batch each
      const Token t[3] = {static_cast<Token>(step + 1), static_cast<Token>(step + 7), static_cast<Token>(step + 13)};
      batch.clear();
      for (int i = 0; i < 3; ++i) batch.push_back({ss[i], 0, std::span<const Token>(&t[i], 1)});
      got = Session::append_batch(batch);
    }
    for (int i = 0; i < 3; ++i) {
      Session one(*alone, types[i]);
      one.append(0, prompts[i]);
      for (int step = 0; step < 3; ++step) {
        const Token t[3] = {static_cast<Token>(step + 1), static_cast<Token>(step + 7), static_cast<Token>(step + 13)};
        one.append(0, std::span<const Token>(&t[i], 1));
      }
      EXPECT_EQ(check::cache_diff(ss[i]->cache(), one.cache()), "") << kv_type_name(types[i]) << " " << threads << " threads";
      EXPECT_TRUE(same_bits(got[i], std::vector<float>(one.logits().begin(), one.logits().end()))) << kv_type_name(types[i]);
    }
  }
}
