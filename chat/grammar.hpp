// Constrained decoding: a grammar over a model's vocabulary masks each token the model may draw,
// so a reply is a JSON value of a schema, or a tool call of a known tool with valid arguments
// (spec/serving.md SV14, the clause id assumed for issue 45; the server's clauses on tool_choice
// and response_format build on it). The engine is xgrammar's C++ core (scripts/fetch-xgrammar);
// this header hides it.
//
// Per model: one GrammarVocabulary. Per request: one Grammar (compiled from the request's
// response_format or tools; cached by what it was compiled from). Per reply: one GrammarMatcher;
// per token: fill_mask, mask the logits (apply_mask), draw, accept. The mask is a function of
// Grammar::source() and the tokens accepted, nothing else (no clock, no thread count, no cache
// state): a constrained reply after an eviction equals a cold server's, bit for bit.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "reference/chat_encoder.hpp"

namespace akv::chat {

/// What the JSON of a grammar allows beyond the value itself.
struct JsonStyle {
  /// Whitespace at each place JSON allows it (after `{`, around `:` and `,`, before `}`): 0 to
  /// this many of space, \n, \r, \t (xgrammar's max_whitespace_cnt). Bounded, so a small model
  /// cannot spend its tokens on whitespace; 1..1024, else Error(kBadInput).
  int max_whitespace = 4;
};

/// A model's vocabulary as the grammar engine reads it: each id's exact bytes
/// (ChatEncoder::bytes({id}); a token may be part of a UTF-8 character), ChatEncoder::is_control
/// ids as specials (never admitted inside what a grammar constrains), ChatEncoder::end_of_turn()
/// as the one stop token (the reply ends when it is drawn, spec/serving.md SV1). Build it once
/// per model (SmolLM2's 49152 ids: tens of ms); immutable and thread-safe, copies share it.
/// It keeps the grammars compiled over it (Grammar::compile_*) in a cache of at most
/// `cache_bytes` (xgrammar's estimate of their size), least recently used dropped first.
class GrammarVocabulary {
 public:
  /// Throws Error(kBadInput) if the encoder's vocabulary is empty or its end_of_turn() is a id
  /// outside it.
  explicit GrammarVocabulary(const ChatEncoder& encoder, size_t cache_bytes = size_t{256} << 20);
  /// The ids the grammar knows: [0, size()) = [0, encoder.vocab_size()).
  int size() const;
  /// encoder.end_of_turn().
  Token stop_token() const;
  /// The words of a mask: (size() + 31) / 32.
  size_t mask_words() const;
  /// "xgrammar 0.2.8": the engine, as a reply's certificate names it.
  static const char* engine();

  struct Impl;

 private:
  friend class Grammar;
  std::shared_ptr<Impl> impl_;
};

/// A tool a call may name (OpenAI's `tools[i].function`).
struct ToolSchema {
  std::string name;                // function.name: non-empty, unique among the tools
  nlohmann::ordered_json parameters;  // function.parameters (a JSON schema, key order kept); null: {"type": "object", "properties": {}}
  std::string path;                // its JSON path in the request, for errors: "tools[2].function"
};

/// How a model writes a tool call.
enum class ToolCallSyntax {
  /// Hermes / Qwen2.5 / SmolLM2's generic form: `<tool_call>\n{"name": NAME, "arguments": ARGS}\n</tool_call>`,
  /// several calls separated by "\n".
  kHermes,
  /// Llama 3.1 / 3.2's JSON form: `{"name": NAME, "parameters": ARGS}`, one call.
  kLlama31,
};

/// Which replies a tool-call grammar admits.
struct ToolCallOptions {
  ToolCallSyntax syntax = ToolCallSyntax::kHermes;
  /// true: the reply is calls and nothing else, at least one (tool_choice "required"; a named
  /// function: pass only that tool). false: free text in which every call the model opens is
  /// whole and valid; the mask constrains from the call's opening on (tool_choice "auto": a lazy
  /// grammar, triggered by `<tool_call>`, or by `{"name": ` for kLlama31).
  bool required = true;
  /// More than one call (parallel_tool_calls; default true as OpenAI's). kLlama31: always one.
  bool parallel = true;
  JsonStyle json;
};

/// A grammar compiled over a vocabulary: immutable, thread-safe, cheap to copy (shared).
class Grammar {
 public:
  /// Replies that are one JSON value valid under `schema` (response_format
  /// {"type": "json_schema", "json_schema": {"schema": ..., "strict": true}}; key order kept,
  /// properties are written in it). The schema is checked first (chat/json_schema_check.hpp):
  /// a keyword the engine would ignore is refused. `path` is the schema's JSON path in the
  /// request ("response_format.json_schema.schema"). Throws Error(kBadInput) "PATH...: problem"
  /// naming the keyword's path, for a bad schema, an unsupported keyword, a pattern the engine
  /// cannot read, or a bad style.
  static Grammar json_schema(const GrammarVocabulary& vocab, const nlohmann::ordered_json& schema, const std::string& path,
                             const JsonStyle& style = {});
  /// Replies that are one JSON object, any keys and values (response_format {"type": "json_object"}).
  static Grammar json_object(const GrammarVocabulary& vocab, const JsonStyle& style = {});
  /// Replies that call `tools` in `options.syntax`: NAME one of the tools' names (as a JSON
  /// string), ARGS valid under that tool's parameters (checked as json_schema checks, errors
  /// named under "PATH.parameters"). Throws Error(kBadInput) for no tools, an empty or repeated
  /// name (naming "PATH.name"), or a schema json_schema would refuse.
  static Grammar tool_calls(const GrammarVocabulary& vocab, const std::vector<ToolSchema>& tools,
                            const ToolCallOptions& options = {});

  /// What the grammar was compiled from: the engine, then xgrammar's structural tag (JSON).
  /// Two grammars with the same source over the same vocabulary give the same masks for the
  /// same tokens; a digest of it names the grammar in a certificate.
  const std::string& source() const;
  /// The vocabulary's size() and stop_token().
  int vocab_size() const;
  Token stop_token() const;

  struct Impl;

 private:
  friend class GrammarMatcher;
  explicit Grammar(std::shared_ptr<const Impl> impl) : impl_(std::move(impl)) {}
  std::shared_ptr<const Impl> impl_;
};

/// One reply's progress through a grammar. Not thread-safe (one per reply); copyable (a copy
/// continues on its own from the same state).
class GrammarMatcher {
 public:
  explicit GrammarMatcher(const Grammar& grammar);
  ~GrammarMatcher();
  GrammarMatcher(const GrammarMatcher& other);
  GrammarMatcher& operator=(const GrammarMatcher& other);
  GrammarMatcher(GrammarMatcher&&) noexcept;
  GrammarMatcher& operator=(GrammarMatcher&&) noexcept;

  /// The ids the grammar allows next, as a bitmask: `bitmask` is resized to the vocabulary's
  /// mask_words() words; bit (id % 32) of word id / 32 is set iff id may be drawn: the grammar
  /// admits its bytes, and the reply's bytes stay valid UTF-8 with them (xgrammar alone would
  /// admit the encodings of U+D800-U+DFFF). The stop token is allowed iff can_end(); after
  /// is_terminated() nothing is. A function of the grammar and the tokens accepted so far only.
  /// Before termination some bit is set for every grammar compiled here (each schema admits a
  /// finite value); a caller that finds none has met an engine defect and ends the reply.
  void fill_mask(std::vector<uint32_t>& bitmask);
  /// Appends `id` to the reply and returns true if fill_mask would allow it now; otherwise
  /// returns false and the state is unchanged (an id outside the vocabulary, a control token,
  /// the stop token before can_end(), anything after is_terminated()).
  bool accept(Token id);
  /// Whether the stop token was accepted: the reply is complete and valid.
  bool is_terminated() const;
  /// Whether the text so far is a complete reply (and ends on a whole UTF-8 character): the
  /// stop token is allowed now.
  bool can_end() const;
  /// The tokens accepted so far (the stop token included).
  size_t accepted() const { return accepted_; }
  const Grammar& grammar() const { return grammar_; }

 private:
  struct State;
  Grammar grammar_;
  std::unique_ptr<State> state_;
  size_t accepted_ = 0;
};

/// Whether `bitmask` (fill_mask's) allows `id`; false for an id outside it.
bool mask_allows(const std::vector<uint32_t>& bitmask, Token id);

/// Sets logits[id] to -infinity for each id in [0, n) the mask does not allow; ids past the
/// mask (a model's rows beyond the vocabulary) are not allowed. The allowed logits keep their
/// bits, so greedy decoding under the mask picks the first maximal allowed id, as unmasked
/// decoding picks among all.
void apply_mask(const std::vector<uint32_t>& bitmask, float* logits, size_t n);

}  // namespace akv::chat
