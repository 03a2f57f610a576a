// The per-op edge-case tables, written once for every op table (verify/check/ops.hpp): fixed
// inputs where the arithmetic is exact, on and either side of the kernels' tile edges, held to
// the reference's bits, and long attention reductions within B14 of the exact (MPFR) value.
// The drawn (RapidCheck) per-op properties are op_props.hpp. Each returns a Report; run on the
// reference table a check against the reference is SKIPPED (it would compare the reference
// with itself).
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

// ---- Within its own bound of the exact value (B14, B12)

/// One head's output `out` (a.d,) against the exact MPFR value of a's head at its last
/// position, within B14 computed with `rounding`, which must be finite (a vacuous bound checks
/// nothing); the oracle's own error is below 2^-200 of the bound (B12). "" or what failed;
/// each element's error and bound go into *tally when it is not null.
std::string head_within_b14_of_exact(const float* out, const AttnInput& a, const bounds::AttnRounding& rounding,
                                     Closeness* tally);
/// t's attention output (one head of `a`, M = 1) by head_within_b14_of_exact with t's own
/// rounding model; a failure starts with t's label. The drawn cases are the property
/// GT3.attention.bound (op_props.hpp).
std::string attention_vs_exact(const OpTable& t, const AttnInput& a, Closeness* tally);
/// attention_vs_exact on 2048 and 4100 keys (31 and 64 rescalings), plain, cancelling and
/// deep-underflow values; the kernel must round somewhere (some error nonzero).
Report attention_long_within_b14_of_exact(const OpTable& t);

}  // namespace akv::check
