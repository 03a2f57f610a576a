#include "serve/audit.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include <fstream>
#include <iterator>
#include <map>
#include <memory>
#include <set>

#include "readers/conversation/chat_parse.hpp"
#include "readers/json_limited.hpp"
#include "reference/error.hpp"
#include "serve/engine.hpp"
#include "verify/backends.hpp"
#include "verify/digest.hpp"
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

// An audit line holds its request body as a string (8 MiB at most, up to 6 bytes a byte
// escaped) and the reply; its objects nest 4 levels (spec/input.md IN3 lists the limits).
constexpr model::JsonLimits kAuditLineJson{size_t{256} << 20, 16, "spec/input.md IN3"};

// A JSON value of the line, or the reason it is missing.
const json& field(const json& j, const char* key) {
  if (!j.is_object() || !j.contains(key)) throw Error(ErrorCode::kBadInput, std::string("no \"") + key + "\" field");
  return j[key];
}

std::string check_line(const json& j, std::map<std::string, std::unique_ptr<Engine>>& engines, const std::string& override_model,
                       size_t n) {
  if (!j.is_object() || j.value("akv_audit", 0) != 1) return "not an akv audit line";
  // The request is the logged bytes, and their digest must be the logged one.
  const std::string body = field(j, "request_body").get<std::string>();
  if (sha256_hex(body) != field(j, "request_sha256"))
    return "the request's SHA-256 is not the logged one";
  const json& m = field(j, "model");
  const std::string model = override_model.empty() ? field(m, "name").get<std::string>() : override_model;
  const uint64_t seed = m.contains("seed") && m["seed"].is_number_unsigned() ? m["seed"].get<uint64_t>() : 1;
  const json& b = field(j, "backend");
  const json& eng = field(j, "engine");
  EngineOptions eo;
  eo.default_max_tokens = field(eng, "default_max_tokens").get<size_t>();
  eo.guard.patterns = field(eng, "guard").get<std::vector<std::string>>();
  // A guard command is not re-run offline (it may be gone, or see the network): its verdicts
  // are taken from the log, like an endpoint's evictions, and the regexes are not rechecked.
  const bool command = eng.contains("guard_command") && eng["guard_command"].is_string();
  if (command) eo.guard.patterns.clear();
  // The cache type (spec/state.md S5): a line written before types existed ran f32.
  eo.kv_type = eng.contains("kv_type") ? parse_kv_type(field(eng, "kv_type").get<std::string>()) : KvType::kF32;
  const std::string key = fmt::format("{}|{}|{}|{}|{}|{}|{}", model, seed, field(b, "name").get<std::string>(),
                                      field(b, "threads").get<int>(), eo.default_max_tokens, json(eo.guard.patterns).dump(),
                                      kv_type_name(eo.kv_type));
  if (!engines.count(key)) {
    LoadedModel lm = load_model(model, seed);
    BackendOptions bo;
    bo.threads = b["threads"].get<int>();
    auto backend = make_backend(b["name"].get<std::string>(), lm.model, bo);
    engines[key] = std::make_unique<Engine>(std::move(lm), std::move(backend), eo);
  }
  Engine& e = *engines[key];
  const json& logged_sha = field(m, "sha256");
  if (e.model().real && logged_sha.is_string() && logged_sha != file_or_folder_sha256(e.model().source))
    return fmt::format("the model file {} is not the logged one (SHA-256 {})", e.model().source, logged_sha.get<std::string>());
  // The request as the engine ran it: without the messages an earlier eviction flagged (the
  // regex guard's own drops are recomputed by the replay's guard, and compared).
  json req = model::parse_json_limited(body, kConversationJson, {ErrorCode::kBadInput, "request_body"});
  const json& reply = field(j, "reply");
  const json& stats = field(reply, "stats");
  std::set<size_t> dropped, guarded;
  for (const json& d : field(stats, "dropped_messages")) dropped.insert(d.get<size_t>());
  for (const json& d : field(stats, "guarded_messages")) guarded.insert(d.get<size_t>());
  json msgs = json::array();
  std::vector<size_t> original;  // replayed message index -> the logged request's index
  for (size_t i = 0; i < req["messages"].size(); ++i)
    if (!dropped.count(i) || (guarded.count(i) && !command)) {
      msgs.push_back(req["messages"][i]);
      original.push_back(i);
    }
  req["messages"] = msgs;
  const std::shared_ptr<Generation> g = e.submit(parse_chat_request(req.dump()), fmt::format("audit-{}", n));  // owns the reply
  const Reply& r = g->reply();
  std::set<size_t> reguarded;
  for (size_t k : r.stats.guarded) reguarded.insert(original.at(k));
  if (!command && reguarded != guarded) return "the guard flags other messages than the logged ones";
  const std::vector<Token> logged = field(reply, "tokens").get<std::vector<Token>>();
  if (r.tokens != logged)
    return fmt::format("the tokens differ (logged [{}], replayed [{}])", fmt::join(logged, ","), fmt::join(r.tokens, ","));
  if (r.finish_reason != field(reply, "finish_reason")) return "the finish reason differs";
  if (r.stats.cache_sha256 != field(stats, "cache_sha256")) return "the cache digest differs";
  if (r.stats.logits_sha256 != field(stats, "logits_sha256")) return "the logits digest differs";
  return "";
}

// Reads a JSON text without keeping it (nlohmann-json's SAX parse is iterative and builds
// nothing): only where the parser stopped is recorded.
struct WhereItStops final : json::json_sax_t {
  size_t stopped_at = std::string::npos;  // npos: the text parsed
  bool null() override { return true; }
  bool boolean(bool) override { return true; }
  bool number_integer(number_integer_t) override { return true; }
  bool number_unsigned(number_unsigned_t) override { return true; }
  bool number_float(number_float_t, const string_t&) override { return true; }
  bool string(string_t&) override { return true; }
  bool binary(binary_t&) override { return true; }
  bool start_object(std::size_t) override { return true; }
  bool key(string_t&) override { return true; }
  bool end_object() override { return true; }
  bool start_array(std::size_t) override { return true; }
  bool end_array() override { return true; }
  bool parse_error(std::size_t position, const std::string&, const nlohmann::detail::exception&) override {
    stopped_at = position;
    return false;
  }
};

// A line a kill cut while it was written: an audit line's start that ends before its JSON does.
bool cut_line(const std::string& text) {
  if (text.rfind("{\"akv", 0) != 0) return false;
  WhereItStops w;
  (void)json::sax_parse(text, &w);
  return w.stopped_at != std::string::npos && w.stopped_at >= text.size();  // ran out of bytes, nothing else wrong
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
      rep.cut_lines.push_back(n);  // the last line, cut by a kill: its reply never completed
      break;
    }
    const std::string text = all.substr(at, end - at);
    at = end + 1;
    if (text.empty()) continue;
    if (cut_line(text)) {  // a server that restarted after a kill began a new line after it
      rep.cut_lines.push_back(n);
      continue;
    }
    AuditLine l;
    l.line = n;
    try {
      l.why = check_line(model::parse_json_limited(text, kAuditLineJson, {ErrorCode::kBadInput, "audit line"}), engines,
                         model_override, n);
    } catch (const std::exception& e) {
      l.why = e.what();
    }
    l.reproduced = l.why.empty();
    rep.lines.push_back(l);
  }
  return rep;
}

}  // namespace akv::serve
