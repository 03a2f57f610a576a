// akv tokenize FILE [--model M] [--json]
// The ids a model's encoder gives a conversation, span by span (spec/tokenizer.md, spec/input.md
// IN1): what the witness appends, so another implementation can be fed exactly the same ids.
#include <iostream>
#include <memory>

#include "cli/commands.hpp"
#include "cli/options.hpp"
#include "cli/shared_options.hpp"
#include "readers/conversation/chat_parse.hpp"
#include "verify/models.hpp"
#include "verify/witness.hpp"

namespace akv::cli {

namespace {
struct TokenizeArgs {
  std::string file;
  std::string model = "smollm2";
  uint64_t seed = 1;
  bool json = false;
};

int run_tokenize(const TokenizeArgs& a) {
  const Conversation conv = load_conversation(a.file);
  const LoadedModel lm = load_model(a.model, a.seed);
  const EncodedConversation enc = lm.encoder->encode(conv);
  nlohmann::json spans = nlohmann::json::array();
  std::vector<Token> all = enc.preamble;
  if (!enc.preamble.empty()) spans.push_back({{"message", nullptr}, {"start", 0}, {"length", enc.preamble.size()}});
  for (size_t i = 0; i < enc.spans.size(); ++i) {
    spans.push_back({{"message", i}, {"start", all.size()}, {"length", enc.spans[i].size()}});
    all.insert(all.end(), enc.spans[i].begin(), enc.spans[i].end());
  }
  if (a.json) {
    print_json({{"file", a.file}, {"model", lm.name}, {"encoder", lm.encoder->name()}, {"tokens", all}, {"spans", spans}});
    return 0;
  }
  std::string out = a.file + ": " + std::to_string(all.size()) + " tokens, model " + lm.name + " (" + lm.encoder->name() + ")\n";
  if (!enc.preamble.empty()) out += "preamble: " + lm.encoder->render(enc.preamble) + "\n";
  for (size_t i = 0; i < enc.spans.size(); ++i)
    out += "message " + std::to_string(i) + " (" + std::to_string(enc.spans[i].size()) + " tokens): " +
           lm.encoder->render(enc.spans[i]) + "\n";
  std::cout << out << std::flush;
  return 0;
}
}  // namespace

Command add_tokenize(CLI::App& app) {
  auto a = std::make_shared<TokenizeArgs>();
  auto* t = app.add_subcommand("tokenize", "Print the token ids of a conversation under a model's tokenizer and chat template");
  t->add_option("FILE", a->file, "Conversation: OpenAI chat JSON")->required()->check(nonempty());
  add_model_option(t, a->model);
  t->add_option("--seed", a->seed, "Weight seed (synthetic models)")->capture_default_str()->check(decimal(0, UINT64_MAX));
  t->add_flag("--json", a->json, "Print one JSON object: tokens and spans");
  return {t, [a] { return run_tokenize(*a); }};
}

}  // namespace akv::cli
