// Instruction-set selection of the CPU backend (spec/kernels-cpu.md K0): detected at run
// time, pinned by a flag or by the AKV_ISA environment variable. Every ISA gives the same
// bits (K0), so pinning only changes speed. avx512_simde is the AVX-512 source compiled
// against SIMDe without native AVX-512 (K13): it runs on any x86-64 and is never chosen by auto.
#pragma once
#include <string>
#include <vector>

namespace akv::cpu {

enum class Isa { kPortable, kAvx2, kAvx512, kAvx512Simde };

/// "portable", "avx2", "avx512", "avx512_simde".
const char* isa_name(Isa isa);

/// Parses "portable" | "avx2" | "avx512" | "avx512_simde". Throws Error(kBadInput) for anything else.
Isa parse_isa(const std::string& name);

/// Whether this CPU (and OS) can run `isa`: avx2 needs AVX2+FMA+F16C, avx512 needs AVX-512F;
/// portable and avx512_simde (baseline x86-64 code) run everywhere.
bool isa_supported(Isa isa);

/// Every ISA this machine runs, portable first, avx512_simde last.
std::vector<Isa> supported_isas();

/// Every ISA the backend knows, supported or not (for tests that report skips).
std::vector<Isa> all_isas();

/// The values an `--isa` option takes: "auto", then isa_name() of every ISA in all_isas().
std::vector<std::string> isa_choices();

/// The ISA to use: `requested` unless it is "" or "auto"; else $AKV_ISA if set and not
/// "auto"; else the fastest supported native ISA (never avx512_simde). Throws Error(kBadInput) for an unknown name or an ISA
/// this CPU lacks.
Isa resolve_isa(const std::string& requested);

}  // namespace akv::cpu
