// Logits only for the rows asked for (spec/operations.md O7): every backend writes exactly the
// wanted rows, each bitwise equal to the same row of an all-rows call, and leaves the same cache.
#include <gtest/gtest.h>

#include <cstring>
#include <limits>

#include "reference/session.hpp"
#include "support.hpp"
#include "runtime/backends.hpp"
#include "runtime/digest.hpp"

using namespace akv;

namespace {

class O7_LogitRows : public ::testing::TestWithParam<std::string> {};

std::vector<Token> tokens(size_t n, uint32_t salt) {
  std::vector<Token> t(n);
  for (size_t i = 0; i < n; ++i) t[i] = static_cast<Token>((i * 2654435761u + salt) % 288);
  return t;
}

}  // namespace

TEST_P(O7_LogitRows, WantedRowsEqualTheSameRowsOfAnAllRowsCall) {
  const auto model = test::tiny();
  const size_t vocab = static_cast<size_t>(model->config.vocab);
  const std::vector<Token> t = tokens(77, 5);
  auto all_b = make_backend(GetParam(), model), some_b = make_backend(GetParam(), model);
  all_b->set_scratch_poison(std::numeric_limits<float>::quiet_NaN());
  some_b->set_scratch_poison(std::numeric_limits<float>::quiet_NaN());

  KVCache all_c(model->config), some_c(model->config);
  std::vector<float> all(t.size() * vocab);
  all_b->forward(all_c, t, all);
  for (const std::vector<uint32_t>& rows :
       {std::vector<uint32_t>{76}, std::vector<uint32_t>{0}, std::vector<uint32_t>{0, 3, 31, 32, 63, 64, 76},
        std::vector<uint32_t>{10, 11, 12}}) {
    KVCache c(model->config);
    const float nan = std::numeric_limits<float>::quiet_NaN();
    std::vector<float> some(rows.size() * vocab, nan);
    some_b->forward_rows(c, t, rows, some);
    for (size_t j = 0; j < rows.size(); ++j)
      EXPECT_EQ(std::memcmp(some.data() + j * vocab, all.data() + rows[j] * vocab, vocab * sizeof(float)), 0)
          << GetParam() << ": row " << rows[j];
    EXPECT_EQ(cache_sha256(c), cache_sha256(all_c)) << "the cache does not depend on the rows asked for";
  }
}

TEST_P(O7_LogitRows, SessionLastEqualsTheLastRowOfAll) {
  const auto model = test::tiny();
  const size_t vocab = static_cast<size_t>(model->config.vocab);
  auto b1 = make_backend(GetParam(), model), b2 = make_backend(GetParam(), model);
  Session all(*b1), last(*b2);
  for (SpanId id = 0; id < 4; ++id) {
    const std::vector<Token> t = tokens(5 + 9 * id, static_cast<uint32_t>(id));
    const std::vector<float> a = all.append(id, t, LogitRows::kAll), l = last.append(id, t, LogitRows::kLast);
    ASSERT_EQ(a.size(), t.size() * vocab);
    ASSERT_EQ(l.size(), vocab);
    EXPECT_EQ(std::memcmp(l.data(), a.data() + (t.size() - 1) * vocab, vocab * sizeof(float)), 0);
  }
  // The recompute of an eviction asks for the kept rows only; the state equals either way.
  all.evict(1);
  last.evict(1);
  EXPECT_EQ(session_state_sha256(all), session_state_sha256(last));
  all.evict(3);  // the tail: the new last span's kept row comes from the recompute above
  last.evict(3);
  EXPECT_EQ(std::memcmp(all.logits().data(), last.logits().data(), vocab * sizeof(float)), 0);
}

INSTANTIATE_TEST_SUITE_P(Backends, O7_LogitRows, ::testing::ValuesIn(backend_names()),
                         [](const ::testing::TestParamInfo<std::string>& i) {
                           std::string n = i.param;
                           for (char& c : n)
                             if (c == '-') c = '_';
                           return n;
                         });
