// The GGUF v3 reader (spec/gguf.md F2-F7): valid files written by the test, every metadata
// type, arrays, alignment, and hostile files that must each give bad_model naming the field.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>

#include <unistd.h>

#include "tests/support/gguf_builder.hpp"
#include "readers/gguf/gguf.hpp"
#include "reference/error.hpp"
#include "reference/prng.hpp"

using namespace akv;
using namespace akv::readers;
using akv::test::Writer;
using akv::test::Kv;
using akv::test::kv;
using akv::test::kv_str;
using akv::test::TestGguf;
using akv::test::TestTensor;

namespace {

// Expects Error(kBadModel) whose message contains `field`.
void expect_bad(const std::vector<uint8_t>& bytes, const std::string& field) {
  try {
    GgufFile::parse(bytes, "t.gguf");
    ADD_FAILURE() << "parsed; expected bad_model naming " << field;
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kBadModel) << e.what();
    EXPECT_NE(std::string(e.what()).find(field), std::string::npos) << "message: " << e.what() << "\nexpected field: " << field;
    EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos) << "not one line: " << e.what();
  }
}

TestGguf one_tensor() {
  TestGguf g;
  g.kvs.push_back(kv_str("general.architecture", "llama"));
  g.tensors.push_back({"a", {4, 2}, 0, akv::test::f32_bytes(8)});
  g.tensors.push_back({"b", {3}, 0, akv::test::f32_bytes(3, 100.0f)});
  return g;
}

}  // namespace

TEST(F2_Header, MinimalFile) {
  const GgufFile f = GgufFile::parse(TestGguf{}.bytes());
  EXPECT_EQ(f.version(), 3u);
  EXPECT_TRUE(f.metadata().empty());
  EXPECT_TRUE(f.tensors().empty());
  EXPECT_EQ(f.file_size(), 24u);
}

TEST(F2_Header, WrongMagic) {
  TestGguf g;
  g.magic = 0x46554746;  // "FGUF"
  expect_bad(g.bytes(), "header.magic");
  expect_bad({'G', 'G'}, "header.magic");
  expect_bad({}, "header.magic");
}

TEST(F2_Header, WrongVersion) {
  for (uint32_t v : {0u, 1u, 2u, 4u, 0xFFFFFFFFu}) {
    TestGguf g;
    g.version = v;
    expect_bad(g.bytes(), "header.version");
  }
  TestGguf be;
  be.version = 0x03000000;  // version 3 written big-endian
  expect_bad(be.bytes(), "big-endian");
}

TEST(F2_Header, EveryTruncationNamesAHeaderField) {
  const auto full = TestGguf{}.bytes();
  for (size_t n = 0; n < full.size(); ++n) {
    const std::vector<uint8_t> cut(full.begin(), full.begin() + n);
    const std::string field = n < 4 ? "header.magic" : n < 8 ? "header.version" : n < 16 ? "header.tensor_count" : "header.metadata_kv_count";
    expect_bad(cut, field);
  }
}

TEST(F2_Header, AbsurdCounts) {
  TestGguf g;
  g.kv_count = uint64_t{1} << 60;
  expect_bad(g.bytes(), "header.metadata_kv_count");
  TestGguf t;
  t.tensor_count = ~uint64_t{0};
  expect_bad(t.bytes(), "header.tensor_count");
}

TEST(F3_Metadata, EveryScalarType) {
  TestGguf g;
  g.kvs = {kv<uint8_t>("u8", 0, 200),         kv<int8_t>("i8", 1, -100),
           kv<uint16_t>("u16", 2, 60000),     kv<int16_t>("i16", 3, -30000),
           kv<uint32_t>("u32", 4, 4000000000u), kv<int32_t>("i32", 5, -2000000000),
           kv<float>("f32", 6, 1e-5f),        kv<uint8_t>("bool", 7, 1),
           kv_str("str", "héllo"),            kv<uint64_t>("u64", 10, 0xFEDCBA9876543210ull),
           kv<int64_t>("i64", 11, -(int64_t{1} << 62)), kv<double>("f64", 12, 0.1)};
  const GgufFile f = GgufFile::parse(g.bytes());
  ASSERT_EQ(f.metadata().size(), 12u);
  for (size_t i = 0; i < 12; ++i) EXPECT_EQ(f.metadata()[i].first, g.kvs[i].key);
  EXPECT_EQ(std::get<uint8_t>(*f.find("u8")), 200);
  EXPECT_EQ(std::get<int8_t>(*f.find("i8")), -100);
  EXPECT_EQ(std::get<uint16_t>(*f.find("u16")), 60000);
  EXPECT_EQ(std::get<int16_t>(*f.find("i16")), -30000);
  EXPECT_EQ(std::get<uint32_t>(*f.find("u32")), 4000000000u);
  EXPECT_EQ(std::get<int32_t>(*f.find("i32")), -2000000000);
  EXPECT_EQ(std::get<float>(*f.find("f32")), 1e-5f);
  EXPECT_EQ(std::get<bool>(*f.find("bool")), true);
  EXPECT_EQ(std::get<std::string_view>(*f.find("str")), "héllo");
  EXPECT_EQ(std::get<uint64_t>(*f.find("u64")), 0xFEDCBA9876543210ull);
  EXPECT_EQ(std::get<int64_t>(*f.find("i64")), -(int64_t{1} << 62));
  EXPECT_EQ(std::get<double>(*f.find("f64")), 0.1);
  for (size_t i = 0; i < 12; ++i) EXPECT_EQ(static_cast<uint32_t>(value_type(f.metadata()[i].second)), g.kvs[i].type);
  // The typed getters (C1 uses them).
  EXPECT_EQ(f.get_uint("u8"), 200u);
  EXPECT_EQ(f.get_uint("u64"), 0xFEDCBA9876543210ull);
  EXPECT_EQ(f.get_float("f32"), 1e-5f);
  EXPECT_EQ(f.get_float("f64"), 0.1f);
  EXPECT_EQ(f.get_string("str"), "héllo");
  EXPECT_FALSE(f.find_uint("absent").has_value());
}

TEST(F3_Metadata, GettersNameTheKey) {
  TestGguf g;
  g.kvs = {kv<int32_t>("neg", 5, -1), kv_str("s", "x"), kv<uint32_t>("n", 4, 7)};
  const GgufFile f = GgufFile::parse(g.bytes(), "t.gguf");
  const auto bad = [](const std::function<void()>& op, const std::string& needle) {
    try {
      op();
      ADD_FAILURE() << "no error";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kBadModel);
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
  };
  bad([&] { f.get_uint("neg"); }, "'neg': negative");
  bad([&] { f.get_uint("s"); }, "'s': expected an integer, got string");
  bad([&] { f.get_uint("missing"); }, "'missing': missing");
  bad([&] { f.get_float("n"); }, "'n': expected float32 or float64, got uint32");
  bad([&] { f.get_string("n"); }, "'n': expected string");
  bad([&] { f.get_array("s"); }, "'s': expected array");
}

TEST(F3_Metadata, ArraysOfEveryType) {
  TestGguf g;
  g.kvs.push_back({"u8s", 9, akv::test::array_value(0, 3, {1, 2, 255})});
  g.kvs.push_back({"i32s", 9, akv::test::array_value(5, 2, Writer{}.put<int32_t>(-7).put<int32_t>(9).b)});
  g.kvs.push_back({"f64s", 9, akv::test::array_value(12, 1, Writer{}.put<double>(2.5).b)});
  g.kvs.push_back({"bools", 9, akv::test::array_value(7, 2, {0, 1})});
  g.kvs.push_back({"strs", 9, akv::test::array_value(8, 3, Writer{}.str("a").str("").str("ccc").b)});
  g.kvs.push_back({"empty", 9, akv::test::array_value(4, 0, {})});
  // Nested: an array of 2 arrays of uint16: [[1, 2], [3]].
  const auto inner1 = akv::test::array_value(2, 2, Writer{}.put<uint16_t>(1).put<uint16_t>(2).b);
  const auto inner2 = akv::test::array_value(2, 1, Writer{}.put<uint16_t>(3).b);
  std::vector<uint8_t> both = inner1;
  both.insert(both.end(), inner2.begin(), inner2.end());
  g.kvs.push_back({"nested", 9, akv::test::array_value(9, 2, both)});
  const GgufFile f = GgufFile::parse(g.bytes());
  const Array& u8s = f.get_array("u8s");
  EXPECT_EQ(u8s.type, ValueType::kU8);
  ASSERT_EQ(u8s.count, 3u);
  EXPECT_EQ(u8s.at<uint8_t>(2), 255);
  const Array& i32s = f.get_array("i32s");
  EXPECT_EQ(i32s.at<int32_t>(0), -7);
  EXPECT_EQ(i32s.at<int32_t>(1), 9);
  EXPECT_EQ(f.get_array("f64s").at<double>(0), 2.5);
  EXPECT_EQ(f.get_array("bools").at<bool>(1), true);
  const Array& strs = f.get_array("strs");
  ASSERT_EQ(strs.strings.size(), 3u);
  EXPECT_EQ(strs.strings[0], "a");
  EXPECT_EQ(strs.strings[1], "");
  EXPECT_EQ(strs.strings[2], "ccc");
  EXPECT_EQ(f.get_array("empty").count, 0u);
  const Array& nested = f.get_array("nested");
  EXPECT_EQ(nested.type, ValueType::kArray);
  ASSERT_EQ(nested.arrays.size(), 2u);
  EXPECT_EQ(nested.arrays[0].type, ValueType::kU16);
  EXPECT_EQ(nested.arrays[0].at<uint16_t>(1), 2);
  EXPECT_EQ(nested.arrays[1].count, 1u);
  EXPECT_EQ(nested.arrays[1].at<uint16_t>(0), 3);
}

TEST(F3_Metadata, BadValues) {
  const auto one = [](Kv k) {
    TestGguf g;
    g.kvs.push_back(std::move(k));
    return g.bytes();
  };
  expect_bad(one(kv<uint8_t>("flag", 7, 2)), "metadata 'flag': bool value 2");
  expect_bad(one(kv<uint32_t>("x", 13, 0)), "metadata 'x'.type: unknown value type 13");
  expect_bad(one({"arr", 9, akv::test::array_value(7, 2, {1, 9})}), "metadata 'arr'[1]: bool value 9");
  expect_bad(one({"arr", 9, akv::test::array_value(99, 0, {})}), "metadata 'arr'.type: unknown element type 99");
  expect_bad(one({"arr", 9, akv::test::array_value(4, uint64_t{1} << 62, {})}), "metadata 'arr'.count");
  expect_bad(one({"arr", 9, akv::test::array_value(8, uint64_t{1} << 40, {})}), "metadata 'arr'.count");
  expect_bad(one({"arr", 9, akv::test::array_value(8, 1, Writer{}.put<uint64_t>(1000).b)}), "metadata 'arr'[0]");
  expect_bad(one({"s", 8, Writer{}.put<uint64_t>(~uint64_t{0}).b}), "metadata 's'");
  expect_bad(one({"", 4, Writer{}.put<uint32_t>(1).b}), "metadata[0].key: empty key");
  // Nested deeper than 8: [[[[...]]]] with one element per level.
  std::vector<uint8_t> deep = akv::test::array_value(4, 0, {});
  for (int i = 0; i < 9; ++i) deep = akv::test::array_value(9, 1, deep);
  expect_bad(one({"deep", 9, deep}), "nested deeper than 8");
  TestGguf twice;
  twice.kvs = {kv<uint32_t>("k", 4, 1), kv<uint32_t>("k", 4, 2)};
  expect_bad(twice.bytes(), "metadata 'k': key appears twice");
}

TEST(F4_TensorInfos, ShapesTypesAndSizes) {
  TestGguf g;
  g.tensors.push_back({"w", {64, 3}, 3, std::vector<uint8_t>(2 * 3 * 20, 7)});  // Q4_1: 2 blocks a row
  g.tensors.push_back({"v", {5, 1, 2, 1}, 1, std::vector<uint8_t>(20, 1)});     // F16, 4 dims
  const GgufFile f = GgufFile::parse(g.bytes());
  ASSERT_EQ(f.tensors().size(), 2u);
  const TensorInfo* w = f.find_tensor("w");
  ASSERT_NE(w, nullptr);
  EXPECT_EQ(w->dims, (std::vector<uint64_t>{64, 3}));
  EXPECT_EQ(w->n_elements, 192u);
  EXPECT_EQ(w->n_bytes, 120u);
  EXPECT_EQ(w->offset, 0u);
  const TensorInfo* v = f.find_tensor("v");
  EXPECT_EQ(v->n_elements, 10u);
  EXPECT_EQ(v->n_bytes, 20u);
  EXPECT_EQ(v->offset, 128u);  // 120 rounded up to the alignment 32
  EXPECT_EQ(f.find_tensor("x"), nullptr);
}

TEST(F4_TensorInfos, HostileInfos) {
  const auto with = [](TestTensor t) {
    TestGguf g;
    g.tensors.push_back(std::move(t));
    return g.bytes();
  };
  expect_bad(with({"t", {}, 0, {}}), "tensor 't'.n_dims: 0 dimensions");
  expect_bad(with({"t", {1, 1, 1, 1, 1}, 0, {0, 0, 0, 0}}), "tensor 't'.n_dims: 5 dimensions");
  expect_bad(with({"t", {4, 0}, 0, {}}), "tensor 't'.dims[1]: 0");
  expect_bad(with({"t", {uint64_t{1} << 32, uint64_t{1} << 31}, 0, {}}), "tensor 't'.dims[1]: the element count overflows");
  expect_bad(with({"t", {uint64_t{1} << 62}, 0, {}}), "tensor 't'.dims: the tensor's byte size exceeds");
  expect_bad(with({"t", {4}, 5, {}}), "tensor 't'.type: unknown tensor type 5");
  expect_bad(with({"t", {48}, 8, {}}), "tensor 't'.dims[0]: row length 48 is not a multiple of Q8_0's block size 32");
  expect_bad(with({"", {1}, 0, {0, 0, 0, 0}}), "tensor_infos[0].name: empty name");
  expect_bad(with({"t", {1}, 0, {0, 0, 0, 0}, 4}), "tensor 't'.offset: 4 is not a multiple of the alignment 32");
  TestGguf twice;
  twice.tensors = {{"t", {1}, 0, {0, 0, 0, 0}}, {"t", {1}, 0, {0, 0, 0, 0}}};
  expect_bad(twice.bytes(), "tensor 't': tensor name appears twice");
  // A tensor info cut in the middle names the field it was reading (a long name, so that the
  // cut file still passes the tensor count's bound of F2).
  const std::string name(40, 'n');
  auto full = with({name, {8}, 0, akv::test::f32_bytes(8)});
  const size_t info_start = 24;
  expect_bad({full.begin(), full.begin() + info_start + 8 + 40 + 2}, "tensor '" + name + "'.n_dims");
  expect_bad({full.begin(), full.begin() + info_start + 8 + 40 + 4 + 3}, "tensor '" + name + "'.dims[0]");
  expect_bad({full.begin(), full.begin() + info_start + 8 + 30}, "tensor_infos[0].name");
  expect_bad({full.begin(), full.begin() + info_start + 8 + 40 + 4 + 8 + 2}, "tensor '" + name + "'.type");
}

TEST(F5_Alignment, DefaultIs32) {
  const GgufFile f = GgufFile::parse(one_tensor().bytes());
  EXPECT_EQ(f.alignment(), 32u);
  EXPECT_EQ(f.data_offset() % 32, 0u);
  EXPECT_GT(f.data_offset(), 24u);
  EXPECT_EQ(f.find_tensor("b")->offset, 32u);
}

TEST(F5_Alignment, GeneralAlignmentIsHonoured) {
  TestGguf g = one_tensor();
  g.alignment = 256;
  g.kvs.push_back(kv<uint32_t>("general.alignment", 4, 256));
  const GgufFile f = GgufFile::parse(g.bytes());
  EXPECT_EQ(f.alignment(), 256u);
  EXPECT_EQ(f.data_offset() % 256, 0u);
  EXPECT_EQ(f.find_tensor("b")->offset, 256u);
  float b0;
  std::memcpy(&b0, f.find_tensor("b")->data, 4);
  EXPECT_EQ(b0, 100.0f);
}

TEST(F5_Alignment, BadAlignment) {
  for (uint32_t a : {0u, 48u, 3u, 0x80000001u}) {
    TestGguf g = one_tensor();
    g.kvs.push_back(kv<uint32_t>("general.alignment", 4, a));
    expect_bad(g.bytes(), "metadata 'general.alignment': " + std::to_string(a) + " is not a power of two");
  }
  TestGguf g = one_tensor();
  g.kvs.push_back(kv<uint64_t>("general.alignment", 10, 32));
  expect_bad(g.bytes(), "metadata 'general.alignment': expected uint32, got uint64");
  // Offsets aligned to 32 but not to a declared 64.
  TestGguf h = one_tensor();
  h.kvs.push_back(kv<uint32_t>("general.alignment", 4, 64));
  expect_bad(h.bytes(), "tensor 'b'.offset: 32 is not a multiple of the alignment 64");
}

TEST(F6_Data, MappedFileGivesTheTensorBytes) {
  const auto bytes = one_tensor().bytes();
  const auto path = std::filesystem::temp_directory_path() / ("akv_f6_" + std::to_string(::getpid()) + ".gguf");
  {
    std::ofstream o(path, std::ios::binary);
    o.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  }
  {
    GgufFile f = GgufFile::open(path.string());
    EXPECT_EQ(f.file_size(), bytes.size());
    EXPECT_EQ(f.get_string("general.architecture"), "llama");
    const TensorInfo* a = f.find_tensor("a");
    ASSERT_NE(a, nullptr);
    EXPECT_EQ(std::memcmp(a->data, akv::test::f32_bytes(8).data(), 32), 0);
    const TensorInfo* b = f.find_tensor("b");
    EXPECT_EQ(std::memcmp(b->data, akv::test::f32_bytes(3, 100.0f).data(), 12), 0);
    EXPECT_EQ(b->data, f.find_tensor("a")->data + 32);
    GgufFile moved = std::move(f);  // views survive a move
    EXPECT_EQ(moved.get_string("general.architecture"), "llama");
  }
  std::filesystem::remove(path);
  try {
    GgufFile::open(path.string());
    ADD_FAILURE() << "opened a missing file";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kBadModel);
    EXPECT_NE(std::string(e.what()).find("cannot open model file"), std::string::npos) << e.what();
  }
}

TEST(F6_Data, TensorPastTheEnd) {
  auto bytes = one_tensor().bytes();
  bytes.resize(bytes.size() - 1);  // b's last byte is gone
  expect_bad(bytes, "tensor 'b'.offset: data [32, +12) runs past the end of the data section");
  TestGguf far = one_tensor();
  far.tensors[1].offset = uint64_t{1} << 40;
  auto fb = far.bytes();
  fb.resize(200);
  expect_bad(fb, "tensor 'b'.offset");
  // Infos end, the data section never starts.
  auto nodata = one_tensor().bytes();
  const GgufFile ok = GgufFile::parse(nodata);
  nodata.resize(ok.data_offset() - 1);
  expect_bad(nodata, "data section: starts at");
}

TEST(F6_Data, OverlappingTensors) {
  TestGguf g = one_tensor();
  g.tensors[1].offset = 0;  // b inside a
  expect_bad(g.bytes(), "data overlaps tensor");
}

TEST(F7_Hostile, EveryTruncationIsBadModel) {
  TestGguf g = one_tensor();
  g.kvs.push_back({"strs", 9, akv::test::array_value(8, 2, Writer{}.str("xy").str("z").b)});
  g.kvs.push_back(kv<double>("f", 12, 1.5));
  const auto full = g.bytes();
  ASSERT_NO_THROW(GgufFile::parse(full));
  for (size_t n = 0; n < full.size(); ++n) {
    try {
      GgufFile::parse({full.begin(), full.begin() + n}, "t.gguf");
      ADD_FAILURE() << "a file cut to " << n << " bytes parsed";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kBadModel) << n;
      EXPECT_NE(std::string(e.what()).find("t.gguf: "), std::string::npos);
    }
  }
}

TEST(F7_Hostile, MutatedBytesNeverCrash) {
  // Deterministic mutations of a valid file: each either parses or is bad_model, and what
  // parses has every tensor inside the file.
  TestGguf g = one_tensor();
  g.kvs.push_back({"strs", 9, akv::test::array_value(8, 2, Writer{}.str("xy").str("z").b)});
  g.kvs.push_back(kv<uint32_t>("general.alignment", 4, 32));
  const auto full = g.bytes();
  SplitMix64 rng{12345};
  int parsed = 0, rejected = 0;
  for (int i = 0; i < 4000; ++i) {
    auto b = full;
    const int flips = 1 + static_cast<int>(rng.next() % 4);
    for (int k = 0; k < flips; ++k) {
      const size_t at = rng.next() % b.size();
      const uint64_t r = rng.next();
      b[at] = (r & 1) ? static_cast<uint8_t>(r >> 8) : static_cast<uint8_t>(b[at] ^ (1u << ((r >> 8) % 8)));
    }
    try {
      const GgufFile f = GgufFile::parse(std::move(b));
      for (const TensorInfo& t : f.tensors()) {
        EXPECT_LE(f.data_offset() + t.offset + t.n_bytes, f.file_size());
      }
      ++parsed;
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kBadModel);
      ++rejected;
    }
  }
  EXPECT_GT(parsed, 0);  // data bytes mutate freely
  EXPECT_GT(rejected, 1000);
}

TEST(F7_Hostile, BadModelIsItsOwnErrorCode) {
  EXPECT_STREQ(error_code_name(ErrorCode::kBadModel), "bad_model");
}
