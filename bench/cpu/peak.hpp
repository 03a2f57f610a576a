// The machine's single-precision FMA peak, measured (not looked up): every thread runs
// independent FMA chains on the widest vectors its ISA has.
#pragma once
#include "optimized/cpu/isa.hpp"

namespace akv::bench {

/// GFLOP/s (2 flops per FMA lane) of `threads` threads running FMA chains at once, ISA `isa`.
double fma_peak_gflops(cpu::Isa isa, int threads);

}  // namespace akv::bench
