// akv_bounds_campaign [--cases N] [--seed S]: the tightness report of spec/bounds.md
// (docs/bounds.md). For each per-op bound (B1-B9) and end to end (B11), over random and
// adversarial inputs, the ratio bound / observed error against the exact oracle: a ratio
// below 1 is a violation (exit 1); large ratios are reported, not asserted.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "reference/ops.hpp"
#include "reference/rope.hpp"
#include "verify/bounds/end_to_end.hpp"
#include "verify/bounds/op_bounds.hpp"
#include "verify/oracle/exact_sum.hpp"
#include "verify/oracle/real.hpp"

using namespace akv;
using namespace akv::bounds;
using akv::oracle::Real;

namespace {
std::mt19937_64 rng;

// Families as in tests/bounds_support.hpp: plain, cancellation, dynamic range, near underflow.
std::vector<float> values(int family, int n) {
  std::uniform_real_distribution<float> u(-1, 1);
  std::uniform_int_distribution<int> range(-40, 40), tiny(-80, -61);
  std::vector<float> v(n);
  for (int i = 0; i < n; ++i) {
    const float m = u(rng);
    switch (family) {
      case 0: v[i] = 2 * m; break;
      case 1: v[i] = (i % 2 == 1) ? -v[i - 1] * (1 + 1e-6f * m) : 4 * m; break;
      case 2: v[i] = std::ldexp(m, range(rng)); break;
      default: v[i] = std::ldexp(m, tiny(rng)); break;
    }
  }
  return v;
}
std::vector<Real> real(const std::vector<float>& v) { return {v.begin(), v.end()}; }

struct Tally {
  std::vector<double> ratios;
  double max_err = 0, max_bound = 0;
  long exact = 0, violations = 0;
  void add(double err, double bound) {
    if (err > bound * (1 + 0x1p-200)) ++violations;
    max_err = std::max(max_err, err);
    max_bound = std::max(max_bound, bound);
    if (err == 0) ++exact;
    else ratios.push_back(bound / err);
  }
};

void row(const std::string& name, Tally& t) {
  std::sort(t.ratios.begin(), t.ratios.end());
  auto q = [&](double f) { return t.ratios.empty() ? 0.0 : t.ratios[static_cast<size_t>(f * (t.ratios.size() - 1))]; };
  std::printf("| %-26s | %8zu | %6ld | %9.3g | %9.3g | %9.3g | %9.3g | %ld |\n", name.c_str(), t.ratios.size(), t.exact, q(0), q(0.5),
              q(1), t.max_err > 0 ? t.max_bound / t.max_err : 0.0, t.violations);
}
}  // namespace

int main(int argc, char** argv) {
  int cases = 200;
  uint64_t seed = 1;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--cases" && i + 1 < argc) cases = std::atoi(argv[++i]);
    else if (a == "--seed" && i + 1 < argc) seed = std::strtoull(argv[++i], nullptr, 10);
    else {
      std::fprintf(stderr, "usage: akv_bounds_campaign [--cases N] [--seed S]\n");
      return 2;
    }
  }
  rng.seed(seed);
  long violations = 0;
  std::printf("| op (clause) | cases err>0 | exact | min ratio | median | max ratio | max bound / max err | violations |\n");
  std::printf("|---|---|---|---|---|---|---|---|\n");
  auto run = [&](const char* name, const std::function<void(Tally&, int)>& body) {
    Tally t;
    for (int c = 0; c < cases; ++c) body(t, c % 4);
    violations += t.violations;
    row(name, t);
  };
  run("B1 dot product n=256", [](Tally& t, int f) {
    const auto x = values(f, 256), y = values(f, 256);
    float out;
    ref::matmul(&out, x.data(), y.data(), 256, 1);
    t.add(oracle::dot_abs_err_up(out, x, y), dot_bound(x, y));
  });
  run("B2 RMSNorm n=256", [](Tally& t, int f) {
    const auto x = values(f, 256), w = values(0, 256);
    std::vector<float> y(256);
    ref::rmsnorm(y.data(), x.data(), w.data(), 256, 1e-5f);
    std::vector<Real> xr = real(x), wr = real(w), yr(256);
    ref::rmsnorm(yr.data(), xr.data(), wr.data(), 256, 1e-5f);
    const auto b = rmsnorm_bounds(x, w, 1e-5f);
    for (int j = 0; j < 256; ++j) t.add(oracle::abs_err_up(y[j], yr[j]), b[j]);
  });
  static const RopeTable rope = make_rope_table(32, 10000.0f, 4096);
  run("B3 RoPE d=32", [](Tally& t, int f) {
    const auto x = values(f, 32);
    const int pos = static_cast<int>(rng() % 4096);
    std::vector<float> y = x;
    ref::rope(y.data(), 1, 32, rope.cos_at(pos), rope.sin_at(pos));
    std::vector<Real> yr = real(x);
    ref::rope(yr.data(), 1, 32, rope.cos_at(pos), rope.sin_at(pos));
    const auto b = rope_bounds(x, rope.cos_at(pos), rope.sin_at(pos));
    for (int j = 0; j < 32; ++j) t.add(oracle::abs_err_up(y[j], yr[j]), b[j]);
  });
  run("B4 score d=32", [](Tally& t, int f) {
    const auto q = values(f, 32), k = values(f, 32);
    float dot = 0;
    for (int i = 0; i < 32; ++i) dot = dot + q[i] * k[i];
    const float s = dot * (1.0f / std::sqrt(32.0f));
    Real e = 0;
    for (int i = 0; i < 32; ++i) e += Real(q[i]) * Real(k[i]);
    e /= boost::multiprecision::sqrt(Real(32));
    t.add(oracle::abs_err_up(s, e), score_bound(q, k));
  });
  run("B5 max-subtracted exp n=64", [](Tally& t, int) {
    auto s = values(0, 64);
    for (auto& v : s) v *= 10;
    float m = s[0];
    for (float v : s) m = std::max(m, v);
    const auto b = shifted_exp_bounds(s);
    for (int j = 0; j < 64; ++j)
      t.add(oracle::abs_err_up(akv::exp(s[j] - m), boost::multiprecision::exp(Real(s[j]) - Real(m))), b[j]);
  });
  run("B6 normalisation n=256", [](Tally& t, int) {
    auto e = values(0, 256);
    for (auto& v : e) v = std::fabs(v) + 0x1p-20f;
    float sum = 0;
    Real sr = 0;
    for (float v : e) sum = sum + v, sr += Real(v);
    const auto b = normalise_bounds(e);
    for (int j = 0; j < 256; ++j) t.add(oracle::abs_err_up(e[j] / sum, Real(e[j]) / sr), b[j]);
  });
  run("B5+B6 softmax n=256", [](Tally& t, int) {
    auto s = values(0, 256);
    for (auto& v : s) v *= 8;
    std::vector<float> p = s;
    ref::softmax(p.data(), 256);
    std::vector<Real> pr = real(s);
    ref::softmax(pr.data(), 256);
    const auto b = softmax_bounds(s);
    for (int j = 0; j < 256; ++j) t.add(oracle::abs_err_up(p[j], pr[j]), b[j]);
  });
  run("B7 weighted sum n=512", [](Tally& t, int f) {
    auto a = values(0, 512);
    for (auto& v : a) v = std::fabs(v) / 512;
    const auto v = values(f, 512);
    float out = 0;
    for (int p = 0; p < 512; ++p) out = out + a[p] * v[p];
    t.add(oracle::dot_abs_err_up(out, a, v), weighted_sum_bound(a.data(), v.data(), 512, 1));
  });
  run("B8 SiLU*gate", [](Tally& t, int f) {
    auto g = values(f, 64);
    for (auto& v : g) v *= 20;
    const auto u = values(0, 64);
    std::vector<float> y(64);
    ref::swiglu(y.data(), g.data(), u.data(), 64);
    std::vector<Real> gr = real(g), ur = real(u), yr(64);
    ref::swiglu(yr.data(), gr.data(), ur.data(), 64);
    for (int j = 0; j < 64; ++j) t.add(oracle::abs_err_up(y[j], yr[j]), swiglu_bound(g[j], u[j]));
  });
  run("B9 logits n=256 vocab=32", [](Tally& t, int f) {
    const auto x = values(f, 256), wn = values(0, 256), W = values(0, 256 * 32);
    std::vector<float> y(256), l(32);
    ref::rmsnorm(y.data(), x.data(), wn.data(), 256, 1e-5f);
    ref::matmul(l.data(), y.data(), W.data(), 256, 32);
    std::vector<Real> xr = real(x), wr = real(wn), Wr = real(W), yr(256), lr(32);
    ref::rmsnorm(yr.data(), xr.data(), wr.data(), 256, 1e-5f);
    ref::matmul(lr.data(), yr.data(), Wr.data(), 256, 32);
    const auto b = logits_bounds(x, wn, 1e-5f, W, 32);
    for (int i = 0; i < 32; ++i) t.add(oracle::abs_err_up(l[i], lr[i]), b[i]);
  });
  // End to end (B11): tiny, 1, 8 and 32 random tokens, every logit of the reference; a logit of
  // any other backend outside the bound counts as a violation too.
  const auto tiny = make_model(config_by_name("tiny"), seed);
  for (int len : {1, 8, 32}) {
    Tally t;
    const int runs = std::max(1, len == 32 ? cases / 100 : cases / 20);
    for (int c = 0; c < runs; ++c) {
      std::vector<Token> tokens(len);
      for (auto& tk : tokens) tk = static_cast<Token>(rng() % 288);
      const BoundsReport r = run_bounds(tiny, seed, tokens);
      for (const auto& l : r.logits) t.add(l.error, l.bound);
      violations += r.violations;
    }
    violations += t.violations;
    row(fmt::format("B11 end to end, tiny, {} token{}", len, len == 1 ? "" : "s"), t);
  }
  return violations == 0 ? 0 : 1;
}
