// The cache's own write record (spec/theorems.md E3, spec/operations.md O5): entries_written()
// counts every entry grow() makes and K-shift (leakage/approx_evict) rewrites in place, and
// write_serials() says when each live entry was last written, so a prefix written again with
// the same bytes shows.
#include <gtest/gtest.h>

#include <vector>

#include "leakage/approx_evict.hpp"
#include "reference/kv_cache.hpp"
#include "support.hpp"

using namespace akv;

namespace {
std::vector<uint64_t> serials(const KVCache& c) { return {c.write_serials().begin(), c.write_serials().end()}; }
}  // namespace

TEST(E3_WriteSerials, GrowTruncateAndShiftOut) {
  const auto m = test::tiny();
  KVCache c(m->config);
  EXPECT_EQ(c.entries_written(), 0u);
  EXPECT_TRUE(serials(c).empty());
  c.grow(3);
  EXPECT_EQ(c.entries_written(), 3u);
  EXPECT_EQ(serials(c), (std::vector<uint64_t>{1, 2, 3}));
  c.truncate(1);  // truncation writes nothing and keeps the prefix's serials
  EXPECT_EQ(c.entries_written(), 3u);
  EXPECT_EQ(serials(c), (std::vector<uint64_t>{1}));
  c.grow(3);  // entries 1..3 are new writes even where the old entries 1, 2 were
  EXPECT_EQ(c.entries_written(), 6u);
  EXPECT_EQ(serials(c), (std::vector<uint64_t>{1, 4, 5, 6}));
  shift_out(c, 1, 2, *m->rope);  // entries 2, 3 move down to 1, 2 and are rewritten; entry 0 is not
  EXPECT_EQ(c.entries_written(), 8u);
  EXPECT_EQ(serials(c), (std::vector<uint64_t>{1, 7, 8}));
  c.truncate(0);
  c.grow(1);  // a rebuild from 0 gives entry 0 a new serial: the witness sees the prefix written
  EXPECT_EQ(serials(c), (std::vector<uint64_t>{9}));
}
