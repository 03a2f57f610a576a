#include "verify/oracle/exact_sum.hpp"

#include <gmp.h>
#include <mpfr.h>

#include <cmath>
#include <cstdint>

namespace akv::oracle {

namespace {
constexpr int kShift = 350;  // > 2 * 172: every product scaled by 2^kShift is an integer

// RAII for one mpz_t.
struct Z {
  mpz_t v;
  Z() { mpz_init(v); }
  ~Z() { mpz_clear(v); }
  Z(const Z&) = delete;
  Z& operator=(const Z&) = delete;
};

// f = m 2^e with m an integer of at most 24 bits (m = 0 for f = 0).
void split(float f, long& m, int& e) {
  int ex = 0;
  const double fr = std::frexp(static_cast<double>(f), &ex);  // f = fr 2^ex, |fr| in [0.5, 1)
  m = static_cast<long>(std::ldexp(fr, 24));
  e = ex - 24;
}

// acc += x y 2^kShift (exact).
void add_product(mpz_t acc, float x, float y, mpz_t tmp) {
  long mx, my;
  int ex, ey;
  split(x, mx, ex);
  split(y, my, ey);
  mpz_set_si(tmp, mx);
  mpz_mul_si(tmp, tmp, my);
  mpz_mul_2exp(tmp, tmp, static_cast<mp_bitcnt_t>(ex + ey + kShift));
  mpz_add(acc, acc, tmp);
}

void exact_dot(mpz_t acc, const float* x, int sx, const float* y, int sy, int n) {
  Z tmp;
  mpz_set_ui(acc, 0);
  for (int i = 0; i < n; ++i) add_product(acc, x[static_cast<size_t>(i) * sx], y[static_cast<size_t>(i) * sy], tmp.v);
}
}  // namespace

double dot_abs_err_up(float computed, const float* x, int sx, const float* y, int sy, int n) {
  Z s, c;
  exact_dot(s.v, x, sx, y, sy, n);
  Z one;
  add_product(c.v, computed, 1.0f, one.v);  // computed 2^kShift
  mpz_sub(c.v, c.v, s.v);
  mpz_abs(c.v, c.v);
  mpfr_t r;
  mpfr_init2(r, 53);
  mpfr_set_z_2exp(r, c.v, -kShift, MPFR_RNDU);
  const double d = mpfr_get_d(r, MPFR_RNDU);
  mpfr_clear(r);
  return d;
}

float dot_rounded(const float* x, int sx, const float* y, int sy, int n) {
  Z s;
  exact_dot(s.v, x, sx, y, sy, n);
  const mpfr_exp_t old_emin = mpfr_get_emin(), old_emax = mpfr_get_emax();
  mpfr_t r;
  mpfr_init2(r, 24);
  mpfr_set_emin(-148);  // binary32's range, for correct rounding into subnormals
  mpfr_set_emax(128);
  const int t = mpfr_set_z_2exp(r, s.v, -kShift, MPFR_RNDN);
  mpfr_subnormalize(r, t, MPFR_RNDN);
  const float f = mpfr_get_flt(r, MPFR_RNDN);
  mpfr_set_emin(old_emin);
  mpfr_set_emax(old_emax);
  mpfr_clear(r);
  return f;
}

}  // namespace akv::oracle
