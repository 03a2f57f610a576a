// The reference ops (spec/model.md M6-M11) as a table of the kernel ABI (include/akv/kernels.h,
// spec/gate.md GT1): the fallback of every op a plugin does not provide, and the composed
// forward's reference point (GT7: composed over this table = the reference backend, bitwise).
#pragma once
#include <akv/kernels.h>

namespace akv {

/// The reference's table: every op (AKV_OP_ALL), single-threaded; attention needs pos0 + M
/// floats of scratch (its scores); evict edits nothing and returns begin (O3). Static storage.
const akv_kernels* reference_kernels();

}  // namespace akv
