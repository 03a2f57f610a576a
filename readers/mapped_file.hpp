// A read-only view of a model file's bytes: a private mmap of the whole file, or an owned
// buffer (tests, and files too small to map). spec/gguf.md F6.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace akv::readers {

/// Bytes that stay valid, at a fixed address, for the object's lifetime.
class Bytes {
 public:
  virtual ~Bytes() = default;
  virtual const uint8_t* data() const = 0;
  virtual uint64_t size() const = 0;
  /// Lets the OS drop the pages read so far (a mapped file: they are read again from the file
  /// when next touched, unchanged; owned bytes: nothing). For memory, never for meaning.
  virtual void drop_pages() const {}
};

/// Maps `path` read-only (mmap PROT_READ, MAP_PRIVATE). An empty file gives size 0 and no map.
/// Throws Error(kBadModel) naming the path and the OS error when it cannot be opened or mapped.
std::unique_ptr<Bytes> map_file(const std::string& path);

/// Owns `bytes` (moved in); data() stays valid until destruction.
std::unique_ptr<Bytes> own_bytes(std::vector<uint8_t> bytes);

}  // namespace akv::readers
