// Drawing the standard case of a property: a model and a conversation on it.
#pragma once
#include <rapidcheck.h>

#include "verify/gen/gen.hpp"
#include "verify/props/harness.hpp"

namespace akv::prop {

/// A model choice and a conversation (random one time in five from the bundled real ones
/// when `real` is set) with at least `min_nonempty` non-empty spans, sized by ctx.profile.
struct Drawn {
  gen::ModelChoice model;
  gen::GenConversation conv;
};

inline Drawn draw_case(const Context& ctx, size_t min_nonempty = 1, bool real = false) {
  Drawn d;
  d.model = ctx.kv_types.empty() ? *gen::model_choice(ctx.profile) : *gen::model_choice_typed(ctx.profile, ctx.kv_types);
  const size_t budget = gen::budget_for(ctx.profile, d.model);
  if (real) {
    d.conv = *rc::gen::suchThat(gen::real_conversation(ctx.profile, budget),
                                [=](const gen::GenConversation& c) { return c.nonempty().size() >= min_nonempty; });
  } else {
    d.conv = *gen::conversation(ctx.profile, budget, min_nonempty);
  }
  return d;
}

}  // namespace akv::prop
