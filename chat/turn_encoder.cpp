#include "chat/turn_encoder.hpp"

#include <functional>
#include <optional>
#include <unordered_map>
#include <unordered_set>

#include "readers/tokenizer/bpe_tokenizer.hpp"
#include "readers/tokenizer/spm_tokenizer.hpp"
#include "reference/error.hpp"

namespace akv::chat {

using namespace readers;  // the tokenizers and the GGUF file the templates render over

namespace {

// The two tokenizers behind one face: text -> ids, one id -> its bytes, and the bytes a call
// puts before the text (SentencePiece's space prefix).
struct Tokenizer {
  std::optional<BpeTokenizer> bpe;
  std::optional<SpmTokenizer> spm;
  std::vector<Token> encode(std::string_view s) const { return bpe ? bpe->encode(s) : spm->encode(s); }
  std::string decode(Token id) const { return bpe ? bpe->decode({id}) : spm->decode({id}); }
  size_t prefix_bytes() const { return spm && spm->options().add_space_prefix ? 1 : 0; }
  int vocab_size() const { return bpe ? bpe->vocab_size() : spm->vocab_size(); }
  const std::string& token_text(Token id) const { return bpe ? bpe->token_text(id) : spm->token_text(id); }
  TokenType token_type(Token id) const { return bpe ? bpe->token_type(id) : spm->token_type(id); }
};

class TurnEncoder final : public ChatEncoder {
 public:
  TurnEncoder(TurnTemplate t, Tokenizer tok, const std::string& source) : t_(t), tok_(std::move(tok)) {
    std::unordered_map<std::string, Token> control;
    for (Token id = 0; id < tok_.vocab_size(); ++id)
      if (tok_.token_type(id) == TokenType::kControl) control.emplace(tok_.token_text(id), id);
    // Every special the template can write must be a control token: text never makes one (T6).
    Conversation probe;
    const std::vector<const char*> roles = t_ == TurnTemplate::kPhi3 ? std::vector<const char*>{"user", "assistant"}
                                                                   : std::vector<const char*>{"system", "user", "assistant", "tool"};
    for (const char* role : roles) probe.messages.push_back(Message{.role = role, .content = {}, .name = {}, .tool_call_id = {}, .refusal = {}, .tool_calls = {}, .tokens = {}});
    const TurnRendering r = render_turns(t_, probe);
    std::vector<TurnPiece> all = r.preamble;
    for (const auto& m : r.messages) all.insert(all.end(), m.begin(), m.end());
    for (const TurnPiece& p : turn_generation_prompt(t_)) all.push_back(p);
    all.push_back({true, turn_end_token(t_)});
    for (const TurnPiece& p : all) {
      if (!p.special || special_.count(p.text)) continue;
      const auto it = control.find(p.text);
      if (it == control.end())
        throw Error(ErrorCode::kBadModel, source + ": tokens: " + p.text + " is not a control token of the vocabulary (the " +
                                              turn_template_names()[static_cast<size_t>(t_)] + " template writes it, spec/tokenizer.md CT10)");
      special_.emplace(p.text, it->second);
    }
    gen_ = ids_of(turn_generation_prompt(t_));
    for (const std::string& s : turn_rstrip_specials(t_)) rstrip_.insert(s);
  }

  std::string name() const override { return turn_template_names()[static_cast<size_t>(t_)]; }
  int vocab_size() const override { return tok_.vocab_size(); }

  EncodedConversation encode(const Conversation& c) const override {
    check_token_ids(c, tok_.vocab_size());
    const TurnRendering r = render_turns(t_, c);
    EncodedConversation e;
    e.spans.resize(c.messages.size());
    e.ignored = r.ignored;
    // Owner -1 is the preamble. Text runs across owners are tokenized whole (CT10).
    std::string run;
    std::vector<std::pair<size_t, int>> owners;  // (first byte in run, owner), increasing
    const auto out = [&](int owner) -> std::vector<Token>& { return owner < 0 ? e.preamble : e.spans[owner]; };
    const auto flush = [&] {
      if (run.empty()) return;
      const std::vector<Token> ids = tok_.encode(run);
      size_t at = 0, k = 0;  // byte offset of the token's first byte in prefix + run
      const size_t prefix = tok_.prefix_bytes();
      for (Token id : ids) {
        const size_t first = at > prefix ? at - prefix : 0;
        while (k + 1 < owners.size() && owners[k + 1].first <= first) ++k;
        out(owners[k].second).push_back(id);
        at += tok_.decode(id).size();
      }
      if (at != run.size() + prefix)
        throw Error(ErrorCode::kBadModel, "tokenizer: its tokens decode to " + std::to_string(at) + " bytes for a text of " +
                                              std::to_string(run.size() + prefix) + " (spec/tokenizer.md CT10)");
      run.clear();
      owners.clear();
    };
    bool strip = false;  // after an rstrip special: leading ASCII whitespace is removed
    const auto emit = [&](const std::vector<TurnPiece>& pieces, int owner) {
      for (const TurnPiece& p : pieces) {
        if (p.special) {
          flush();
          out(owner).push_back(special_.at(p.text));
          strip = rstrip_.count(p.text) > 0;
          continue;
        }
        std::string_view t = p.text;
        if (strip) {
          const size_t k = t.find_first_not_of(" \t\n\v\f\r");
          t.remove_prefix(k == std::string_view::npos ? t.size() : k);
          strip = t.empty();
        }
        if (t.empty()) continue;
        if (owners.empty() || owners.back().second != owner) owners.emplace_back(run.size(), owner);
        run += t;
      }
    };
    emit(r.preamble, -1);
    for (size_t i = 0; i < c.messages.size(); ++i) {
      if (c.messages[i].tokens) {
        flush();
        e.spans[i] = *c.messages[i].tokens;
      } else {
        emit(r.messages[i], static_cast<int>(i));
      }
    }
    flush();
    return e;
  }

  std::vector<Token> tokenize(std::string_view text) const override { return tok_.encode(text); }

  std::string render(const std::vector<Token>& ids) const override { return bytes(ids); }
  std::string bytes(const std::vector<Token>& ids) const override {
    std::string s;
    for (Token id : ids) s += id >= 0 && id < tok_.vocab_size() ? tok_.decode(id) : "<|invalid " + std::to_string(id) + "|>";
    return s;
  }
  bool is_control(Token id) const override {
    return id < 0 || id >= tok_.vocab_size() || is_control_type(tok_.token_type(id));
  }

  std::vector<Token> generation_prompt() const override { return gen_; }
  ToolSyntax tool_syntax() const override {
    return t_ == TurnTemplate::kLlama3 ? ToolSyntax::kLlamaJson : t_ == TurnTemplate::kPhi3 ? ToolSyntax::kNone : ToolSyntax::kHermes;
  }
  Token end_of_turn() const override { return special_.at(turn_end_token(t_)); }

 private:
  std::vector<Token> ids_of(const std::vector<TurnPiece>& pieces) const {
    std::vector<Token> ids;
    for (const TurnPiece& p : pieces) {
      if (p.special) {
        ids.push_back(special_.at(p.text));
      } else {
        const std::vector<Token> t = tok_.encode(p.text);
        ids.insert(ids.end(), t.begin(), t.end());
      }
    }
    return ids;
  }

  TurnTemplate t_;
  Tokenizer tok_;
  std::unordered_map<std::string, Token> special_;
  std::vector<Token> gen_;
  std::unordered_set<std::string> rstrip_;
};

}  // namespace

std::shared_ptr<const ChatEncoder> make_turn_encoder(TurnTemplate t, BpeTokenizer tok, const std::string& source) {
  Tokenizer both;
  both.bpe.emplace(std::move(tok));
  return std::make_shared<TurnEncoder>(t, std::move(both), source);
}

std::shared_ptr<const ChatEncoder> make_turn_encoder(TurnTemplate t, SpmTokenizer tok, const std::string& source) {
  Tokenizer both;
  both.spm.emplace(std::move(tok));
  return std::make_shared<TurnEncoder>(t, std::move(both), source);
}

std::shared_ptr<const ChatEncoder> make_turn_encoder(TurnTemplate t, const GgufFile& f) {
  const std::string model(f.get_string("tokenizer.ggml.model"));
  if (model == "llama") return make_turn_encoder(t, SpmTokenizer::from_gguf(f), f.name());
  return make_turn_encoder(t, BpeTokenizer::from_gguf(f), f.name());  // refuses any other model by name
}

}  // namespace akv::chat
