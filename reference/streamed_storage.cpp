#include "reference/streamed_storage.hpp"

#include <cstdlib>

#include <sys/mman.h>

namespace akv {

void* allocate_streamed(size_t bytes) {
  constexpr size_t kHuge = size_t{2} << 20;
  // From two huge pages on, so the round-up wastes at most a third of the block.
  const bool huge = bytes >= 2 * kHuge;
  const size_t align = huge ? kHuge : 64, size = (bytes + align - 1) / align * align;
  void* p = std::aligned_alloc(align, size == 0 ? align : size);
  if (!p) throw std::bad_alloc();
#if defined(MADV_HUGEPAGE)
  // The first 2 MiB stay on 4 KiB pages: a block reserved for more than it holds (a short
  // session's cache) costs only the pages written until it passes 2 MiB.
  if (huge) madvise(static_cast<char*>(p) + kHuge, size - kHuge, MADV_HUGEPAGE);
#endif
  return p;
}

}  // namespace akv
