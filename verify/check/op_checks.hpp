// The per-op checks, written once for every op table (verify/check/ops.hpp): the reference's
// bits where the arithmetic is exact, every op within the proven bounds of the reference on
// random and adversarial inputs (spec/bounds.md B10, B14; spec/kernels-cpu.md K12;
// spec/kernels-cuda.md G11), and attention within its own B14 bound of the exact (MPFR)
// value. Each returns a Report; run on the reference table a check against the reference is
// SKIPPED (it would compare the reference with itself).
#pragma once
#include <string>

#include "verify/check/closeness.hpp"
#include "verify/check/families.hpp"
#include "verify/check/ops.hpp"
#include "verify/check/report.hpp"

namespace akv::check {

// ---- The reference's bits where every conforming order rounds alike

/// Small-integer X and W (exact products and sums): matmul equals the reference bitwise, on
/// shapes on and either side of every matmul tile edge of the cpu and cuda kernels
/// (matmul_edge_shapes, verify/check/edges.hpp: M and d to 129, n to 705), and
/// the outputs are not all zero.
Report matmul_integers_equal_reference(const OpTable& t);
/// Rows of small integers times a power of two (an exact sum of squares, exact_square_rows):
/// RMSNorm equals the reference bitwise, M7's operations after ss (ss / n, not ss * (1/n)):
/// 64 rows at each width 1, 3, 5, 7, 8, either side of 1, 2, 4 and 24 lane sets of
/// every row reduction (edges.hpp), and the real layers' widths to 2048 (192, 576, 1536), two eps.
Report rmsnorm_integers_equal_reference(const OpTable& t);
/// RoPE equals the reference bitwise: head_dim 8, 32, 64, 70, 3 heads, 40 rows from positions
/// 0, 1, 777 and 4960 of a 5000-position table.
Report rope_equals_reference(const OpTable& t);
/// SwiGLU and the residual add equal the reference bitwise (n 5..4096, gates up to +-120,
/// where exp(-g) overflows, and in the ordinary range).
Report swiglu_add_equal_reference(const OpTable& t);
/// One key's score exceeds every other by more than 104, so every other weight is exp(<-104)
/// = 0 in any order: the output is that key's value row and the reference's, bit for bit
/// (the key before, on and after each key block's and split's edge, edges.hpp; a partial
/// fifth block).
Report attention_dominant_key_equals_reference(const OpTable& t);
/// q = 0: every weight is 1/n, exact for n a power of two, and so are the sums of integer
/// values: the reference's bits for n = 1, 2, 4 and 1, 2, 4, 8 key blocks or splits, GQA 4 / 2.
Report attention_uniform_equals_reference(const OpTable& t);

// ---- Within the proven bounds of the reference (B10: |opt - ref| <= B_ref + B_opt)

/// Matmul rows within 2 B1 of the reference's; the first output and the dot op within B1 of
/// the exact (GMP) value; the dot within 2 B1 of the reference's; scores dot * 1/sqrt(n)
/// within 2 B4 of the reference's. RapidCheck, every family, n up to 4096.
Report matmul_within_bounds(const OpTable& t);
/// RMSNorm within 2 B2 of the reference's.
Report rmsnorm_within_bounds(const OpTable& t);
/// B3 and B8 hold with distance 0: RoPE, SwiGLU (gates up to +-100) and the residual add are
/// the reference's operations bit for bit on every family.
Report rope_swiglu_add_bitwise(const OpTable& t);
/// One attention head within B14(reference) + B14(this table's rounding) of the reference's
/// three passes (M9), up to 4096 keys, adversarial scores and values.
Report attention_within_bounds(const OpTable& t);
/// The final RMSNorm then the output matmul within 2 B9 of the reference's.
Report logits_within_bounds(const OpTable& t);

// ---- Within its own bound of the exact value (B14, B12)

/// The distance of t's attention output (one head of `a`) to the exact MPFR value against
/// t's own B14 bound, which must be finite (a vacuous bound checks nothing). "" or what
/// failed; each element's error and bound go into *tally when it is not null.
std::string attention_vs_exact(const OpTable& t, const AttnInput& a, Closeness* tally);
/// attention_vs_exact as a RapidCheck property: n <= 300 keys (up to 5 blocks or splits),
/// d 8, 16, 32, every score scale and value family.
Report attention_within_b14_of_exact(const OpTable& t);
/// attention_vs_exact on 2048 and 4100 keys (31 and 64 rescalings), plain, cancelling and
/// deep-underflow values; the kernel must round somewhere (some error nonzero).
Report attention_long_within_b14_of_exact(const OpTable& t);

}  // namespace akv::check
