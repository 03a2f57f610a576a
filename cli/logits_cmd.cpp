// akv logits FILE [--model M] [--backend B] [--kv-type T] [--positions last|all] (--out F.npy | --json)
// The logits a model produces on a conversation, so anyone can compare akv with another
// implementation (docs/crosscheck.md). The conversation is appended span by span, as the
// witness does (preamble first, then one span per message).
#include <fmt/format.h>
#include <iostream>
#include <memory>

#include "cli/commands.hpp"
#include "cli/options.hpp"
#include "cli/shared_options.hpp"
#include "readers/conversation/chat_parse.hpp"
#include "reference/error.hpp"
#include "reference/session.hpp"
#include "runtime/backends.hpp"
#include "verify/compare.hpp"
#include "runtime/models.hpp"
#include "verify/npy.hpp"
#include "verify/witness.hpp"

namespace akv::cli {

namespace {
struct LogitsArgs {
  std::string file;
  std::string model = "smollm2";
  uint64_t seed = 1;
  std::string backend = "cpu";
  std::string positions = "last";
  std::string out;
  bool json = false;
  BackendOptions bo;
  KvType kv_type = KvType::kF32;
};

int run_logits(const LogitsArgs& a) {
  if (a.out.empty() == !a.json) throw Error(ErrorCode::kBadInput, "give exactly one of --out F.npy and --json");
  const bool all = a.positions == "all";
  const Conversation conv = load_conversation(a.file);
  const LoadedModel lm = load_model(a.model, a.seed);
  const EncodedConversation enc = lm.encoder->encode(conv);
  const Config& c = lm.model->config;
  if (enc.tokens() > static_cast<size_t>(c.max_ctx))
    throw Error(ErrorCode::kContextOverflow,
                fmt::format("conversation is {} tokens, more than model '{}' holds ({})", enc.tokens(), lm.name, c.max_ctx));
  auto backend = make_backend(a.backend, lm.model, a.bo);
  Session s(*backend, a.kv_type);
  std::vector<float> rows;
  std::vector<size_t> positions;
  auto add = [&](SpanId id, const std::vector<Token>& span) {
    const size_t start = s.size();
    const std::vector<float> l = s.append(id, span, all ? LogitRows::kAll : LogitRows::kLast);
    if (all) {
      rows.insert(rows.end(), l.begin(), l.end());
      for (size_t i = 0; i < span.size(); ++i) positions.push_back(start + i);
    }
  };
  if (!enc.preamble.empty()) add(kPreambleSpan, enc.preamble);
  for (size_t i = 0; i < enc.spans.size(); ++i) add(i, enc.spans[i]);
  if (!all) {
    rows.assign(s.logits().begin(), s.logits().end());
    positions = {s.size() - 1};
  }
  const size_t vocab = static_cast<size_t>(c.vocab);
  // A5: a NaN or an Inf is never handed on as a logit (JSON would carry it as null); exit 1.
  if (const size_t i = first_non_finite(rows); i < rows.size()) {
    std::cerr << fmt::format("akv logits: {}: the logits hold {} at position {}, vocab index {}: nothing written (a "
                             "non-finite logit compares as nothing, spec/arithmetic.md A5)\n",
                             a.file, rows[i], positions[i / vocab], i % vocab);
    return 1;
  }
  if (a.json) {
    nlohmann::json l = nlohmann::json::array();
    for (size_t r = 0; r < positions.size(); ++r)
      l.push_back(std::vector<float>(rows.begin() + static_cast<std::ptrdiff_t>(r * vocab),
                                     rows.begin() + static_cast<std::ptrdiff_t>((r + 1) * vocab)));
    print_json({{"file", a.file}, {"model", lm.name}, {"backend", backend->name()}, {"kv_type", kv_type_name(a.kv_type)}, {"tokens", s.tokens()},
                {"positions", positions}, {"logits", l}});
    return 0;
  }
  write_npy_f32(a.out, rows, {positions.size(), vocab});
  std::cout << fmt::format("{}: float32 ({}, {}): logits at {} position(s) of {} tokens, model {}, backend {}\n", a.out,
                           positions.size(), vocab, a.positions, s.size(), lm.name, backend->name())
            << std::flush;
  return 0;
}
}  // namespace

Command add_logits(CLI::App& app) {
  auto a = std::make_shared<LogitsArgs>();
  auto* l = app.add_subcommand("logits", "Print or write the logits a model produces on a conversation");
  l->add_option("FILE", a->file, "Conversation: OpenAI chat JSON")->required()->check(nonempty());
  add_model_option(l, a->model);
  l->add_option("--seed", a->seed, "Weight seed (synthetic models)")->capture_default_str()->check(decimal(0, UINT64_MAX));
  add_backend_options(l, a->backend, a->bo);
  add_kv_type_option(l, a->kv_type);
  l->add_option("--positions", a->positions, "last: the next-token logits; all: one row per token")
      ->capture_default_str()
      ->check(one_of({"last", "all"}));
  l->add_option("--out", a->out, "Write float32 .npy (rows, vocab)");
  l->add_flag("--json", a->json, "Print one JSON object: tokens, positions, logits");
  return {l, [a] { return run_logits(*a); }};
}

}  // namespace akv::cli
