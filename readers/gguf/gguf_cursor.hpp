// A bounded little-endian reader over a file image: every read checks the bytes left first
// (spec/gguf.md F7). Internal to the GGUF reader.
#pragma once
#include <bit>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

#include "reference/error.hpp"

namespace akv::readers {

static_assert(std::endian::native == std::endian::little, "the GGUF reader assumes a little-endian host");

class Cursor {
 public:
  Cursor(const uint8_t* base, uint64_t size, std::string file) : base_(base), size_(size), file_(std::move(file)) {}

  uint64_t pos() const { return pos_; }
  uint64_t left() const { return size_ - pos_; }

  /// Throws Error(kBadModel) "<file>: <field>: <what>".
  [[noreturn]] void fail(const std::string& field, const std::string& what) const {
    throw Error(ErrorCode::kBadModel, file_ + ": " + field + ": " + what);
  }

  /// Checks that n more bytes exist; returns a pointer to them and advances.
  const uint8_t* take(uint64_t n, const std::string& field) {
    if (n > left())
      fail(field, "needs " + std::to_string(n) + " bytes at offset " + std::to_string(pos_) + ", the file ends at " +
                      std::to_string(size_) + " (truncated?)");
    const uint8_t* p = base_ + pos_;
    pos_ += n;
    return p;
  }

  template <class T>
  T read(const std::string& field) {
    T v;
    std::memcpy(&v, take(sizeof(T), field), sizeof(T));
    return v;
  }

  /// A GGUF string: uint64 length, then that many bytes (not NUL-terminated).
  std::string_view string(const std::string& field) {
    const uint64_t n = read<uint64_t>(field + ".length");
    const uint8_t* p = take(n, field);
    return {reinterpret_cast<const char*>(p), static_cast<size_t>(n)};
  }

 private:
  const uint8_t* base_;
  uint64_t size_;
  uint64_t pos_ = 0;
  std::string file_;
};

}  // namespace akv::readers
