// akv's cpu kernels of one ISA (AKV_PLUGIN_ISA, an isa_name()) as a kernel library: what
// `akv gate` checks of akv's own kernels through the same door as anyone's (spec/gate.md GT9).
#include <akv/kernels.h>

#include <cstdio>
#include <memory>
#include <string>

#include "optimized/cpu/c_kernels.hpp"

extern "C" __attribute__((visibility("default"))) const akv_kernels* akv_get_kernels(void) {
  using akv::cpu::Isa;
  for (Isa isa : akv::cpu::all_isas()) {
    if (std::string(akv::cpu::isa_name(isa)) != AKV_PLUGIN_ISA) continue;
    if (!akv::cpu::isa_supported(isa)) {  // the loader then says "returned NULL": exit 2
      std::fprintf(stderr, "akv_kernels_cpu_%s: this CPU lacks %s\n", AKV_PLUGIN_ISA, AKV_PLUGIN_ISA);
      return nullptr;
    }
    static const auto table = std::make_unique<akv::cpu::CpuKernelTable>(isa, 1);
    return table->table();
  }
  return nullptr;
}
