// A kernel table made whole (spec/gate.md GT1): a plugin's ops where it provides them (and the
// caller selects them), the reference's (reference/c_kernels.hpp) everywhere else, validated.
#pragma once
#include <akv/kernels.h>

#include <memory>
#include <string>
#include <vector>

namespace akv {

/// The names of the op bits, in bit order: "matmul", "rmsnorm", "rope", "attention", "swiglu",
/// "add", "evict".
const std::vector<std::string>& op_names();
/// The bit of op `name`; Error(kBadInput) listing the names when there is none.
uint32_t op_bit(const std::string& name);
/// "matmul,rope" for a set of bits; "none" for 0.
std::string op_list(uint32_t bits);

/// Every op callable; `own` the bits served by the plugin (the rest by the reference).
class OpSet {
 public:
  /// Validates `t` (GT1): not NULL, abi_version == AKV_KERNELS_ABI_VERSION, a printable name,
  /// no unknown bits in provides, a function for every provided op (and release_weight when
  /// prepare_weight is set). `select`: the ops to take from the plugin (others: reference).
  /// `owner` keeps the table's storage alive (a dlopen handle, an owning object). `source`
  /// names it in errors. Error(kBadKernels) "SOURCE: FIELD: problem" otherwise.
  OpSet(const akv_kernels* t, std::shared_ptr<void> owner, const std::string& source, uint32_t select = AKV_OP_ALL);

  /// The completed table: ops not in own() are the reference's (they ignore ctx).
  const akv_kernels& ops() const { return merged_; }
  uint32_t own() const { return own_; }
  /// The plugin's table as given (its provides bits, name, hooks).
  const akv_kernels& plugin() const { return *plugin_; }
  const std::string& name() const { return name_; }
  const std::string& source() const { return source_; }
  /// Floats of scratch op `op` needs for these sizes, from whichever table serves it.
  size_t scratch_floats(uint32_t op, int32_t M, int32_t n, int32_t d) const;
  /// set_threads on the plugin: false when it has none or refuses n.
  bool set_threads(int32_t n) const;
  bool has_threads() const { return plugin_->set_threads != nullptr; }

 private:
  const akv_kernels* plugin_;
  std::shared_ptr<void> owner_;
  std::string source_, name_;
  uint32_t own_ = 0;
  akv_kernels merged_{};
};

}  // namespace akv
