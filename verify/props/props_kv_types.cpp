// E1, E3 and I1 within a cache type (spec/state.md S5): the same properties on sessions whose
// caches are f16 or q8_0, each case drawing its type (gen::model_choice_typed). The rounding on
// write is a function of the row alone (S6, S7) and attention reads the rows back exactly (S8),
// so every claim of the f32 cache holds bit for bit within a type.
#include <stdexcept>

#include "verify/props/registry.hpp"

namespace akv::prop {

void add_kv_type_properties(std::vector<PropertyDef>& v) {
  struct Typed {
    const char* id;     // the f32 property this one runs per type
    const char* suite;  // its clause's suite for the cache types
  };
  const Typed typed[] = {
      {"E1_PropEvictEqualsNever.Requests", "E1_PropKvTypes"},
      {"E1_PropEvictEqualsNever.OneAtATimeAnyOrder", "E1_PropKvTypes"},
      {"E1_PropStateMachine.CommandSequences", "E1_PropKvTypes"},
      {"E3_PropPrefixUntouched.PrefixBytesAndWrites", "E3_PropKvTypes"},
      {"I1_PropInvariance.Chunkings", "I1_PropKvTypes"},
      {"I1_PropInvariance.PoisonedScratch", "I1_PropKvTypes"},
      {"I1_PropInvariance.EarlierWork", "I1_PropKvTypes"},
  };
  std::vector<PropertyDef> add;
  for (const Typed& t : typed) {
    const PropertyDef* base = nullptr;
    for (const PropertyDef& p : v)
      if (p.id() == t.id) base = &p;
    if (base == nullptr) throw std::logic_error(std::string("add_kv_type_properties: no property ") + t.id);
    add.push_back({t.suite, base->name, base->summary + ", on f16 and q8_0 caches (S5-S8)",
                   [body = base->body](const Context& ctx) {
                     Context typed_ctx = ctx;
                     typed_ctx.kv_types = {KvType::kF16, KvType::kQ8_0};
                     body(typed_ctx);
                   }});
  }
  v.insert(v.end(), add.begin(), add.end());
}

}  // namespace akv::prop
