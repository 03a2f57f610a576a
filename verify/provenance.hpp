// What a third party needs to re-run a witness and check it (spec/operations.md O9): akv's
// version and commit, the input's and the model file's SHA-256, the typed options, the CPU
// and ISA, and the time (runtime/build_info); and the re-run that `akv verify` makes from it.
#pragma once
#include <nlohmann/json.hpp>
#include <string>

#include "verify/witness.hpp"

namespace akv {

/// The provenance block of a witness run on `file` with `opt` (O9): "akv" {version, commit},
/// "input" {path, sha256}, "model" {name, source, sha256 or null for a synthetic one},
/// "options" (every WitnessOptions field, typed), "machine" {cpu, isa}, "created" (UTC, ISO 8601).
nlohmann::json witness_provenance(const std::string& file, const WitnessOptions& opt, const WitnessReport& r);

/// The WitnessOptions a provenance block's "options" name, with `redact` (O10: the file keeps
/// each redaction's message and length, never its string) as its redactions. Error(kBadInput)
/// naming the key when one is missing or of the wrong type, or when `redact` does not match
/// the recorded messages and lengths (the message says which --redact to give).
WitnessOptions options_from_provenance(const nlohmann::json& options, const std::vector<Redaction>& redact = {});

/// The outcome of `akv verify` (O9): each digest of the file against the re-run's.
struct VerifyReport {
  std::vector<std::string> lines;  // one per check: "input sha256 ... reproduces" or "... DIFFERS"
  bool reproduced = false;         // every digest equal, the input and model files the recorded ones
  bool passed = false;             // and the re-run passed (O5)
};

/// Re-runs the witness a file written by `akv witness --out` records and compares every digest
/// (`input` overrides the recorded input path; `redact` gives back the strings of a redaction,
/// which the file does not keep; `approximate` re-runs a non-exact policy's eviction, as
/// WitnessOptions::approximate). Error(kBadInput) for a file that is not such a witness, whose
/// input cannot be read, whose redactions `redact` does not match, or whose policy is not exact
/// when `approximate` is unset.
VerifyReport verify_witness(const nlohmann::json& witness, const std::string& input = "",
                            const std::vector<Redaction>& redact = {}, const ApproxEvict& approximate = {});

}  // namespace akv
