#include "verify/bounds/enclosure.hpp"

#include <algorithm>
#include <vector>

#include "reference/ops.hpp"
#include "verify/bounds/op_bounds.hpp"

namespace akv::bounds {

void softmax(Enc* x, int n) {
  std::vector<float> s(n), p(n);
  for (int j = 0; j < n; ++j) s[j] = p[j] = x[j].v;
  ref::softmax(p.data(), n);  // the float reference's op, bit for bit
  const std::vector<double> own = softmax_bounds(s);
  // The two largest input errors, for max_{k != j} E_k.
  double e1 = 0, e2 = 0;
  int i1 = -1;
  for (int k = 0; k < n; ++k) {
    if (x[k].e > e1) {
      e2 = e1;
      e1 = x[k].e;
      i1 = k;
    } else if (x[k].e > e2) {
      e2 = x[k].e;
    }
  }
  for (int j = 0; j < n; ++j) {
    const double delta = add_up(x[j].e, j == i1 ? e2 : e1);
    // p(1 - p) of the exact softmax at the float inputs, which lies within own[j] of p[j].
    const double lo = std::max(0.0, sub_dn(p[j], own[j])), hi = std::min(1.0, add_up(p[j], own[j]));
    const double t = std::clamp(0.5, lo, hi);
    const double pq = mul_up(t, sub_up(1.0, t));
    const double ed = exp_up(delta);
    double e = add_up(own[j], mul_up(mul_up(ed, sub_up(ed, 1.0)), pq));
    // Both the float and the exact probability lie in [0, 1].
    e = std::min(e, std::max(static_cast<double>(p[j]), 1.0 - p[j]));
    x[j] = detail::finish(p[j], e);
  }
}

Enc silu(const Enc& a) {
  const Enc chain = a / (Enc(1) + ScalarOps<Enc>::exp(-a));  // the op-by-op rules
  const double lipschitz = add_up(swiglu_bound(a.v, 1.0f), mul_up(1.1, a.e));
  return detail::finish(chain.v, std::min(chain.e, lipschitz));
}

}  // namespace akv::bounds
