// What a gate run depends on besides its seed (spec/gate.md GT5): the library's environment
// variables, the CPU, the library file's SHA-256 and akv's version. The reproduce line and every
// counterexample file carry it, so that a finding replays where it was made.
#pragma once
#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace akv::gate {

/// The prefixes of the environment variables a kernel library may read (BLIS_, OPENBLAS_, OMP_,
/// MKL_, GOMP_, KMP_, DNNL_, ONEDNN_, GOTO_, GGML_, AKV_GGML_, AKV_BROKEN_, ATEN_,
/// TORCH_): the set ones are
/// recorded.
const std::vector<std::string>& library_env_prefixes();

/// {"akv": {version, commit}, "library": {path, sha256}, "cpu": {model, flags, isas},
///  "env": {NAME: value}} for `library` (a path). flags: the /proc/cpuinfo flags akv's kernels
/// dispatch on (sse4_2, avx, avx2, fma, f16c, avx512*); isas: the cpu backend's ISAs this CPU
/// runs. Error(kBadInput) when the library cannot be read for its SHA-256.
nlohmann::json environment(const std::string& library);

/// The set library variables of environment()["env"] as "NAME=value" words, sorted by name.
std::vector<std::string> env_assignments(const nlohmann::json& env);

/// `w` as one sh word: as is when it is only letters, digits and _-./,=:+, else in '...' with
/// ' as '\''.
std::string shell_word(const std::string& w);

/// env_assignments(env) as sh words each followed by a space ("" when none): the prefix of a
/// command line that replays the environment.
std::string env_prefix(const nlohmann::json& env);

/// One line for a report: "cpu: MODEL (avx2 fma ...); env: OMP_NUM_THREADS=3; library sha256
/// HEX; akv VERSION (COMMIT)".
std::string environment_line(const nlohmann::json& env);

}  // namespace akv::gate
