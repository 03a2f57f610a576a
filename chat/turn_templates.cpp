#include "chat/turn_templates.hpp"

#include <nlohmann/json.hpp>

#include "chat/tools.hpp"
#include "reference/error.hpp"

namespace akv::chat {

namespace {

using Pieces = std::vector<TurnPiece>;

TurnPiece special(std::string s) { return {true, std::move(s)}; }
TurnPiece text(std::string s) { return {false, std::move(s)}; }

// Errors and ignored paths name the file and the message.
struct Renderer {
  const Conversation& c;
  TurnRendering r;
  const char* name;

  explicit Renderer(const Conversation& conv, const char* template_name) : c(conv), name(template_name) {
    r.messages.resize(c.messages.size());
  }
  std::string where(size_t i) const {
    return (c.source.empty() ? std::string("conversation") : c.source) + ": messages[" + std::to_string(i) + "]";
  }
  [[noreturn]] void refuse(size_t i, const std::string& what) const {
    throw Error(ErrorCode::kBadInput, where(i) + ": " + what + " (the " + name + " chat template, spec/tokenizer.md CT6)");
  }
  // Identifiers the template does not render (CT6): listed, never silently dropped.
  void ignore_ids(size_t i, bool name_too) {
    const Message& m = c.messages[i];
    const std::string p = "messages[" + std::to_string(i) + "]";
    if (name_too && !m.name.empty()) r.ignored.push_back(p + ".name");
    if (!m.tool_call_id.empty()) r.ignored.push_back(p + ".tool_call_id");
    for (size_t j = 0; j < m.tool_calls.size(); ++j)
      if (!m.tool_calls[j].id.empty()) r.ignored.push_back(p + ".tool_calls[" + std::to_string(j) + "].id");
  }
  // Text the template cannot carry is refused, never dropped (CT6).
  void refuse_lossy(size_t i) const {
    const Message& m = c.messages[i];
    if (!m.refusal.empty()) refuse(i, "a refusal, which the template does not render");
    for (const ToolCall& call : m.tool_calls)
      if (call.kind != "function") refuse(i, "a custom (free-form) tool call, which the template does not render");
  }
  bool is_raw(size_t i) const { return c.messages[i].tokens.has_value(); }
  // The role the template sees; a raw-token message is none of the template's roles (CT6).
  bool role_is(size_t i, std::string_view role) const { return !is_raw(i) && c.messages[i].role == role; }
};

// Arguments as the template's `tojson` prints the object transformers is handed: the JSON text
// parsed and dumped as Python does, or, when not JSON, the text as a JSON string (CT2's rule).
std::string tojson_arguments(const Renderer& rd, size_t i, const std::string& args) {
  if (!nlohmann::json::accept(args)) return python_json_string(args);
  try {
    return python_json_dumps(args);
  } catch (const Error& e) {
    rd.refuse(i, std::string("tool call arguments: ") + e.what());
  }
}

// A ChatML turn as Qwen's templates write it: <|im_start|>BODY<|im_end|>\n.
Pieces im_block(const std::string& body) { return {special("<|im_start|>"), text(body), special("<|im_end|>"), text("\n")}; }

// A call as Qwen's templates print it, its arguments already printed.
std::string hermes_call(const ToolCall& call, const std::string& args) {
  return "<tool_call>\n{\"name\": \"" + call.name + "\", \"arguments\": " + args + "}\n</tool_call>";
}

// Qwen's tool result (CT7): results in a row share one user turn, the first opens it, the last closes it.
Pieces qwen_tool_result(const Renderer& rd, size_t i) {
  Pieces p;
  if (i == 0 || !rd.role_is(i - 1, "tool")) p.push_back(special("<|im_start|>"));
  p.push_back(text((p.empty() ? "" : "user") + std::string("\n<tool_response>\n") + rd.c.messages[i].content + "\n</tool_response>"));
  if (i + 1 == rd.c.messages.size() || !rd.role_is(i + 1, "tool")) {
    p.push_back(special("<|im_end|>"));
    p.push_back(text("\n"));
  }
  return p;
}

// Qwen2.5-Instruct's template with no tools (CT7).
TurnRendering render_qwen25(const Conversation& c) {
  Renderer rd(c, "qwen2.5");
  const size_t n = c.messages.size();
  // With tools, the system turn ends with the tool block (the template's `tools` branch, CT14).
  const std::string tools = chat::hermes_tools_text(c.tools);
  if (n > 0 && rd.role_is(0, "system")) {
    rd.r.messages[0] = im_block("system\n" + c.messages[0].content + tools);
    rd.ignore_ids(0, true);
    rd.refuse_lossy(0);
  } else {
    rd.r.preamble = im_block("system\nYou are Qwen, created by Alibaba Cloud. You are a helpful assistant." + tools);
  }
  for (size_t i = 0; i < n; ++i) {
    if (rd.is_raw(i) || (i == 0 && rd.role_is(0, "system"))) continue;
    const Message& m = c.messages[i];
    Pieces& p = rd.r.messages[i];
    rd.refuse_lossy(i);
    rd.ignore_ids(i, true);
    if (m.role == "user" || m.role == "system" || (m.role == "assistant" && m.tool_calls.empty())) {
      p = im_block(m.role + "\n" + m.content);
    } else if (m.role == "assistant") {
      std::string body = "assistant";
      if (!m.content.empty()) body += "\n" + m.content;
      for (const ToolCall& call : m.tool_calls) body += "\n" + hermes_call(call, tojson_arguments(rd, i, call.arguments));
      p = im_block(body);
    } else if (m.role == "tool") {
      p = qwen_tool_result(rd, i);
    } else {
      rd.refuse(i, "role '" + m.role + "', which the template does not render (system, user, assistant, tool)");
    }
  }
  return std::move(rd.r);
}

// Python's str.lstrip('\n') / rstrip('\n') (the Qwen3 template's reasoning handling, CT16).
std::string_view lstrip_newlines(std::string_view s) {
  while (!s.empty() && s.front() == '\n') s.remove_prefix(1);
  return s;
}
std::string_view rstrip_newlines(std::string_view s) {
  while (!s.empty() && s.back() == '\n') s.remove_suffix(1);
  return s;
}

// Qwen3's template (CT16): ChatML turns like Qwen2.5's, no default system turn, and an
// assistant's reasoning (`<think>...</think>` in its content) kept only after the last user query.
TurnRendering render_qwen3(const Conversation& c) {
  Renderer rd(c, "qwen3");
  const size_t n = c.messages.size();
  const bool system0 = n > 0 && rd.role_is(0, "system");
  if (!c.tools.empty()) {
    // The tool block opens the system turn, after the system message's content and a blank line.
    const std::string tools(lstrip_newlines(chat::hermes_tools_text(c.tools)));
    if (system0)
      rd.r.messages[0] = im_block("system\n" + c.messages[0].content + "\n\n" + tools);
    else
      rd.r.preamble = im_block("system\n" + tools);
  } else if (system0) {
    rd.r.messages[0] = im_block("system\n" + c.messages[0].content);
  }
  if (system0) {
    rd.ignore_ids(0, true);
    rd.refuse_lossy(0);
  }
  // The last user message that is not a tool response wrapped by hand: reasoning after it is kept.
  size_t last_query = n == 0 ? 0 : n - 1;
  for (size_t k = n; k-- > 0;) {
    const std::string& t = c.messages[k].content;
    if (rd.role_is(k, "user") && !(t.starts_with("<tool_response>") && t.ends_with("</tool_response>"))) {
      last_query = k;
      break;
    }
  }
  for (size_t i = 0; i < n; ++i) {
    if (rd.is_raw(i) || (i == 0 && system0)) continue;
    const Message& m = c.messages[i];
    Pieces& p = rd.r.messages[i];
    rd.refuse_lossy(i);
    rd.ignore_ids(i, true);
    if (m.role == "user" || m.role == "system") {
      p = im_block(m.role + "\n" + m.content);
    } else if (m.role == "assistant") {
      std::string_view content = m.content, reasoning;
      bool dropped = false;  // text of the content the template does not print
      if (const size_t close = content.find("</think>"); close != std::string_view::npos) {
        std::string_view before = rstrip_newlines(content.substr(0, close));
        if (const size_t open = before.rfind("<think>"); open != std::string_view::npos) {
          dropped = open > 0;
          before.remove_prefix(open + 7);
        }
        reasoning = lstrip_newlines(before);
        dropped = dropped || content.rfind("</think>") != close;
        content = lstrip_newlines(content.substr(content.rfind("</think>") + 8));
      }
      std::string body = "assistant\n";
      if (i > last_query && (i + 1 == n || !reasoning.empty())) {
        // The reasoning is already stripped of \n at both ends (the template's strip('\n')).
        body += "<think>\n" + std::string(reasoning) + "\n</think>\n\n" + std::string(lstrip_newlines(content));
      } else {
        body += content;
        dropped = dropped || !reasoning.empty();  // reasoning before the last user query
      }
      // What the template drops by design is listed (CT6), never dropped silently.
      if (dropped) rd.r.ignored.push_back("messages[" + std::to_string(i) + "].content (reasoning)");
      for (size_t j = 0; j < m.tool_calls.size(); ++j) {
        const ToolCall& call = m.tool_calls[j];
        if (j > 0 || !content.empty()) body += "\n";
        // Arguments that are not JSON reach the template as a string, which it prints as is.
        const std::string args =
            nlohmann::json::accept(call.arguments) ? tojson_arguments(rd, i, call.arguments) : call.arguments;
        body += hermes_call(call, args);
      }
      p = im_block(body);
    } else if (m.role == "tool") {
      p = qwen_tool_result(rd, i);
    } else {
      rd.refuse(i, "role '" + m.role + "', which the template does not render (system, user, assistant, tool)");
    }
  }
  return std::move(rd.r);
}

// Llama 3.1 / 3.2 Instruct's template with no tools, date_string "26 Jul 2024" (CT8).
TurnRendering render_llama3(const Conversation& c) {
  Renderer rd(c, "llama3");
  const size_t n = c.messages.size();
  const auto turn = [](const std::string& role, const std::string& body) {
    return Pieces{special("<|start_header_id|>"), text(role), special("<|end_header_id|>"), text("\n\n" + body),
                  special("<|eot_id|>")};
  };
  // With tools (tools_in_user_message, the template's default; CT14) the system turn says
  // `Environment: ipython`, and the first message after it carries the tool definitions.
  const bool tools = !c.tools.empty();
  const std::string dates = std::string(tools ? "Environment: ipython\n" : "") + "Cutting Knowledge Date: December 2023\nToday Date: 26 Jul 2024\n\n";
  rd.r.preamble.push_back(special("<|begin_of_text|>"));
  const bool system0 = n > 0 && rd.role_is(0, "system");
  if (system0) {
    rd.refuse_lossy(0);
    rd.ignore_ids(0, true);
    rd.r.messages[0] = turn("system", dates + python_strip(c.messages[0].content));
  } else {
    for (TurnPiece& piece : turn("system", dates)) rd.r.preamble.push_back(std::move(piece));
  }
  const size_t first = system0 ? 1 : 0;
  if (tools) {
    if (first >= n) throw Error(ErrorCode::kBadInput, "tools: the llama3 template puts them in the first user message, and the "
                                                      "conversation has none (the template raises; spec/tokenizer.md CT14)");
    if (rd.is_raw(first) || !rd.role_is(first, "user") || !c.messages[first].tool_calls.empty())
      rd.refuse(first, "the llama3 template renders the tools into the first message after the system message as a user turn, "
                       "and this one is not a plain user message");
  }
  for (size_t i = first; i < n; ++i) {
    if (rd.is_raw(i)) continue;
    const Message& m = c.messages[i];
    rd.refuse_lossy(i);
    rd.ignore_ids(i, true);
    if (tools && i == first) {
      std::string body =
          "Given the following functions, please respond with a JSON for a function call with its proper arguments that best "
          "answers the given prompt.\n\nRespond in the format {\"name\": function name, \"parameters\": dictionary of argument "
          "name and its value}.Do not use variables.\n\n";
      for (const ToolDef& t : c.tools) body += python_json_dumps(t.json, 4) + "\n\n";
      rd.r.messages[i] = turn("user", body + python_strip(m.content));
    } else if (m.role == "tool" || m.role == "ipython") {
      // `content is iterable` holds for a string, so the template prints it with tojson.
      rd.r.messages[i] = turn("ipython", python_json_string(m.content));
    } else if (!m.tool_calls.empty()) {
      if (m.tool_calls.size() != 1) rd.refuse(i, std::to_string(m.tool_calls.size()) + " tool calls; the template takes one");
      // The template drops an assistant's text beside its tool call: listed as ignored.
      if (!m.content.empty()) rd.r.ignored.push_back("messages[" + std::to_string(i) + "].content");
      const ToolCall& call = m.tool_calls[0];
      rd.r.messages[i] = turn("assistant", "{\"name\": \"" + call.name + "\", \"parameters\": " +
                                               tojson_arguments(rd, i, call.arguments) + "}");
    } else {
      rd.r.messages[i] = turn(m.role, python_strip(m.content));
    }
  }
  return std::move(rd.r);
}

// Phi-3-mini's template, as llama.cpp's phi-3 vocab file carries it (CT9).
TurnRendering render_phi3(const Conversation& c) {
  Renderer rd(c, "phi3");
  if (!c.tools.empty())
    throw Error(ErrorCode::kBadInput, "tools: the phi3 template has no tool syntax, and akv defines none for it (spec/tokenizer.md CT14)");
  rd.r.preamble.push_back(special("<s>"));
  for (size_t i = 0; i < c.messages.size(); ++i) {
    if (rd.is_raw(i)) continue;
    const Message& m = c.messages[i];
    rd.refuse_lossy(i);
    if (!m.tool_calls.empty()) rd.refuse(i, "tool calls, which the template does not render");
    rd.ignore_ids(i, true);
    if (m.role == "user")
      rd.r.messages[i] = {special("<|user|>"), text("\n" + m.content), special("<|end|>"), text("\n"),
                          special("<|assistant|>"), text("\n")};
    else if (m.role == "assistant")
      rd.r.messages[i] = {text(m.content), special("<|end|>"), text("\n")};
    else
      rd.refuse(i, "role '" + m.role + "', which the template does not render (user, assistant)");
  }
  return std::move(rd.r);
}

}  // namespace

std::vector<std::string> turn_template_names() { return {"qwen2.5", "llama3", "phi3", "qwen3"}; }

TurnTemplate turn_template_by_name(std::string_view name) {
  if (name == "qwen2.5") return TurnTemplate::kQwen25;
  if (name == "llama3") return TurnTemplate::kLlama3;
  if (name == "phi3") return TurnTemplate::kPhi3;
  if (name == "qwen3") return TurnTemplate::kQwen3;
  throw Error(ErrorCode::kBadInput, "unknown chat template '" + std::string(name) + "' (known: qwen2.5, llama3, phi3, qwen3)");
}

TurnRendering render_turns(TurnTemplate t, const Conversation& c) {
  switch (t) {
    case TurnTemplate::kQwen25: return render_qwen25(c);
    case TurnTemplate::kLlama3: return render_llama3(c);
    case TurnTemplate::kPhi3: return render_phi3(c);
    case TurnTemplate::kQwen3: return render_qwen3(c);
  }
  throw Error(ErrorCode::kBadInput, "unknown chat template");
}

std::vector<TurnPiece> turn_generation_prompt(TurnTemplate t) {
  switch (t) {
    case TurnTemplate::kQwen25:
    case TurnTemplate::kQwen3: return {special("<|im_start|>"), text("assistant\n")};
    case TurnTemplate::kLlama3:
      return {special("<|start_header_id|>"), text("assistant"), special("<|end_header_id|>"), text("\n\n")};
    case TurnTemplate::kPhi3: return {};  // its user turn already ends with <|assistant|>\n
  }
  return {};
}

std::vector<std::string> turn_rstrip_specials(TurnTemplate t) {
  // llama.cpp (llama-vocab.cpp) gives a phi-3 vocabulary's special tokens the RSTRIP attribute,
  // all but <unk>, <s> and <|endoftext|>, as Hugging Face's Phi-3 added tokens have rstrip.
  if (t == TurnTemplate::kPhi3) return {"<|user|>", "<|end|>", "<|assistant|>"};
  return {};
}

std::string turn_end_token(TurnTemplate t) {
  switch (t) {
    case TurnTemplate::kQwen25:
    case TurnTemplate::kQwen3: return "<|im_end|>";
    case TurnTemplate::kLlama3: return "<|eot_id|>";
    case TurnTemplate::kPhi3: return "<|end|>";
  }
  return "";
}

}  // namespace akv::chat
