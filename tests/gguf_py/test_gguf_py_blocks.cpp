// akv's dequantization equals gguf-py's, bit for bit, on a generated file of seeded random
// blocks of every type akv dequantizes (spec/gguf.md Q10). The fixture test
// gguf_py_blocks_digests writes the file and gguf-py's digests (scripts/crosscheck-gguf --blocks).
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <nlohmann/json.hpp>

#include "readers/gguf/dequant.hpp"
#include "readers/gguf/ggml_type.hpp"
#include "readers/gguf/gguf.hpp"
#include "runtime/digest.hpp"

using namespace akv;
using namespace akv::readers;

TEST(Q10_GgufPyBlocks, EveryTensorOfEveryTypeBitEqual) {
  std::ifstream in(AKV_GGUF_PY_BLOCKS);
  ASSERT_TRUE(in) << "no " << AKV_GGUF_PY_BLOCKS << ": run scripts/crosscheck-gguf --blocks " << AKV_GGUF_PY_BLOCKS;
  const auto d = nlohmann::json::parse(in);
  const GgufFile f = GgufFile::open(d.at("model"));
  const auto& ref = d.at("tensors");
  ASSERT_EQ(ref.size(), f.tensors().size());
  std::map<std::string, uint64_t> elements;  // by type: what was compared
  for (size_t i = 0; i < f.tensors().size(); ++i) {
    const TensorInfo& t = f.tensors()[i];
    const auto& r = ref[i];
    ASSERT_EQ(std::string(t.name), r.at("name").get<std::string>()) << "tensor " << i;
    ASSERT_EQ(type_name(t.type), r.at("type").get<std::string>()) << t.name;
    EXPECT_EQ(t.dims, r.at("dims").get<std::vector<uint64_t>>()) << t.name;
    const std::vector<float> v = dequantize(t);
    ASSERT_EQ(v.size(), r.at("n_elements").get<uint64_t>()) << t.name;
    EXPECT_EQ(sha256_floats(v), r.at("sha256").get<std::string>())
        << "tensor " << t.name << " (" << type_name(t.type) << ") differs from gguf-py's dequantize";
    elements[type_name(t.type)] += v.size();
  }
  // Not vacuous: every type akv dequantizes was compared, two tensors of 4096 elements each.
  const std::map<std::string, uint64_t> expected = {
      {"F32", 8192},  {"F16", 8192},  {"BF16", 8192}, {"Q8_0", 8192}, {"Q4_0", 8192}, {"Q4_1", 8192},
      {"Q5_0", 8192}, {"Q5_1", 8192}, {"Q4_K", 8192}, {"Q5_K", 8192}, {"Q6_K", 8192}};
  EXPECT_EQ(elements, expected);
  for (uint32_t type = 0; type < 64; ++type) {
    if (!dequantize_supported(type)) continue;
    EXPECT_TRUE(elements.count(type_name(type))) << type_name(type) << " never compared";
  }
  std::cout << "[ gguf-py ] " << f.tensors().size() << " tensors, " << elements.size()
            << " types compared bit for bit (gguf " << d.value("gguf_version", "?") << ", numpy "
            << d.value("numpy_version", "?") << ")\n";
}
