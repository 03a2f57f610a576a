#include "verify/npy.hpp"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fmt/format.h>
#include <unistd.h>

#include "reference/error.hpp"

namespace akv {

void write_npy_f32(const std::string& path, std::span<const float> data, const std::vector<size_t>& shape) {
  size_t n = 1;
  std::string dims;
  for (size_t d : shape) {
    n *= d;
    dims += fmt::format("{},", d);
  }
  if (shape.size() > 1) dims.pop_back();  // (3,) for one axis, (3, 4) for more
  if (n != data.size()) throw Error(ErrorCode::kBadInput, fmt::format("{}: shape holds {} values, not {}", path, n, data.size()));
  std::string header = fmt::format("{{'descr': '<f4', 'fortran_order': False, 'shape': ({}), }}", dims);
  // Magic (6) + version (2) + length (2) + header + '\n' is a multiple of 64.
  header.append((64 - (10 + header.size() + 1) % 64) % 64, ' ');
  header += '\n';
  std::string head = std::string("\x93NUMPY\x01\x00", 8);
  head += static_cast<char>(header.size() & 0xff);
  head += static_cast<char>(header.size() >> 8);
  head += header;

  const std::string tmp = fmt::format("{}.partial.{}", path, getpid());
  FILE* f = std::fopen(tmp.c_str(), "wb");
  if (!f) throw Error(ErrorCode::kBadInput, fmt::format("{}: cannot write: {}", path, std::strerror(errno)));
  bool ok = std::fwrite(head.data(), 1, head.size(), f) == head.size();
  ok = ok && std::fwrite(data.data(), sizeof(float), data.size(), f) == data.size();  // x86: little-endian
  ok = (std::fclose(f) == 0) && ok;
  if (!ok || std::rename(tmp.c_str(), path.c_str()) != 0) {
    const std::string why = std::strerror(errno);
    std::remove(tmp.c_str());
    throw Error(ErrorCode::kBadInput, fmt::format("{}: cannot write: {}", path, why));
  }
}

}  // namespace akv
