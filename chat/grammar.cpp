#include "chat/grammar.hpp"

#include <dlpack/dlpack.h>
#include <xgrammar/xgrammar.h>

#include <array>
#include <cmath>
#include <functional>
#include <limits>
#include <list>
#include <mutex>
#include <new>
#include <optional>
#include <set>
#include <unordered_map>

#include "chat/engine_log.hpp"
#include "chat/json_schema_check.hpp"
#include "reference/error.hpp"

#ifndef AKV_XGRAMMAR_VERSION
#define AKV_XGRAMMAR_VERSION "(version unknown)"
#endif

namespace akv::chat {

using Json = nlohmann::ordered_json;

namespace {

// The UTF-8 overlay. xgrammar's character classes admit the UTF-8 encodings of the surrogates
// U+D800-U+DFFF (the bytes 0xED 0xA0..0xBF ...), which are no UTF-8 (RFC 3629), so a byte-level vocabulary
// could spell them inside a JSON string. The matcher tracks where the reply's bytes stand in a
// UTF-8 character and admits only tokens that keep them valid UTF-8, and the stop token only
// at a character boundary. States: what the next byte must be.
constexpr uint8_t kBoundary = 0, kCont1 = 1, kCont2 = 2, kCont3 = 3, kAfterE0 = 4, kAfterED = 5, kAfterF0 = 6,
                  kAfterF4 = 7, kBadUtf8 = 0xff;
constexpr size_t kUtf8States = 8;

uint8_t utf8_step(uint8_t s, uint8_t b) {
  const bool cont = b >= 0x80 && b <= 0xbf;
  switch (s) {
    case kBoundary:
      if (b < 0x80) return kBoundary;
      if (b >= 0xc2 && b <= 0xdf) return kCont1;
      if (b == 0xe0) return kAfterE0;
      if (b == 0xed) return kAfterED;
      if (b >= 0xe1 && b <= 0xef) return kCont2;
      if (b == 0xf0) return kAfterF0;
      if (b >= 0xf1 && b <= 0xf3) return kCont3;
      if (b == 0xf4) return kAfterF4;
      return kBadUtf8;
    case kCont1: return cont ? kBoundary : kBadUtf8;
    case kCont2: return cont ? kCont1 : kBadUtf8;
    case kCont3: return cont ? kCont2 : kBadUtf8;
    case kAfterE0: return b >= 0xa0 && b <= 0xbf ? kCont1 : kBadUtf8;  // no overlong form
    case kAfterED: return b >= 0x80 && b <= 0x9f ? kCont1 : kBadUtf8;  // no surrogate
    case kAfterF0: return b >= 0x90 && b <= 0xbf ? kCont2 : kBadUtf8;  // no overlong form
    case kAfterF4: return b >= 0x80 && b <= 0x8f ? kCont2 : kBadUtf8;  // nothing past U+10FFFF
    default: return kBadUtf8;
  }
}

// Per token and state, the state after its bytes (kBadUtf8: not valid UTF-8 there); per state,
// the bitmask of the tokens valid there (the stop token at kBoundary only).
struct Utf8Table {
  std::vector<std::array<uint8_t, kUtf8States>> next;
  std::array<std::vector<uint32_t>, kUtf8States> valid;

  Utf8Table(const std::vector<std::string>& text, Token stop) : next(text.size()) {
    const size_t words = (text.size() + 31) / 32;
    for (auto& v : valid) v.assign(words, 0);
    for (size_t id = 0; id < text.size(); ++id)
      for (uint8_t s = 0; s < kUtf8States; ++s) {
        uint8_t t = text[id].empty() ? kBadUtf8 : s;  // no text (control, stop): never by bytes
        for (size_t i = 0; i < text[id].size() && t != kBadUtf8; ++i) t = utf8_step(t, static_cast<uint8_t>(text[id][i]));
        next[id][s] = t;
        if (t != kBadUtf8) valid[s][id / 32] |= uint32_t{1} << (id % 32);
      }
    valid[kBoundary][static_cast<size_t>(stop) / 32] |= uint32_t{1} << (stop % 32);
  }
};

}  // namespace

struct Grammar::Impl {
  xgrammar::CompiledGrammar compiled;
  std::string source;
  int vocab_size;
  Token stop;
  std::shared_ptr<const Utf8Table> utf8;
};

struct GrammarVocabulary::Impl {
  xgrammar::TokenizerInfo info;
  int size;
  Token stop;
  std::shared_ptr<const Utf8Table> utf8;
  size_t cache_limit;
  // Compiled grammars by source, most recently used first.
  std::mutex mu;
  std::list<std::pair<std::string, std::shared_ptr<const Grammar::Impl>>> lru;
  std::unordered_map<std::string, std::list<std::pair<std::string, std::shared_ptr<const Grammar::Impl>>>::iterator> index;
  std::unordered_map<std::string, size_t> bytes;
  size_t cached_bytes = 0;

  Impl(const std::vector<std::string>& text, Token s, size_t limit);

  std::shared_ptr<const Grammar::Impl> find(const std::string& source) {
    std::lock_guard<std::mutex> lock(mu);
    const auto it = index.find(source);
    if (it == index.end()) return nullptr;
    lru.splice(lru.begin(), lru, it->second);
    return it->second->second;
  }

  void insert(const std::string& source, std::shared_ptr<const Grammar::Impl> g, size_t size_bytes) {
    std::lock_guard<std::mutex> lock(mu);
    if (index.count(source) || size_bytes > cache_limit) return;
    lru.emplace_front(source, std::move(g));
    index[source] = lru.begin();
    bytes[source] = size_bytes;
    cached_bytes += size_bytes;
    while (cached_bytes > cache_limit) {
      const std::string victim = lru.back().first;
      cached_bytes -= bytes[victim];
      bytes.erase(victim);
      index.erase(victim);
      lru.pop_back();
    }
  }
};

namespace {

// Each id's text as the grammar reads it: its exact bytes, or nothing for the stop token and the
// control ids (xgrammar's specials are the ids whose text is empty: never admitted, whatever the
// grammar; the stop token is listed as such).
std::vector<std::string> token_texts(const ChatEncoder& encoder) {
  const int n = encoder.vocab_size();
  if (n <= 0) throw Error(ErrorCode::kBadInput, "grammar vocabulary: the encoder's vocabulary is empty");
  const Token stop = encoder.end_of_turn();
  if (stop < 0 || stop >= n)
    throw Error(ErrorCode::kBadInput, "grammar vocabulary: the end-of-turn token " + std::to_string(stop) +
                                          " is outside the vocabulary [0, " + std::to_string(n) + ")");
  std::vector<std::string> text(static_cast<size_t>(n));
  for (Token id = 0; id < n; ++id)
    if (id != stop && !encoder.is_control(id)) text[static_cast<size_t>(id)] = encoder.bytes({id});
  return text;
}

xgrammar::TokenizerInfo tokenizer_info(const std::vector<std::string>& text, Token stop) {
  detail::EngineLog log;
  try {
    return xgrammar::TokenizerInfo(text, xgrammar::VocabType::RAW, static_cast<int>(text.size()), std::vector<int32_t>{stop}, false);
  } catch (const std::exception& e) {
    throw Error(ErrorCode::kBadInput, "grammar vocabulary: the grammar engine refuses it: " + detail::engine_message(e));
  }
}

void check_style(const JsonStyle& s, const std::string& path) {
  if (s.max_whitespace < 1 || s.max_whitespace > 1024)
    throw Error(ErrorCode::kBadInput, path + ": max_whitespace " + std::to_string(s.max_whitespace) + " outside 1..1024");
}

// A schema as a json_schema node of a structural tag.
Json schema_node(const Json& schema, const JsonStyle& style) {
  Json node = Json::object();
  node["type"] = "json_schema";
  node["json_schema"] = schema;
  node["max_whitespace_cnt"] = style.max_whitespace;
  return node;
}

// Refuses what the engine would ignore in `schema` (json_schema_check.hpp), then converts it
// alone, as the compile will, so that an engine error or warning is named at this schema's path.
void check_schema(const Json& schema, const std::string& path, const JsonStyle& style) {
  check_json_schema(schema, path);
  detail::EngineLog log;
  try {
    (void)xgrammar::Grammar::FromJSONSchema(schema.dump(), true, std::nullopt, std::nullopt, true, style.max_whitespace);
  } catch (const std::bad_alloc&) {
    throw Error(ErrorCode::kOutOfResources, path + ": out of memory converting the schema to a grammar");
  } catch (const std::exception& e) {
    throw Error(ErrorCode::kBadInput, path + ": the grammar engine refuses the schema: " + detail::engine_message(e));
  }
  if (!log.warnings().empty())
    throw Error(ErrorCode::kBadInput, path + ": the grammar engine warns: " + log.warnings().front() +
                                          "; it would ignore part of the schema, so akv refuses it");
}

// The one compile path: every grammar is an xgrammar structural tag over the vocabulary, taken
// from the cache by its source, else compiled after `checks` (a cached source passed them).
std::shared_ptr<const Grammar::Impl> compile(GrammarVocabulary::Impl& v, const Json& format, const std::string& path,
                                             const std::function<void()>& checks) {
  Json tag = Json::object();
  tag["type"] = "structural_tag";
  tag["format"] = format;
  const std::string text = tag.dump();
  const std::string source = std::string(GrammarVocabulary::engine()) + " structural_tag " + text;
  if (auto hit = v.find(source)) return hit;
  checks();
  detail::EngineLog log;
  std::optional<xgrammar::CompiledGrammar> compiled;
  try {
    // One thread and no xgrammar cache: the result depends on the source and the vocabulary
    // only, and every warning is raised on this thread, under this log.
    xgrammar::GrammarCompiler compiler(v.info, 1, false, -1);
    compiled.emplace(compiler.CompileStructuralTag(text));
  } catch (const std::bad_alloc&) {
    throw Error(ErrorCode::kOutOfResources, path + ": out of memory compiling the grammar");
  } catch (const std::exception& e) {
    throw Error(ErrorCode::kBadInput, path + ": the grammar engine refuses it: " + detail::engine_message(e));
  }
  if (!log.warnings().empty())
    throw Error(ErrorCode::kBadInput, path + ": the grammar engine warns: " + log.warnings().front() +
                                          "; it would ignore part of the request, so akv refuses it");
  auto g = std::make_shared<const Grammar::Impl>(Grammar::Impl{*compiled, source, v.size, v.stop, v.utf8});
  v.insert(source, g, compiled->MemorySizeBytes() + source.size());
  return g;
}

}  // namespace

// ---- GrammarVocabulary ----

GrammarVocabulary::Impl::Impl(const std::vector<std::string>& text, Token s, size_t limit)
    : info(tokenizer_info(text, s)),
      size(static_cast<int>(text.size())),
      stop(s),
      utf8(std::make_shared<const Utf8Table>(text, s)),
      cache_limit(limit) {}

GrammarVocabulary::GrammarVocabulary(const ChatEncoder& encoder, size_t cache_bytes)
    : impl_(std::make_shared<Impl>(token_texts(encoder), encoder.end_of_turn(), cache_bytes)) {}

int GrammarVocabulary::size() const { return impl_->size; }
Token GrammarVocabulary::stop_token() const { return impl_->stop; }
size_t GrammarVocabulary::mask_words() const { return (static_cast<size_t>(impl_->size) + 31) / 32; }
const char* GrammarVocabulary::engine() { return "xgrammar " AKV_XGRAMMAR_VERSION; }

// ---- Grammar ----

Grammar Grammar::json_schema(const GrammarVocabulary& vocab, const Json& schema, const std::string& path,
                             const JsonStyle& style) {
  check_style(style, path);
  return Grammar(compile(*vocab.impl_, schema_node(schema, style), path, [&] { check_schema(schema, path, style); }));
}

Grammar Grammar::json_object(const GrammarVocabulary& vocab, const JsonStyle& style) {
  check_style(style, "response_format");
  // In xgrammar's strict mode a bare {"type": "object"} admits only {}: say any member.
  Json schema = Json::object();
  schema["type"] = "object";
  schema["additionalProperties"] = true;
  return Grammar(compile(*vocab.impl_, schema_node(schema, style), "response_format", [] {}));
}

Grammar Grammar::tool_calls(const GrammarVocabulary& vocab, const std::vector<ToolSchema>& tools,
                            const ToolCallOptions& options) {
  const std::string where = tools.empty() ? std::string("tools") : tools.front().path.substr(0, tools.front().path.find('['));
  if (tools.empty()) throw Error(ErrorCode::kBadInput, "tools: no tool to call; a tool-call grammar needs at least one");
  check_style(options.json, where);
  const bool hermes = options.syntax == ToolCallSyntax::kHermes;
  std::set<std::string> names;
  Json tags = Json::array();
  std::vector<Json> schemas;
  for (const ToolSchema& t : tools) {
    if (t.name.empty()) throw Error(ErrorCode::kBadInput, t.path + ".name: empty; a call names its tool");
    if (!names.insert(t.name).second)
      throw Error(ErrorCode::kBadInput, t.path + ".name: " + Json(t.name).dump(-1, ' ', true) + " names two tools");
    Json params = t.parameters;
    if (params.is_null()) {  // OpenAI: a function without parameters takes the empty object
      params = Json::object();
      params["type"] = "object";
      params["properties"] = Json::object();
    }
    schemas.push_back(params);
    Json tag = Json::object();
    tag["type"] = "tag";
    // The name as JSON writes it (nlohmann's escapes; UTF-8 as is), so the reply parses back to it.
    tag["begin"] = (hermes ? "<tool_call>\n{\"name\": " : "{\"name\": ") + Json(t.name).dump() +
                   (hermes ? ", \"arguments\": " : ", \"parameters\": ");
    tag["content"] = schema_node(params, options.json);
    tag["end"] = hermes ? "}\n</tool_call>" : "}";
    tags.push_back(tag);
  }
  Json format = Json::object();
  if (options.required) {
    format["type"] = "tags_with_separator";
    format["tags"] = tags;
    format["separator"] = "\n";
    format["at_least_one"] = true;
  } else {
    format["type"] = "triggered_tags";
    format["triggers"] = Json::array({hermes ? "<tool_call>" : "{\"name\": "});
    format["tags"] = tags;
    format["at_least_one"] = false;
  }
  format["stop_after_first"] = !options.parallel || !hermes;
  return Grammar(compile(*vocab.impl_, format, where, [&] {
    for (size_t i = 0; i < tools.size(); ++i) check_schema(schemas[i], tools[i].path + ".parameters", options.json);
  }));
}

const std::string& Grammar::source() const { return impl_->source; }
int Grammar::vocab_size() const { return impl_->vocab_size; }
Token Grammar::stop_token() const { return impl_->stop; }

// ---- GrammarMatcher ----

struct GrammarMatcher::State {
  xgrammar::GrammarMatcher m;
  bool terminated = false;
  uint8_t utf8 = kBoundary;  // where the reply's bytes stand in a UTF-8 character
};

GrammarMatcher::GrammarMatcher(const Grammar& grammar)
    : grammar_(grammar),
      state_(std::make_unique<State>(State{xgrammar::GrammarMatcher(grammar.impl_->compiled), false, kBoundary})) {}
GrammarMatcher::~GrammarMatcher() = default;
GrammarMatcher::GrammarMatcher(const GrammarMatcher& o)
    : grammar_(o.grammar_),
      state_(std::make_unique<State>(State{o.state_->m.Fork(), o.state_->terminated, o.state_->utf8})),
      accepted_(o.accepted_) {}
GrammarMatcher& GrammarMatcher::operator=(const GrammarMatcher& o) {
  if (this != &o) *this = GrammarMatcher(o);
  return *this;
}
GrammarMatcher::GrammarMatcher(GrammarMatcher&&) noexcept = default;
GrammarMatcher& GrammarMatcher::operator=(GrammarMatcher&&) noexcept = default;

void GrammarMatcher::fill_mask(std::vector<uint32_t>& bitmask) {
  const int n = grammar_.vocab_size();
  const size_t words = (static_cast<size_t>(n) + 31) / 32;
  bitmask.assign(words, 0);
  if (state_->terminated) return;
  int64_t shape[1] = {static_cast<int64_t>(words)};
  DLTensor t{};
  t.data = bitmask.data();
  t.device = DLDevice{kDLCPU, 0};
  t.ndim = 1;
  t.dtype = xgrammar::GetBitmaskDLType();  // int32: the same words, bit (id % 32) of word id / 32
  t.shape = shape;
  detail::EngineLog log;
  state_->m.FillNextTokenBitmask(&t);
  // Only tokens that keep the reply valid UTF-8 (nothing past the vocabulary: those bits are 0).
  const std::vector<uint32_t>& valid = grammar_.impl_->utf8->valid[state_->utf8];
  for (size_t w = 0; w < words; ++w) bitmask[w] &= valid[w];
}

bool GrammarMatcher::accept(Token id) {
  if (state_->terminated || id < 0 || id >= grammar_.vocab_size()) return false;
  const Utf8Table& utf8 = *grammar_.impl_->utf8;
  const uint8_t next = id == grammar_.stop_token() ? (state_->utf8 == kBoundary ? kBoundary : kBadUtf8)
                                                   : utf8.next[static_cast<size_t>(id)][state_->utf8];
  if (next == kBadUtf8) return false;
  detail::EngineLog log;  // a rejection's warning is the false returned
  if (!state_->m.AcceptToken(id)) return false;
  ++accepted_;
  state_->utf8 = next;
  state_->terminated = state_->m.IsTerminated();
  return true;
}

bool GrammarMatcher::is_terminated() const { return state_->terminated; }
bool GrammarMatcher::can_end() const {
  return !state_->terminated && state_->utf8 == kBoundary && state_->m.IsCompleted();
}

bool mask_allows(const std::vector<uint32_t>& bitmask, Token id) {
  if (id < 0 || static_cast<size_t>(id) / 32 >= bitmask.size()) return false;
  return (bitmask[static_cast<size_t>(id) / 32] >> (id % 32)) & 1u;
}

void apply_mask(const std::vector<uint32_t>& bitmask, float* logits, size_t n) {
  for (size_t i = 0; i < n; ++i)
    if (!mask_allows(bitmask, static_cast<Token>(i))) logits[i] = -std::numeric_limits<float>::infinity();
}

}  // namespace akv::chat
