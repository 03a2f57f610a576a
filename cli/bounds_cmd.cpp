// akv bounds FILE [--model tiny|small] [--seed S] [--max-tokens N] [--terms K] [--json]
// Runs a conversation's tokens through every backend, the affine enclosure and the MPFR oracle
// and prints, per next-token logit, the reference's float value, exact value, observed error,
// proven bound and their ratio, then each backend's largest error against the bound
// (spec/bounds.md B11). Exit 0 every logit within a finite bound, 1 a bound violated or
// vacuous (+inf, B15), 2 bad input (spec/input.md IN4, IN5).
#include <iostream>
#include <memory>

#include "cli/commands.hpp"
#include "cli/options.hpp"
#include "readers/conversation/chat_parse.hpp"
#include "reference/chat.hpp"
#include "reference/error.hpp"
#include "reference/model.hpp"
#include "verify/bounds/end_to_end.hpp"

namespace akv::cli {

namespace {
struct BoundsArgs {
  std::string file;
  std::string model = "tiny";
  uint64_t seed = 1;
  size_t max_tokens = 0;  // 0: the whole conversation
  bounds::BoundsOptions opt;
  bool json = false;
};

int run_bounds_cmd(const BoundsArgs& a) {
  const Conversation conv = load_conversation(a.file);
  const Config config = config_by_name(a.model);
  check_token_ids(conv, config.vocab);
  std::vector<Token> tokens;
  for (const Message& m : conv.messages) {
    const std::vector<Token> span = encode_message(m);
    tokens.insert(tokens.end(), span.begin(), span.end());
  }
  if (a.max_tokens > 0 && tokens.size() > a.max_tokens) tokens.resize(a.max_tokens);
  const auto model = make_model(config, a.seed);
  const bounds::BoundsReport r = bounds::run_bounds(model, a.seed, tokens, a.opt);
  if (a.json) {
    nlohmann::json j = bounds::to_json(r);
    j["file"] = a.file;
    j["ignored_fields"] = conv.ignored;
    print_json(j);
  } else {
    std::cout << a.file + "\n" + bounds::to_text(r) << std::flush;
  }
  return r.sound() ? 0 : 1;
}
}  // namespace

Command add_bounds(CLI::App& app) {
  auto a = std::make_shared<BoundsArgs>();
  auto* b = app.add_subcommand("bounds", "Per-logit float value, exact (MPFR) value, observed error and proven bound");
  b->add_option("FILE", a->file, "Conversation: OpenAI chat JSON with \"messages\"")->required()->check(nonempty());
  // Help and accepted values from one registry (config_names(), spec/model.md M2).
  b->add_option("--model", a->model, "Model config: " + names_help(config_names()) + " (the oracle is slow beyond tiny)")
      ->capture_default_str()
      ->check(one_of(config_names()));
  b->add_option("--seed", a->seed, "Weight seed")->capture_default_str()->check(decimal(0, UINT64_MAX));
  b->add_option("--max-tokens", a->max_tokens, "Use only the first N tokens (0: all; the oracle is slow on small)")
      ->capture_default_str()
      ->check(decimal(0, 0x7fffffff));
  b->add_option("--terms", a->opt.max_terms, "Terms one enclosed value keeps (more: tighter bound, slower)")
      ->capture_default_str()
      ->check(decimal(1, size_t{1} << 20));
  b->add_flag("--json", a->json, "Print one JSON object instead of text");
  return {b, [a] { return run_bounds_cmd(*a); }};
}

}  // namespace akv::cli
