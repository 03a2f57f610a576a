// What a build and a machine say of themselves (spec/operations.md O9): akv's version and
// commit, the CPU, the time, and the SHA-256 of a model file. What every application records.
#pragma once
#include <string>

namespace akv {

/// "0.1.0": the project version (CMakeLists.txt).
std::string akv_version();
/// The git commit akv was built from, read at every build ("unknown" outside a git checkout;
/// "+dirty.HASH" when the tree differed, HASH of the change; spec/operations.md O9).
std::string akv_commit();

/// The CPU's model name from /proc/cpuinfo ("unknown" when it has none).
std::string cpu_model();

/// The time now, UTC, ISO 8601 to the second ("2026-12-04T11:24:42Z").
std::string utc_now();

/// Lower-case hex SHA-256 of a file's bytes (a model folder: of the sorted list of its regular
/// files' names and digests). Error(kBadInput) when it cannot be read.
std::string file_or_folder_sha256(const std::string& path);

}  // namespace akv
