// Affine forms over rounding symbols (spec/bounds.md B11): the scalar of the end-to-end
// enclosure. A value x is enclosed as
//
//     x = c + sum_k a_k e_k,   every e_k in [-1, 1],
//
// where each noise symbol e_k is either a *rounding* symbol (one op's own rounding error in
// some conforming backend, normalised by that op's proven bound: 0 in the exact computation)
// or an *other* symbol (a linearisation remainder or condensed terms: some value in [-1, 1]
// in every run, the exact one included). Symbols shared between values keep their
// correlation, so independent rounding errors are charged |sum a_k|, not sum |a_k|, through
// every linear map: this is what keeps the bound finite where worst-sign propagation blows up
// (Stolfi & de Figueiredo, Self-validated numerical methods and applications, 1997; de
// Figueiredo & Stolfi, Affine arithmetic: concepts and applications, Numer. Algorithms 2004).
//
// Hence for any conforming backend b:  |x_b - x_exact| <= sum_rounding |a_k| + 2 sum_other |a_k|
// (AffineContext::distance_bound). Every double operation on the forms is charged in the
// remainder with outward rounding, so the enclosure is rigorous, not just first order.
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

namespace akv::bounds {

/// What a noise symbol stands for (see the file comment).
enum class Sym : uint8_t { kRounding = 0, kOther = 1 };

struct Term {
  uint32_t id = 0;  // the symbol, an index into its AffineContext
  double a = 0;     // its coefficient
};

/// One enclosed value. Converting a float gives the exact constant (no terms).
struct Aff {
  float v = 0;           // the float reference's value, bit for bit (ops compute it with ref::)
  double c = 0;          // centre
  double r = 0;          // >= sum |a| over t, rounded up; +inf: nothing is known (vacuous)
  std::vector<Term> t;   // distinct symbols, unordered

  Aff() = default;
  explicit Aff(float x) : v(x), c(x) {}
  explicit Aff(int n) : v(static_cast<float>(n)), c(static_cast<float>(n)) {}  // |n| <= 2^24
};

/// The symbols of one run and the scratch to combine forms. Ops (affine_ops.hpp) find it
/// through AffineContext::current(), set by an AffineScope for the duration of a run.
class AffineContext {
 public:
  /// max_terms: the most terms one value keeps; the smallest beyond it are condensed into
  /// one fresh symbol per kind (still rigorous, fewer correlations). >= 1.
  explicit AffineContext(size_t max_terms);

  size_t max_terms() const { return max_terms_; }
  size_t symbols() const { return kind_.size(); }
  Sym kind(uint32_t id) const { return static_cast<Sym>(kind_[id]); }
  uint32_t new_symbol(Sym kind);

  /// Upper bound on |x_backend - x_exact| for every conforming backend:
  /// sum over rounding terms |a| + 2 sum over other terms |a|, rounded up; +inf if vacuous.
  double distance_bound(const Aff& x) const;

  /// The context made current by the innermost AffineScope on this thread.
  /// Throws std::logic_error if there is none.
  static AffineContext& current();

 private:
  friend class AffBuilder;
  size_t max_terms_;
  std::vector<uint8_t> kind_;       // per symbol
  std::vector<double> acc_;         // per symbol: the coefficient being accumulated
  std::vector<uint32_t> stamp_;     // per symbol: the builder generation that touched it
  std::vector<uint32_t> touched_;   // symbols touched by the current builder
  uint32_t generation_ = 0;
  bool building_ = false;
};

/// Makes `ctx` current on this thread until destroyed (nests).
class AffineScope {
 public:
  explicit AffineScope(AffineContext& ctx);
  ~AffineScope();
  AffineScope(const AffineScope&) = delete;
  AffineScope& operator=(const AffineScope&) = delete;

 private:
  AffineContext* prev_;
};

/// Accumulates one output form y = centre + sum of weighted input forms + remainder, then
/// finish() adds the remainder (and the double arithmetic's own error) as a fresh other
/// symbol and the op's rounding bound as a fresh rounding symbol, and resets the builder for
/// the next form. One builder per context at a time.
class AffBuilder {
 public:
  explicit AffBuilder(AffineContext& ctx);
  ~AffBuilder();
  AffBuilder(const AffBuilder&) = delete;
  AffBuilder& operator=(const AffBuilder&) = delete;

  /// centre += value, where value was computed from exact data with at most 2 roundings;
  /// err >= any further error of value.
  void add_center(double value, double err = 0);
  /// y += w (x - x.c): x's terms scaled by w (w exact, or computed with at most 2 roundings
  /// from exact data; a larger error of w must be charged with add_rem(err_w * x.r)).
  void add_terms(const Aff& x, double w);
  /// y += w x y' linearised around the centres: w x.c y'.c + w y'.c (x - x.c) + w x.c (y' - y'.c),
  /// remainder |w| x.r y'.r. w exact (a computed w's own error is the caller's to charge).
  void add_product(const Aff& x, const Aff& y, double w);
  /// A remainder: some value of magnitude <= e (e >= 0, an upper bound).
  void add_rem(double e);

  /// The form, with `v` as its float value and `rounding` (>= 0) the op's own rounding bound
  /// (0 for an intermediate of a fused op). Resets the builder.
  Aff finish(float v, double rounding);

 private:
  AffineContext& ctx_;
  double center_ = 0, center_abs_ = 0, rem_ = 0, weighted_r_ = 0;
  int center_n_ = 0, terms_n_ = 0;
  bool vacuous_ = false;
};

/// A function f linearised at x.c over x's box [x.c - x.r, x.c + x.r]:
/// |F - f(x.c)| <= eF, |D - f'(x.c)| <= eD, M2 >= sup |f''| over the box.
struct Linearised {
  double F = 0, eF = 0, D = 0, eD = 0, M2 = 0;
};

/// f(x) as a form: F + D (x - x.c) with remainder eF + eD x.r + M2 x.r^2 / 2 (Taylor with the
/// Lagrange remainder). An intermediate (no rounding symbol); float value 0. Built with `b`,
/// which must hold nothing yet.
Aff apply(AffBuilder& b, const Aff& x, const Linearised& f);

}  // namespace akv::bounds
