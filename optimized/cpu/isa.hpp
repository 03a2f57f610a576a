// Instruction-set selection of the CPU backend (spec/kernels-cpu.md K0): detected at run
// time, pinned by a flag or by the AKV_ISA environment variable. Every ISA gives the same
// bits (K0), so pinning only changes speed.
#pragma once
#include <string>
#include <vector>

namespace akv::cpu {

enum class Isa { kPortable, kAvx2, kAvx512 };

/// "portable", "avx2", "avx512".
const char* isa_name(Isa isa);

/// Parses "portable" | "avx2" | "avx512". Throws Error(kBadInput) for anything else.
Isa parse_isa(const std::string& name);

/// Whether this CPU (and OS) can run `isa`: avx2 needs AVX2+FMA, avx512 needs AVX-512F.
bool isa_supported(Isa isa);

/// Every ISA this machine runs, portable first.
std::vector<Isa> supported_isas();

/// Every ISA the backend knows, supported or not (for tests that report skips).
std::vector<Isa> all_isas();

/// The values an `--isa` option takes: "auto", then isa_name() of every ISA in all_isas().
std::vector<std::string> isa_choices();

/// The ISA to use: `requested` unless it is "" or "auto"; else $AKV_ISA if set and not
/// "auto"; else the best supported. Throws Error(kBadInput) for an unknown name or an ISA
/// this CPU lacks.
Isa resolve_isa(const std::string& requested);

}  // namespace akv::cpu
