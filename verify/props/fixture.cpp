#include "verify/props/fixture.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <limits>
#include <map>
#include <mutex>

#include "optimized/cpu/isa.hpp"
#include "runtime/backends.hpp"
#include "verify/check/same_bits.hpp"
#include "runtime/models.hpp"

namespace akv::prop {

std::shared_ptr<const Model> model_for(const gen::ModelChoice& m) {
  static std::mutex mu;
  static std::map<std::pair<std::string, uint64_t>, std::shared_ptr<const Model>> cache;
  std::lock_guard<std::mutex> lock(mu);
  const auto key = std::make_pair(m.config, m.seed);
  if (auto it = cache.find(key); it != cache.end()) return it->second;
  if (cache.size() >= 64) cache.clear();  // bound the memory of a long campaign
  return cache[key] = load_model(m.config, m.seed).model;  // a synthetic config or a real model
}

namespace {
thread_local BackendFactory g_factory;
thread_local gen::BackendDraws g_draws;
thread_local size_t g_next_draw = 0;

// The scratch a draw asks for (I1: no result may depend on it).
void prepare_scratch(Backend& b, const gen::BackendDraw& d) {
  if (d.scratch == gen::ScratchKind::kNaN) {
    b.set_scratch_poison(std::numeric_limits<float>::quiet_NaN());
    return;
  }
  b.set_scratch_poison(std::nullopt);
  std::vector<Token> warm;
  for (Token t : d.warmup)
    if (t < b.model().config.vocab) warm.push_back(t);
  if (warm.empty()) return;
  KVCache other(b.model().config);
  std::vector<float> logits(warm.size() * static_cast<size_t>(b.model().config.vocab));
  b.forward(other, warm, logits);
}
}  // namespace

void set_backend_factory(BackendFactory f) { g_factory = std::move(f); }

void use_backend_draws(gen::BackendDraws d) {
  g_draws = std::move(d);
  g_next_draw = 0;
}

std::vector<gen::BackendDraw> used_backend_draws() {
  const size_t n = std::min(g_next_draw, g_draws.each.size());
  return {g_draws.each.begin(), g_draws.each.begin() + static_cast<std::ptrdiff_t>(n)};
}

gen::BackendKnobs backend_knobs(const std::string& backend) {
  gen::BackendKnobs k;
  if (backend != "cpu") return k;
  k.threads = true;
  for (cpu::Isa i : cpu::supported_isas()) k.isas.push_back(cpu::isa_name(i));
  return k;
}

std::unique_ptr<Backend> backend_for(const std::string& name, std::shared_ptr<const Model> model) {
  const gen::BackendDraw* d = g_draws.each.empty() ? nullptr : &g_draws.each[g_next_draw++ % g_draws.each.size()];
  BackendOptions opt;
  if (d && d->threads > 0) opt.threads = d->threads;
  if (d && !d->isa.empty()) opt.isa = d->isa;
  std::unique_ptr<Backend> b = g_factory ? g_factory(std::move(model), opt) : make_backend(name, std::move(model), opt);
  if (d) prepare_scratch(*b, *d);
  return b;
}

std::unique_ptr<Backend> backend_at_threads(const std::string& name, std::shared_ptr<const Model> model, int threads) {
  if (threads > 0 && backend_knobs(name).threads) {
    if (g_draws.each.empty()) g_draws.each.resize(1);
    g_draws.each[g_next_draw % g_draws.each.size()].threads = threads;
  }
  return backend_for(name, std::move(model));
}

void build(Session& s, const gen::GenConversation& conv, const std::vector<size_t>& skip) {
  for (size_t i = 0; i < conv.spans.size(); ++i)
    if (!conv.spans[i].tokens.empty() && !std::binary_search(skip.begin(), skip.end(), i)) s.append(i, conv.spans[i].tokens);
}

std::vector<SpanId> live_ids(const gen::GenConversation& conv, const std::vector<size_t>& request) {
  std::vector<SpanId> ids;
  for (size_t i : request)
    if (!conv.spans[i].tokens.empty()) ids.push_back(i);
  return ids;
}

std::string state_diff(const Session& a, const Session& b) {
  std::string d = cache_diff(a.cache(), b.cache());
  if (!d.empty()) return d;
  if (a.tokens() != b.tokens()) return "entry tokens differ";
  if (a.entry_spans() != b.entry_spans()) return "entry span ids differ";
  if (a.spans().size() != b.spans().size()) return "span tables differ in length";
  for (size_t i = 0; i < a.spans().size(); ++i) {
    const SpanInfo &x = a.spans()[i], &y = b.spans()[i];
    if (x.id != y.id || x.start != y.start || x.length != y.length)
      return "span table differs at row " + std::to_string(i) + ": span " + std::to_string(x.id) + " [" +
             std::to_string(x.start) + ", +" + std::to_string(x.length) + ") vs span " + std::to_string(y.id) + " [" +
             std::to_string(y.start) + ", +" + std::to_string(y.length) + ")";
  }
  if (a.spans().empty()) return {};
  const check::BitsDiff l = check::same_bits(a.logits(), b.logits());
  if (!l && l.non_finite) return "next-token logits: " + l.what();  // A5
  if (!l) return fmt::format("next-token logits differ (max|delta| {:.3g})", l.max_abs);  // %f would print 1e-9 as 0.000000
  return {};
}

std::vector<unsigned char> prefix_bytes(const KVCache& c, size_t n) {
  std::vector<unsigned char> out;
  const size_t count = std::min(n, c.size()) * c.row_bytes();  // as stored (S4): float32 or the type's bytes
  for (int l = 0; l < c.n_layers(); ++l) {
    out.insert(out.end(), c.k_bytes(l), c.k_bytes(l) + count);
    out.insert(out.end(), c.v_bytes(l), c.v_bytes(l) + count);
  }
  return out;
}

}  // namespace akv::prop
