#include "verify/props/fixture.hpp"

#include <algorithm>
#include <cstring>
#include <map>
#include <mutex>

#include "verify/backends.hpp"
#include "verify/check/same_bits.hpp"
#include "verify/models.hpp"

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
thread_local std::function<std::unique_ptr<Backend>(std::shared_ptr<const Model>)> g_factory;
}

void set_backend_factory(std::function<std::unique_ptr<Backend>(std::shared_ptr<const Model>)> f) { g_factory = std::move(f); }

std::unique_ptr<Backend> backend_for(const std::string& name, std::shared_ptr<const Model> model) {
  if (g_factory) return g_factory(std::move(model));
  return make_backend(name, std::move(model));
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
  if (!l) return "next-token logits differ (max|delta| " + std::to_string(l.max_abs) + ")";
  return {};
}

std::vector<float> prefix_bytes(const KVCache& c, size_t n) {
  std::vector<float> out;
  const size_t count = std::min(n, c.size()) * static_cast<size_t>(c.kv_dim());
  for (int l = 0; l < c.n_layers(); ++l) {
    out.insert(out.end(), c.k(l), c.k(l) + count);
    out.insert(out.end(), c.v(l), c.v(l) + count);
  }
  return out;
}

}  // namespace akv::prop
