// akv tokenize FILE [--model M] [--json]
// akv tokenize FILE... --vocab VOCAB.gguf [--json]
// The ids a model's encoder gives a conversation, span by span (spec/tokenizer.md, spec/input.md
// IN1): what the witness appends, so another implementation can be fed exactly the same ids.
// With --vocab, the ids a GGUF file's tokenizer alone gives each FILE's bytes as plain text
// (spec/tokenizer.md T9-T12): a vocab-only file has no weights, and no chat template is applied.
#include <cerrno>
#include <cstring>
#include <fstream>
#include <iostream>
#include <iterator>
#include <memory>
#include <optional>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "cli/commands.hpp"
#include "cli/options.hpp"
#include "cli/shared_options.hpp"
#include "readers/conversation/chat_parse.hpp"
#include "readers/gguf/gguf.hpp"
#include "readers/tokenizer/bpe_tokenizer.hpp"
#include "readers/tokenizer/gguf_tokenizer_keys.hpp"
#include "readers/tokenizer/spm_tokenizer.hpp"
#include "chat/turn_encoder.hpp"
#include "reference/error.hpp"
#include "reference/strict.hpp"
#include "runtime/models.hpp"
#include "verify/witness.hpp"

namespace akv::cli {

namespace {
struct TokenizeArgs {
  std::vector<std::string> files;
  std::string model = "smollm2";
  std::string vocab;
  std::string chat_template;
  uint64_t seed = 1;
  bool json = false;
};

// The bytes of `path`, whatever they are (T5, T10 say how invalid UTF-8 is read).
std::string read_bytes(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw Error(ErrorCode::kBadInput, printable(path, 200) + ": cannot open (" + std::strerror(errno) + ")");
  std::string s((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  if (f.bad()) throw Error(ErrorCode::kBadInput, printable(path, 200) + ": cannot read");
  return s;
}

// --vocab: each FILE's bytes tokenized as text by the file's tokenizer alone (T9-T12): byte-level
// BPE for tokenizer.ggml.model gpt2, SentencePiece for llama; any other model is refused by name.
int run_tokenize_text(const TokenizeArgs& a) {
  const readers::GgufFile g = readers::GgufFile::open(a.vocab);
  const std::string model(g.get_string("tokenizer.ggml.model"));
  std::optional<readers::SpmTokenizer> spm;
  std::optional<readers::BpeTokenizer> bpe;
  if (model == "llama") spm.emplace(readers::SpmTokenizer::from_gguf(g));
  else if (model == "gpt2") bpe.emplace(readers::BpeTokenizer::from_gguf(g));
  else readers::expect_tokenizer_model(g, "gpt2", "gpt2: byte-level BPE, and llama: SentencePiece");
  const std::string pre(g.find_string("tokenizer.ggml.pre").value_or("default"));
  const int vocab_size = spm ? spm->vocab_size() : bpe->vocab_size();
  nlohmann::json texts = nlohmann::json::array();
  std::string out;
  for (const std::string& file : a.files) {
    const std::string bytes = read_bytes(file);
    const std::vector<Token> ids = spm ? spm->encode(bytes) : bpe->encode(bytes);
    if (a.json) {
      texts.push_back({{"file", file}, {"tokens", ids}});
      continue;
    }
    out += file + ": " + std::to_string(ids.size()) + " tokens:";
    for (Token t : ids) out += " " + std::to_string(t);
    out += "\n";
  }
  if (a.json) {
    print_json({{"vocab", a.vocab}, {"model", model}, {"pre", pre}, {"vocab_size", vocab_size}, {"texts", texts}});
    return 0;
  }
  std::cout << "vocab " << a.vocab << " (" << (spm ? "SentencePiece" : "pre-tokenizer " + pre) << ", " << vocab_size
            << " tokens)\n" << out << std::flush;
  return 0;
}

// --vocab with --template: one conversation rendered by a turn template (CT6-CT10) over the
// file's tokenizer; each span's text is printed too, so the rendering can be compared with Jinja.
int run_tokenize_template(const TokenizeArgs& a) {
  if (a.files.size() != 1)
    throw Error(ErrorCode::kBadInput, "tokenize --template: one conversation FILE, " + std::to_string(a.files.size()) + " given");
  const chat::TurnTemplate t = chat::turn_template_by_name(a.chat_template);
  const readers::GgufFile g = readers::GgufFile::open(a.vocab);
  const auto encoder = chat::make_turn_encoder(t, g);
  const Conversation conv = load_conversation(a.files[0]);
  const EncodedConversation enc = encoder->encode(conv);
  const chat::TurnRendering r = chat::render_turns(t, conv);
  const auto text_of = [](const std::vector<chat::TurnPiece>& pieces) {
    std::string s;
    for (const auto& p : pieces) s += p.text;
    return s;
  };
  std::vector<Token> all = enc.preamble;
  std::string text = text_of(r.preamble);
  nlohmann::json spans = nlohmann::json::array();
  spans.push_back({{"message", nullptr}, {"start", 0}, {"length", enc.preamble.size()}, {"text", text}});
  for (size_t i = 0; i < enc.spans.size(); ++i) {
    const std::string piece = conv.messages[i].tokens ? "" : text_of(r.messages[i]);
    spans.push_back({{"message", i}, {"start", all.size()}, {"length", enc.spans[i].size()}, {"text", piece}});
    all.insert(all.end(), enc.spans[i].begin(), enc.spans[i].end());
    text += piece;
  }
  std::vector<std::string> ignored = conv.ignored;
  ignored.insert(ignored.end(), enc.ignored.begin(), enc.ignored.end());
  if (a.json) {
    print_json({{"file", a.files[0]}, {"vocab", a.vocab}, {"template", encoder->name()}, {"text", text}, {"tokens", all},
                {"spans", spans}, {"ignored_fields", ignored}});
    return 0;
  }
  std::string out = a.files[0] + ": " + std::to_string(all.size()) + " tokens, template " + encoder->name() + "\n";
  if (!enc.preamble.empty()) out += "preamble: " + encoder->render(enc.preamble) + "\n";
  for (size_t i = 0; i < enc.spans.size(); ++i)
    out += "message " + std::to_string(i) + " (" + std::to_string(enc.spans[i].size()) + " tokens): " +
           encoder->render(enc.spans[i]) + "\n";
  for (const std::string& f : ignored) out += "ignored (the template does not render it): " + f + "\n";
  std::cout << out << std::flush;
  return 0;
}

int run_tokenize(const TokenizeArgs& a) {
  if (!a.chat_template.empty()) {
    if (a.vocab.empty()) throw Error(ErrorCode::kBadInput, "tokenize --template needs --vocab (the tokenizer to render over)");
    return run_tokenize_template(a);
  }
  if (!a.vocab.empty()) return run_tokenize_text(a);
  if (a.files.size() != 1)
    throw Error(ErrorCode::kBadInput, "tokenize: one conversation FILE, " + std::to_string(a.files.size()) +
                                          " given (several FILEs are text, with --vocab)");
  const std::string& file = a.files[0];
  const Conversation conv = load_conversation(file);
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
    print_json({{"file", file}, {"model", lm.name}, {"encoder", lm.encoder->name()}, {"tokens", all}, {"spans", spans}});
    return 0;
  }
  std::string out = file + ": " + std::to_string(all.size()) + " tokens, model " + lm.name + " (" + lm.encoder->name() + ")\n";
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
  t->add_option("FILE", a->files, "Conversation: OpenAI chat JSON; with --vocab, text files (their bytes)")
      ->required()
      ->check(nonempty());
  add_model_option(t, a->model);
  t->add_option("--vocab", a->vocab,
                "A GGUF file's tokenizer alone (no weights needed: llama.cpp's vocab-only files; "
                "tokenizer.ggml.model gpt2 with pre-tokenizer " + std::string(readers::pre_tokenizer_names()) +
                ", or llama: SentencePiece): tokenize each FILE's bytes as text, no chat template")
      ->check(nonempty())
      ->excludes(t->get_option("--model"));
  t->add_option("--template", a->chat_template,
                 "With --vocab: FILE is one conversation, rendered by this chat template (" +
                     fmt::format("{}", fmt::join(chat::turn_template_names(), ", ")) + ", spec/tokenizer.md CT6-CT10)")
      ->check(CLI::IsMember(chat::turn_template_names()));
  t->add_option("--seed", a->seed, "Weight seed (synthetic models)")->capture_default_str()->check(decimal(0, UINT64_MAX));
  t->add_flag("--json", a->json, "Print one JSON object: tokens and spans (with --vocab: each file's tokens)");
  return {t, [a] { return run_tokenize(*a); }};
}

}  // namespace akv::cli
