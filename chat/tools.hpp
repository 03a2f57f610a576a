// Tools in the prompt and in the reply (spec/tokenizer.md CT14, CT15): the tool block the
// Hermes-style templates write (Qwen2.5's, akv's generic form), and a reply read back as
// OpenAI's message: the text outside the tool calls as `content`, each call the template's
// syntax delimits as a tool call, and what could not be read as a call said, never dropped.
#pragma once
#include <string>
#include <string_view>
#include <vector>

#include "reference/chat.hpp"
#include "reference/chat_encoder.hpp"

namespace akv::chat {

/// CT14: the tool block of Qwen2.5's template and akv's generic form: `\n\n# Tools\n\nYou may
/// call one or more functions ...<tools>` + `\n` + each tool as `tojson` writes it +
/// `\n</tools>\n\nFor each function call, return a json object ...</tool_call>`. Empty when
/// there are no tools. Throws Error(kBadInput) for a tool whose JSON Python cannot reproduce.
std::string hermes_tools_text(const std::vector<ToolDef>& tools);

/// The text that opens a call in the syntax (the lazy grammar's trigger; what a stream holds
/// back): "<tool_call>" for kHermes, "{" at the reply's start for kLlamaJson.
std::string_view call_opener(ToolSyntax s);
/// The text that closes a call: "</tool_call>" for kHermes, "" (the reply's end) for kLlamaJson.
std::string_view call_closer(ToolSyntax s);

struct ParsedCall {
  std::string name;
  std::string arguments;  // the arguments object as compact JSON text, keys in the model's order
};

struct ParsedReply {
  /// The text outside the calls, in order, as generated; empty when the reply is only calls.
  std::string content;
  bool has_content = false;  // false when `content` is empty or only whitespace (OpenAI's null)
  std::vector<ParsedCall> calls;
  /// A call that could not be taken (an unknown function, arguments that are not a JSON object,
  /// a call opened and never closed): its text stays in `content`, and this says why.
  std::vector<std::string> errors;
  bool open_call = false;  // the reply ends inside a call (cut by max_tokens or the context)
};

/// Reads `text` (the reply, cut before any stop string) as `syntax` writes calls to the tools
/// `tools` offers. With `parallel` false only the first call is taken; a later one stays text
/// and is said. Never throws.
ParsedReply parse_reply(ToolSyntax syntax, std::string_view text, const std::vector<ToolDef>& tools, bool parallel);

}  // namespace akv::chat
