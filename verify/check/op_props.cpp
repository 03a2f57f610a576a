#include "verify/check/op_props.hpp"

#include <fmt/format.h>
#include <rapidcheck.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <memory>

#include "optimized/composed/op_set.hpp"
#include "optimized/cpu/kernels.hpp"
#include "reference/error.hpp"
#include "reference/ops.hpp"
#include "reference/rope.hpp"
#include "verify/bounds/op_bounds.hpp"
#include "verify/check/closeness.hpp"
#include "verify/check/families.hpp"
#include "verify/check/op_checks.hpp"
#include "verify/check/op_shapes.hpp"
#include "verify/check/property.hpp"
#include "verify/oracle/exact_sum.hpp"
#include "verify/oracle/oracle_forward.hpp"
#include "verify/oracle/real.hpp"

namespace akv::check {

namespace {

using Vec = std::vector<float>;
using nlohmann::json;

thread_local json g_case;
thread_local std::string g_shape;
thread_local Closeness* g_tally = nullptr;  // run_op_property's, while it runs

// |a - b| <= bound, the distance recorded when run_op_property tallies (NaN fails).
bool within_bound(double a, double b, double bound) {
  if (g_tally != nullptr) return g_tally->add(a, b, bound);
  return std::fabs(a - b) <= bound;
}

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

// ---- Calling the table

// Scratch for one call, filled with `fill` (NaN unless a property varies it).
Vec scratch(const OpSet& s, uint32_t op, int M, int n, int d, float fill = kNaN) {
  return Vec(std::max<size_t>(s.scratch_floats(op, M, n, d), 1), fill);
}

// A weight prepared once (prepare_weight) for every call on it, released at scope exit.
class Weight {
 public:
  Weight(const OpSet& s, const Vec& w, int d, int n) : t_(s.ops()), w_(w) {
    if (t_.prepare_weight) h_ = t_.prepare_weight(t_.ctx, w_.data(), d, n);
  }
  ~Weight() {
    if (h_) t_.release_weight(t_.ctx, h_);
  }
  Weight(const Weight&) = delete;
  Weight& operator=(const Weight&) = delete;
  const float* data() const { return w_.data(); }
  const void* prepared() const { return h_; }

 private:
  const akv_kernels& t_;
  const Vec& w_;
  void* h_ = nullptr;
};

Vec matmul(const OpSet& s, const Vec& X, int M, const Weight& W, int n, int d, float fill = kNaN, Vec* sc = nullptr) {
  Vec Y(static_cast<size_t>(M) * d, kNaN);
  Vec own;
  if (sc == nullptr) own = scratch(s, AKV_OP_MATMUL, M, n, d, fill), sc = &own;
  const akv_kernels& t = s.ops();
  t.matmul(t.ctx, Y.data(), d, X.data(), n, M, W.data(), W.prepared(), n, d, sc->data());
  return Y;
}

struct Attn {
  int M = 1, pos0 = 0, heads = 1, kvh = 1, hd = 8;
  Vec q, k, v;  // q (M, heads*hd); k, v (pos0 + M, kvh*hd)
  int qd() const { return heads * hd; }
  int kvd() const { return kvh * hd; }
};

// Rows [r0, r0 + m) of a's queries in one call starting at pos0 + r0 (the cache as drawn).
Vec attention(const OpSet& s, const Attn& a, int r0, int m, float fill = kNaN, Vec* sc = nullptr) {
  Vec out(static_cast<size_t>(m) * a.qd(), kNaN), own;
  const int p0 = a.pos0 + r0;
  if (sc == nullptr) own = scratch(s, AKV_OP_ATTENTION, m, p0 + m, a.qd(), fill), sc = &own;
  const akv_kernels& t = s.ops();
  t.attention(t.ctx, out.data(), a.qd(), a.q.data() + static_cast<size_t>(r0) * a.qd(), a.qd(), a.k.data(), a.v.data(),
              a.kvd(), nullptr, m, p0, a.heads, a.kvh, a.hd, 1.0f / std::sqrt(static_cast<float>(a.hd)), sc->data());
  return out;
}

// ---- Drawing inputs

uint64_t gen_seed() { return *rc::gen::inRange<uint64_t>(0, 1u << 20); }

// What one call of a drawn case may cost: floats of a row-wise op's input, multiply-adds of a
// matmul. Keeps a prefill chunk of a wide layer affordable (a count is cut, never the width).
constexpr long long kRowBudget = 1ll << 22, kMatmulBudget = 1ll << 24;

Vec values(size_t count, uint64_t seed, Family f) { return family_values(f, count, seed); }

// q, k and v of a's shape, drawn.
void attn_values(Attn& a) {
  const uint64_t seed = gen_seed();
  // Score scales: near-uniform with subnormal products (2^-70), ordinary, and spread over
  // hundreds so that exps underflow (8, 40).
  const float qs = *rc::gen::element(1.0f, 4.0f, 0x1p-70f, 8.0f, 40.0f);
  const size_t n = static_cast<size_t>(a.pos0 + a.M);
  a.q = family_values(Family::kPlain, static_cast<size_t>(a.M) * a.qd(), seed, qs);
  a.k = family_values(*rc::gen::element(Family::kPlain, Family::kCancel), n * a.kvd(), seed + 1);
  a.v = family_values(*gen_fam(), n * a.kvd(), seed + 2);
}

// M to max_m: past 16 drawn as the row checks draw it (boundaries, the cpu kernels' items of 16).
Attn gen_attn(int max_m, int min_m = 1) {
  Attn a;
  a.M = max_m > 16 ? std::min(max_m, gen_rows_m(min_m)) : *rc::gen::inRange(min_m, max_m + 1);
  a.pos0 = *rc::gen::weightedOneOf<int>({{1, rc::gen::inRange(0, 64)}, {3, rc::gen::inRange(0, 300)}});
  const auto shape = *rc::gen::element(std::pair{1, 1}, std::pair{2, 1}, std::pair{4, 2}, std::pair{3, 3},
                                         std::pair{9, 3});  // 9/3: SmolLM2-135M
  a.heads = shape.first, a.kvh = shape.second;
  // Every head dim the cpu kernels dispatch on (32, 64, 128: the lane paths), a multiple of 16
  // without one, tails (kernels.hpp), and two small ones.
  std::vector<int> hds(cpu::kAttentionCheckHeadDims.begin(), cpu::kAttentionCheckHeadDims.end());
  hds.insert(hds.end(), {4, 16});
  a.hd = *rc::gen::elementOf(hds);
  attn_values(a);
  return a;
}

void note_attn(const Attn& a, const std::string& extra) {
  note_op_case({{"op", "attention"}, {"M", a.M}, {"pos0", a.pos0}, {"heads", a.heads}, {"kv_heads", a.kvh},
                {"head_dim", a.hd}, {"q", a.q}, {"k", a.k}, {"v", a.v}},
               "M=" + std::to_string(a.M) + " pos0=" + std::to_string(a.pos0) + " heads=" + std::to_string(a.heads) + "/" +
                   std::to_string(a.kvh) + " head_dim=" + std::to_string(a.hd) + extra);
}

// ---- Comparing

// "" when a[ai + i] and b[bi + i] are bitwise equal for i < n, else where and how far.
std::string diff(const Vec& a, size_t ai, const Vec& b, size_t bi, size_t n, const std::string& what) {
  if (std::memcmp(a.data() + ai, b.data() + bi, n * sizeof(float)) == 0) return "";
  double worst = 0;
  size_t at = 0;
  for (size_t i = 0; i < n; ++i) {
    const float x = a[ai + i], y = b[bi + i];
    if (std::memcmp(&x, &y, sizeof x) == 0) continue;
    const double dd = std::isnan(x) || std::isnan(y) ? INFINITY : std::fabs(double(x) - double(y));
    if (dd >= worst) worst = dd, at = i;
  }
  return fmt::format("{}: not bitwise equal (element {}: {:.9g} vs {:.9g}, max|delta| {:.3g})", what, at, a[ai + at],
                     b[bi + at], worst);
}
#define GATE_SAME(d)                 \
  do {                               \
    const std::string gate_d_ = (d); \
    if (!gate_d_.empty()) RC_FAIL(gate_d_); \
  } while (0)

std::string no_threads(const OpTable& t) { return t.set->has_threads() ? "" : "the table has no set_threads (single-threaded)"; }
std::string always(const OpTable&) { return ""; }
std::string not_the_reference(const OpTable& t) {
  return t.label == reference_ops().label ? "the reference compared with itself checks nothing" : "";
}

// Runs fn at 1, 2 and 3 threads and compares; leaves the table at one thread.
template <class F>
void at_threads(const OpSet& s, F&& fn, const std::string& what) {
  RC_ASSERT(s.set_threads(1));
  const Vec one = fn();
  for (int t : {2, 3}) {
    RC_ASSERT(s.set_threads(t));
    const Vec other = fn();
    s.set_threads(1);
    GATE_SAME(diff(other, 0, one, 0, one.size(), what + " at " + std::to_string(t) + " threads vs 1"));
  }
}

// ---- matmul

struct MatCase {
  int M, n, d;
  Vec X, W;
};
// big: the shapes where libraries split work across threads (M to 64, n to 2048, d to 256).
// Otherwise n is a drawn width (a real layer's in some cases) and d is cut to the call budget.
MatCase gen_mat(int min_m, bool big = false) {
  MatCase c;
  c.M = *rc::gen::inRange(min_m, big ? 65 : 33);
  c.n = big ? *rc::gen::weightedOneOf<int>({{1, rc::gen::inRange(1, 130)}, {2, rc::gen::inRange(1, 2049)}}) : gen_width();
  c.d = *rc::gen::inRange(1, big ? 257 : 41);
  if (!big) c.d = cap_rows(c.d, static_cast<long long>(c.M) * c.n, kMatmulBudget);
  const uint64_t seed = gen_seed();
  const Family f = *gen_fam();
  c.X = values(static_cast<size_t>(c.M) * c.n, seed, f);
  c.W = values(static_cast<size_t>(c.d) * c.n, seed + 1, *rc::gen::element(Family::kPlain, f));
  note_op_case({{"op", "matmul"}, {"M", c.M}, {"n", c.n}, {"d", c.d}, {"X", c.X}, {"W", c.W}},
               "M=" + std::to_string(c.M) + " n=" + std::to_string(c.n) + " d=" + std::to_string(c.d));
  return c;
}

void matmul_rows(const OpTable& t) {
  const OpSet& s = *t.set;
  MatCase c = gen_mat(2);
  if (const int m = gen_rows_m(2); m != c.M) {  // the rows at M = m, the rest of the case kept
    c.M = m;
    c.d = cap_rows(c.d, static_cast<long long>(c.M) * c.n, kMatmulBudget);  // W's first d rows
    c.W.resize(static_cast<size_t>(c.d) * c.n);
    c.X = values(static_cast<size_t>(c.M) * c.n, gen_seed(), *gen_fam());
    note_op_case({{"op", "matmul"}, {"M", c.M}, {"n", c.n}, {"d", c.d}, {"X", c.X}, {"W", c.W}},
                 "M=" + std::to_string(c.M) + " n=" + std::to_string(c.n) + " d=" + std::to_string(c.d));
  }
  const Weight W(s, c.W, c.d, c.n);
  const Vec all = matmul(s, c.X, c.M, W, c.n, c.d);
  const int i = *rc::gen::inRange(0, c.M);
  const Vec row(c.X.begin() + static_cast<ptrdiff_t>(i) * c.n, c.X.begin() + static_cast<ptrdiff_t>(i + 1) * c.n);
  const Vec alone = matmul(s, row, 1, W, c.n, c.d);
  GATE_SAME(diff(all, static_cast<size_t>(i) * c.d, alone, 0, c.d, "row " + std::to_string(i) + " of M=" + std::to_string(c.M) + " vs the row alone (M=1)"));
  // The same row among other rows (another batch): M2 rows, row i at j.
  const int M2 = cap_rows(gen_rows_m(1), static_cast<long long>(c.n) * c.d, kMatmulBudget), j = *rc::gen::inRange(0, M2);
  Vec X2 = values(static_cast<size_t>(M2) * c.n, gen_seed(), Family::kPlain);
  std::copy(row.begin(), row.end(), X2.begin() + static_cast<ptrdiff_t>(j) * c.n);
  json noted = noted_case();  // the counterexample file holds the other batch too
  noted["other"] = {{"row", i}, {"M", M2}, {"j", j}, {"X", X2}};
  note_op_case(std::move(noted), noted_shape());
  const Vec other = matmul(s, X2, M2, W, c.n, c.d);
  GATE_SAME(diff(other, static_cast<size_t>(j) * c.d, alone, 0, c.d,
                 "row " + std::to_string(i) + " as row " + std::to_string(j) + " of another batch of M=" + std::to_string(M2)));
}

void matmul_threads(const OpTable& t) {
  const OpSet& s = *t.set;
  const MatCase c = gen_mat(1, true);
  const Weight W(s, c.W, c.d, c.n);
  at_threads(s, [&] { return matmul(s, c.X, c.M, W, c.n, c.d); }, "matmul");
}

// Scratch filled with NaN, huge and zero values and left by a call on other inputs.
template <class Call>
void scratch_variants(const OpSet& s, uint32_t op, int M, int n, int d, Call&& call, const std::string& what) {
  Vec sc = scratch(s, op, M, n, d);
  const Vec base = call(sc);
  for (float fill : {1e30f, -3e38f, 0.0f, 1.0f}) {
    std::fill(sc.begin(), sc.end(), fill);
    GATE_SAME(diff(call(sc), 0, base, 0, base.size(), fmt::format("{} with scratch filled with {:g} vs NaN", what, fill)));
  }
}

std::string has_scratch(const OpTable& t, uint32_t op) {
  return t.set->scratch_floats(op, 64, 640, 64) > 0 ? "" : "the op asks for no scratch (scratch_floats 0 or NULL)";
}

void matmul_scratch(const OpTable& t) {
  const OpSet& s = *t.set;
  const MatCase c = gen_mat(1);
  const Weight W(s, c.W, c.d, c.n);
  const Vec other = values(static_cast<size_t>(c.M) * c.n, gen_seed() + 7, Family::kRange);
  scratch_variants(s, AKV_OP_MATMUL, c.M, c.n, c.d, [&](Vec& sc) { return matmul(s, c.X, c.M, W, c.n, c.d, kNaN, &sc); }, "matmul");
  // Scratch left by a call on other inputs: a stale read shows as a difference.
  Vec sc = scratch(s, AKV_OP_MATMUL, c.M, c.n, c.d);
  const Vec fresh = matmul(s, c.X, c.M, W, c.n, c.d, kNaN, &sc);
  matmul(s, other, c.M, W, c.n, c.d, kNaN, &sc);
  GATE_SAME(diff(matmul(s, c.X, c.M, W, c.n, c.d, kNaN, &sc), 0, fresh, 0, fresh.size(), "matmul with scratch left by another call"));
}

// B1 (any order, FMA or not, gradual underflow) against the exact dot, for every output of
// up to 4 rows and 40 outputs.
void matmul_bound(const OpTable& t) {
  const MatCase c = gen_mat(1);
  Vec Y(static_cast<size_t>(c.M) * c.d, kNaN);
  t.matmul(Y.data(), c.X.data(), c.W.data(), c.M, c.n, c.d);
  for (int m = 0; m < std::min(c.M, 4); ++m)
    for (int j = 0; j < c.d; ++j) {
      const float* x = c.X.data() + static_cast<size_t>(m) * c.n;
      const float* w = c.W.data() + static_cast<size_t>(j) * c.n;
      const float y = Y[static_cast<size_t>(m) * c.d + j];
      const double err = std::isfinite(y) ? oracle::dot_abs_err_up(y, x, 1, w, 1, c.n) : INFINITY;
      const double bound = bounds::dot_bound(x, 1, w, 1, c.n);
      RC_ASSERT(std::isfinite(bound));
      if (!within_bound(err, 0, bound))
        RC_FAIL(fmt::format("Y[{}][{}] = {:.9g}: error {:.3g} > B1 {:.3g}", m, j, y, err, bound));
    }
}

// B10 for matmul: rows within 2 B1 of the reference's; the first output and the dot op (the
// table's own reduction of RMSNorm and the scores, K2) within B1 of the exact value; the dot
// within 2 B1 of the reference's; scores dot * 1/sqrt(n) within 2 B4 of the reference's (M9).
// Every family, n up to 4096 (gen_length).
void matmul_reference(const OpTable& t) {
  const Family f = *gen_fam();
  const int n = *gen_length(), d = *rc::gen::inRange(1, 41), M = *rc::gen::inRange(1, 4);
  const uint64_t seed = gen_seed();
  const Vec X = family_values(f, static_cast<size_t>(M) * n, seed), W = family_values(f, static_cast<size_t>(d) * n, seed + 1);
  note_op_case({{"op", "matmul"}, {"M", M}, {"n", n}, {"d", d}, {"X", X}, {"W", W}},
               "M=" + std::to_string(M) + " n=" + std::to_string(n) + " d=" + std::to_string(d));
  Vec Y(static_cast<size_t>(M) * d, kNaN), Rf(Y.size(), kNaN);
  t.matmul(Y.data(), X.data(), W.data(), M, n, d);
  reference_ops().matmul(Rf.data(), X.data(), W.data(), M, n, d);
  for (int m = 0; m < M; ++m)
    for (int i = 0; i < d; ++i) {
      const size_t o = static_cast<size_t>(m) * d + i;
      const double b = bounds::dot_bound(W.data() + static_cast<size_t>(i) * n, 1, X.data() + static_cast<size_t>(m) * n, 1, n);
      RC_ASSERT(std::isfinite(b));
      RC_ASSERT(within_bound(Y[o], Rf[o], 2 * b));
    }
  const double b1 = bounds::dot_bound(X.data(), 1, W.data(), 1, n);
  RC_ASSERT(oracle::dot_abs_err_up(Y[0], X.data(), 1, W.data(), 1, n) <= b1);
  const float dot = t.dot(X.data(), W.data(), n);
  RC_ASSERT(oracle::dot_abs_err_up(dot, X.data(), 1, W.data(), 1, n) <= b1);
  RC_ASSERT(within_bound(dot, Rf[0], 2 * b1));
  const float scale = 1.0f / std::sqrt(static_cast<float>(n));
  const double b4 = bounds::score_bound(Vec(X.begin(), X.begin() + n), Vec(W.begin(), W.begin() + n));
  RC_ASSERT(std::isfinite(b4));
  RC_ASSERT(within_bound(dot * scale, Rf[0] * scale, 2 * b4));
}

// ---- rmsnorm

void rmsnorm_rows(const OpTable& t) {
  const OpSet& s = *t.set;
  const int n = gen_width(), M = std::max(2, cap_rows(gen_rows_m(2), n, kRowBudget)), i = *rc::gen::inRange(0, M);
  const uint64_t seed = gen_seed();
  const Vec x = values(static_cast<size_t>(M) * n, seed, *gen_fam()), w = values(n, seed + 1, Family::kPlain);
  note_op_case({{"op", "rmsnorm"}, {"M", M}, {"n", n}, {"x", x}, {"w", w}}, "M=" + std::to_string(M) + " n=" + std::to_string(n));
  const akv_kernels& k = s.ops();
  Vec all(x.size(), kNaN), alone(n, kNaN);
  k.rmsnorm(k.ctx, all.data(), x.data(), w.data(), M, n, 1e-5f);
  k.rmsnorm(k.ctx, alone.data(), x.data() + static_cast<size_t>(i) * n, w.data(), 1, n, 1e-5f);
  GATE_SAME(diff(all, static_cast<size_t>(i) * n, alone, 0, n, "row " + std::to_string(i) + " of M=" + std::to_string(M) + " vs alone"));
}

void rmsnorm_threads(const OpTable& t) {
  const OpSet& s = *t.set;
  const int n = gen_width(), M = cap_rows(*rc::gen::inRange(1, 65), n, kRowBudget);
  const uint64_t seed = gen_seed();
  const Vec x = values(static_cast<size_t>(M) * n, seed, *gen_fam()), w = values(n, seed + 1, Family::kPlain);
  note_op_case({{"op", "rmsnorm"}, {"M", M}, {"n", n}, {"x", x}, {"w", w}}, "M=" + std::to_string(M) + " n=" + std::to_string(n));
  const akv_kernels& k = s.ops();
  at_threads(s, [&] {
    Vec y(x.size(), kNaN);
    k.rmsnorm(k.ctx, y.data(), x.data(), w.data(), M, n, 1e-5f);
    return y;
  }, "rmsnorm");
}

// B10: within B2(reference) + B2(this kernel) = 2 B2 of the reference's output. A drawn
// width, or (one case in six) a long row of 2048..4096; two eps.
void rmsnorm_bound(const OpTable& t) {
  const int n = *rc::gen::weightedOneOf<int>({{5, rc::gen::just(0)}, {1, rc::gen::inRange(2048, 4097)}});
  const int width = n > 0 ? n : gen_width();
  const float eps = *rc::gen::element(1e-5f, 1e-6f);
  const uint64_t seed = gen_seed();
  const Vec x = values(width, seed, *gen_fam()), w = values(width, seed + 1, Family::kPlain);
  note_op_case({{"op", "rmsnorm"}, {"M", 1}, {"n", width}, {"eps", eps}, {"x", x}, {"w", w}}, "M=1 n=" + std::to_string(width));
  Vec y(width, kNaN), r(width, kNaN);
  t.rmsnorm(y.data(), x.data(), w.data(), 1, width, eps);
  ref::rmsnorm(r.data(), x.data(), w.data(), width, eps);
  const auto b = bounds::rmsnorm_bounds(x, w, eps);
  for (int j = 0; j < width; ++j) {
    RC_ASSERT(std::isfinite(b[j]));
    const double err = std::isfinite(y[j]) ? std::fabs(double(y[j]) - double(r[j])) : INFINITY;
    if (!within_bound(y[j], r[j], 2 * b[j]))
      RC_FAIL(fmt::format("y[{}] = {:.9g} vs the reference's {:.9g}: |delta| {:.3g} > 2 B2 {:.3g}", j, y[j], r[j], err, 2 * b[j]));
  }
}

// The header's bitwise part (GT3): rows whose sum of squares is exact in any order, so every
// conforming kernel has the reference's ss; from there M7's operations (ss / n, + eps, sqrtf,
// 1 / that, (x * inv) * w) give the reference's bits. Catches ss * (1/n), an rsqrt estimate,
// x / sqrt or x * (inv * w). M rows, each at its own scale 2^e.
void rmsnorm_exact(const OpTable& t) {
  const int n = gen_width(), M = cap_rows(gen_rows_m(1), n, kRowBudget);
  // Row r at scale 2^e[r]: near 1 (e0 - r mod 7) or, with spread, anywhere in 2^-40 .. 2^40.
  const int e0 = *rc::gen::inRange(-6, 1);
  const bool spread = *rc::gen::element(false, false, true);
  std::vector<int> e(M);
  for (int r = 0; r < M; ++r) e[r] = spread ? (e0 + 46 + r * 37) % 81 - 40 : e0 - r % 7;
  const uint64_t seed = gen_seed();
  const float eps = *rc::gen::element(1e-5f, 1e-6f);
  const Vec x = exact_square_rows(M, n, seed, e), w = values(n, seed + 1, Family::kPlain);
  note_op_case({{"op", "rmsnorm"}, {"M", M}, {"n", n}, {"eps", eps}, {"x", x}, {"w", w}},
               "M=" + std::to_string(M) + " n=" + std::to_string(n));
  Vec y(x.size(), kNaN), r(x.size(), kNaN);
  t.rmsnorm(y.data(), x.data(), w.data(), M, n, eps);
  for (int m = 0; m < M; ++m) ref::rmsnorm(r.data() + static_cast<size_t>(m) * n, x.data() + static_cast<size_t>(m) * n, w.data(), n, eps);
  GATE_SAME(diff(y, 0, r, 0, y.size(), "RMSNorm of rows with an exact sum of squares vs the reference (M7 after ss: bitwise)"));
}

// B9 for the last two ops: the final RMSNorm then the output matmul within 2 B9 of the
// reference's (vocab to 64).
void logits_reference(const OpTable& t) {
  const OpTable& R = reference_ops();
  const Family f = *gen_fam();
  const int n = *gen_length(), vocab = *rc::gen::inRange(1, 65);
  const uint64_t seed = gen_seed();
  const Vec x = family_values(f, n, seed), wn = family_values(Family::kPlain, n, seed + 1),
            W = family_values(Family::kPlain, static_cast<size_t>(vocab) * n, seed + 2);
  note_op_case({{"op", "rmsnorm+matmul"}, {"n", n}, {"vocab", vocab}, {"x", x}, {"norm_w", wn}, {"W", W}},
               "n=" + std::to_string(n) + " vocab=" + std::to_string(vocab));
  Vec y(n, kNaN), L(vocab, kNaN), yr(n, kNaN), Lr(vocab, kNaN);
  t.rmsnorm(y.data(), x.data(), wn.data(), 1, n, 1e-5f);
  t.matmul(L.data(), y.data(), W.data(), 1, n, vocab);
  R.rmsnorm(yr.data(), x.data(), wn.data(), 1, n, 1e-5f);
  R.matmul(Lr.data(), yr.data(), W.data(), 1, n, vocab);
  const auto B = bounds::logits_bounds(x, wn, 1e-5f, W, vocab);
  for (int i = 0; i < vocab; ++i) {
    RC_ASSERT(std::isfinite(B[i]));
    RC_ASSERT(within_bound(L[i], Lr[i], 2 * B[i]));
  }
}

// ---- rope (the one table, at every head dim the kernels dispatch on)

const RopeTable& rope_table(int hd) {
  static std::map<int, RopeTable> tables;
  auto it = tables.find(hd);
  if (it == tables.end()) it = tables.emplace(hd, make_rope_table(hd, 10000.0f, 4096)).first;
  return it->second;
}

struct RopeCase {
  int M, heads, hd;
  std::vector<int32_t> pos;
  Vec x;
};
RopeCase gen_rope() {
  RopeCase c;
  std::vector<int> hds(cpu::kAttentionCheckHeadDims.begin(), cpu::kAttentionCheckHeadDims.end());
  hds.push_back(16);
  c.heads = *rc::gen::element(1, 2, 3, 4, 9), c.hd = *rc::gen::elementOf(hds);  // 9, 3: SmolLM2's heads
  c.M = cap_rows(gen_rows_m(1), static_cast<long long>(c.heads) * c.hd, kRowBudget / 16);
  for (int m = 0; m < c.M; ++m) c.pos.push_back(*rc::gen::inRange(0, 4096));
  c.x = values(static_cast<size_t>(c.M) * c.heads * c.hd, gen_seed(), *gen_fam());
  note_op_case({{"op", "rope"}, {"M", c.M}, {"heads", c.heads}, {"head_dim", c.hd}, {"pos", c.pos}, {"x", c.x}},
               "M=" + std::to_string(c.M) + " heads=" + std::to_string(c.heads) + " head_dim=" + std::to_string(c.hd));
  return c;
}
Vec rope(const OpTable& t, const RopeCase& c, int r0, int m) {
  const RopeTable& tab = rope_table(c.hd);
  const size_t w = static_cast<size_t>(c.heads) * c.hd;
  Vec x(c.x.begin() + static_cast<ptrdiff_t>(r0 * w), c.x.begin() + static_cast<ptrdiff_t>((r0 + m) * w));
  t.rope(x.data(), m, c.heads, c.hd, c.pos.data() + r0, tab.cos_rows(tab.max_pos), tab.sin_rows(tab.max_pos));
  return x;
}

void rope_rows(const OpTable& t) {
  const RopeCase c = gen_rope();
  const int i = *rc::gen::inRange(0, c.M);
  const size_t w = static_cast<size_t>(c.heads) * c.hd;
  GATE_SAME(diff(rope(t, c, 0, c.M), i * w, rope(t, c, i, 1), 0, w, "row " + std::to_string(i) + " vs alone"));
}

void rope_threads(const OpTable& t) {
  const RopeCase c = gen_rope();
  at_threads(*t.set, [&] { return rope(t, c, 0, c.M); }, "rope");
}

// B3 with distance 0: the reference's operations on the one table.
void rope_bitwise(const OpTable& t) {
  const RopeCase c = gen_rope();
  GATE_SAME(diff(rope(t, c, 0, c.M), 0, rope(reference_ops(), c, 0, c.M), 0, c.x.size(),
                 "RoPE vs the reference (M6's products and sums on the one table, no FMA: bitwise)"));
}

// ---- swiglu, add (elementwise)

struct Elem {
  int n;
  Vec a, b;
};
Elem gen_elem(const char* op) {
  Elem e;
  e.n = gen_width();  // a pick, then the value: shrinks to n = 1
  const uint64_t seed = gen_seed();
  // SwiGLU's gate up to +-100 (where exp(-g) overflows) and in the ordinary range.
  e.a = family_values(*rc::gen::element(Family::kPlain, *gen_fam()), e.n, seed, *rc::gen::element(1.0f, 10.0f, 20.0f, 60.0f, 100.0f));
  e.b = values(e.n, seed + 1, *gen_fam());
  note_op_case({{"op", op}, {"n", e.n}, {"a", e.a}, {"b", e.b}}, "n=" + std::to_string(e.n));
  return e;
}
Vec elem(const OpTable& t, uint32_t op, const Elem& e, int i0, int n) {
  Vec out(e.a.begin() + i0, e.a.begin() + i0 + n);
  if (op == AKV_OP_SWIGLU)
    t.swiglu(out.data(), out.data(), e.b.data() + i0, n);
  else
    t.add(out.data(), e.b.data() + i0, n);
  return out;
}
template <uint32_t Op>
void elem_split(const OpTable& t) {
  const Elem e = gen_elem(Op == AKV_OP_SWIGLU ? "swiglu" : "add");
  const int at = *rc::gen::inRange(0, e.n);
  const Vec all = elem(t, Op, e, 0, e.n), tail = elem(t, Op, e, at, e.n - at);
  GATE_SAME(diff(all, at, tail, 0, e.n - at, "elements from " + std::to_string(at) + " in one call vs a call starting there"));
}
template <uint32_t Op>
void elem_threads(const OpTable& t) {
  const Elem e = gen_elem(Op == AKV_OP_SWIGLU ? "swiglu" : "add");
  at_threads(*t.set, [&] { return elem(t, Op, e, 0, e.n); }, Op == AKV_OP_SWIGLU ? "swiglu" : "add");
}
template <uint32_t Op>
void elem_bitwise(const OpTable& t) {
  const Elem e = gen_elem(Op == AKV_OP_SWIGLU ? "swiglu" : "add");
  GATE_SAME(diff(elem(t, Op, e, 0, e.n), 0, elem(reference_ops(), Op, e, 0, e.n), 0, e.n,
                 Op == AKV_OP_SWIGLU ? "vs the reference (M10: (g / (1 + akv_exp(-g))) * u, akv_exp of <akv/exp.h> (A4): bitwise)"
                                     : "vs the reference (M11: x + y: bitwise)"));
}

// ---- attention

void attention_start(const OpTable& t) {
  const OpSet& s = *t.set;
  const Attn a = gen_attn(64, 2);
  note_attn(a, "");
  const int split = *rc::gen::inRange(1, a.M);
  const Vec all = attention(s, a, 0, a.M), tail = attention(s, a, split, a.M - split);
  GATE_SAME(diff(all, static_cast<size_t>(split) * a.qd(), tail, 0, static_cast<size_t>(a.M - split) * a.qd(),
                 "rows from " + std::to_string(split) + " in a call starting at position " + std::to_string(a.pos0) +
                     " vs a call starting at " + std::to_string(a.pos0 + split)));
}

void attention_rows(const OpTable& t) {
  const OpSet& s = *t.set;
  const Attn a = gen_attn(64);
  note_attn(a, "");
  const int i = *rc::gen::inRange(0, a.M);
  const Vec all = attention(s, a, 0, a.M), alone = attention(s, a, i, 1);
  GATE_SAME(diff(all, static_cast<size_t>(i) * a.qd(), alone, 0, a.qd(), "row " + std::to_string(i) + " of M=" + std::to_string(a.M) + " vs alone"));
}

// A table's decode against its own prefill, on every path a kernel dispatches a decode to (the
// other draws reach a head dim 1 case in 8 and a split decode seldom): each head dim of
// kernels.hpp's dispatch list; the decoded query in the first key block (one block), past it
// (two or three blocks: the cpu kernels' split path at 2+ threads) and past 512 keys (where
// split-KV decode kernels commonly start: ggml's flash attention at 512 cache cells); decoded
// alone at 1, 2 and 3 threads (the table's default when it has no set_threads), against its
// row in one prefill call of its rows at 1 thread. Every case runs every path, so any case count
// reaches them all.
void attention_decode(const OpTable& t) {
  const OpSet& s = *t.set;
  const auto shape = *rc::gen::element(std::pair{1, 1}, std::pair{2, 1}, std::pair{3, 1}, std::pair{6, 2},
                                       std::pair{9, 3});  // GQA groups 1-3 (the split path takes groups <= 6); 9/3: SmolLM2
  const std::vector<int> threads = s.has_threads() ? std::vector<int>{1, 2, 3} : std::vector<int>{0};
  constexpr int kB = cpu::kKeyBlock;
  // [lo, hi) of the last row's position: the first key block, the second and third, just past 512
  // keys (kept short: the cost of a case is mostly this prefill).
  constexpr std::array<std::pair<int, int>, 3> kWhere = {std::pair{0, kB}, std::pair{kB, 3 * kB}, std::pair{512, 512 + kB}};
  struct Path {
    Attn a;
    int r;        // the decoded row
    Vec prefill;  // all rows in one call at 1 thread
  };
  std::vector<Path> paths;
  if (threads[0] > 0) RC_ASSERT(s.set_threads(1));
  for (const int hd : cpu::kAttentionCheckHeadDims)
    for (const auto& [lo, hi] : kWhere) {
      Path p;
      p.a.heads = shape.first, p.a.kvh = shape.second, p.a.hd = hd;
      p.a.M = *rc::gen::inRange(2, 6);
      const int last = *rc::gen::inRange(std::max(lo, p.a.M - 1), hi);
      p.a.pos0 = last - (p.a.M - 1);
      attn_values(p.a);
      p.r = *rc::gen::element(p.a.M - 1, *rc::gen::inRange(0, p.a.M - 1));  // the last row, or another
      p.prefill = attention(s, p.a, 0, p.a.M);
      paths.push_back(std::move(p));
    }
  // Each thread count set once: a table may rebuild its pool on set_threads.
  for (const int th : threads) {
    if (th > 0) RC_ASSERT(s.set_threads(th));
    for (const Path& p : paths) {
      const Attn& a = p.a;
      note_attn(a, " decode of row " + std::to_string(p.r));
      g_case["row"] = p.r;  // the decoded row (gate/c_snippet.cpp replays it)
      const Vec alone = attention(s, a, p.r, 1);
      const int pos = a.pos0 + p.r;
      const std::string d = diff(alone, 0, p.prefill, static_cast<size_t>(p.r) * a.qd(), a.qd(),
                                 fmt::format("head_dim {} decode at position {} ({} keys)", a.hd, pos, pos + 1) +
                                     (th > 0 ? fmt::format(" at {} thread{}", th, th > 1 ? "s" : "") : std::string()) +
                                     " vs its row in a prefill of " + std::to_string(a.M) + " rows from " +
                                     std::to_string(a.pos0) + (th > 0 ? " at 1 thread" : ""));
      if (!d.empty()) {
        if (th > 0) s.set_threads(1);
        RC_FAIL(d);
      }
    }
  }
  if (threads[0] > 0) s.set_threads(1);
}

void attention_threads(const OpTable& t) {
  const OpSet& s = *t.set;
  const Attn a = gen_attn(16);
  note_attn(a, "");
  at_threads(s, [&] { return attention(s, a, 0, a.M); }, "attention");
}

void attention_scratch(const OpTable& t) {
  const OpSet& s = *t.set;
  const Attn a = gen_attn(8);
  note_attn(a, "");
  scratch_variants(s, AKV_OP_ATTENTION, a.M, a.pos0 + a.M, a.qd(), [&](Vec& sc) { return attention(s, a, 0, a.M, kNaN, &sc); },
                   "attention");
  Attn other = a;
  for (float& x : other.q) x = -x;
  Vec sc = scratch(s, AKV_OP_ATTENTION, a.M, a.pos0 + a.M, a.qd());
  const Vec fresh = attention(s, a, 0, a.M, kNaN, &sc);
  attention(s, other, 0, a.M, kNaN, &sc);
  GATE_SAME(diff(attention(s, a, 0, a.M, kNaN, &sc), 0, fresh, 0, fresh.size(), "attention with scratch left by another call"));
}

// B14 against the exact (MPFR) value, with the table's declared counts (a plugin's: any
// conforming kernel's, GT3).
void attention_bound(const OpTable& t) {
  const Attn a = gen_attn(4);
  note_attn(a, "");
  Vec out(static_cast<size_t>(a.M) * a.qd(), kNaN);
  t.attention(out.data(), a.q.data(), a.k.data(), a.v.data(), a.M, a.pos0, a.heads, a.kvh, a.hd);
  const int m = *rc::gen::inRange(0, a.M), h = *rc::gen::inRange(0, a.heads);
  const int n = a.pos0 + m + 1, g = h / (a.heads / a.kvh);
  // Head h of row m, and its KV head's keys and values (n, hd).
  AttnInput head;
  head.n = n, head.d = a.hd;
  head.q.assign(a.q.begin() + static_cast<ptrdiff_t>(m) * a.qd() + h * a.hd, a.q.begin() + static_cast<ptrdiff_t>(m) * a.qd() + (h + 1) * a.hd);
  head.k.resize(static_cast<size_t>(n) * a.hd), head.v.resize(head.k.size());
  for (int p = 0; p < n; ++p)
    for (int i = 0; i < a.hd; ++i) {
      const size_t at = static_cast<size_t>(p) * a.hd + i;
      head.k[at] = a.k[static_cast<size_t>(p) * a.kvd() + g * a.hd + i], head.v[at] = a.v[static_cast<size_t>(p) * a.kvd() + g * a.hd + i];
    }
  const std::string failed = head_within_b14_of_exact(out.data() + static_cast<size_t>(m) * a.qd() + h * a.hd, head,
                                                      t.attention_rounding(n), g_tally);
  if (!failed.empty()) RC_FAIL("row " + std::to_string(m) + " head " + std::to_string(h) + ": " + failed);
}

// B10 for attention: one head (M = 1) within B14(reference) + B14(this table's declared
// rounding) of the reference's three passes (M9), up to 4096 keys (gen_attn_input),
// adversarial scores and values.
void attention_reference(const OpTable& t) {
  const AttnInput a = gen_attn_input();
  note_op_case({{"op", "attention"}, {"M", 1}, {"pos0", a.n - 1}, {"heads", 1}, {"kv_heads", 1}, {"head_dim", a.d},
                {"q", a.q}, {"k", a.k}, {"v", a.v}},
               "M=1 pos0=" + std::to_string(a.n - 1) + " heads=1/1 head_dim=" + std::to_string(a.d));
  Vec opt(a.d, kNaN), ref(a.d, kNaN);
  t.attention(opt.data(), a.q.data(), a.k.data(), a.v.data(), 1, a.n - 1, 1, 1, a.d);
  reference_ops().attention(ref.data(), a.q.data(), a.k.data(), a.v.data(), 1, a.n - 1, 1, 1, a.d);
  const auto br = bounds::attention_bounds(a.q.data(), a.k.data(), a.v.data(), a.n, a.d, a.d, reference_ops().attention_rounding(a.n));
  const auto bo = bounds::attention_bounds(a.q.data(), a.k.data(), a.v.data(), a.n, a.d, a.d, t.attention_rounding(a.n));
  for (int i = 0; i < a.d; ++i) {
    RC_ASSERT(std::isfinite(br[i]) && std::isfinite(bo[i]));
    RC_ASSERT(within_bound(opt[i], ref[i], br[i] + bo[i]));
  }
}

}  // namespace

void note_op_case(json c, std::string shape) {
  g_case = std::move(c);
  g_shape = std::move(shape);
}
const json& noted_case() { return g_case; }
const std::string& noted_shape() { return g_shape; }

const std::vector<OpProperty>& op_properties() {
  auto scratch_of = [](uint32_t op) { return [op](const OpTable& t) { return has_scratch(t, op); }; };
  static const std::vector<OpProperty> all{
      {"GT2.matmul.rows", AKV_OP_MATMUL, "invariance", true, "a row's outputs do not depend on M or the other rows of the call", always, matmul_rows},
      {"GT2.matmul.threads", AKV_OP_MATMUL, "invariance", true, "the outputs at 2 and 3 threads equal those at 1", no_threads, matmul_threads},
      {"GT2.matmul.scratch", AKV_OP_MATMUL, "invariance", true, "the outputs do not depend on the scratch contents", scratch_of(AKV_OP_MATMUL), matmul_scratch},
      {"GT3.matmul.bound", AKV_OP_MATMUL, "accuracy", true, "every output within B1 of the exact dot product", always, matmul_bound},
      {"GT2.rmsnorm.rows", AKV_OP_RMSNORM, "invariance", true, "a row's outputs do not depend on M or the other rows", always, rmsnorm_rows},
      {"GT2.rmsnorm.threads", AKV_OP_RMSNORM, "invariance", true, "the outputs at 2 and 3 threads equal those at 1", no_threads, rmsnorm_threads},
      {"GT3.rmsnorm.bound", AKV_OP_RMSNORM, "accuracy", true, "within 2 B2 of the reference's output (B10)", always, rmsnorm_bound},
      {"GT3.rmsnorm.exact", AKV_OP_RMSNORM, "accuracy", true, "with an exact sum of squares, M7's operations bit for bit (ss / n, + eps, sqrtf, 1 / it, (x * inv) * w)", always, rmsnorm_exact},
      {"GT2.rope.rows", AKV_OP_ROPE, "invariance", true, "a row's outputs do not depend on the other rows", always, rope_rows},
      {"GT2.rope.threads", AKV_OP_ROPE, "invariance", true, "the outputs at 2 and 3 threads equal those at 1", no_threads, rope_threads},
      {"GT3.rope.bitwise", AKV_OP_ROPE, "accuracy", true, "the reference's operations on the one table, bit for bit (M6)", always, rope_bitwise},
      {"GT2.attention.start", AKV_OP_ATTENTION, "invariance", true, "a query's output does not depend on where its call starts", always, attention_start},
      {"GT2.attention.rows", AKV_OP_ATTENTION, "invariance", true, "a query's output does not depend on M or the other queries", always, attention_rows},
      {"GT2.attention.decode", AKV_OP_ATTENTION, "invariance", true, "a query decoded alone at 1, 2 and 3 threads equals its row in a prefill, at every head dim of the dispatch list, in the first key block, past it and past 512 keys", always, attention_decode},
      {"GT2.attention.threads", AKV_OP_ATTENTION, "invariance", true, "the outputs at 2 and 3 threads equal those at 1", no_threads, attention_threads},
      {"GT2.attention.scratch", AKV_OP_ATTENTION, "invariance", true, "the outputs do not depend on the scratch contents", scratch_of(AKV_OP_ATTENTION), attention_scratch},
      {"GT3.attention.bound", AKV_OP_ATTENTION, "accuracy", true, "within B14 (the table's counts; a plugin's: any conforming kernel's) of the exact MPFR value", always, attention_bound},
      {"GT2.swiglu.split", AKV_OP_SWIGLU, "invariance", true, "an element's output does not depend on where its call starts", always, elem_split<AKV_OP_SWIGLU>},
      {"GT2.swiglu.threads", AKV_OP_SWIGLU, "invariance", true, "the outputs at 2 and 3 threads equal those at 1", no_threads, elem_threads<AKV_OP_SWIGLU>},
      {"GT3.swiglu.bitwise", AKV_OP_SWIGLU, "accuracy", true, "(g / (1 + akv_exp(-g))) * u with <akv/exp.h>'s exp, bit for bit (M10, A4)", always, elem_bitwise<AKV_OP_SWIGLU>},
      {"GT2.add.split", AKV_OP_ADD, "invariance", true, "an element's output does not depend on where its call starts", always, elem_split<AKV_OP_ADD>},
      {"GT2.add.threads", AKV_OP_ADD, "invariance", true, "the outputs at 2 and 3 threads equal those at 1", no_threads, elem_threads<AKV_OP_ADD>},
      {"GT3.add.bitwise", AKV_OP_ADD, "accuracy", true, "x + y, bit for bit (M11)", always, elem_bitwise<AKV_OP_ADD>},
      // Table-only (not the gate's): against the reference, with the table's own dot and rounding model.
      {"B10.matmul.reference", AKV_OP_MATMUL, "accuracy", false, "rows, dot and scores within 2 B1, 2 B1 and 2 B4 of the reference's", not_the_reference, matmul_reference},
      {"B10.attention.reference", AKV_OP_ATTENTION, "accuracy", false, "one head within B14(reference) + B14(this table) of the reference's", not_the_reference, attention_reference},
      {"B9.logits.reference", AKV_OP_RMSNORM | AKV_OP_MATMUL, "accuracy", false, "the final RMSNorm then the output matmul within 2 B9 of the reference's", not_the_reference, logits_reference},
  };
  return all;
}

const OpProperty& op_property(const std::string& id) {
  std::string known;
  for (const OpProperty& p : op_properties()) {
    if (p.id == id) return p;
    known += " " + p.id;
  }
  throw Error(ErrorCode::kBadInput, "no per-op property '" + id + "'; the properties:" + known);
}

Report run_op_property(const OpTable& t, const std::string& id) {
  const OpProperty& p = op_property(id);
  Report r;
  if (!t.unavailable.empty()) r.skipped = t.label + ": " + t.unavailable;
  else if (const std::string why = p.applies(t); !why.empty()) r.skipped = why;
  if (!r.skipped.empty()) return r;
  Closeness c;
  struct Tally {  // this thread's distances go to c while the property runs
    explicit Tally(Closeness* c) { g_tally = c; }
    ~Tally() { g_tally = nullptr; }
  } scope(&c);
  r.merge(check_property(id + "/" + t.label, [&] { p.body(t); }));
  if (c.compared > 0) {
    r.observed.push_back({t.label + " " + id, c});
    r.expect(c.nonzero > 0, "every distance was 0: the cases show no rounding", id);
  }
  return r;
}

}  // namespace akv::check
