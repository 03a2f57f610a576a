// SV2: a streamed reply joins to the plain reply, whatever the seed, the stop strings and the
// model: what a stream holds back (a tail that may still become a stop string, a partial UTF-8
// sequence) is sent at the end of the turn. A property over the engine (no HTTP).
#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>

#include <map>
#include <memory>
#include <string>

#include "readers/conversation/chat_parse.hpp"
#include "serve/chat_request.hpp"
#include "serve/engine.hpp"
#include "support.hpp"
#include "runtime/backends.hpp"

namespace akv {
namespace {

serve::Engine& engine_of(const std::string& model) {
  static std::map<std::string, std::unique_ptr<serve::Engine>> engines;
  auto& e = engines[model];
  if (!e) {
    LoadedModel lm = load_model(model, 1);
    auto b = make_backend("cpu", lm.model, {});
    e = std::make_unique<serve::Engine>(std::move(lm), std::move(b), serve::EngineOptions{});
  }
  return *e;
}

// The deltas of a reply, joined, and the reply.
std::pair<std::string, serve::Reply> run(serve::Engine& e, const std::string& body) {
  auto g = e.submit(serve::parse_chat_request(body), "");
  std::string joined;
  serve::TokenEvent ev;
  while (g->next_event(ev)) joined += ev.delta;
  return {joined, g->reply()};
}

RC_GTEST_PROP(SV2_Stream, TheDeltasJoinToThePlainReplyForAnySeedStopAndModel, ()) {
  const std::string model = *rc::gen::element<std::string>("tiny", "tiny-qwen2", "tiny-gemma3");
  const uint64_t seed = *rc::gen::inRange<uint64_t>(0, 1000000);
  const int max_tokens = *rc::gen::inRange(1, 40);
  const double temperature = *rc::gen::element(0.0, 0.8, 1.6);
  serve::Engine& e = engine_of(model);
  nlohmann::json req = {{"messages", {{{"role", "user"}, {"content", "WH" + std::to_string(seed % 97)}}}},
                        {"max_tokens", max_tokens}, {"temperature", temperature}, {"seed", seed}};
  // Stops that can meet the reply: pieces of the reply itself, bytes that start a UTF-8
  // sequence, and one that never matches.
  const serve::Reply free_run = run(e, req.dump()).second;
  const std::string bytes = e.model().encoder->bytes(free_run.tokens);
  std::vector<std::string> stops;
  const int n_stops = *rc::gen::inRange(0, 4);
  for (int k = 0; k < n_stops; ++k) {
    const int kind = *rc::gen::inRange(0, 3);
    if (kind == 0 && !bytes.empty()) {
      const size_t at = *rc::gen::inRange<size_t>(0, bytes.size());
      const size_t len = *rc::gen::inRange<size_t>(1, 5);
      stops.push_back(bytes.substr(at, len) + (*rc::gen::arbitrary<bool>() ? "ZZZ" : ""));
    } else if (kind == 1) {
      stops.push_back(std::string(1, static_cast<char>(*rc::gen::inRange(0xC2, 0xF5))) + "ZZ");
    } else {
      stops.push_back(".ZZZ");
    }
  }
  // The JSON request carries strings; a stop that is not valid UTF-8 cannot be sent.
  std::vector<std::string> valid;
  for (const std::string& s : stops)
    if (!s.empty() && serve::utf8_text(s) == s) valid.push_back(s);
  if (!valid.empty()) req["stop"] = valid;
  const auto [joined, reply] = run(e, req.dump());
  RC_ASSERT(joined == reply.text);
}

}  // namespace
}  // namespace akv
