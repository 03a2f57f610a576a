// akv's K/V rounding equals numpy's astype(float16) and gguf-py's Q8_0 quantizer, bit for bit,
// on seeded adversarial rows (spec/state.md S6, S7). The fixture test gguf_py_kv_rounding writes
// the rows and their rounding (scripts/crosscheck-gguf --kv, tests/tools/kv_rounding.py).
#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <vector>

#include "reference/kv_types.hpp"
#include "runtime/digest.hpp"

using namespace akv;

namespace {

nlohmann::json meta() {
  std::ifstream in(AKV_GGUF_PY_KV);
  if (!in) return nullptr;
  return nlohmann::json::parse(in);
}

std::vector<unsigned char> bytes(const nlohmann::json& m, const char* key) {
  const auto& f = m.at("files").at(key);
  std::ifstream in(f.at("path").get<std::string>(), std::ios::binary);
  std::vector<unsigned char> b((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(b.size(), f.at("bytes").get<size_t>()) << key;
  EXPECT_EQ(sha256_hex(b), f.at("sha256").get<std::string>()) << key << ": the file changed since gguf-py wrote it";
  return b;
}

// Encodes every row of the f32 file as `t` and compares with gguf-py's / numpy's bytes.
void compare(KvType t, const char* key) {
  const nlohmann::json m = meta();
  ASSERT_FALSE(m.is_null()) << "no " << AKV_GGUF_PY_KV << ": run scripts/crosscheck-gguf --kv " << AKV_GGUF_PY_KV;
  const int rows = m.at("rows"), cols = m.at("cols");
  const std::vector<unsigned char> x = bytes(m, "f32"), want = bytes(m, key);
  ASSERT_EQ(x.size(), static_cast<size_t>(rows) * cols * 4);
  const size_t rb = kv_row_bytes(t, cols);
  ASSERT_EQ(want.size(), rb * rows);
  std::vector<float> row(static_cast<size_t>(cols));
  std::vector<uint8_t> got(rb);
  for (int r = 0; r < rows; ++r) {
    std::memcpy(row.data(), x.data() + static_cast<size_t>(r) * cols * 4, static_cast<size_t>(cols) * 4);
    kv_encode_row(t, row.data(), cols, got.data());
    ASSERT_EQ(std::memcmp(got.data(), want.data() + static_cast<size_t>(r) * rb, rb), 0)
        << kv_type_name(t) << ": row " << r << " differs from " << key << " (gguf " << m.value("gguf_version", "?") << ")";
  }
  std::cout << "[ gguf-py ] " << rows << " rows of " << cols << " values, " << kv_type_name(t) << " bit for bit (gguf "
            << m.value("gguf_version", "?") << ", numpy " << m.value("numpy_version", "?") << ")\n";
}

}  // namespace

TEST(S6_GgufPy, F16RowsEqualNumpysFloat16) { compare(KvType::kF16, "f16"); }
TEST(S7_GgufPy, Q8_0RowsEqualGgufPysQuantizer) { compare(KvType::kQ8_0, "q8_0"); }
