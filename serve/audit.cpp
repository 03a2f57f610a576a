#include "serve/audit.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include <fstream>
#include <iterator>
#include <map>
#include <memory>
#include <set>

#include "reference/error.hpp"
#include "serve/engine.hpp"
#include "verify/backends.hpp"
#include "verify/provenance.hpp"

namespace akv::serve {

size_t AuditReport::reproduced() const {
  size_t n = 0;
  for (const AuditLine& l : lines) n += l.reproduced;
  return n;
}

bool AuditReport::passed() const { return !lines.empty() && reproduced() == lines.size(); }

namespace {
using json = nlohmann::json;

std::string check_line(const json& j, std::map<std::string, std::unique_ptr<Engine>>& engines, const std::string& override_model,
                       size_t n) {
  if (!j.is_object() || j.value("akv_audit", 0) != 1) return "not an akv audit line";
  const std::string model = override_model.empty() ? j["model"]["name"].get<std::string>() : override_model;
  const json& b = j["backend"];
  const std::string key = model + "|" + b["name"].get<std::string>() + "|" + std::to_string(b["threads"].get<int>());
  if (!engines.count(key)) {
    LoadedModel lm = load_model(model, 1);
    BackendOptions bo;
    bo.threads = b["threads"].get<int>();
    auto backend = make_backend(b["name"].get<std::string>(), lm.model, bo);
    engines[key] = std::make_unique<Engine>(std::move(lm), std::move(backend), EngineOptions{});
  }
  Engine& e = *engines[key];
  const json& logged_sha = j["model"]["sha256"];
  if (e.model().real && logged_sha.is_string() && logged_sha != file_or_folder_sha256(e.model().source))
    return fmt::format("the model file {} is not the logged one (SHA-256 {})", e.model().source, logged_sha.get<std::string>());
  // The request as the engine ran it: without the messages it dropped.
  json req = j["request"];
  const json& stats = j["reply"]["stats"];
  std::set<size_t> dropped;
  for (const json& d : stats["dropped_messages"]) dropped.insert(d.get<size_t>());
  json msgs = json::array();
  for (size_t i = 0; i < req["messages"].size(); ++i)
    if (!dropped.count(i)) msgs.push_back(req["messages"][i]);
  req["messages"] = msgs;
  ChatRequest cr = parse_chat_request(req.dump());
  EngineOptions defaults;
  if (cr.max_tokens == 0) cr.max_tokens = defaults.default_max_tokens;
  const std::shared_ptr<Generation> g = e.submit(std::move(cr), fmt::format("audit-{}", n));  // owns the reply
  const Reply& r = g->reply();
  const std::vector<Token> logged = j["reply"]["tokens"].get<std::vector<Token>>();
  if (r.tokens != logged)
    return fmt::format("the tokens differ (logged [{}], replayed [{}])", fmt::join(logged, ","), fmt::join(r.tokens, ","));
  if (r.finish_reason != j["reply"]["finish_reason"]) return "the finish reason differs";
  if (r.stats.cache_sha256 != stats["cache_sha256"]) return "the cache digest differs";
  if (r.stats.logits_sha256 != stats["logits_sha256"]) return "the logits digest differs";
  return "";
}
}  // namespace

AuditReport replay_audit_log(const std::string& path, const std::string& model_override) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw Error(ErrorCode::kBadInput, path + ": cannot read");
  const std::string all((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  AuditReport rep;
  std::map<std::string, std::unique_ptr<Engine>> engines;
  size_t n = 1;
  for (size_t at = 0; at < all.size(); ++n) {
    const size_t end = all.find('\n', at);
    if (end == std::string::npos) {
      rep.incomplete_tail = true;
      break;
    }
    const std::string text = all.substr(at, end - at);
    at = end + 1;
    if (text.empty()) continue;
    AuditLine l;
    l.line = n;
    try {
      l.why = check_line(json::parse(text), engines, model_override, n);
    } catch (const std::exception& e) {
      l.why = e.what();
    }
    l.reproduced = l.why.empty();
    rep.lines.push_back(l);
  }
  return rep;
}

}  // namespace akv::serve
