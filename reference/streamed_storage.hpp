// Storage for the large arrays every decode step streams through: the packed weights and the
// KV cache rows. Speed only: no value depends on where the bytes live.
#pragma once
#include <cstddef>
#include <cstdlib>
#include <new>

namespace akv {

/// `bytes` (rounded up to a multiple of 64) starting on a 64-byte boundary, contents
/// unspecified; release with std::free. From 4 MiB on, rounded up to and aligned on 2 MiB, and
/// all but the first 2 MiB advised to the kernel as transparent huge pages: a stream through
/// 4 KiB pages misses the TLB every 4 KiB (the classifier and the KV cache, docs/performance.md).
/// A hint: where THP is refused, 4 KiB pages serve. Pages are committed as they are first
/// written, so a block may reserve address space it never uses. Throws std::bad_alloc.
void* allocate_streamed(size_t bytes);

/// A standard allocator over allocate_streamed, for std::vector.
template <class T>
struct StreamedAllocator {
  using value_type = T;
  StreamedAllocator() = default;
  template <class U>
  StreamedAllocator(const StreamedAllocator<U>&) noexcept {}
  T* allocate(size_t n) {
    if (n > static_cast<size_t>(-1) / sizeof(T)) throw std::bad_array_new_length();
    return static_cast<T*>(allocate_streamed(n * sizeof(T)));
  }
  void deallocate(T* p, size_t) noexcept { std::free(p); }
  template <class U>
  bool operator==(const StreamedAllocator<U>&) const noexcept { return true; }
};

}  // namespace akv
