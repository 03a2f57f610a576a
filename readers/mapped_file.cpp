#include "readers/mapped_file.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "reference/error.hpp"

namespace akv::readers {

namespace {

class MappedFile final : public Bytes {
 public:
  MappedFile(const uint8_t* p, uint64_t n) : p_(p), n_(n) {}
  ~MappedFile() override {
    if (n_ > 0) munmap(const_cast<uint8_t*>(p_), n_);
  }
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  const uint8_t* data() const override { return p_; }
  uint64_t size() const override { return n_; }
  // PROT_READ, MAP_PRIVATE, never written: MADV_DONTNEED only unmaps the file's pages, which the
  // next read maps again from the file, unchanged.
  void drop_pages() const override {
    if (n_ > 0) madvise(const_cast<uint8_t*>(p_), n_, MADV_DONTNEED);
  }

 private:
  const uint8_t* p_;
  uint64_t n_;
};

class OwnedBytes final : public Bytes {
 public:
  explicit OwnedBytes(std::vector<uint8_t> b) : b_(std::move(b)) {}
  const uint8_t* data() const override { return b_.data(); }
  uint64_t size() const override { return b_.size(); }

 private:
  std::vector<uint8_t> b_;
};

[[noreturn]] void fail(const std::string& path, const char* what, int err) {
  throw Error(ErrorCode::kBadModel, "cannot " + std::string(what) + " model file '" + path + "': " + std::strerror(err));
}

}  // namespace

std::unique_ptr<Bytes> map_file(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) fail(path, "open", errno);
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    const int e = errno;
    ::close(fd);
    fail(path, "stat", e);
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    throw Error(ErrorCode::kBadModel, "model file '" + path + "' is not a regular file");
  }
  const uint64_t n = static_cast<uint64_t>(st.st_size);
  if (n == 0) {
    ::close(fd);
    return std::make_unique<MappedFile>(nullptr, 0);
  }
  void* p = ::mmap(nullptr, n, PROT_READ, MAP_PRIVATE, fd, 0);
  const int e = errno;
  ::close(fd);
  if (p == MAP_FAILED) fail(path, "map", e);
  return std::make_unique<MappedFile>(static_cast<const uint8_t*>(p), n);
}

std::unique_ptr<Bytes> own_bytes(std::vector<uint8_t> bytes) { return std::make_unique<OwnedBytes>(std::move(bytes)); }

}  // namespace akv::readers
