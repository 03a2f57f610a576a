#include "chat/gemma_chat.hpp"

#include "chat/chatml.hpp"
#include "chat/tools.hpp"
#include "chat/turn_templates.hpp"
#include "reference/error.hpp"

namespace akv::chat {

using namespace readers;  // the tokenizers and the GGUF file the templates render over

namespace {

class GemmaEncoder final : public ChatEncoder {
 public:
  GemmaEncoder(SpmTokenizer tok, Token start, Token end)
      : tok_(std::move(tok)), start_(start), end_(end), newline_(tok_.encode("\n")) {}

  std::string name() const override { return "gemma"; }
  int vocab_size() const override { return tok_.vocab_size(); }

  EncodedConversation encode(const Conversation& c) const override {
    check_token_ids(c, tok_.vocab_size());
    EncodedConversation e;
    if (tok_.options().add_bos && tok_.options().bos) e.preamble = {*tok_.options().bos};
    const auto& ms = c.messages;
    // The template's first_user_prefix: a leading system message goes into the first user turn.
    const bool fold = ms.size() >= 2 && (ms[0].role == "system" || ms[0].role == "developer") && !ms[0].tokens &&
                      ms[0].name.empty() && ms[1].role == "user" && !ms[1].tokens;
    // CT14: the tools join the system text (akv's generic form): the folded system message's,
    // else a user turn of their own in the preamble, left open for a first user message.
    const std::string tools = chat::hermes_tools_text(c.tools);
    const bool tools_open = !tools.empty() && !fold && !ms.empty() && ms[0].role == "user" && !ms[0].tokens;
    if (!tools.empty() && !fold) {
      e.preamble.push_back(start_);
      append(e.preamble, tok_.encode("user\n" + tools.substr(2) + (tools_open ? "\n\n" : "")));
      if (!tools_open) close(e.preamble);
    }
    for (size_t i = 0; i < ms.size(); ++i) {
      const Message& m = ms[i];
      for (size_t k = 0; k < m.tool_calls.size(); ++k)  // CT14: calls are written without their ids
        if (!m.tool_calls[k].id.empty()) e.ignored.push_back("messages[" + std::to_string(i) + "].tool_calls[" + std::to_string(k) + "].id");
      if (m.tokens) {
        e.spans.push_back(*m.tokens);
      } else if (fold && i == 0) {
        std::vector<Token> s{start_};
        append(s, tok_.encode("user\n" + m.content + tools + "\n\n"));  // the template does not trim it
        e.spans.push_back(std::move(s));
      } else if ((fold && i == 1) || (tools_open && i == 0)) {
        std::vector<Token> s = tok_.encode(gemma_turn_text(m));
        close(s);
        e.spans.push_back(std::move(s));
      } else {
        std::vector<Token> s{start_};
        append(s, tok_.encode(std::string(m.role == "assistant" ? "model" : "user") + "\n" + gemma_turn_text(m)));
        close(s);
        e.spans.push_back(std::move(s));
      }
    }
    return e;
  }

  std::vector<Token> tokenize(std::string_view text) const override { return tok_.encode(text); }

  std::vector<Token> generation_prompt() const override {
    std::vector<Token> s{start_};
    append(s, tok_.encode("model\n"));
    return s;
  }

  Token end_of_turn() const override { return end_; }

  std::string bytes(const std::vector<Token>& ids) const override {
    std::string out;
    for (Token id : ids) out += id >= 0 && id < tok_.vocab_size() ? tok_.decode({id}) : "<|invalid " + std::to_string(id) + "|>";
    return out;
  }
  bool is_control(Token id) const override {
    return id < 0 || id >= tok_.vocab_size() || is_control_type(tok_.token_type(id));
  }

  std::string render(const std::vector<Token>& ids) const override {
    std::string out;
    for (Token id : ids) {
      if (id < 0 || id >= tok_.vocab_size()) {
        out += "<|invalid " + std::to_string(id) + "|>";
        continue;
      }
      for (unsigned char ch : tok_.decode({id})) {
        if (ch >= 0x20 || ch == '\n' || ch == '\t') out += static_cast<char>(ch);
        else {
          static const char* hex = "0123456789ABCDEF";
          out += std::string("\\x") + hex[ch >> 4] + hex[ch & 15];
        }
      }
    }
    return out;
  }

 private:
  static void append(std::vector<Token>& s, const std::vector<Token>& t) { s.insert(s.end(), t.begin(), t.end()); }
  void close(std::vector<Token>& s) const {
    s.push_back(end_);
    append(s, newline_);
  }

  SpmTokenizer tok_;
  Token start_, end_;
  std::vector<Token> newline_;
};

}  // namespace

std::string gemma_turn_text(const Message& m) {
  Message body = m;
  body.content = python_strip(m.content);  // Jinja's trim is str.strip() (CT6)
  const bool plain = (m.role == "user" || m.role == "assistant") && m.name.empty() && m.tool_call_id.empty();
  const std::string text = chatml_message_text(body);  // "HEADER\nBODY"
  return plain ? text.substr(text.find('\n') + 1) : text;
}

std::shared_ptr<const ChatEncoder> make_gemma_encoder(SpmTokenizer tok, const std::string& source) {
  const auto control = [&](const std::string& name) {
    for (Token id = 0; id < tok.vocab_size(); ++id)
      if (tok.token_text(id) == name) {
        if (tok.token_type(id) != TokenType::kControl)
          throw Error(ErrorCode::kBadModel, source + ": tokens: " + name + " is not a control token (spec/tokenizer.md CT12)");
        return id;
      }
    throw Error(ErrorCode::kBadModel, source + ": tokens: " + name + " is not in the vocabulary (Gemma's turn template needs it, spec/tokenizer.md CT12)");
  };
  const Token start = control("<start_of_turn>"), end = control("<end_of_turn>");
  return std::make_shared<const GemmaEncoder>(std::move(tok), start, end);
}

std::shared_ptr<const ChatEncoder> make_gemma_encoder(const GgufFile& f) {
  return make_gemma_encoder(SpmTokenizer::from_gguf(f), f.name());
}

}  // namespace akv::chat
