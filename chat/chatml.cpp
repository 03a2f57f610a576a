#include "chat/chatml.hpp"

#include <nlohmann/json.hpp>

#include "chat/tools.hpp"
#include "reference/error.hpp"

namespace akv::chat {

using namespace readers;  // the tokenizers and the GGUF file the templates render over

namespace {

[[noreturn]] void bad(const std::string& source, const std::string& field, const std::string& what) {
  throw Error(ErrorCode::kBadModel, source + ": " + field + ": " + what);
}

// SmolLM2's template, split around its default system message (CT1).
constexpr std::string_view kHead = "{% for message in messages %}";
constexpr std::string_view kDefaultOpen =
    "{% if loop.first and messages[0]['role'] != 'system' %}{{ '<|im_start|>system\n";
constexpr std::string_view kDefaultClose = "<|im_end|>\n' }}{% endif %}";
constexpr std::string_view kTail =
    "{{'<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n'}}{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}";

// A JSON string literal (CT2): nlohmann's dump, UTF-8 kept as is.
std::string json_string(const std::string& s) { return nlohmann::json(s).dump(); }

std::string call_text(const ToolCall& c) {
  std::string s = "{\"name\": " + json_string(c.name);
  if (c.kind == "custom") {
    s += ", \"input\": " + json_string(c.arguments);
  } else {
    s += ", \"arguments\": ";
    s += nlohmann::json::accept(c.arguments) ? c.arguments : json_string(c.arguments);
  }
  return s + "}";  // the call's id is not written (CT14): a model copies what it reads
}

class ChatmlEncoder final : public ChatEncoder {
 public:
  ChatmlEncoder(BpeTokenizer tok, ChatmlTemplate t, Token start, Token end)
      : tok_(std::move(tok)), t_(std::move(t)), start_(start), end_(end), newline_(tok_.encode("\n")) {}

  std::string name() const override { return "chatml"; }
  int vocab_size() const override { return tok_.vocab_size(); }

  EncodedConversation encode(const Conversation& c) const override {
    check_token_ids(c, tok_.vocab_size());
    EncodedConversation e;
    // CT14: the request's tools are appended to the system text (akv's generic form).
    const std::string tools = chat::hermes_tools_text(c.tools);
    const bool system0 = !c.messages.empty() && c.messages[0].role == "system" && !c.messages[0].tokens;
    if (!c.messages.empty() && c.messages[0].role != "system" && t_.has_default_system)
      e.preamble = wrap("system\n" + t_.default_system + tools);
    else if (!tools.empty() && !system0)
      e.preamble = wrap("system\n" + tools.substr(2));  // no default system prompt: no blank line before the block
    for (size_t i = 0; i < c.messages.size(); ++i) {
      const Message& m = c.messages[i];
      e.spans.push_back(m.tokens ? *m.tokens : wrap(chatml_message_text(m) + (i == 0 && system0 ? tools : "")));
      for (size_t k = 0; k < m.tool_calls.size(); ++k)
        if (!m.tool_calls[k].id.empty()) e.ignored.push_back("messages[" + std::to_string(i) + "].tool_calls[" + std::to_string(k) + "].id");
    }
    return e;
  }

  std::vector<Token> tokenize(std::string_view text) const override { return tok_.encode(text); }

  std::vector<Token> generation_prompt() const override {
    std::vector<Token> s{start_};
    const std::vector<Token> body = tok_.encode("assistant\n");
    s.insert(s.end(), body.begin(), body.end());
    return s;
  }

  Token end_of_turn() const override { return end_; }

  // Decoded bytes (CT4): specials as their names, an id outside the vocabulary as
  // <|invalid N|>, and a byte that is not part of valid UTF-8 as \xNN.
  std::string render(const std::vector<Token>& ids) const override { return escape_invalid_utf8(bytes(ids)); }

  std::string bytes(const std::vector<Token>& ids) const override {
    std::string out;
    for (Token id : ids) out += id >= 0 && id < tok_.vocab_size() ? tok_.decode({id}) : "<|invalid " + std::to_string(id) + "|>";
    return out;
  }
  bool is_control(Token id) const override {
    return id < 0 || id >= tok_.vocab_size() || is_control_type(tok_.token_type(id));
  }

 private:
  // <|im_start|> text <|im_end|> \n, the text tokenized on its own (CT3).
  std::vector<Token> wrap(const std::string& text) const {
    std::vector<Token> s{start_};
    const std::vector<Token> body = tok_.encode(text);
    s.insert(s.end(), body.begin(), body.end());
    s.push_back(end_);
    s.insert(s.end(), newline_.begin(), newline_.end());
    return s;
  }

  BpeTokenizer tok_;
  ChatmlTemplate t_;
  Token start_, end_;
  std::vector<Token> newline_;
};

}  // namespace

ChatmlTemplate parse_chatml_template(std::string_view text, const std::string& source) {
  const auto fail = [&](const std::string& why) {
    bad(source, "tokenizer.chat_template", why + " (akv implements SmolLM2's ChatML template only)");
  };
  if (!text.starts_with(kHead) || !text.ends_with(kTail)) fail("not the ChatML template");
  std::string_view mid = text.substr(kHead.size(), text.size() - kHead.size() - kTail.size());
  ChatmlTemplate t;
  if (mid.empty()) return t;
  if (!mid.starts_with(kDefaultOpen) || !mid.ends_with(kDefaultClose)) fail("not the ChatML template");
  mid = mid.substr(kDefaultOpen.size(), mid.size() - kDefaultOpen.size() - kDefaultClose.size());
  if (mid.find_first_of("'\\{}") != std::string_view::npos)
    fail("the default system message holds a quote, a backslash or a brace");
  t.has_default_system = true;
  t.default_system = std::string(mid);
  return t;
}

std::string chatml_message_text(const Message& m) {
  std::string s = m.role;
  if (!m.name.empty()) s += " name=" + m.name;
  if (!m.tool_call_id.empty()) s += " tool_call_id=" + m.tool_call_id;
  s += "\n";
  std::string body = m.content;
  if (!m.refusal.empty()) body += (body.empty() ? "" : "\n") + ("<refusal>" + m.refusal + "</refusal>");
  for (const ToolCall& c : m.tool_calls)
    body += (body.empty() ? "" : "\n") + ("<tool_call>\n" + call_text(c) + "\n</tool_call>");
  return s + body;
}

std::shared_ptr<const ChatEncoder> make_chatml_encoder(BpeTokenizer tok, std::string_view chat_template,
                                                       const std::string& source) {
  ChatmlTemplate t = parse_chatml_template(chat_template, source);
  const auto special = [&](const char* name) {
    const auto id = tok.find(name);
    // CT1: a control token, never a user-defined one (GGUF type 4, HF "special": false), whose
    // text a message could spell and so forge a turn.
    if (!id || tok.token_type(*id) != TokenType::kControl)
      bad(source, "tokens",
          std::string(name) + (!id                  ? " is not in the vocabulary"
                               : tok.is_special(*id) ? " is a user-defined token, not a control token (spec/tokenizer.md CT1)"
                                                     : " is not a special (control) token"));
    return *id;
  };
  const Token start = special("<|im_start|>"), end = special("<|im_end|>");
  return std::make_shared<const ChatmlEncoder>(std::move(tok), std::move(t), start, end);
}

std::shared_ptr<const ChatEncoder> make_chatml_encoder(const GgufFile& f) {
  BpeTokenizer tok = BpeTokenizer::from_gguf(f);
  const std::string_view tmpl = f.get_string("tokenizer.chat_template");
  return make_chatml_encoder(std::move(tok), tmpl, f.name());
}

}  // namespace akv::chat
