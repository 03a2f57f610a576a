// Deliberately broken backends: the property suite must catch each and shrink its
// counterexample to a small case (the suite's own teeth).
#pragma once
#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>

#include "../wrapped_backend.hpp"
#include "optimized/cpu/cpu_backend.hpp"
#include "reference/backend.hpp"
#include "verify/backends.hpp"

namespace akv::test {

enum class Mutation {
  kChunkSensitive,  // breaks I1: the first logit of a call of m >= 2 tokens is one ulp off
  kWarmState,       // breaks I1/E1: every call after a backend's first flips a bit of layer-0 K
  // The cpu backend with one defective kernel (MutantCpuBackend):
  kThreadSplit,     // every matmul sums k in as many contiguous parts as the pool has threads
  kBatchedTail,     // a matmul call of >= 2 rows sums the last n mod 16 terms apart, then adds them
};

/// The reference backend with `m` applied to its results.
class MutantBackend final : public WrappedReference {
 public:
  MutantBackend(std::shared_ptr<const Model> model, Mutation m) : WrappedReference(std::move(model), "mutant"), m_(m) {}
  void forward_rows(KVCache& cache, std::span<const Token> tokens, RowList rows, std::span<float> logits) override {
    const size_t first = cache.size();
    inner_->forward_rows(cache, tokens, rows, logits);
    if (m_ == Mutation::kChunkSensitive && tokens.size() >= 2) flip(logits[0]);
    if (m_ == Mutation::kWarmState && calls_++ > 0) flip(cache.k(0)[first * static_cast<size_t>(cache.kv_dim())]);
  }

 private:
  static void flip(float& x) {
    uint32_t b;
    std::memcpy(&b, &x, 4);
    b ^= 1u;
    std::memcpy(&x, &b, 4);
  }
  Mutation m_;
  int calls_ = 0;
};

namespace mutant_kernels {

// One output of a matmul as an FMA chain over k in [k0, k1) from +0, as K1 computes it whole.
inline float chain(const float* x, const float* panel, int c, int k0, int k1) {
  float acc = 0.0f;
  for (int k = k0; k < k1; ++k) acc = std::fma(x[k], panel[static_cast<size_t>(k) * cpu::kLanes + c], acc);
  return acc;
}

// Calls fn(x row, panel, c) -> float for every row and every output column of panels [p0, p1).
template <class F>
void each_output(const float* X, size_t ldx, int rows, const cpu::PackedMatrix& W, int p0, int p1, float* Y, size_t ldy, F fn) {
  for (int p = p0; p < p1; ++p)
    for (int c = 0; c < cpu::kLanes && p * cpu::kLanes + c < W.d; ++c)
      for (int r = 0; r < rows; ++r) Y[r * ldy + p * cpu::kLanes + c] = fn(X + r * ldx, W.panel(p), c);
}

// A split-K defect: the reduction is cut into `Parts` (the thread count) partial chains,
// added in order. One part is K1's chain, so one thread is right, and any two thread counts
// disagree.
template <int Parts>
void matmul_split(const float* X, size_t ldx, int rows, const cpu::PackedMatrix& W, int p0, int p1, float* Y, size_t ldy) {
  const int n = W.n;
  each_output(X, ldx, rows, W, p0, p1, Y, ldy, [n](const float* x, const float* panel, int c) {
    float sum = chain(x, panel, c, 0, n / Parts);
    for (int part = 1; part < Parts; ++part) sum += chain(x, panel, c, part * n / Parts, (part + 1) * n / Parts);
    return sum;
  });
}

// A tail defect of a batched path: with >= 2 rows the last n mod 16 terms are a chain of their
// own, added at the end; one row takes the real kernel. Invisible when n is a multiple of 16.
inline void matmul_batched_tail(const float* X, size_t ldx, int rows, const cpu::PackedMatrix& W, int p0, int p1, float* Y,
                                size_t ldy) {
  const int n = W.n, body = n - n % cpu::kLanes;
  if (rows < 2 || body == n) return cpu::kernels_portable().matmul(X, ldx, rows, W, p0, p1, Y, ldy);
  each_output(X, ldx, rows, W, p0, p1, Y, ldy, [n, body](const float* x, const float* panel, int c) {
    return chain(x, panel, c, 0, body) + chain(x, panel, c, body, n);
  });
}

}  // namespace mutant_kernels

/// The cpu backend (its threads and ISA from `opt`) with one kernel replaced by a defective
/// one: kThreadSplit or kBatchedTail. Every other kernel is the ISA's.
class MutantCpuBackend final : public Backend {
 public:
  MutantCpuBackend(std::shared_ptr<const Model> model, const BackendOptions& opt, Mutation m)
      : table_(cpu::kernels_for(cpu::resolve_isa(opt.isa))) {
    const int threads = opt.threads > 0 ? opt.threads : 2;
    if (m == Mutation::kThreadSplit) {
      constexpr decltype(table_.matmul) split[] = {&mutant_kernels::matmul_split<1>, &mutant_kernels::matmul_split<2>,
                                                   &mutant_kernels::matmul_split<3>, &mutant_kernels::matmul_split<4>};
      table_.matmul = split[std::min(threads, 4) - 1];
    } else {
      table_.matmul = &mutant_kernels::matmul_batched_tail;
    }
    inner_ = cpu::make_cpu_backend(std::move(model), {opt.isa, threads, &table_});
  }
  std::string name() const override { return "cpu-mutant"; }
  BackendDescription describe() const override {
    BackendDescription d = inner_->describe();
    d.name = name();
    return d;
  }
  const Model& model() const override { return inner_->model(); }
  void set_scratch_poison(std::optional<float> v) override { inner_->set_scratch_poison(v); }
  void forward_rows(KVCache& cache, std::span<const Token> tokens, RowList rows, std::span<float> logits) override {
    inner_->forward_rows(cache, tokens, rows, logits);
  }
  void forward_batch(std::span<const BatchItem> items) override { inner_->forward_batch(items); }

 private:
  cpu::Kernels table_;  // outlives inner_, which points at it
  std::unique_ptr<Backend> inner_;
};

}  // namespace akv::test
