#include "readers/gguf/gguf.hpp"

#include <algorithm>
#include <limits>
#include <numeric>

#include "readers/gguf/gguf_cursor.hpp"
#include "reference/error.hpp"

namespace akv::readers {

namespace {

constexpr uint32_t kMagic = 0x46554747;  // "GGUF" read as a little-endian uint32
constexpr uint32_t kVersion = 3;
constexpr int kMaxDims = 4;
constexpr int kMaxArrayDepth = 8;
constexpr uint64_t kDefaultAlignment = 32;
// Smallest encodings, to bound counts by the bytes left before anything is allocated (F7).
constexpr uint64_t kMinKvBytes = 8 + 1 + 4 + 1;              // key length, 1 key byte, type, a u8
constexpr uint64_t kMinTensorInfoBytes = 8 + 1 + 4 + 8 + 4 + 8;  // name, n_dims, 1 dim, type, offset

// Bytes of a scalar value type, 0 for string / array / unknown.
uint64_t scalar_size(uint32_t t) {
  switch (static_cast<ValueType>(t)) {
    case ValueType::kU8: case ValueType::kI8: case ValueType::kBool: return 1;
    case ValueType::kU16: case ValueType::kI16: return 2;
    case ValueType::kU32: case ValueType::kI32: case ValueType::kF32: return 4;
    case ValueType::kU64: case ValueType::kI64: case ValueType::kF64: return 8;
    default: return 0;
  }
}

bool known_value_type(uint32_t t) { return t <= static_cast<uint32_t>(ValueType::kF64); }

std::string quoted(std::string_view s) {
  std::string out = "'";
  for (char c : s.substr(0, 80)) out += (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) ? '?' : c;
  if (s.size() > 80) out += "...";
  return out + "'";
}

class Parser {
 public:
  explicit Parser(Cursor& c) : c_(c) {}

  Value value(uint32_t type, const std::string& field) {
    if (!known_value_type(type)) c_.fail(field + ".type", "unknown value type " + std::to_string(type));
    switch (static_cast<ValueType>(type)) {
      case ValueType::kU8: return c_.read<uint8_t>(field);
      case ValueType::kI8: return c_.read<int8_t>(field);
      case ValueType::kU16: return c_.read<uint16_t>(field);
      case ValueType::kI16: return c_.read<int16_t>(field);
      case ValueType::kU32: return c_.read<uint32_t>(field);
      case ValueType::kI32: return c_.read<int32_t>(field);
      case ValueType::kF32: return c_.read<float>(field);
      case ValueType::kBool: {
        const uint8_t b = c_.read<uint8_t>(field);
        if (b > 1) c_.fail(field, "bool value " + std::to_string(b) + ", expected 0 or 1");
        return b == 1;
      }
      case ValueType::kString: return c_.string(field);
      case ValueType::kArray: return array(field, 1);
      case ValueType::kU64: return c_.read<uint64_t>(field);
      case ValueType::kI64: return c_.read<int64_t>(field);
      case ValueType::kF64: return c_.read<double>(field);
    }
    c_.fail(field + ".type", "unknown value type " + std::to_string(type));
  }

  // uint32 element type, uint64 count, the elements (F3).
  Array array(const std::string& field, int depth) {
    if (depth > kMaxArrayDepth) c_.fail(field, "arrays nested deeper than " + std::to_string(kMaxArrayDepth));
    Array a;
    const uint32_t t = c_.read<uint32_t>(field + ".type");
    if (!known_value_type(t)) c_.fail(field + ".type", "unknown element type " + std::to_string(t));
    a.type = static_cast<ValueType>(t);
    a.count = c_.read<uint64_t>(field + ".count");
    const uint64_t each = scalar_size(t) ? scalar_size(t) : (a.type == ValueType::kString ? 8 : 12);
    if (a.count > c_.left() / each)
      c_.fail(field + ".count", std::to_string(a.count) + " elements of " + value_type_name(t) + " need at least " +
                                    std::to_string(each) + " bytes each, only " + std::to_string(c_.left()) + " bytes left");
    if (a.type == ValueType::kString) {
      a.strings.reserve(a.count);
      for (uint64_t i = 0; i < a.count; ++i) a.strings.push_back(c_.string(field + "[" + std::to_string(i) + "]"));
    } else if (a.type == ValueType::kArray) {
      a.arrays.reserve(a.count);
      for (uint64_t i = 0; i < a.count; ++i) a.arrays.push_back(array(field + "[" + std::to_string(i) + "]", depth + 1));
    } else {
      a.raw = c_.take(a.count * each, field);  // count <= left / each: no wrap
      if (a.type == ValueType::kBool)
        for (uint64_t i = 0; i < a.count; ++i)
          if (a.raw[i] > 1) c_.fail(field + "[" + std::to_string(i) + "]", "bool value " + std::to_string(a.raw[i]) + ", expected 0 or 1");
    }
    return a;
  }

 private:
  Cursor& c_;
};

// a * b, or nullopt when it exceeds `limit`.
std::optional<uint64_t> mul_at_most(uint64_t a, uint64_t b, uint64_t limit) {
  if (a != 0 && b > limit / a) return std::nullopt;
  return a * b;
}

}  // namespace

std::string value_type_name(uint32_t t) {
  static const char* const names[] = {"uint8", "int8", "uint16", "int16", "uint32", "int32", "float32",
                                      "bool", "string", "array", "uint64", "int64", "float64"};
  return known_value_type(t) ? names[t] : "type " + std::to_string(t);
}

GgufFile::GgufFile(std::unique_ptr<Bytes> bytes, std::string name) : bytes_(std::move(bytes)), name_(std::move(name)) {}

GgufFile GgufFile::open(const std::string& path) {
  GgufFile f(map_file(path), path);
  f.parse_all();
  return f;
}

GgufFile GgufFile::parse(std::vector<uint8_t> bytes, const std::string& name) {
  GgufFile f(own_bytes(std::move(bytes)), name);
  f.parse_all();
  return f;
}

void GgufFile::parse_all() {
  const uint64_t size = bytes_->size();
  Cursor c(bytes_->data(), size, name_);

  // F2: the header.
  const uint32_t magic = c.read<uint32_t>("header.magic");
  if (magic != kMagic) c.fail("header.magic", "not a GGUF file (the first 4 bytes are not \"GGUF\")");
  version_ = c.read<uint32_t>("header.version");
  if (version_ != kVersion) {
    if (version_ != 0 && (version_ & 0xFFFF) == 0)
      c.fail("header.version", "a big-endian GGUF file; only little-endian files are supported");
    c.fail("header.version", "version " + std::to_string(version_) + ", only GGUF version 3 is supported");
  }
  const uint64_t n_tensors = c.read<uint64_t>("header.tensor_count");
  const uint64_t n_kv = c.read<uint64_t>("header.metadata_kv_count");
  if (n_kv > c.left() / kMinKvBytes)
    c.fail("header.metadata_kv_count", std::to_string(n_kv) + " entries cannot fit in the " + std::to_string(c.left()) + " bytes left");
  if (n_tensors > c.left() / kMinTensorInfoBytes)
    c.fail("header.tensor_count", std::to_string(n_tensors) + " tensor infos cannot fit in the " + std::to_string(c.left()) + " bytes left");

  // F3: metadata.
  Parser p(c);
  kv_.reserve(n_kv);
  for (uint64_t i = 0; i < n_kv; ++i) {
    const std::string at = "metadata[" + std::to_string(i) + "]";
    const std::string_view key = c.string(at + ".key");
    if (key.empty()) c.fail(at + ".key", "empty key");
    const std::string field = "metadata " + quoted(key);
    const uint32_t t = c.read<uint32_t>(field + ".type");
    Value v = p.value(t, field);
    if (!kv_index_.emplace(key, kv_.size()).second) c.fail(field, "key appears twice");
    kv_.emplace_back(key, std::move(v));
  }

  // F5: alignment.
  if (const Value* a = find("general.alignment")) {
    if (value_type(*a) != ValueType::kU32)
      c.fail("metadata 'general.alignment'", "expected uint32, got " + value_type_name(a->index()));
    const uint32_t al = std::get<uint32_t>(*a);
    if (al == 0 || (al & (al - 1)) != 0)
      c.fail("metadata 'general.alignment'", std::to_string(al) + " is not a power of two");
    alignment_ = al;
  } else {
    alignment_ = kDefaultAlignment;
  }

  // F4: tensor infos.
  tensors_.reserve(n_tensors);
  for (uint64_t i = 0; i < n_tensors; ++i) {
    const std::string at = "tensor_infos[" + std::to_string(i) + "]";
    TensorInfo t;
    t.name = c.string(at + ".name");
    if (t.name.empty()) c.fail(at + ".name", "empty name");
    const std::string field = "tensor " + quoted(t.name);
    const uint32_t n_dims = c.read<uint32_t>(field + ".n_dims");
    if (n_dims < 1 || n_dims > kMaxDims)
      c.fail(field + ".n_dims", std::to_string(n_dims) + " dimensions, expected 1 to " + std::to_string(kMaxDims));
    t.n_elements = 1;
    for (uint32_t d = 0; d < n_dims; ++d) {
      const std::string df = field + ".dims[" + std::to_string(d) + "]";
      const uint64_t n = c.read<uint64_t>(df);
      if (n == 0) c.fail(df, "0, expected at least 1");
      const auto prod = mul_at_most(t.n_elements, n, uint64_t{std::numeric_limits<int64_t>::max()});
      if (!prod) c.fail(df, "the element count overflows 2^63 - 1");
      t.n_elements = *prod;
      t.dims.push_back(n);
    }
    t.type = c.read<uint32_t>(field + ".type");
    const TypeLayout* l = type_layout(t.type);
    if (!l) c.fail(field + ".type", "unknown tensor type " + std::to_string(t.type));
    if (t.dims[0] % l->block != 0)
      c.fail(field + ".dims[0]", "row length " + std::to_string(t.dims[0]) + " is not a multiple of " + l->name +
                                     "'s block size " + std::to_string(l->block));
    const auto nb = mul_at_most(t.n_elements / l->block, l->bytes, size);
    if (!nb) c.fail(field + ".dims", "the tensor's byte size exceeds the file size " + std::to_string(size));
    t.n_bytes = *nb;
    t.offset = c.read<uint64_t>(field + ".offset");
    if (t.offset % alignment_ != 0)
      c.fail(field + ".offset", std::to_string(t.offset) + " is not a multiple of the alignment " + std::to_string(alignment_));
    if (!tensor_index_.emplace(t.name, tensors_.size()).second) c.fail(field, "tensor name appears twice");
    tensors_.push_back(std::move(t));
  }

  // F5: the data section starts at the first multiple of the alignment after the infos.
  const uint64_t end_of_infos = c.pos();  // <= size, and alignment <= 2^31: no wrap
  data_offset_ = (end_of_infos + alignment_ - 1) / alignment_ * alignment_;
  if (tensors_.empty()) return;
  if (data_offset_ > size)
    c.fail("data section", "starts at " + std::to_string(data_offset_) + ", past the end of the file (" + std::to_string(size) + " bytes)");

  // F6: every tensor's bytes lie inside the file, and no two overlap.
  const uint64_t data_size = size - data_offset_;
  for (TensorInfo& t : tensors_) {
    if (t.offset > data_size || t.n_bytes > data_size - t.offset)
      c.fail("tensor " + quoted(t.name) + ".offset",
             "data [" + std::to_string(t.offset) + ", +" + std::to_string(t.n_bytes) + ") runs past the end of the data section (" +
                 std::to_string(data_size) + " bytes)");
    t.data = bytes_->data() + data_offset_ + t.offset;
  }
  std::vector<size_t> order(tensors_.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return tensors_[a].offset < tensors_[b].offset; });
  for (size_t k = 1; k < order.size(); ++k) {
    const TensorInfo& prev = tensors_[order[k - 1]];
    const TensorInfo& t = tensors_[order[k]];
    if (t.offset - prev.offset < prev.n_bytes)
      c.fail("tensor " + quoted(t.name) + ".offset", "data overlaps tensor " + quoted(prev.name));
  }
}

const Value* GgufFile::find(std::string_view key) const {
  const auto it = kv_index_.find(key);
  return it == kv_index_.end() ? nullptr : &kv_[it->second].second;
}

namespace {
[[noreturn]] void bad_key(const GgufFile& f, std::string_view key, const std::string& what) {
  throw Error(ErrorCode::kBadModel, f.name() + ": metadata " + quoted(key) + ": " + what);
}
}  // namespace

std::optional<uint64_t> GgufFile::find_uint(std::string_view key) const {
  const Value* v = find(key);
  if (!v) return std::nullopt;
  const auto neg = [&](int64_t x) -> uint64_t {
    if (x < 0) bad_key(*this, key, "negative value " + std::to_string(x));
    return static_cast<uint64_t>(x);
  };
  switch (value_type(*v)) {
    case ValueType::kU8: return std::get<uint8_t>(*v);
    case ValueType::kU16: return std::get<uint16_t>(*v);
    case ValueType::kU32: return std::get<uint32_t>(*v);
    case ValueType::kU64: return std::get<uint64_t>(*v);
    case ValueType::kI8: return neg(std::get<int8_t>(*v));
    case ValueType::kI16: return neg(std::get<int16_t>(*v));
    case ValueType::kI32: return neg(std::get<int32_t>(*v));
    case ValueType::kI64: return neg(std::get<int64_t>(*v));
    default: bad_key(*this, key, "expected an integer, got " + value_type_name(v->index()));
  }
}

uint64_t GgufFile::get_uint(std::string_view key) const {
  const auto v = find_uint(key);
  if (!v) bad_key(*this, key, "missing");
  return *v;
}

std::optional<float> GgufFile::find_float(std::string_view key) const {
  const Value* v = find(key);
  if (!v) return std::nullopt;
  if (value_type(*v) == ValueType::kF32) return std::get<float>(*v);
  if (value_type(*v) == ValueType::kF64) return static_cast<float>(std::get<double>(*v));
  bad_key(*this, key, "expected float32 or float64, got " + value_type_name(v->index()));
}

float GgufFile::get_float(std::string_view key) const {
  const auto v = find_float(key);
  if (!v) bad_key(*this, key, "missing");
  return *v;
}

std::optional<std::string_view> GgufFile::find_string(std::string_view key) const {
  const Value* v = find(key);
  if (!v) return std::nullopt;
  if (value_type(*v) != ValueType::kString) bad_key(*this, key, "expected string, got " + value_type_name(v->index()));
  return std::get<std::string_view>(*v);
}

std::string_view GgufFile::get_string(std::string_view key) const {
  const auto v = find_string(key);
  if (!v) bad_key(*this, key, "missing");
  return *v;
}

const Array& GgufFile::get_array(std::string_view key) const {
  const Value* v = find(key);
  if (!v) bad_key(*this, key, "missing");
  if (value_type(*v) != ValueType::kArray) bad_key(*this, key, "expected array, got " + value_type_name(v->index()));
  return std::get<Array>(*v);
}

const TensorInfo* GgufFile::find_tensor(std::string_view name) const {
  const auto it = tensor_index_.find(name);
  return it == tensor_index_.end() ? nullptr : &tensors_[it->second];
}

}  // namespace akv::readers
