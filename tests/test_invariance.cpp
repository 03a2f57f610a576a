// I1 for the reference backend (spec/theorems.md I1): a token's bits depend on the token
// sequence up to it and nothing else: not the chunking, not scratch contents, not earlier work.
#include <gtest/gtest.h>

#include <cstring>
#include <limits>

#include "support.hpp"
#include "verify/compare.hpp"
#include "verify/digest.hpp"

using namespace akv;
using test::expect_bitwise;
using test::run_chunked;

TEST(I1_Invariance, OneCallVersusNMinusOneThenOneDecode) {
  auto be = make_reference_backend(test::tiny());
  const auto toks = test::tokens(300, 7, be->model().config.vocab);
  expect_bitwise(run_chunked(*be, toks, {300}), run_chunked(*be, toks, {299, 1}));
}

TEST(I1_Invariance, ChunksOf64VersusOneCall) {
  auto be = make_reference_backend(test::tiny());
  const auto toks = test::tokens(512, 11, be->model().config.vocab);
  expect_bitwise(run_chunked(*be, toks, {512}), run_chunked(*be, toks, std::vector<size_t>(8, 64)));
}

TEST(I1_Invariance, TokenByTokenDecodeVersusPrefillOnSmall) {
  auto be = make_reference_backend(make_model(config_by_name("small"), 3));
  const auto toks = test::tokens(40, 5, be->model().config.vocab);
  expect_bitwise(run_chunked(*be, toks, {40}), run_chunked(*be, toks, std::vector<size_t>(40, 1)));
}

TEST(I1_Invariance, ScratchContentsDoNotMatter) {
  auto be = make_reference_backend(test::tiny());
  const auto toks = test::tokens(200, 13, be->model().config.vocab);
  be->set_scratch_poison(std::nullopt);
  const test::ChunkedRun plain = run_chunked(*be, toks, {120, 80});
  be->set_scratch_poison(std::numeric_limits<float>::quiet_NaN());
  expect_bitwise(plain, run_chunked(*be, toks, {120, 80}));
  be->set_scratch_poison(-3.0e38f);
  expect_bitwise(plain, run_chunked(*be, toks, {200}));
  be->set_scratch_poison(0.0f);
  expect_bitwise(plain, run_chunked(*be, toks, {1, 199}));
}

TEST(I1_Invariance, EarlierUnrelatedWorkDoesNotMatter) {
  const auto toks = test::tokens(150, 17, test::tiny()->config.vocab);
  auto fresh = make_reference_backend(test::tiny());
  const test::ChunkedRun first = run_chunked(*fresh, toks, {150});
  auto used = make_reference_backend(test::tiny());
  run_chunked(*used, test::tokens(400, 99, test::tiny()->config.vocab), {400});  // unrelated session
  expect_bitwise(first, run_chunked(*used, toks, {150}));
}
