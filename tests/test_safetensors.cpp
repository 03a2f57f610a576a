// The safetensors reader (spec/safetensors.md H1-H5): files written by the test, values
// read back bit for bit, sharded folders, and hostile files that must each give one bad_model
// line naming the field.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <limits>

#include <unistd.h>

#include "readers/hf/hf_checkpoint.hpp"
#include "readers/hf/safetensors.hpp"
#include "reference/error.hpp"
#include "reference/prng.hpp"
#include "tests/support/safetensors_builder.hpp"

using namespace akv;
using namespace akv::readers;
using akv::test::le_bytes;
using akv::test::safetensors_image;
using akv::test::TestSafetensors;
using json = nlohmann::json;

namespace {

// Expects Error(kBadModel), one line, whose message contains `needle`.
template <class F>
void expect_bad_model(F&& f, const std::string& needle) {
  try {
    f();
    ADD_FAILURE() << "accepted; expected bad_model with: " << needle;
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kBadModel) << e.what();
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << "message: " << e.what() << "\nexpected: " << needle;
    EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos) << "not one line: " << e.what();
  }
}

void expect_bad(const std::vector<uint8_t>& bytes, const std::string& needle) {
  expect_bad_model([&] { SafetensorsFile::parse(bytes, "t.safetensors"); }, "t.safetensors: " + needle);
}

std::vector<uint32_t> f32_bits(const std::vector<float>& v) {
  std::vector<uint32_t> out(v.size());
  std::memcpy(out.data(), v.data(), v.size() * 4);
  return out;
}

// Two small tensors: "a" F32 [2, 3] = 1..6, "b" BF16 [2] = 1.0, -2.0.
TestSafetensors two_tensors() {
  TestSafetensors s;
  s.add("a", "F32", {2, 3}, le_bytes<float>({1, 2, 3, 4, 5, 6}));
  s.add("b", "BF16", {2}, le_bytes<uint16_t>({0x3F80, 0xC000}));
  return s;
}

// `two_tensors()` with its header edited by `edit`.
std::vector<uint8_t> edited(const std::function<void(json&)>& edit) {
  TestSafetensors s = two_tensors();
  edit(s.header);
  return s.bytes();
}

}  // namespace

TEST(H1_Header, ReadsLengthHeaderMetadataAndTensors) {
  TestSafetensors s = two_tensors();
  s.header["__metadata__"] = {{"format", "pt"}, {"note", "x"}};
  const auto bytes = s.bytes(5);  // padded with spaces, as writers do
  const SafetensorsFile f = SafetensorsFile::parse(bytes, "t.safetensors");
  EXPECT_EQ(f.header_size(), s.header.dump().size() + 5);
  EXPECT_EQ(f.data_offset(), 8 + f.header_size());
  EXPECT_EQ(f.file_size(), bytes.size());
  EXPECT_EQ(f.metadata(), (std::map<std::string, std::string>{{"format", "pt"}, {"note", "x"}}));
  ASSERT_EQ(f.tensors().size(), 2u);
  const SafeTensor* a = f.find("a");
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(a->dtype, "F32");
  EXPECT_EQ(a->shape, (std::vector<uint64_t>{2, 3}));
  EXPECT_EQ(a->n_elements, 6u);
  EXPECT_EQ(a->begin, 0u);
  EXPECT_EQ(a->end, 24u);
  EXPECT_EQ(a->data, f.tensors()[0].data);
  EXPECT_EQ(f.find("b")->begin, 24u);
  EXPECT_EQ(f.find("c"), nullptr);
}

TEST(H1_Header, EmptyHeaderAndScalarsAndEmptyTensors) {
  const SafetensorsFile empty = SafetensorsFile::parse(safetensors_image("{}", {}));
  EXPECT_TRUE(empty.tensors().empty());
  TestSafetensors s;
  s.add("scalar", "F32", {}, le_bytes<float>({7.5f}));
  s.add("none", "F16", {3, 0}, {});
  const SafetensorsFile f = SafetensorsFile::parse(s.bytes());
  EXPECT_EQ(f.find("scalar")->n_elements, 1u);
  EXPECT_EQ(safetensors_to_float(*f.find("scalar"), "t")[0], 7.5f);
  EXPECT_EQ(f.find("none")->n_elements, 0u);
  EXPECT_TRUE(safetensors_to_float(*f.find("none"), "t").empty());
}

TEST(H1_Header, MappedFromDisk) {
  const auto dir = akv::test::fresh_dir("h1_mapped");
  akv::test::write_file(dir / "m.safetensors", two_tensors().bytes());
  const SafetensorsFile f = SafetensorsFile::open((dir / "m.safetensors").string());
  EXPECT_EQ(safetensors_to_float(*f.find("a"), f.name()), (std::vector<float>{1, 2, 3, 4, 5, 6}));
  expect_bad_model([&] { SafetensorsFile::open((dir / "absent.safetensors").string()); }, "absent.safetensors");
  std::filesystem::remove_all(dir);
}

TEST(H1_Header, HostileLengthAndJson) {
  expect_bad({1, 2, 3}, "header length: the file is 3 bytes");
  expect_bad(safetensors_image("{}", {}, 3), "header length: 3 bytes, past the end of the file (2 bytes");
  expect_bad(safetensors_image("{}", {}, ~uint64_t{0}), "header length: 18446744073709551615 bytes, past the end");
  expect_bad(safetensors_image("", {}), "header: does not start with '{'");
  expect_bad(safetensors_image(" {}", {}), "header: does not start with '{'");
  expect_bad(safetensors_image("[1]", {}), "header: does not start with '{'");
  expect_bad(safetensors_image("{\"a\": ", {}), "header: not valid JSON");
  expect_bad(safetensors_image("{} x", {}), "header: not valid JSON");
  expect_bad(safetensors_image(std::string("{}\0", 3), {}), "header: NUL byte at offset 2 (not JSON text)");
  expect_bad(safetensors_image(std::string("{}\0garbage", 10), {}), "header: NUL byte at offset 2");
  expect_bad(safetensors_image("{\"\xff\": 1}", {}), "header: not valid JSON");
  expect_bad(safetensors_image("{\"a\": {\"b\": {\"c\": [1]}}}", {}), "header: JSON nested deeper than 3 levels");
  expect_bad(safetensors_image("{\"a\": {\"b\": {\"c\": 1}}}", {}), "tensor 'a'.b: unknown field");
  expect_bad(safetensors_image("{\"a\": {\"shape\": [[1]]}}", {}), "header: JSON nested deeper than 3 levels");
  expect_bad(safetensors_image(std::string(100000, '[') , {}), "header: does not start");
  expect_bad(safetensors_image("{" + std::string(100000, '['), {}), "header: not valid JSON");
  expect_bad(safetensors_image("{\"a\": [" + std::string(100000, '['), {}), "header: JSON nested deeper than 3 levels");
  // A repeated key: JSON parsers keep one value silently; here it is an error.
  const std::string entry = R"({"dtype": "F32", "shape": [1], "data_offsets": [0, 4]})";
  expect_bad(safetensors_image("{\"a\": " + entry + ", \"a\": " + entry + "}", le_bytes<float>({1})), "header: key 'a' repeated in one object");
  expect_bad(safetensors_image(R"({"a": {"dtype": "F32", "dtype": "F32", "shape": [1], "data_offsets": [0, 4]}})", le_bytes<float>({1})),
             "header: key 'dtype' repeated in one object");
  expect_bad(safetensors_image(R"({"__metadata__": []})", {}), "header.__metadata__: expected an object of strings, got an array");
  expect_bad(safetensors_image(R"({"__metadata__": {"k": 1}})", {}), "header.__metadata__.k: expected a string, got an integer");
}

TEST(H1_Header, LengthOverTheLimitInAHugeSparseFile) {
  // A file past the 100 MiB limit, sparse: the length is checked before a byte of JSON is read.
  const auto dir = akv::test::fresh_dir("h1_sparse");
  const auto path = dir / "big.safetensors";
  const uint64_t n = kMaxSafetensorsHeader + 1;
  akv::test::write_file(path, safetensors_image("{", {}, n));
  std::filesystem::resize_file(path, 8 + n);
  expect_bad_model([&] { SafetensorsFile::open(path.string()); }, "big.safetensors: header length: 104857601 bytes, more than the limit of 104857600");
  std::filesystem::remove_all(dir);
}

TEST(H2_TensorEntry, HostileEntriesNameTheField) {
  expect_bad(edited([](json& h) { h["a"]["dtype"] = "F31"; }), "tensor 'a'.dtype: unknown dtype 'F31'");
  expect_bad(edited([](json& h) { h["a"]["dtype"] = 4; }), "tensor 'a'.dtype: expected a string, got an integer");
  expect_bad(edited([](json& h) { h["a"].erase("dtype"); }), "tensor 'a'.dtype: missing");
  expect_bad(edited([](json& h) { h["a"].erase("shape"); }), "tensor 'a'.shape: missing");
  expect_bad(edited([](json& h) { h["a"].erase("data_offsets"); }), "tensor 'a'.data_offsets: missing");
  expect_bad(edited([](json& h) { h["a"]["strides"] = json::array({1}); }), "tensor 'a'.strides: unknown field");
  expect_bad(edited([](json& h) { h["a"] = "F32"; }), "tensor 'a': expected an object {dtype, shape, data_offsets}, got a string");
  expect_bad(edited([](json& h) { h[""] = h["b"]; h.erase("b"); }), "tensor '': empty tensor name");
  expect_bad(edited([](json& h) { h["a"]["shape"] = 6; }), "tensor 'a'.shape: expected an array, got an integer");
  expect_bad(edited([](json& h) { h["a"]["shape"] = {2, -3}; }), "tensor 'a'.shape[1]: expected an integer >= 0, got a negative integer");
  expect_bad(edited([](json& h) { h["a"]["shape"] = {2.0, 3}; }), "tensor 'a'.shape[0]: expected an integer >= 0, got a non-integer number");
  expect_bad(edited([](json& h) { h["a"]["shape"] = {"2", 3}; }), "tensor 'a'.shape[0]: expected an integer >= 0, got a string");
  expect_bad(edited([](json& h) { h["a"]["shape"] = {1, 1, 1, 1, 1, 1, 1, 1, 6}; }), "tensor 'a'.shape: 9 dimensions, more than 8");
  // Shape x dtype size differs from the offsets' span.
  expect_bad(edited([](json& h) { h["a"]["shape"] = {3, 3}; }), "tensor 'a'.data_offsets: span of 24 bytes, but shape x F32 is 36 bytes");
  expect_bad(edited([](json& h) { h["a"]["dtype"] = "F16"; }), "tensor 'a'.data_offsets: span of 24 bytes, but shape x F16 is 12 bytes");
  // Absurd sizes: the product is checked before each multiplication.
  const uint64_t big = uint64_t{1} << 32;
  expect_bad(edited([&](json& h) { h["a"]["shape"] = {big, big}; }), "tensor 'a'.shape[1]: element count overflows (4294967296 x 4294967296)");
  expect_bad(edited([&](json& h) { h["a"]["shape"] = {uint64_t{1} << 62, 1}; }), "tensor 'a'.shape[0]: element count overflows");
  expect_bad(edited([](json& h) { h["a"]["shape"] = json::array({18446744073709551616.0}); }), "tensor 'a'.shape[0]: expected an integer >= 0, got a non-integer");
  expect_bad(edited([](json& h) { h["a"]["shape"] = json::array({std::numeric_limits<uint64_t>::max(), 0}); }), "tensor 'a'.shape[0]: element count overflows");
  expect_bad(edited([](json& h) { h["a"]["data_offsets"] = {0}; }), "tensor 'a'.data_offsets: expected [begin, end], got an array of 1");
  expect_bad(edited([](json& h) { h["a"]["data_offsets"] = "0-24"; }), "tensor 'a'.data_offsets: expected [begin, end], got a string");
  expect_bad(edited([](json& h) { h["a"]["data_offsets"] = {-1, 24}; }), "tensor 'a'.data_offsets[0]: expected an integer >= 0, got a negative integer");
  expect_bad(edited([](json& h) { h["a"]["data_offsets"] = {24, 0}; }), "tensor 'a'.data_offsets: end 0 before begin 24");
  expect_bad(edited([](json& h) { h["b"]["data_offsets"] = {24, 32}; }), "tensor 'b'.data_offsets: end 32 past the data section (28 bytes)");
  expect_bad(edited([](json& h) { h["b"]["data_offsets"] = {~uint64_t{0} - 1, ~uint64_t{0}}; }), "tensor 'b'.data_offsets: end 18446744073709551615 past");
  // A name that would break the line is printed escaped.
  expect_bad(edited([](json& h) { h["x\ny"] = h["a"]; h["x\ny"]["dtype"] = "Q4"; }), "tensor 'x\\x0ay'.dtype: unknown dtype 'Q4'");
}

TEST(H2_TensorEntry, EveryKnownDtypeHasItsSize) {
  const std::pair<const char*, uint32_t> known[] = {{"BOOL", 1}, {"U8", 1}, {"I8", 1}, {"F8_E5M2", 1}, {"F8_E4M3", 1},
                                                    {"U16", 2}, {"I16", 2}, {"F16", 2}, {"BF16", 2}, {"U32", 4},
                                                    {"I32", 4}, {"F32", 4}, {"U64", 8}, {"I64", 8}, {"F64", 8}};
  for (const auto& [name, size] : known) {
    EXPECT_EQ(safetensors_dtype_bytes(name), size) << name;
    TestSafetensors s;
    s.add("t", name, {3}, std::vector<uint8_t>(3 * size));
    EXPECT_NO_THROW(SafetensorsFile::parse(s.bytes())) << name;
  }
  EXPECT_EQ(safetensors_dtype_bytes("f32"), 0u);
  EXPECT_EQ(safetensors_dtype_bytes("Q8_0"), 0u);
}

TEST(H3_Layout, TensorsTileTheDataSection) {
  // Header order need not be data order; the tensors are listed by offset.
  TestSafetensors s = two_tensors();
  json h;
  h["z"] = s.header["a"];
  h["b"] = s.header["b"];
  const SafetensorsFile f = SafetensorsFile::parse(safetensors_image(h.dump(), s.data));
  EXPECT_EQ(f.tensors()[0].name, "z");
  EXPECT_EQ(f.tensors()[1].name, "b");
  // Overlap, gap, bytes after the last tensor.
  expect_bad(edited([](json& h) { h["b"]["data_offsets"] = {20, 24}; }), "tensor 'b'.data_offsets: [20, 24) overlaps tensor 'a'");
  expect_bad(edited([](json& h) { h["c"] = h["a"]; }), "tensor 'c'.data_offsets: [0, 24) overlaps tensor 'a'");
  expect_bad(safetensors_image(two_tensors().header.dump(), le_bytes<float>({1, 2, 3, 4, 5, 6, 7, 8})),
             "data section: 4 bytes after the last tensor's end 28");
  TestSafetensors gap = two_tensors();
  gap.header["a"]["data_offsets"] = {4, 28};
  gap.header["b"]["data_offsets"] = {28, 32};
  gap.data.resize(32);
  expect_bad(gap.bytes(), "tensor 'a'.data_offsets: begins at 4, leaving bytes [0, 4) unused");
  // Zero-size tensors may sit anywhere in the tiling.
  TestSafetensors z = two_tensors();
  z.header["e"] = {{"dtype", "F32"}, {"shape", {0}}, {"data_offsets", {24, 24}}};
  EXPECT_NO_THROW(SafetensorsFile::parse(z.bytes()));
}

TEST(H3_Layout, EveryTruncationAndMutationIsBadModelOrInside) {
  TestSafetensors s = two_tensors();
  s.header["__metadata__"] = {{"format", "pt"}};
  const auto full = s.bytes(3);
  for (size_t n = 0; n < full.size(); ++n)
    expect_bad_model([&] { SafetensorsFile::parse({full.begin(), full.begin() + n}, "t.safetensors"); }, "t.safetensors: ");
  SplitMix64 rng{777};
  int parsed = 0, rejected = 0;
  for (int i = 0; i < 4000; ++i) {
    auto b = full;
    const int flips = 1 + static_cast<int>(rng.next() % 4);
    for (int k = 0; k < flips; ++k) b[rng.next() % b.size()] = static_cast<uint8_t>(rng.next());
    try {
      const SafetensorsFile f = SafetensorsFile::parse(std::move(b));
      uint64_t at = f.data_offset();
      for (const SafeTensor& t : f.tensors()) {
        EXPECT_EQ(t.data, f.tensors()[0].data + (t.begin - f.tensors()[0].begin));
        EXPECT_EQ(f.data_offset() + t.begin, at);
        at = f.data_offset() + t.end;
      }
      EXPECT_EQ(at, f.file_size());
      ++parsed;
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kBadModel);
      EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos) << e.what();
      ++rejected;
    }
  }
  EXPECT_GT(parsed, 100);  // data bytes mutate freely
  EXPECT_GT(rejected, 1000);
}

TEST(H4_Values, F32IsCopiedBitForBit) {
  const std::vector<uint32_t> bits = {0x00000000, 0x80000000, 0x3F800000, 0x00000001, 0x7F800000, 0xFF800000,
                                      0x7FC00001, 0xFFA00123, 0x7F7FFFFF, 0x12345678};
  TestSafetensors s;
  s.add("t", "F32", {2, 5}, le_bytes(bits));
  const SafetensorsFile f = SafetensorsFile::parse(s.bytes());
  EXPECT_EQ(f32_bits(safetensors_to_float(*f.find("t"), "t")), bits);
}

TEST(H4_Values, F16AndBF16AsSpecGgufQ1) {
  // Every binary16 pattern: the values against an independent computation in double.
  std::vector<uint16_t> all(65536);
  for (uint32_t i = 0; i < 65536; ++i) all[i] = static_cast<uint16_t>(i);
  TestSafetensors s;
  s.add("h", "F16", {256, 256}, le_bytes(all));
  s.add("b", "BF16", {65536}, le_bytes(all));
  const SafetensorsFile f = SafetensorsFile::parse(s.bytes());
  const auto h = safetensors_to_float(*f.find("h"), "t");
  const auto b = f32_bits(safetensors_to_float(*f.find("b"), "t"));
  ASSERT_EQ(h.size(), 65536u);
  for (uint32_t i = 0; i < 65536; ++i) {
    const int e = (i >> 10) & 31, m = i & 1023;
    const double sign = (i & 0x8000) ? -1.0 : 1.0;
    const uint32_t hb = f32_bits({h[i]})[0];
    if (e == 31) {
      ASSERT_EQ(hb, ((i & 0x8000u) << 16) | 0x7F800000u | (static_cast<uint32_t>(m) << 13)) << i;  // inf / NaN payload kept
    } else {
      const double v = sign * (e == 0 ? std::ldexp(m, -24) : std::ldexp(1024 + m, e - 25));
      ASSERT_EQ(h[i], static_cast<float>(v)) << i;
      ASSERT_EQ(std::signbit(h[i]), (i & 0x8000) != 0) << i;
    }
    ASSERT_EQ(b[i], i << 16) << i;
  }
  // Other dtypes are not weights akv reads.
  TestSafetensors other;
  other.add("ints", "I32", {2}, le_bytes<int32_t>({1, 2}));
  const SafetensorsFile o = SafetensorsFile::parse(other.bytes());
  expect_bad_model([&] { safetensors_to_float(*o.find("ints"), "x.safetensors"); },
                   "x.safetensors: tensor 'ints'.dtype: 'I32' is not supported (F32, F16, BF16)");
}

TEST(H5_Sharded, IndexAndShards) {
  const auto dir = akv::test::fresh_dir("h5_shards");
  TestSafetensors one, two;
  one.add("x", "F32", {2}, le_bytes<float>({1, 2}));
  two.add("y", "F16", {1}, le_bytes<uint16_t>({0x3C00}));
  two.add("z", "BF16", {1}, le_bytes<uint16_t>({0x4000}));
  akv::test::write_file(dir / "model-00001-of-00002.safetensors", one.bytes());
  akv::test::write_file(dir / "model-00002-of-00002.safetensors", two.bytes());
  json index = {{"metadata", {{"total_size", 12}}},
                {"weight_map", {{"x", "model-00001-of-00002.safetensors"}, {"y", "model-00002-of-00002.safetensors"},
                                {"z", "model-00002-of-00002.safetensors"}}}};
  const auto write_index = [&](const json& j) { akv::test::write_file(dir / "model.safetensors.index.json", j.dump()); };
  write_index(index);
  {
    const HfCheckpoint c = HfCheckpoint::open(dir.string());
    ASSERT_EQ(c.files().size(), 2u);
    ASSERT_NE(c.find("x").tensor, nullptr);
    EXPECT_EQ(safetensors_to_float(*c.find("y").tensor, "t")[0], 1.0f);
    EXPECT_EQ(safetensors_to_float(*c.find("z").tensor, "t")[0], 2.0f);
    EXPECT_NE(c.find("z").file->name().find("model-00002-of-00002.safetensors"), std::string::npos);
    EXPECT_EQ(c.find("w").tensor, nullptr);
  }
  const std::string idx = "model.safetensors.index.json: ";
  json j = index;
  j["weight_map"]["z"] = "model-00001-of-00002.safetensors";
  write_index(j);
  expect_bad_model([&] { HfCheckpoint::open(dir.string()); }, idx + "weight_map.'z': names shard 'model-00001-of-00002.safetensors', but the tensor is in 'model-00002-of-00002.safetensors'");
  j = index;
  j["weight_map"].erase("z");
  write_index(j);
  expect_bad_model([&] { HfCheckpoint::open(dir.string()); }, idx + "weight_map: tensor 'z' of shard 'model-00002-of-00002.safetensors' is not listed");
  j = index;
  j["weight_map"]["w"] = "model-00001-of-00002.safetensors";
  write_index(j);
  expect_bad_model([&] { HfCheckpoint::open(dir.string()); }, idx + "weight_map.'w': shard 'model-00001-of-00002.safetensors' has no such tensor");
  j = index;
  j["weight_map"]["x"] = "../model-00001-of-00002.safetensors";
  write_index(j);
  expect_bad_model([&] { HfCheckpoint::open(dir.string()); }, idx + "weight_map.'x': shard name '../model-00001-of-00002.safetensors' is not a file name");
  j = index;
  j["weight_map"]["x"] = "absent.safetensors";
  write_index(j);
  expect_bad_model([&] { HfCheckpoint::open(dir.string()); }, "absent.safetensors");
  j = index;
  j["weight_map"]["x"] = 3;
  write_index(j);
  expect_bad_model([&] { HfCheckpoint::open(dir.string()); }, idx + "weight_map.'x': expected a shard file name, got an integer");
  write_index(json{{"metadata", json::object()}});
  expect_bad_model([&] { HfCheckpoint::open(dir.string()); }, idx + "weight_map: missing");
  akv::test::write_file(dir / "model.safetensors.index.json", std::string("{\"weight_map\": "));
  expect_bad_model([&] { HfCheckpoint::open(dir.string()); }, idx + "index: not valid JSON");
  std::filesystem::remove(dir / "model.safetensors.index.json");
  expect_bad_model([&] { HfCheckpoint::open(dir.string()); }, "no model.safetensors or model.safetensors.index.json");
  // A single file wins over an index, as in transformers.
  akv::test::write_file(dir / "model.safetensors", one.bytes());
  write_index(json{{"weight_map", 1}});
  EXPECT_EQ(HfCheckpoint::open(dir.string()).files().size(), 1u);
  std::filesystem::remove_all(dir);
}
