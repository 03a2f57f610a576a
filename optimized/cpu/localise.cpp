#include "optimized/cpu/localise.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <sstream>

#include "optimized/cpu/cpu_backend.hpp"
#include "reference/error.hpp"

namespace akv::cpu {

std::vector<NamedKernels> supported_tables() {
  std::vector<NamedKernels> out;
  for (Isa i : supported_isas())
    if (i != Isa::kPortable) out.push_back({isa_name(i), &kernels_for(i)});
  return out;
}

namespace {

struct Recorded {
  std::string op;
  int layer;
  int rows, width;
  std::vector<float> data;  // rows x width, dense
};

std::vector<float> dense(const OpStep& s) {
  std::vector<float> out(static_cast<size_t>(s.rows) * s.width);
  for (int r = 0; r < s.rows; ++r) std::copy_n(s.data + r * s.ld, s.width, out.data() + static_cast<size_t>(r) * s.width);
  return out;
}

// Runs the tokens once with table k; calls on_step(step index, step) after each op step.
template <class F>
void run(const std::shared_ptr<const Model>& m, std::span<const Token> tokens, const Kernels* k, F on_step) {
  CpuOptions o;
  o.kernels = k;
  o.threads = 1;  // bits do not depend on it (K8); one thread keeps the replay simple
  CpuBackend b(m, o);
  int i = 0;
  b.set_op_observer([&](const OpStep& s) { on_step(i++, s); });
  KVCache cache(m->config);
  std::vector<float> logits(tokens.size() * static_cast<size_t>(m->config.vocab));
  b.forward(cache, tokens, logits);
}

// Error(kBadInput) unless tokens is 1..max_ctx ids in [0, vocab).
void check_tokens(const Config& c, std::span<const Token> tokens) {
  if (tokens.empty() || tokens.size() > static_cast<size_t>(c.max_ctx))
    throw Error(ErrorCode::kBadInput, "localise: " + std::to_string(tokens.size()) + " tokens, expected 1.." +
                                          std::to_string(c.max_ctx));
  for (Token t : tokens)
    if (t < 0 || t >= c.vocab) throw Error(ErrorCode::kBadInput, "localise: token " + std::to_string(t) + " outside the vocabulary");
}

}  // namespace

std::optional<NonFiniteStep> first_non_finite_step(std::shared_ptr<const Model> model, std::span<const Token> tokens,
                                                   const Kernels& k) {
  check_tokens(model->config, tokens);
  std::optional<NonFiniteStep> found;
  run(model, tokens, &k, [&](int i, const OpStep& s) {
    if (found) return;
    for (int r = 0; r < s.rows && !found; ++r)
      for (int e = 0; e < s.width; ++e)
        if (const float v = s.data[static_cast<size_t>(r) * s.ld + static_cast<size_t>(e)]; !std::isfinite(v)) {
          found = NonFiniteStep{s.op, i, s.layer, r, e, v};
          break;
        }
  });
  return found;
}

std::string describe_non_finite(const NonFiniteStep& s) {
  std::ostringstream o;
  o << (s.layer < 0 ? std::string("the output head") : "layer " + std::to_string(s.layer)) << ", " << s.op << " (op step "
    << s.step << "), row " << s.row << " (position " << s.row << "), index " << s.index << ": " << s.value;
  return o.str();
}

Localisation localise(std::shared_ptr<const Model> model, std::span<const Token> tokens,
                      const std::vector<NamedKernels>& tables) {
  check_tokens(model->config, tokens);
  std::vector<Recorded> base;
  run(model, tokens, &kernels_portable(), [&](int, const OpStep& s) { base.push_back({s.op, s.layer, s.rows, s.width, dense(s)}); });
  Localisation loc;
  loc.steps = base.size();
  for (const NamedKernels& t : tables) {
    loc.tables.push_back(t.name);
    bool found = false;
    run(model, tokens, t.kernels, [&](int i, const OpStep& s) {
      if (found) return;
      const Recorded& r = base.at(static_cast<size_t>(i));
      const std::vector<float> got = dense(s);
      for (size_t e = 0; e < got.size(); ++e)
        if (std::memcmp(&got[e], &r.data[e], sizeof(float)) != 0) {
          loc.found.push_back({t.name, r.op, i, r.layer, static_cast<int>(e / r.width), static_cast<int>(e % r.width),
                               got[e], r.data[e]});
          found = true;
          return;
        }
    });
  }
  std::stable_sort(loc.found.begin(), loc.found.end(), [](const Divergence& a, const Divergence& b) { return a.step < b.step; });
  return loc;
}

std::string describe(const Localisation& loc) {
  std::ostringstream o;
  o.precision(9);
  std::string names;
  for (const auto& t : loc.tables) names += (names.empty() ? "" : ", ") + t;
  if (loc.tables.empty()) return "op-by-op localisation: no table besides portable to compare (nothing checked)";
  if (loc.found.empty()) {
    o << "op-by-op localisation: " << names << " agree with portable bit for bit on all " << loc.steps
      << " op steps: the change is common to every ISA (kernels_impl.hpp, the forward pass, the model) or the golden is stale";
    return o.str();
  }
  for (size_t i = 0; i < loc.found.size(); ++i) {
    const Divergence& d = loc.found[i];
    o << (i == 0 ? "first op that differs: " : "; also: ") << d.op << " in "
      << (d.layer < 0 ? std::string("the output head") : "layer " + std::to_string(d.layer)) << " on " << d.table
      << " (op step " << d.step << " of " << loc.steps << ", row " << d.row << ", index " << d.index << ": " << d.got
      << " vs portable " << d.want << ")";
  }
  if (loc.found.size() == loc.tables.size() && loc.tables.size() > 1)
    o << "; every table differs from portable: portable itself may be the one that changed";
  return o.str();
}

}  // namespace akv::cpu
