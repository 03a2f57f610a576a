// The chat templates of the models agents deploy, rendered as their Jinja text renders
// (spec/tokenizer.md CT6-CT9, CT16): Qwen2.5, Llama 3.1/3.2, Phi-3 and Qwen3. A rendering is pieces of text
// and template special tokens, split by message, so that each message stays one span (CT3).
#pragma once
#include <string>
#include <string_view>
#include <vector>

#include "reference/chat.hpp"

namespace akv::chat {

/// The turn templates akv renders (CT6-CT9, CT16). ChatML (CT1) has its own encoder (chatml.hpp).
/// The order is turn_template_names()'s.
enum class TurnTemplate { kQwen25, kLlama3, kPhi3, kQwen3 };

/// The names `--template` takes, in a stable order: "qwen2.5", "llama3", "phi3", "qwen3".
std::vector<std::string> turn_template_names();

/// The template named `name`. Throws Error(kBadInput) naming `name` and the names above.
TurnTemplate turn_template_by_name(std::string_view name);

/// One piece of a rendering: text (tokenized as text, special-token text in it stays text,
/// T6) or a special token of the template, by its text (e.g. "<|im_start|>").
struct TurnPiece {
  bool special = false;
  std::string text;
};

/// A conversation rendered by one template (CT6). Concatenating the texts of `preamble`, then
/// of messages[0], messages[1], ... gives exactly what the template's Jinja renders for the
/// conversation with add_generation_prompt false (Phi-3: without the trailing eos_token, CT9).
/// A raw-token message (M5) renders no pieces: its span is its ids.
struct TurnRendering {
  std::vector<TurnPiece> preamble;               // pieces no message owns (BOS, a default system)
  std::vector<std::vector<TurnPiece>> messages;  // message i's pieces
  /// Fields the template does not render, as paths ("messages[3].tool_call_id"): listed, as
  /// IN2's ignored fields are, never silently dropped.
  std::vector<std::string> ignored;
};

/// Renders `c` under `t` (CT6-CT9). Throws Error(kBadInput) `SOURCE: messages[i]...: problem`
/// for what the template cannot carry without losing text: a role the template drops, a refusal,
/// a custom (free-form) tool call, more than one
/// tool call in a message (Llama 3, as its template raises), tool calls at all (Phi-3).
/// Llama 3's template drops an assistant's content beside its tool call: it is listed in
/// `ignored` (`messages[i].content`), as the model never sees it.
TurnRendering render_turns(TurnTemplate t, const Conversation& c);

/// The pieces that open the model's reply (the template's add_generation_prompt tail).
std::vector<TurnPiece> turn_generation_prompt(TurnTemplate t);

/// The special tokens after which the tokenizer removes ASCII whitespace before tokenizing the
/// text that follows (llama.cpp's RSTRIP attribute, Hugging Face's added-token rstrip; CT10):
/// Phi-3's <|user|>, <|end|>, <|assistant|>; none for the other templates.
std::vector<std::string> turn_rstrip_specials(TurnTemplate t);

/// The special token that ends a turn: "<|im_end|>", "<|eot_id|>", "<|end|>".
std::string turn_end_token(TurnTemplate t);

/// Python's `json.dumps(value, ensure_ascii=False)` of a JSON text (Jinja's `tojson` as
/// transformers defines it): separators ", " and ": ", object keys in their order, UTF-8 kept,
/// only `"`, `\` and control characters escaped. Throws Error(kBadInput) when `json_text` is
/// not JSON, or holds an integer outside 64 bits (Python keeps it exact; akv will not round it).
/// With `indent` >= 0, Python's `json.dumps(value, indent=indent)`: each item on a line of its
/// own, indented, separators "," and ": " (Jinja's `tojson(indent=4)`).
std::string python_json_dumps(std::string_view json_text, int indent = -1);

/// Python's `json.dumps(s, ensure_ascii=False)` of a string: a JSON string literal.
std::string python_json_string(std::string_view s);

/// Python's `str.strip()` (Jinja's `trim`): removes leading and trailing characters for which
/// str.isspace() is true (ASCII whitespace, U+001C-U+001F, U+0085, U+00A0, U+1680,
/// U+2000-U+200A, U+2028, U+2029, U+202F, U+205F, U+3000). Bytes that are not valid UTF-8 stop it.
std::string python_strip(std::string_view s);

}  // namespace akv::chat
