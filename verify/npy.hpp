// NumPy .npy files (format version 1.0), so any implementation can read akv's numbers.
#pragma once
#include <span>
#include <string>
#include <vector>

namespace akv {

/// Writes `data` as a little-endian float32 ('<f4') C-order array of `shape` to `path`
/// (NumPy format 1.0: magic, header dict padded to 64 bytes, raw data). The product of
/// `shape` must equal data.size(). Written to a temporary file beside `path` and renamed,
/// so a failed write leaves no partial file. Throws Error(kBadInput) naming the path when it
/// cannot be written.
void write_npy_f32(const std::string& path, std::span<const float> data, const std::vector<size_t>& shape);

}  // namespace akv
