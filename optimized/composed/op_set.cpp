#include "optimized/composed/op_set.hpp"

#include "reference/c_kernels.hpp"
#include "reference/error.hpp"

namespace akv {

const std::vector<std::string>& op_names() {
  static const std::vector<std::string> names{"matmul", "rmsnorm", "rope", "attention", "swiglu", "add", "evict"};
  return names;
}

uint32_t op_bit(const std::string& name) {
  const auto& n = op_names();
  for (size_t i = 0; i < n.size(); ++i)
    if (n[i] == name) return 1u << i;
  std::string known;
  for (const auto& s : n) known += (known.empty() ? "" : ", ") + s;
  throw Error(ErrorCode::kBadInput, "unknown op '" + name + "' (the ops: " + known + ")");
}

std::string op_list(uint32_t bits) {
  std::string out;
  for (size_t i = 0; i < op_names().size(); ++i)
    if (bits & (1u << i)) out += (out.empty() ? "" : ",") + op_names()[i];
  return out.empty() ? "none" : out;
}

OpSet::OpSet(const akv_kernels* t, std::shared_ptr<void> owner, const std::string& source, uint32_t select)
    : plugin_(t), owner_(std::move(owner)), source_(source) {
  auto bad = [&](const std::string& field, const std::string& what) {
    throw Error(ErrorCode::kBadKernels, source + ": " + field + ": " + what);
  };
  if (t == nullptr) bad(AKV_KERNELS_SYMBOL, "returned NULL");
  if (t->abi_version != AKV_KERNELS_ABI_VERSION)
    bad("abi_version", std::to_string(t->abi_version) + ", this akv speaks " + std::to_string(AKV_KERNELS_ABI_VERSION) +
                           " (rebuild the library against this akv's include/akv/kernels.h)");
  if (t->name == nullptr) bad("name", "NULL");
  if (t->name[0] == '\0') bad("name", "empty (a printable ASCII name of 1 to 64 characters)");
  for (size_t i = 0; t->name[i] != '\0'; ++i) {
    const unsigned char c = static_cast<unsigned char>(t->name[i]);
    if (i >= 64 || c < 0x20 || c > 0x7e) bad("name", "not a printable ASCII name of at most 64 characters");
  }
  name_ = t->name;
  if (t->provides & ~AKV_OP_ALL) bad("provides", "unknown op bits " + std::to_string(t->provides & ~AKV_OP_ALL));
  const akv_kernels& r = *reference_kernels();
  merged_ = r;
  merged_.name = name_.c_str();
  merged_.ctx = t->ctx;
  own_ = t->provides & select;
  auto take = [&](uint32_t bit, auto member) {
    if (!(t->provides & bit)) return;
    if (t->*member == nullptr) bad(op_list(bit), "in provides but the function is NULL");
    if (own_ & bit) merged_.*member = t->*member;
  };
  take(AKV_OP_MATMUL, &akv_kernels::matmul);
  take(AKV_OP_RMSNORM, &akv_kernels::rmsnorm);
  take(AKV_OP_ROPE, &akv_kernels::rope);
  take(AKV_OP_ATTENTION, &akv_kernels::attention);
  take(AKV_OP_SWIGLU, &akv_kernels::swiglu);
  take(AKV_OP_ADD, &akv_kernels::add);
  take(AKV_OP_EVICT, &akv_kernels::evict);
  if ((t->prepare_weight == nullptr) != (t->release_weight == nullptr))
    bad("prepare_weight", "prepare_weight and release_weight must both be set or both be NULL");
  merged_.prepare_weight = (own_ & AKV_OP_MATMUL) ? t->prepare_weight : nullptr;
  merged_.release_weight = (own_ & AKV_OP_MATMUL) ? t->release_weight : nullptr;
  merged_.set_threads = t->set_threads;
  merged_.scratch_floats = nullptr;  // scratch_floats() picks the serving table's
  merged_.provides = AKV_OP_ALL;
}

size_t OpSet::scratch_floats(uint32_t op, int32_t M, int32_t n, int32_t d) const {
  const akv_kernels& t = (own_ & op) ? *plugin_ : *reference_kernels();
  return t.scratch_floats ? t.scratch_floats(t.ctx, op, M, n, d) : 0;
}

bool OpSet::set_threads(int32_t n) const { return plugin_->set_threads && plugin_->set_threads(plugin_->ctx, n) == 0; }

}  // namespace akv
