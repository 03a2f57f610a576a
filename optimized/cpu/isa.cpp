#include "optimized/cpu/isa.hpp"

#include <cpuid.h>

#include <cstdlib>

#include "reference/error.hpp"
#include "reference/strict.hpp"

namespace akv::cpu {

const char* isa_name(Isa isa) {
  switch (isa) {
    case Isa::kPortable: return "portable";
    case Isa::kAvx2: return "avx2";
    case Isa::kAvx512: return "avx512";
    case Isa::kAvx512Simde: return "avx512_simde";
  }
  return "?";
}

Isa parse_isa(const std::string& name) {
  for (Isa i : all_isas())
    if (name == isa_name(i)) return i;
  throw Error(ErrorCode::kBadInput, "unknown ISA '" + name + "' (expected portable, avx2, avx512 or avx512_simde)");
}

namespace {
// CPUID leaf 1, ECX bit 29 (GCC's __builtin_cpu_supports has no "f16c" before GCC 13).
bool f16c_supported() {
  unsigned a, b, c, d;
  return __get_cpuid(1, &a, &b, &c, &d) && (c & bit_F16C) != 0;
}
}  // namespace

bool isa_supported(Isa isa) {
  switch (isa) {
    case Isa::kPortable: return true;
    case Isa::kAvx2: return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && f16c_supported();
    case Isa::kAvx512: return __builtin_cpu_supports("avx512f");
    case Isa::kAvx512Simde: return true;  // baseline x86-64 code, checked by K13_SimdeHasNoNativeAvx
  }
  return false;
}

std::vector<Isa> all_isas() { return {Isa::kPortable, Isa::kAvx2, Isa::kAvx512, Isa::kAvx512Simde}; }

std::vector<std::string> isa_choices() {
  std::vector<std::string> n{"auto"};
  for (Isa i : all_isas()) n.push_back(isa_name(i));
  return n;
}

std::vector<Isa> supported_isas() {
  std::vector<Isa> out;
  for (Isa i : all_isas())
    if (isa_supported(i)) out.push_back(i);
  return out;
}

Isa resolve_isa(const std::string& requested) {
  std::string name = requested;
  std::string from = "--isa";
  if (name.empty() || name == "auto") {
    name = env_nonempty("AKV_ISA").value_or("");  // set but empty is an error (IN4)
    from = "$AKV_ISA";
  }
  if (name.empty() || name == "auto") {  // the fastest native path: emulated AVX-512 is for checking
    for (Isa i : {Isa::kAvx512, Isa::kAvx2})
      if (isa_supported(i)) return i;
    return Isa::kPortable;
  }
  Isa isa;
  try {
    isa = parse_isa(name);
  } catch (const Error& e) {
    throw Error(e.code(), from + ": " + printable(e.what()));
  }
  if (!isa_supported(isa))
    throw Error(ErrorCode::kBadInput, std::string("ISA '") + isa_name(isa) + "' is not supported by this CPU");
  return isa;
}

}  // namespace akv::cpu
