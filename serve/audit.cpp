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
#include "serve/audit_chain.hpp"
#include "serve/engine.hpp"
#include "runtime/backends.hpp"
#include "runtime/digest.hpp"
#include "runtime/build_info.hpp"

namespace akv::serve {

size_t AuditReport::reproduced() const {
  size_t n = 0;
  for (const AuditLine& l : lines) n += l.reproduced;
  return n;
}

bool AuditReport::passed() const { return replies > 0 && reproduced() == lines.size(); }

size_t AuditReport::first_failure() const {
  for (const AuditLine& l : lines)
    if (!l.reproduced) return l.line;
  return 0;
}

namespace {
using json = nlohmann::json;

// An audit line holds its request body as a string (8 MiB at most, up to 6 bytes a byte
// escaped) and the reply; its objects nest 4 levels (spec/input.md IN3 lists the limits).
constexpr readers::JsonLimits kAuditLineJson{size_t{256} << 20, 16, "spec/input.md IN3"};

// A JSON value of the line, or the reason it is missing.
const json& field(const json& j, const char* key) {
  if (!j.is_object() || !j.contains(key)) throw Error(ErrorCode::kBadInput, std::string("no \"") + key + "\" field");
  return j[key];
}

// The flags a log's lines put on each session (SV9): (scope, session) -> message keys.
using Flags = std::map<std::pair<std::string, std::string>, std::set<std::string>>;
// The message keys of each session's last chat request, for the evict lines that name them.
using LastKeys = std::map<std::pair<std::string, std::string>, std::vector<std::string>>;

std::string str(const json& j, const char* key) {
  const json& v = field(j, key);
  if (!v.is_string()) throw Error(ErrorCode::kBadInput, std::string("\"") + key + "\" is not a string");
  return v.get<std::string>();
}

std::set<size_t> index_set(const json& a, const char* what) {
  if (!a.is_array()) throw Error(ErrorCode::kBadInput, std::string(what) + " is not an array");
  std::set<size_t> out;
  for (const json& d : a) {
    if (!d.is_number_unsigned() || !out.insert(d.get<size_t>()).second)
      throw Error(ErrorCode::kBadInput, std::string(what) + ": not distinct message indexes");
  }
  return out;
}

// An evict line (SV3): the keys it flags are those of the named messages of the session's last
// chat request in the log.
std::string check_evict_line(const json& j, Flags& flags, const LastKeys& last) {
  const std::pair<std::string, std::string> who{str(j, "scope"), str(j, "session")};
  const std::set<size_t> named = index_set(field(j, "flagged_messages"), "flagged_messages");
  const std::vector<std::string> keys = field(j, "flagged_keys").get<std::vector<std::string>>();
  if (keys.size() != named.size()) return "flagged_keys and flagged_messages differ in length";
  auto it = last.find(who);
  if (it == last.end()) return "an eviction in a session no earlier line of the log served";
  size_t k = 0;
  for (size_t i : named) {
    if (i >= it->second.size() || it->second[i] != keys[k++]) return fmt::format("flagged message {} is not that message of the session's last request", i);
  }
  flags[who].insert(keys.begin(), keys.end());
  return "";
}

std::string check_line(const json& j, std::map<std::string, std::unique_ptr<Engine>>& engines, const std::string& override_model,
                       size_t n, Flags& flags, LastKeys& last, bool& replayed) {
  if (!j.is_object() || j.value("akv_audit", 0) != 1) return "not an akv audit line";
  const std::string kind = str(j, "kind");
  if (kind == "evict") return check_evict_line(j, flags, last);
  if (kind == "forget") {
    flags.erase({str(j, "scope"), str(j, "session")});
    last.erase({str(j, "scope"), str(j, "session")});
    return "";
  }
  if (kind != "chat") return "kind '" + kind + "' is none of chat, evict, forget";
  replayed = true;
  // The request is the logged bytes, and their digest must be the logged one.
  const std::string body = str(j, "request_body");
  if (sha256_hex(body) != field(j, "request_sha256"))
    return "the request's SHA-256 is not the logged one";
  readers::parse_json_limited(body, kConversationJson, {ErrorCode::kBadInput, "request_body"});  // bounded first
  // Kept in the body's key order: tools and schemas are rendered and compiled in it (CT14, SV14).
  nlohmann::ordered_json req = nlohmann::ordered_json::parse(body);
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
  const json& reply = field(j, "reply");
  const json& stats = field(reply, "stats");
  const std::pair<std::string, std::string> who{str(j, "scope"), str(stats, "session")};
  const std::set<size_t> dropped = index_set(field(stats, "dropped_messages"), "dropped_messages");
  const std::set<size_t> guarded = index_set(field(stats, "guarded_messages"), "guarded_messages");
  const ChatRequest logged_req = parse_chat_request(body);
  std::vector<std::string> keys;
  for (const Message& msg : logged_req.conv.messages) keys.push_back(message_key(msg));
  // Every field of the line is bound (SV9): a guarded message is a dropped one, and a message
  // dropped without the guard was flagged by an earlier line of its session.
  for (size_t g : guarded)
    if (!dropped.count(g)) return fmt::format("message {} is listed as guarded but not as dropped", g);
  for (size_t d : dropped) {
    if (d >= keys.size()) return fmt::format("dropped message {} is out of range ({} messages)", d, keys.size());
    if (!guarded.count(d) && !flags[who].count(keys[d]))
      return fmt::format("message {} is listed as dropped, but no earlier line flagged it in session '{}'", d, who.second);
  }
  // The request as the engine ran it: without the messages an earlier eviction flagged (the
  // regex guard's own drops are recomputed by the replay's guard, and compared).
  nlohmann::ordered_json msgs = nlohmann::ordered_json::array();
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
  // The message-to-span map, in the logged request's indexes.
  json spans = json::array();
  for (const SpanOfMessage& sp : r.stats.spans)
    spans.push_back({{"message", sp.message < 0 ? json(nullptr) : json(original.at(static_cast<size_t>(sp.message)))}, {"tokens", sp.tokens}});
  if (spans != field(stats, "spans")) return "the message-to-span map differs";
  if (stats.contains("seed") && (r.stats.seed ? json(*r.stats.seed) : json(nullptr)) != stats["seed"]) return "the seed differs";
  if (stats.contains("tool_call_errors") && json(r.call_errors) != stats["tool_call_errors"]) return "the tool call errors differ";
  for (size_t gi : guarded) flags[who].insert(keys[gi]);
  last[who] = keys;
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

AuditReport replay_audit_log(const std::string& path, const std::string& model_override, const std::string& pinned_key) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw Error(ErrorCode::kBadInput, path + ": cannot read");
  const std::string all((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  AuditReport rep;
  std::map<std::string, std::unique_ptr<Engine>> engines;
  Flags flags;
  LastKeys last;
  uint64_t seq = 1;
  std::string prev = kGenesis;
  bool signed_log = false, first = true;
  std::string first_key;
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
      const json j = readers::parse_json_limited(text, kAuditLineJson, {ErrorCode::kBadInput, "audit line"});
      // A pinned key means every line must be signed by it; else the first line decides, and
      // every later line must be signed (or not) the same way, by the same key (SV9).
      if (first) {
        signed_log = !pinned_key.empty() || (j.is_object() && j.contains("sig"));
        if (j.is_object() && j.contains("key") && j["key"].is_string()) first_key = j["key"].get<std::string>();
      }
      first = false;
      l.why = check_chain_line(text, j, seq, prev, pinned_key.empty() ? first_key : pinned_key, signed_log);
      if (l.why.empty()) {
        bool replayed = false;
        l.why = check_line(j, engines, model_override, n, flags, last, replayed);
        rep.replies += replayed;
      }
      if (j.is_object() && j.contains("seq") && j["seq"].is_number_unsigned()) seq = j["seq"].get<uint64_t>();
      if (j.is_object() && j.contains("key") && j["key"].is_string()) rep.key = j["key"].get<std::string>();
    } catch (const std::exception& e) {
      l.why = e.what();
    }
    // The chain goes on from this line as written: one edit fails its own line and the next.
    ++seq;
    prev = sha256_hex(text);
    l.reproduced = l.why.empty();
    rep.lines.push_back(l);
  }
  rep.signed_log = signed_log;
  return rep;
}

}  // namespace akv::serve
