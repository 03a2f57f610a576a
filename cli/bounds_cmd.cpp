// akv bounds FILE [--model tiny|small] [--seed S] [--max-tokens N] [--terms K] [--json]
// Runs a conversation's tokens through every backend, the affine enclosure and the MPFR oracle
// and prints, per next-token logit, the reference's float value, exact value, observed error,
// proven bound and their ratio, then each backend's largest error against the bound
// (spec/bounds.md B11). Exit 0 every logit within a finite bound, 1 a bound violated or
// vacuous (+inf, B15), 2 bad input (spec/input.md IN4, IN5).
//
// akv bounds FILE --per-op [--model M] [--tables all|cpu|cuda-emu | --kernels LIB.so] [--from P] [--max-tokens N]
// Every op of every layer of the reference's forward pass over the conversation, and each
// optimized op table on the same inputs, within B_ref + B_opt of the reference (spec/bounds.md
// B16), on any model (smollm2, a GGUF file, a Hugging Face folder). Exit 0 sound, 1 an op over
// its bound or a bound vacuous, 2 bad input.
//
// akv bounds FILE --a-posteriori [--model M] [--max-tokens N]
// The exact next-token logits enclosed by the reference template on 267-bit intervals, and
// each backend's logits certified within a computed distance of them (spec/bounds.md B17), on
// any model. Exit 0 every enclosure within 1e-20, 1 one wider or a backend logit not finite.
#include <algorithm>
#include <iostream>
#include <memory>

#include "cli/commands.hpp"
#include "cli/options.hpp"
#include "readers/conversation/chat_parse.hpp"
#include "reference/chat.hpp"
#include "reference/error.hpp"
#include "reference/synthetic_spec.hpp"
#include "reference/model.hpp"
#include "cli/shared_options.hpp"
#include "optimized/composed/plugin.hpp"
#include "runtime/backends.hpp"
#include "verify/bounds/a_posteriori.hpp"
#include "verify/bounds/end_to_end.hpp"
#include "verify/check/per_op.hpp"
#include "runtime/models.hpp"

namespace akv::cli {

namespace {
struct BoundsArgs {
  std::string file;
  std::string model = "tiny";
  uint64_t seed = 1;
  size_t max_tokens = 0;  // 0: the whole conversation
  bounds::BoundsOptions opt;
  bool json = false;
  bool per_op = false;
  bool a_posteriori = false;
  long bits = 267;
  std::string tables = "all";
  std::string kernels;
  size_t from = 0;
};

// The tokens of the conversation under the model's own chat encoder, the first max_tokens.
std::vector<Token> conversation_tokens(const Conversation& conv, const ChatEncoder& enc, size_t max_tokens) {
  const EncodedConversation e = enc.encode(conv);
  std::vector<Token> tokens = e.preamble;
  for (const auto& s : e.spans) tokens.insert(tokens.end(), s.begin(), s.end());
  if (max_tokens > 0 && tokens.size() > max_tokens) tokens.resize(max_tokens);
  return tokens;
}

// Prints a report (its to_json with the file, or its to_text) and returns its exit code.
template <class Report>
int print_report(const BoundsArgs& a, const Conversation& conv, const Report& r) {
  using check::to_json, check::to_text, bounds::to_json, bounds::to_text;
  if (a.json) {
    nlohmann::json j = to_json(r);
    j["file"] = a.file;
    j["ignored_fields"] = conv.ignored;
    print_json(j);
  } else {
    std::cout << a.file + "\n" + to_text(r) << std::flush;
  }
  return r.sound() ? 0 : 1;
}

// The bounds (spec/bounds.md) cover the llama block of spec/model.md M11 only: a model with
// another block (M13) is refused naming its architecture, never bounded by the wrong rules.
LoadedModel bounded_model(const std::string& name, uint64_t seed) {
  LoadedModel lm = load_model(name, seed);
  if (lm.model->config.extended())
    throw Error(ErrorCode::kBadInput, "--model " + name + ": akv bounds covers the llama block only; architecture '" +
                                          arch_label(lm.model->config) + "' has no proven bound (spec/model.md M13)");
  return lm;
}

int run_per_op(const BoundsArgs& a) {
  const Conversation conv = load_conversation(a.file);
  const LoadedModel lm = bounded_model(a.model, a.seed);
  const std::vector<Token> tokens = conversation_tokens(conv, *lm.encoder, a.max_tokens);
  std::vector<check::OpTable> tables;
  if (!a.kernels.empty())
    tables.push_back(check::plugin_op_table(load_kernels(a.kernels)));
  else
    tables = check::optimized_op_tables(a.tables == "all" ? "" : a.tables);
  return print_report(a, conv, check::per_op_check(*lm.model, tokens, tables, lm.name, a.from, a.opt.kv));
}

int run_a_posteriori(const BoundsArgs& a) {
  const Conversation conv = load_conversation(a.file);
  const LoadedModel lm = bounded_model(a.model, a.seed);
  const std::vector<Token> tokens = conversation_tokens(conv, *lm.encoder, a.max_tokens);
  return print_report(a, conv, bounds::run_a_posteriori(lm.model, tokens, backend_names(), lm.name, a.bits, a.opt.kv));
}

int run_bounds_cmd(const BoundsArgs& a) {
  if (!a.kernels.empty() || a.tables != "all")
    if (!a.per_op) throw Error(ErrorCode::kBadInput, "--tables and --kernels need --per-op");
  if (a.bits != 267 && !a.a_posteriori) throw Error(ErrorCode::kBadInput, "--bits needs --a-posteriori");
  if (a.from != 0 && !a.per_op) throw Error(ErrorCode::kBadInput, "--from needs --per-op");
  if (a.per_op) return run_per_op(a);
  if (a.a_posteriori) return run_a_posteriori(a);
  const std::vector<std::string> configs = config_names();
  if (std::find(configs.begin(), configs.end(), a.model) == configs.end() && !is_synthetic_spec(a.model))
    throw Error(ErrorCode::kBadInput, "--model " + a.model + ": the end-to-end enclosure runs on the synthetic models (" +
                                          names_help(configs) + ", synthetic:SPEC); --per-op and --a-posteriori run on any model");
  const Conversation conv = load_conversation(a.file);
  const Config config = is_synthetic_spec(a.model) ? synthetic_config(a.model) : config_by_name(a.model);
  check_kv_type(a.opt.kv, config);
  if (config.extended()) bounded_model(a.model, a.seed);  // refused by name
  check_token_ids(conv, config.vocab);
  std::vector<Token> tokens;
  for (const Message& m : conv.messages) {
    const std::vector<Token> span = encode_message(m);
    tokens.insert(tokens.end(), span.begin(), span.end());
  }
  if (a.max_tokens > 0 && tokens.size() > a.max_tokens) tokens.resize(a.max_tokens);
  const auto model = make_model(config, a.seed);
  return print_report(a, conv, bounds::run_bounds(model, a.seed, tokens, a.opt));
}
}  // namespace

Command add_bounds(CLI::App& app) {
  auto a = std::make_shared<BoundsArgs>();
  auto* b = app.add_subcommand("bounds", "Per-logit float value, exact (MPFR) value, observed error and proven bound");
  b->add_option("FILE", a->file, "Conversation: OpenAI chat JSON with \"messages\"")->required()->check(nonempty());
  // Help and accepted values from one registry (model_forms(), spec/model.md M2).
  add_model_option(b, a->model);
  b->add_option("--seed", a->seed, "Weight seed")->capture_default_str()->check(decimal(0, UINT64_MAX));
  b->add_option("--max-tokens", a->max_tokens, "Use only the first N tokens (0: all; the oracle is slow on small)")
      ->capture_default_str()
      ->check(decimal(0, 0x7fffffff));
  b->add_option("--terms", a->opt.max_terms, "Terms one enclosed value keeps (more: tighter bound, slower)")
      ->capture_default_str()
      ->check(decimal(1, size_t{1} << 20));
  b->add_flag("--per-op", a->per_op,
              "Check every op of every layer of the model on the conversation against the reference, each within "
              "B_ref + B_opt (spec/bounds.md B16); any model. Without it: the end-to-end enclosure (B11), synthetic "
              "models only (the oracle is slow beyond tiny)");
  b->add_flag("--a-posteriori", a->a_posteriori,
              "Enclose the exact next-token logits with 267-bit intervals and certify each backend's distance to "
              "them (spec/bounds.md B17): this input and these backends only, not a bound for every backend; any model")
      ->excludes("--per-op");
  b->add_option("--bits", a->bits, "With --a-posteriori: the intervals' precision in bits (deeper models need more)")
      ->capture_default_str()
      ->check(decimal(64, 100000));
  auto* tab = b->add_option("--tables", a->tables, "With --per-op: the op tables checked: all, cpu (every ISA this CPU has), cuda-emu")
      ->capture_default_str()
      ->check(one_of({"all", "cpu", "cuda-emu"}));
  b->add_option("--from", a->from,
                "With --per-op: check positions from P on (the tokens before P run through the reference alone, "
                "for their keys and values): e.g. a tool result's span")
      ->capture_default_str()
      ->check(decimal(0, 0x7fffffff));
  b->add_option("--kernels", a->kernels, "With --per-op: check a kernel library's ops (include/akv/kernels.h) instead")
      ->check(nonempty())
      ->excludes(tab);
  add_kv_type_option(b, a->opt.kv);
  b->add_flag("--json", a->json, "Print one JSON object instead of text");
  return {b, [a] { return run_bounds_cmd(*a); }};
}

}  // namespace akv::cli
