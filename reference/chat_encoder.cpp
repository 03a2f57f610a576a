#include "reference/chat_encoder.hpp"

#include "reference/tokenizer.hpp"

namespace akv {

namespace {
class FixtureEncoder final : public ChatEncoder {
 public:
  explicit FixtureEncoder(int vocab) : vocab_(vocab) {}
  std::string name() const override { return "fixture"; }
  int vocab_size() const override { return vocab_; }
  EncodedConversation encode(const Conversation& c) const override {
    check_token_ids(c, vocab_);
    EncodedConversation e;
    e.preamble = encode_tools(c.tools);  // IN10: the tools, when any, as the fixture's preamble
    for (const Message& m : c.messages) e.spans.push_back(encode_message(m));
    return e;
  }
  std::vector<Token> tokenize(std::string_view text) const override {
    std::vector<Token> out;
    tok::append_bytes(out, text);
    return out;
  }
  std::string render(const std::vector<Token>& ids) const override { return tok::render(ids); }
  std::string bytes(const std::vector<Token>& ids) const override { return tok::render(ids); }
  bool is_control(Token id) const override { return id < 0 || id >= 256; }  // M5: 256.. are markers and reserved
  std::vector<Token> generation_prompt() const override { return {tok::kAssistant}; }
  Token end_of_turn() const override { return tok::kEnd; }

 private:
  int vocab_;
};
}  // namespace

std::shared_ptr<const ChatEncoder> make_fixture_encoder(int vocab) { return std::make_shared<FixtureEncoder>(vocab); }

}  // namespace akv
