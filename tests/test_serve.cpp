// akv serve (spec/serving.md): a reply is a function of the request, whatever the cache, the
// batch or an earlier edit. Every server here listens on loopback on a free port, and every
// request is bounded (max_tokens, a client timeout).
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <nlohmann/json.hpp>

#include <atomic>
#include <cstring>
#include <regex>
#include <set>
#include <sstream>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <filesystem>
#include <fstream>
#include <thread>

#include "reference/chat.hpp"
#include "reference/error.hpp"
#include "reference/session.hpp"
#include "serve/audit.hpp"
#include "serve/audit_chain.hpp"
#include "serve/chat_request.hpp"
#include "serve/guard.hpp"
#include "serve/http_server.hpp"
#include "serve/sampler.hpp"
#include "serve/session_store.hpp"
#include "cli_support.hpp"
#include "serve_support.hpp"
#include "hostile_json.hpp"
#include "support.hpp"
#include "runtime/backends.hpp"
#include "runtime/digest.hpp"

namespace akv {
namespace {
using json = nlohmann::json;
using namespace test_serve;
namespace fs = std::filesystem;

// ---- SV1/SV3: reuse equals cold, turn by turn, with a poisoned tool result dropped mid-way

TEST(SV3_Reuse, EveryBundledConversationTurnByTurnWithAPoisonedResultDropped) {
  TestServer warm, cold;
  size_t turns = 0, reused = 0, recomputed = 0, evicted = 0;
  for (const std::string& file : test::bundled_conversations()) {
    const json conv = json::parse(test::slurp(test::example(file)));
    const json& msgs = conv["messages"];
    std::set<size_t> poisoned;
    for (const json& p : conv.value("poisoned", json::array())) poisoned.insert(p.get<size_t>());
    // The host flags a poisoned result a few messages after it arrived, so that later messages
    // are cached behind it (a file without one: no drop).
    const size_t drop_at = poisoned.empty() ? SIZE_MAX : *poisoned.begin() + 4;
    const std::string session = "warm-" + fs::path(file).stem().string();
    for (size_t k = 1; k <= msgs.size(); ++k) {
      if (msgs[k - 1]["role"] == "assistant") continue;  // the model is called after user and tool messages
      json part = json::array();
      for (size_t i = 0; i < k; ++i)
        if (!(k >= drop_at && poisoned.count(i))) part.push_back(msgs[i]);
      const json req = request_of(part);
      const Answer w = post(warm, req, session), c = post(cold, req, cold_session());
      ASSERT_EQ(w.status, 200) << file << " turn " << k << ": " << w.body.dump();
      ASSERT_EQ(c.status, 200) << c.body.dump();
      EXPECT_EQ(w.session, session);
      EXPECT_EQ(reply_bits(w.body), reply_bits(c.body)) << file << " turn " << k;
      EXPECT_EQ(c.body["akv"]["reused_tokens"], 0);
      reused += w.body["akv"]["reused_tokens"].get<size_t>();
      recomputed += w.body["akv"]["recomputed_tokens"].get<size_t>();
      evicted += w.body["akv"]["evicted_tokens"].get<size_t>();
      ++turns;
    }
  }
  EXPECT_GT(turns, 14u);
  EXPECT_GT(reused, 0u);      // the warm sessions did reuse their caches ...
  EXPECT_GT(evicted, 0u);     // ... a dropped result was evicted ...
  EXPECT_GT(recomputed, 0u);  // ... with its survivors re-run
}

// ---- SV1: 16 concurrent clients, each reply byte-equal to the same request sent alone

TEST(SV1_Concurrency, SixteenClientsEachEqualToAlone) {
  serve::EngineOptions eo;
  eo.parallel = 8;
  TestServer busy(eo), alone;
  const json msgs = json::parse(test::slurp(test::example("ad01_banking_ut0_gpt4omini.json")))["messages"];
  std::vector<json> reqs;
  for (size_t i = 0; i < 16; ++i) {
    json part = json::array();
    for (size_t j = 0; j <= i % msgs.size(); ++j) part.push_back(msgs[j]);
    part.push_back({{"role", "user"}, {"content", "client " + std::to_string(i)}});
    json r = request_of(part, 6);
    if (i % 2) r["temperature"] = 0.8, r["seed"] = i, r["top_p"] = 0.9;
    reqs.push_back(r);
  }
  std::vector<std::string> together(reqs.size());
  std::vector<std::thread> clients;
  for (size_t i = 0; i < reqs.size(); ++i)
    clients.emplace_back([&, i] {
      const Answer a = post(busy, reqs[i]);
      if (a.status == 200) together[i] = reply_bits(a.body);
      else together[i] = "status " + std::to_string(a.status) + " " + a.body.dump();
    });
  for (auto& t : clients) t.join();
  for (size_t i = 0; i < reqs.size(); ++i) {
    const Answer a = post(alone, reqs[i], cold_session());
    ASSERT_EQ(a.status, 200);
    EXPECT_EQ(together[i], reply_bits(a.body)) << "client " << i;
  }
}

// ---- SV3: explicit eviction and the guard drop a result; the reply is the cold reply without it

TEST(SV3_Evict, TheEndpointAndTheGuardEqualTheRequestWithoutTheResult) {
  const json conv = json::parse(test::slurp(test::example("ad01_banking_ut0_gpt4omini.json")));
  const json& msgs = conv["messages"];
  const size_t p = conv["poisoned"][0].get<size_t>();
  ASSERT_EQ(msgs[p]["role"], "tool");
  json all = json::array(), without = json::array();
  for (size_t i = 0; i <= p + 1 && i < msgs.size(); ++i) {
    all.push_back(msgs[i]);
    if (i != p) without.push_back(msgs[i]);
  }
  TestServer s;
  const Answer first = post(s, request_of(all), "host");
  ASSERT_EQ(first.status, 200);
  // The session's spans are the request's messages (no preamble on tiny): span p is the result.
  const Answer ev = post(s, {{"messages", {p}}}, "", "/v1/sessions/host/evict");
  ASSERT_EQ(ev.status, 200) << ev.body.dump();
  EXPECT_GT(ev.body["evicted_tokens"].get<size_t>(), 0u);
  EXPECT_GT(ev.body["recomputed_tokens"].get<size_t>(), 0u);
  const Answer again = post(s, request_of(all), "host");
  ASSERT_EQ(again.status, 200);
  EXPECT_EQ(again.body["akv"]["dropped_messages"], json::array({p}));
  const Answer cold = post(s, request_of(without), cold_session());
  EXPECT_EQ(reply_bits(again.body), reply_bits(cold.body));
  EXPECT_NE(reply_bits(first.body), reply_bits(cold.body));  // the control: keeping it changes the reply

  // Bad evictions: 404 for an unknown session, 400 for an index out of range; state unchanged.
  EXPECT_EQ(post(s, {{"messages", {0}}}, "", "/v1/sessions/nobody/evict").status, 404);
  const Answer range = post(s, {{"messages", {999}}}, "", "/v1/sessions/host/evict");
  EXPECT_EQ(range.status, 400);
  EXPECT_NE(range.body["error"]["message"].get<std::string>().find("999"), std::string::npos);
  EXPECT_EQ(reply_bits(post(s, request_of(all), "host").body), reply_bits(again.body));
}

// ---- SV3/SV1: a session's flags reach only the requests that name it

TEST(SV3_Evict, AFlagNeverReachesARequestThatNamedNoSession) {
  TestServer s;
  const json msgs = json::parse(test::slurp(test::example("ad01_banking_ut0_gpt4omini.json")))["messages"];
  json all = json::array(), head = json::array();
  for (size_t i = 0; i < msgs.size() && i < 8; ++i) all.push_back(msgs[i]);
  for (size_t i = 0; i < 4; ++i) head.push_back(msgs[i]);
  ASSERT_EQ(post(s, request_of(all), "host-a").status, 200);
  httplib::Client c = s.client();
  auto r = c.Post("/v1/sessions/host-a/evict", json{{"messages", {3}}}.dump(), "application/json");
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  // An anonymous request sharing host-a's prefix, message 3 included: the cold reply, with it.
  const Answer anon = post(s, request_of(head));
  ASSERT_EQ(anon.status, 200) << anon.body.dump();
  EXPECT_NE(anon.session, "host-a");
  EXPECT_TRUE(anon.body["akv"]["dropped_messages"].empty());
  EXPECT_EQ(reply_bits(anon.body), reply_bits(post(s, request_of(head), cold_session()).body));
  // The session that was named still drops it.
  const Answer named = post(s, request_of(head), "host-a");
  EXPECT_EQ(named.body["akv"]["dropped_messages"], json::array({3}));
}

// ---- SV3: flags belong to the session a client names, whatever the cache and the load

const json kPoisoned = json::array({{{"role", "user"}, {"content", "hi"}}, {{"role", "user"}, {"content", "POISON"}},
                                    {{"role", "user"}, {"content", "ok"}}});

void flag_poison(const TestServer& s, const std::string& session) {
  ASSERT_EQ(post(s, request_of(kPoisoned), session).status, 200);
  httplib::Client c = s.client();
  auto r = c.Post("/v1/sessions/" + session + "/evict", json{{"messages", {1}}}.dump(), "application/json");
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
}

TEST(SV3_Evict, AFlagHoldsForConcurrentRequestsUnderCachePressureAndAgainstAnonymousRequests) {
  serve::EngineOptions eo;
  eo.parallel = 4;
  eo.cache_budget = 1;  // every idle session's cache is dropped at once
  TestServer s(eo);
  flag_poison(s, "a");
  const std::string want = reply_bits(post(s, request_of(json::array({kPoisoned[0], kPoisoned[2]})), cold_session()).body);
  // Two concurrent requests on the session: the second waits for the first, both drop message 1.
  json big = request_of(kPoisoned, 40);
  Answer r1, r2;
  std::thread t1([&] { r1 = post(s, big, "a"); }), t2([&] { r2 = post(s, big, "a"); });
  t1.join();
  t2.join();
  for (const Answer* a : {&r1, &r2}) {
    ASSERT_EQ(a->status, 200) << a->body.dump();
    EXPECT_EQ(a->session, "a");
    EXPECT_EQ(a->body["akv"]["dropped_messages"], json::array({1}));
  }
  // The cache was dropped (budget 1 byte), the flag was not.
  EXPECT_EQ(reply_bits(post(s, request_of(kPoisoned), "a").body), want);
  // An anonymous request never lands on a named session, so it cannot move the indexes /evict reads.
  flag_poison(s, "agent");
  const Answer anon = post(s, request_of(json::array({kPoisoned[0], {{"role", "user"}, {"content", "other"}}})));
  EXPECT_NE(anon.session, "agent");
  EXPECT_EQ(post(s, request_of(kPoisoned), "agent").body["akv"]["dropped_messages"], json::array({1}));
}

TEST(SV3_Evict, AnEvictionOfASessionThatIsGeneratingIs409AndChangesNothing) {
  TestServer s;
  ASSERT_EQ(post(s, request_of(kPoisoned), "busy").status, 200);
  const json longer = request_of(kPoisoned, 3000);
  const std::string cold = reply_bits(post(s, longer, cold_session()).body);
  Answer inflight;
  std::thread t([&] { inflight = post(s, longer, "busy"); });
  for (int i = 0; i < 2000 && s.engine->load() == 0; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  httplib::Client c = s.client();
  auto r = c.Post("/v1/sessions/busy/evict", json{{"messages", {1}}}.dump(), "application/json");
  t.join();
  ASSERT_TRUE(r);
  if (r->status == 409) {
    EXPECT_EQ(json::parse(r->body)["error"]["code"], "session_busy");
    EXPECT_EQ(reply_bits(inflight.body), cold);  // the reply in flight is untouched
  } else {
    // The generation ended before the evict arrived: then the evict is an ordinary one.
    EXPECT_EQ(r->status, 200) << r->body;
  }
}

TEST(SV6_Errors, BytesThatAreNotUtf8InThePathOrTheSessionAreAnErrorNotACrash) {
  TestServer s;
  httplib::Client c = s.client();
  auto r = c.Get("/%FF");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 404);
  EXPECT_TRUE(json::parse(r->body).contains("error"));
  r = c.Post("/v1/sessions/%FF/evict", json{{"messages", {0}}}.dump(), "application/json");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 400);
  EXPECT_NE(json::parse(r->body)["error"]["message"].get<std::string>().find("session id"), std::string::npos);
  for (const std::string& bad : {std::string("\xff\xfe"), std::string(129, 'a'), std::string("a b"), std::string("../x")}) {
    const Answer a = post(s, request_of(kPoisoned), bad);
    EXPECT_EQ(a.status, 400) << bad;
    EXPECT_NE(a.body["error"]["message"].get<std::string>().find("x-akv-session"), std::string::npos);
  }
  EXPECT_EQ(post(s, request_of(kPoisoned), "fine-id_1.2:x@y").status, 200);  // and the server goes on
}

TEST(SV2_Fields, NoValueIsFoldedOntoAnother) {
  TestServer s;
  json a = request_of(kPoisoned, 6), b = a;
  a["temperature"] = 1.0, a["seed"] = UINT64_MAX;
  b["temperature"] = 1.0, b["seed"] = static_cast<uint64_t>(INT64_MAX);
  const Answer ra = post(s, a, cold_session()), rb = post(s, b, cold_session());
  ASSERT_EQ(ra.status, 200) << ra.body.dump();
  EXPECT_NE(ra.body["akv"]["logits_sha256"], rb.body["akv"]["logits_sha256"]);
  json neg = a;
  neg["seed"] = -1;
  EXPECT_EQ(post(s, neg).status, 400);
  json both = request_of(kPoisoned, 3);
  both["max_completion_tokens"] = 5;
  const Answer r = post(s, both);
  EXPECT_EQ(r.status, 400);
  EXPECT_NE(r.body["error"]["message"].get<std::string>().find("max_completion_tokens"), std::string::npos);
  both["max_completion_tokens"] = 3;
  EXPECT_EQ(post(s, both).status, 200);
}

TEST(SV2_Stream, AStopStringAcrossTokensGivesTheSameTextStreamedAndPlain) {
  TestServer s;
  // A stop string made of two adjacent generated tokens that are printable ASCII bytes: the
  // stream has seen the first token before the second completes the match.
  json req;
  std::string stop;
  for (int p = 0; p < 20 && stop.empty(); ++p) {
    req = request_of(json::array({{{"role", "user"}, {"content", "prompt " + std::to_string(p)}}}), 40);
    const Answer free = post(s, req, cold_session());
    ASSERT_EQ(free.status, 200);
    const json& toks = free.body["choices"][0]["logprobs"]["content"];
    for (size_t i = 1; i + 1 < toks.size() && stop.empty(); ++i) {
      const json &x = toks[i]["bytes"], &y = toks[i + 1]["bytes"];
      auto printable = [](const json& bs) { return bs.size() == 1 && bs[0].get<int>() >= 0x21 && bs[0].get<int>() < 0x7f && bs[0] != '\\'; };
      if (printable(x) && printable(y)) stop = {static_cast<char>(x[0].get<int>()), static_cast<char>(y[0].get<int>())};
    }
  }
  ASSERT_EQ(stop.size(), 2u) << "no two adjacent printable tokens in 20 replies";
  req["stop"] = stop;
  const Answer plain = post(s, req, cold_session());
  ASSERT_EQ(plain.status, 200) << plain.body.dump();
  EXPECT_EQ(plain.body["choices"][0]["finish_reason"], "stop");
  req["stream"] = true;
  httplib::Client c = s.client();
  auto r = c.Post("/v1/chat/completions", httplib::Headers{{"x-akv-session", cold_session()}}, req.dump(), "application/json");
  ASSERT_TRUE(r);
  bool done = false;
  EXPECT_EQ(streamed_content(r->body, done), plain.body["choices"][0]["message"]["content"]) << r->body.substr(0, 2000);
  EXPECT_TRUE(done);
}

// ---- SV7: the guard flags a tool result before generation; the reply is the cold one without it

TEST(SV7_Guard, AFlaggedResultIsEvictedAndTheReplyIsTheColdOneWithoutIt) {
  const json conv = json::parse(test::slurp(test::example("ad01_banking_ut0_gpt4omini.json")));
  const json& msgs = conv["messages"];
  const size_t p = conv["poisoned"][0].get<size_t>();
  json all = json::array(), without = json::array();
  for (size_t i = 0; i <= p + 1 && i < msgs.size(); ++i) {
    all.push_back(msgs[i]);
    if (i != p) without.push_back(msgs[i]);
  }
  TestServer plain;
  const Answer cold = post(plain, request_of(without), cold_session());
  EXPECT_NE(reply_bits(post(plain, request_of(all), cold_session()).body), reply_bits(cold.body));  // the control
  // A pattern of the poisoned result's text flags it before generation.
  serve::EngineOptions eo;
  const std::string content = msgs[p]["content"];
  eo.guard.patterns = {std::regex_replace(content.substr(0, 20), std::regex(R"([.*+?^${}()|\[\]\\])"), R"(\$&)")};
  TestServer guarded(eo);
  const Answer g = post(guarded, request_of(all));
  ASSERT_EQ(g.status, 200) << g.body.dump();
  EXPECT_EQ(g.body["akv"]["guarded_messages"], json::array({p}));
  EXPECT_EQ(reply_bits(g.body), reply_bits(cold.body));

  // The same server without a match keeps it.
  const Answer clean = post(guarded, request_of(without));
  EXPECT_EQ(clean.body["akv"]["guarded_messages"], json::array());
}

// A guard command in a folder of its own: flags (exit 1) a result that contains `needle`,
// and counts its runs in dir/runs.
struct GuardScript {
  fs::path dir;
  explicit GuardScript(const std::string& needle) {
    dir = fs::temp_directory_path() / ("akv_test_guard_" + std::to_string(getpid()) + "_" + std::to_string(counter()++));
    fs::create_directories(dir);
    std::ofstream(dir / "needle") << needle << "\n";
  }
  ~GuardScript() { fs::remove_all(dir); }
  std::string command() const {
    return fmt::format("echo run >> '{0}/runs'; if grep -q -F -f '{0}/needle'; then exit 1; fi; exit 0", dir.string());
  }
  size_t runs() const {
    std::ifstream f(dir / "runs");
    size_t n = 0;
    for (std::string l; std::getline(f, l);) ++n;
    return n;
  }
  static int& counter() {
    static int n = 0;
    return n;
  }
};

TEST(SV7_Guard, ACommandFlagsAResultAndTheReplyIsTheColdOneWithoutIt) {
  const json conv = json::parse(test::slurp(test::example("ad01_banking_ut0_gpt4omini.json")));
  const json& msgs = conv["messages"];
  const size_t p = conv["poisoned"][0].get<size_t>();
  json all = json::array(), without = json::array();
  size_t tools = 0;
  for (size_t i = 0; i <= p + 1 && i < msgs.size(); ++i) {
    all.push_back(msgs[i]);
    tools += msgs[i]["role"] == "tool";
    if (i != p) without.push_back(msgs[i]);
  }
  ASSERT_GE(tools, 1u);
  TestServer plain;
  const Answer cold = post(plain, request_of(without), cold_session());
  EXPECT_NE(reply_bits(post(plain, request_of(all), cold_session()).body), reply_bits(cold.body));  // the control

  const GuardScript script(msgs[p]["content"].get<std::string>().substr(0, 24));
  const fs::path log = script.dir / "audit.jsonl";
  serve::EngineOptions eo;
  eo.guard.command = script.command();
  serve::ServerOptions so;
  so.audit_log = log.string();
  TestServer guarded(eo, so);
  const Answer g = post(guarded, request_of(all));
  ASSERT_EQ(g.status, 200) << g.body.dump();
  EXPECT_EQ(g.body["akv"]["guarded_messages"], json::array({p}));
  EXPECT_EQ(reply_bits(g.body), reply_bits(cold.body));
  EXPECT_EQ(script.runs(), tools);  // once per tool result
  // The next turn resends the results: their verdicts are kept, the command does not run again.
  json next = all;
  next.push_back({{"role", "user"}, {"content", "and now?"}});
  const Answer g2 = post(guarded, request_of(next));
  ASSERT_EQ(g2.status, 200) << g2.body.dump();
  EXPECT_EQ(script.runs(), tools);
  // The audit replays both replies with the command's logged verdicts.
  const serve::AuditReport rep = serve::replay_audit_log(log.string());
  for (const auto& l : rep.lines) EXPECT_TRUE(l.reproduced) << "line " << l.line << ": " << l.why;
  EXPECT_EQ(rep.reproduced(), 2u);
}

TEST(SV7_Guard, AFailingCommandFailsTheRequestAndChangesNothing) {
  const json msgs = {{{"role", "user"}, {"content", "look it up"}},
                     {{"role", "assistant"}, {"content", "calling the tool"}},
                     {{"role", "tool"}, {"content", "the result"}}};
  struct Case {
    std::string command;
    std::string says;
  };
  for (const Case& c : {Case{"exit 3", "exit status 3"}, Case{"kill -9 $$", "signal 9"}, Case{"sleep 30", "no verdict within 1 s"}}) {
    serve::EngineOptions eo;
    eo.guard.command = c.command;
    eo.guard.timeout_s = 1;
    TestServer s(eo);
    const auto t0 = std::chrono::steady_clock::now();
    const Answer a = post(s, request_of(msgs));
    EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(10)) << c.command;
    EXPECT_EQ(a.status, 500) << c.command;
    EXPECT_EQ(a.body["error"]["code"], "guard_failed") << a.body.dump();
    EXPECT_NE(a.body["error"]["message"].get<std::string>().find(c.says), std::string::npos) << a.body.dump();
    EXPECT_EQ(s.engine->load(), 0u);  // nothing queued
    // A request without a tool result does not run the guard.
    EXPECT_EQ(post(s, request_of(json::array({msgs[0]}))).status, 200) << c.command;
  }
}

TEST(SV7_Guard, TheCommandSeesTheWholeResultAndMayIgnoreIt) {
  // A command that never reads its stdin: the server neither blocks nor dies of SIGPIPE.
  serve::Guard quits({{}, "exit 1", 5});
  EXPECT_TRUE(quits.flags(std::string(size_t{4} << 20, 'a')));
  serve::Guard passes({{}, "exit 0", 5});
  EXPECT_FALSE(passes.flags(std::string(size_t{4} << 20, 'a')));
  // One that reads it all gets every byte, NUL and invalid UTF-8 included.
  const std::string bytes = std::string("a\0b\xff\xfe", 5) + std::string(200000, 'z');
  serve::Guard counts({{}, fmt::format("test \"$(wc -c)\" -eq {} && exit 1; exit 0", bytes.size()), 5});
  EXPECT_TRUE(counts.flags(bytes));
  EXPECT_FALSE(counts.flags(bytes + "!"));
  EXPECT_THROW(serve::Guard({{"("}, "", 5}), Error);
  EXPECT_THROW(serve::Guard({{}, "exit 0", 0}), Error);
}

TEST(SV10_Scope, TheGuardCommandsVerdictsAreKeptPerScope) {
  // A command that counts its runs: one caller's verdict is never another's (nor its timing).
  const fs::path count = fs::temp_directory_path() / ("akv_guard_runs_" + std::to_string(getpid()));
  fs::remove(count);
  serve::Guard g({{}, "echo x >> '" + count.string() + "'; exit 0", 5});
  EXPECT_FALSE(g.flags("result", "key:a/"));
  EXPECT_FALSE(g.flags("result", "key:a/"));  // kept: no second run
  EXPECT_FALSE(g.flags("result", "key:b/"));  // another scope: its own run
  EXPECT_EQ(test::slurp(count.string()), "x\nx\n");
  fs::remove(count);
}

// ---- SV5: logprobs are of the model's distribution; greedy draws the top one

TEST(SV5_Logprobs, GreedyTokensAreTheirOwnTopLogprob) {
  TestServer s;
  const Answer a = post(s, request_of(json::array({{{"role", "user"}, {"content", "what now?"}}}), 8));
  ASSERT_EQ(a.status, 200);
  const json& content = a.body["choices"][0]["logprobs"]["content"];
  ASSERT_EQ(content.size(), a.body["usage"]["completion_tokens"].get<size_t>());
  for (const json& t : content) {
    EXPECT_LT(t["logprob"].get<double>(), 0.0);
    ASSERT_EQ(t["top_logprobs"].size(), 2u);
    EXPECT_EQ(t["top_logprobs"][0]["bytes"], t["bytes"]);
    EXPECT_EQ(t["top_logprobs"][0]["logprob"], t["logprob"]);
    EXPECT_GE(t["top_logprobs"][0]["logprob"].get<double>(), t["top_logprobs"][1]["logprob"].get<double>());
  }
}

// ---- SV2/SV6: the API's shapes and its errors

TEST(SV6_Errors, BadRequestsGetOpenAIErrorsNamingTheProblem) {
  TestServer s;
  const json ok = {{"role", "user"}, {"content", "hi"}};
  struct Case {
    json body;
    int status;
    std::string says;
  };
  const std::vector<Case> cases = {
      {{{"messages", {ok}}, {"bogus", 1}}, 400, "bogus"},
      {{{"messages", {ok}}, {"n", 2}}, 400, "n:"},
      {{{"messages", {ok}}, {"temperature", 0.7}, {"seed", -1}}, 400, "seed"},
      {{{"messages", {ok}}, {"temperature", 3}}, 400, "temperature"},
      {{{"messages", {ok}}, {"max_tokens", 0}}, 400, "max_tokens"},
      {{{"messages", {ok}}, {"top_logprobs", 3}}, 400, "logprobs"},
      {{{"messages", {ok}}, {"frequency_penalty", 0.5}}, 400, "frequency_penalty"},
      {{{"messages", {ok}}, {"tools", {{{"type", "retrieval"}}}}}, 400, "tools"},
      {{{"messages", {ok}}, {"tool_choice", "required"}}, 400, "no tools"},
      {{{"messages", {ok}}, {"response_format", {{"type", "yaml"}}}}, 400, "response_format.type"},
      {{{"messages", {ok}}, {"poisoned", {0}}}, 400, "poisoned"},
      {{{"messages", {ok}}, {"model", "gpt-4o"}}, 404, "gpt-4o"},
      {{{"messages", {{{"role", "robot"}, {"content", "x"}}}}}, 400, "robot"},
      {{{"messages", {{{"role", "user"}, {"content", std::string(20000, 'a')}}}}}, 400, "context"},
  };
  for (const Case& c : cases) {
    const Answer a = post(s, c.body);
    EXPECT_EQ(a.status, c.status) << c.body.dump().substr(0, 200);
    ASSERT_TRUE(a.body.contains("error")) << a.body.dump();
    for (const char* k : {"message", "type", "param", "code"}) EXPECT_TRUE(a.body["error"].contains(k)) << k;
    EXPECT_NE(a.body["error"]["message"].get<std::string>().find(c.says), std::string::npos) << a.body.dump();
  }
  // Malformed JSON, hostile nesting, an unknown route.
  httplib::Client c = s.client();
  auto r = c.Post("/v1/chat/completions", "{\"messages\": [", "application/json");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 400);
  r = c.Post("/v1/chat/completions", std::string(100000, '[') + std::string(100000, ']'), "application/json");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 400);
  // An eviction's body goes through the same strict reader (IN3's rules).
  for (const test::HostileJson& h : test::hostile_json()) {
    r = c.Post("/v1/sessions/s/evict", h.text, "application/json");
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 400) << h.what;
    const std::string m = json::parse(r->body)["error"]["message"].get<std::string>();
    EXPECT_EQ(m.rfind("body: ", 0), 0u) << h.what << ": " << m;
    EXPECT_NE(m.find(h.needle), std::string::npos) << h.what << ": " << m;
  }
  // A body that does not say it is JSON is not read as JSON (curl -d's form type included).
  const std::string okbody = json{{"messages", {ok}}, {"max_tokens", 2}}.dump();
  for (const auto& [type, body] : std::vector<std::pair<std::string, std::string>>{
           {"text/plain", okbody}, {"application/x-www-form-urlencoded", okbody}, {"application/x-www-form-urlencoded", okbody + std::string(9000, ' ')}, {"application/jsonx", okbody}}) {
    r = c.Post("/v1/chat/completions", body, type.c_str());
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 415) << type << " " << body.size();
    EXPECT_NE(json::parse(r->body)["error"]["message"].get<std::string>().find("application/json"), std::string::npos);
  }
  r = c.Post("/v1/chat/completions", okbody, "application/json; charset=utf-8");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  r = c.Get("/v1/nothing");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 404);
  EXPECT_TRUE(json::parse(r->body).contains("error"));
  // The server still answers, and /v1/models lists the served name.
  r = c.Get("/v1/models");
  ASSERT_TRUE(r);
  EXPECT_EQ(json::parse(r->body)["data"][0]["id"], "tiny");
  EXPECT_EQ(post(s, {{"messages", {ok}}, {"max_tokens", 2}}).status, 200);
}

TEST(SV6_Errors, OtherMethodsAre405AtOnceAndTheirBodyIsNeverARequest) {
  TestServer s;
  httplib::Client c = s.client();
  for (const char* m : {"PUT", "DELETE", "PATCH", "OPTIONS", "TRACE", "FOO"}) {
    httplib::Request hr;
    hr.method = m;
    hr.path = "/v1/chat/completions";
    auto r = c.send(hr);
    ASSERT_TRUE(r) << m;
    EXPECT_EQ(r->status, 405) << m;
    EXPECT_EQ(json::parse(r->body)["error"]["code"], "method_not_allowed") << m << " " << r->body;
  }
  // A PUT without Content-Length is answered at once, not when the client gives up.
  int fd = loopback_socket(s.port, 3);
  ASSERT_GE(fd, 0);
  const std::string put = "PUT /v1/chat/completions HTTP/1.1\r\nHost: x\r\n\r\n";
  ASSERT_EQ(send(fd, put.data(), put.size(), MSG_NOSIGNAL), static_cast<ssize_t>(put.size()));
  const auto t0 = std::chrono::steady_clock::now();
  char buf[512];
  const ssize_t n = recv(fd, buf, sizeof buf, 0);
  EXPECT_GT(n, 0);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(2));
  EXPECT_EQ(std::string(buf, n > 12 ? 12 : 0), "HTTP/1.1 405");
  close(fd);
  // A PUT whose body is a request: that request is never answered; the next one on the
  // kept-alive connection is. (cpp-httplib answers no pipelined request: each is sent after
  // the previous reply.)
  fd = loopback_socket(s.port, 3);
  ASSERT_GE(fd, 0);
  const std::string hidden = "GET /health HTTP/1.1\r\nHost: x\r\n\r\n";
  const std::string with_body = fmt::format("PUT /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Length: {}\r\n\r\n{}", hidden.size(), hidden);
  ASSERT_EQ(send(fd, with_body.data(), with_body.size(), MSG_NOSIGNAL), static_cast<ssize_t>(with_body.size()));
  std::string first;
  while (first.find("invalid_request_error\"}}") == std::string::npos) {
    const ssize_t k = recv(fd, buf, sizeof buf, 0);
    if (k <= 0) break;
    first.append(buf, static_cast<size_t>(k));
  }
  EXPECT_EQ(first.rfind("HTTP/1.1 405", 0), 0u) << first;
  const std::string next = "GET /v1/models HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
  ASSERT_EQ(send(fd, next.data(), next.size(), MSG_NOSIGNAL), static_cast<ssize_t>(next.size()));
  const std::string got = read_all(fd);
  close(fd);
  EXPECT_NE(got.find("\"object\":\"list\""), std::string::npos) << got;  // /v1/models answered
  EXPECT_EQ(got.find("\"status\":\"ok\""), std::string::npos) << got;    // the body's /health not
}

TEST(SV6_Errors, TooManyRequestsGet429WithRetryAfter) {
  serve::EngineOptions eo;
  eo.parallel = 1;
  eo.queue = 0;
  TestServer s(eo);
  const json big = {{"messages", {{{"role", "user"}, {"content", "count"}}}}, {"max_tokens", 3000}};
  std::thread slow([&] { post(s, big); });
  // Wait (bounded) until the first request holds the only slot, then ask again.
  for (int i = 0; i < 2000 && s.engine->load() == 0; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  ASSERT_EQ(s.engine->load(), 1u);
  httplib::Client c = s.client();
  auto r = c.Post("/v1/chat/completions", big.dump(), "application/json");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 429);
  EXPECT_EQ(r->get_header_value("Retry-After"), "1");
  EXPECT_EQ(json::parse(r->body)["error"]["code"], "queue_full");
  slow.join();
}

TEST(SV8_Auth, OffLoopbackNeedsAKeyAndAMissingKeyIs401) {
  serve::ServerOptions bad;
  bad.host = "0.0.0.0";
  LoadedModel lm = load_model("tiny", 1);
  serve::Engine e(lm, make_backend("cpu", lm.model, {}), {});
  try {
    serve::HttpServer h(e, bad);
    ADD_FAILURE() << "a server off loopback without a key was made";
  } catch (const Error& err) {
    EXPECT_EQ(err.code(), ErrorCode::kBadInput);
    EXPECT_NE(std::string(err.what()).find("--api-key-file"), std::string::npos);
  }
  serve::ServerOptions keyed;
  keyed.api_keys = {"0123456789abcdef-secret"};
  TestServer s({}, keyed);
  const json req = {{"messages", {{{"role", "user"}, {"content", "hi"}}}}, {"max_tokens", 2}};
  const Answer none = post(s, req), wrong = post(s, req, "", "/v1/chat/completions", "0123456789abcdef-secreT");
  for (const Answer& a : {none, wrong}) {
    EXPECT_EQ(a.status, 401);
    EXPECT_EQ(a.body["error"]["code"], "invalid_api_key");
    EXPECT_EQ(a.body.dump().find("secret"), std::string::npos);  // nothing of the key leaks
  }
  EXPECT_EQ(post(s, req, "", "/v1/chat/completions", keyed.api_keys[0]).status, 200);
  // Two requests with a wrong key on one kept-alive connection, each body sent after its
  // headers (as the openai client does): 401 both times, the body never read as a request.
  const int fd = loopback_socket(s.port, 10);
  ASSERT_GE(fd, 0);
  const std::string body = req.dump();
  const std::string head = "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer wrong-key-0123456789\r\n"
                           "Content-Type: application/json\r\nContent-Length: " + std::to_string(body.size()) + "\r\n\r\n";
  std::string got;
  for (int i = 0; i < 2; ++i) {
    ASSERT_EQ(send(fd, head.data(), head.size(), 0), static_cast<ssize_t>(head.size()));
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    ASSERT_EQ(send(fd, body.data(), body.size(), 0), static_cast<ssize_t>(body.size()));
    // Read until this reply's JSON body is complete (bounded by the receive timeout).
    const size_t want = i + 1;
    char buf[4096];
    size_t seen = 0;
    while (seen < want) {
      const ssize_t n = recv(fd, buf, sizeof buf, 0);
      if (n <= 0) break;
      got.append(buf, static_cast<size_t>(n));
      seen = 0;
      for (size_t at = got.find("}}"); at != std::string::npos; at = got.find("}}", at + 2)) ++seen;
    }
  }
  close(fd);
  size_t n401 = 0;
  for (size_t at = got.find("HTTP/1.1 401"); at != std::string::npos; at = got.find("HTTP/1.1 401", at + 1)) ++n401;
  EXPECT_EQ(n401, 2u) << got;
  EXPECT_EQ(got.find("HTTP/1.1 400"), std::string::npos) << got;
}

// ---- SV2: a stream carries the same reply as the plain response

TEST(SV2_Stream, TheChunksAddUpToThePlainReply) {
  TestServer s;
  const json msgs = {{{"role", "user"}, {"content", "tell me"}}};
  json req = {{"messages", msgs}, {"max_tokens", 12}};
  const Answer plain = post(s, req, cold_session());
  ASSERT_EQ(plain.status, 200);
  req["stream"] = true;
  req["stream_options"] = {{"include_usage", true}};
  httplib::Client c = s.client();
  httplib::Headers h{{"x-akv-session", cold_session()}};
  auto r = c.Post("/v1/chat/completions", h, req.dump(), "application/json");
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200);
  std::string content, finish;
  json usage, akv;
  bool done = false;
  std::istringstream lines(r->body);
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("data: ", 0) != 0) continue;
    const std::string d = line.substr(6);
    if (d == "[DONE]") {
      done = true;
      continue;
    }
    const json j = json::parse(d);
    EXPECT_EQ(j["object"], "chat.completion.chunk");
    if (j.contains("usage")) usage = j["usage"];
    if (j.contains("akv")) akv = j["akv"];
    for (const json& ch : j["choices"]) {
      if (ch["delta"].contains("content")) content += ch["delta"]["content"].get<std::string>();
      if (!ch["finish_reason"].is_null()) finish = ch["finish_reason"];
    }
  }
  EXPECT_TRUE(done);
  EXPECT_EQ(content, plain.body["choices"][0]["message"]["content"]);
  EXPECT_EQ(finish, plain.body["choices"][0]["finish_reason"]);
  EXPECT_EQ(usage, plain.body["usage"]);
  EXPECT_EQ(akv["logits_sha256"], plain.body["akv"]["logits_sha256"]);
}

// ---- SV6: a client that goes away mid-stream stops its generation; the session stays usable

TEST(SV6_Disconnect, AClientThatLeavesMidStreamLeavesAConsistentSession) {
  TestServer s;
  const json msgs = {{{"role", "user"}, {"content", "go on"}}};
  json req = {{"messages", msgs}, {"max_tokens", 4000}, {"stream", true}};
  {
    httplib::Client c = s.client();
    httplib::Request q;
    q.method = "POST";
    q.path = "/v1/chat/completions";
    q.headers = {{"x-akv-session", "leaver"}, {"Content-Type", "application/json"}};
    q.body = req.dump();
    size_t got = 0;
    q.content_receiver = [&](const char*, size_t n, uint64_t, uint64_t) { got += n; return got < 2000; };  // hang up early
    auto r = c.send(q);
    EXPECT_FALSE(r);
    EXPECT_GE(got, 2000u);
  }
  for (int i = 0; i < 5000 && s.engine->load() != 0; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  EXPECT_EQ(s.engine->load(), 0u);  // its generation stopped
  const json next = request_of(msgs);
  EXPECT_EQ(reply_bits(post(s, next, "leaver").body), reply_bits(post(s, next, cold_session()).body));
}

// ---- SV2: the generation options and the usage object

TEST(SV2_Fields, MaxCompletionTokensStopCachedTokensAndHealth) {
  TestServer s;
  const json msgs = json::array({{{"role", "user"}, {"content", "count to ten"}}});
  // max_completion_tokens bounds the reply as max_tokens does.
  json req = {{"messages", msgs}, {"max_completion_tokens", 5}};
  const Answer a = post(s, req, cold_session());
  ASSERT_EQ(a.status, 200) << a.body.dump();
  EXPECT_EQ(a.body["usage"]["completion_tokens"], 5);
  EXPECT_EQ(a.body["choices"][0]["finish_reason"], "length");
  // stop: the text is cut before the first stop string (matched on the generated bytes), and
  // the reason is "stop". The stop is the first printable ASCII byte after the first token.
  json longer = {{"messages", msgs}, {"max_completion_tokens", 40}};
  const std::string text = post(s, longer, cold_session()).body["choices"][0]["message"]["content"];
  size_t k = 1;
  while (k < text.size() && !(text[k] > 0x20 && text[k] < 0x7f && text[k] != '\\')) k += text[k] == '\\' ? 4 : 1;
  ASSERT_LT(k, text.size()) << "no printable byte in " << text;
  longer["stop"] = json::array({text.substr(k, 1)});
  const Answer b = post(s, longer, cold_session());
  ASSERT_EQ(b.status, 200) << b.body.dump();
  EXPECT_EQ(b.body["choices"][0]["finish_reason"], "stop");
  EXPECT_EQ(b.body["choices"][0]["message"]["content"], text.substr(0, text.find(text.substr(k, 1))));
  // cached_tokens is the reused count: 0 cold, the kept prefix on the session's next turn.
  EXPECT_EQ(a.body["usage"]["prompt_tokens_details"]["cached_tokens"], 0);
  json next = msgs;
  next.push_back({{"role", "assistant"}, {"content", "1 2 3"}});
  next.push_back({{"role", "user"}, {"content", "go on"}});
  post(s, request_of(msgs), "turns");
  const Answer c = post(s, request_of(next), "turns");
  ASSERT_EQ(c.status, 200) << c.body.dump();
  EXPECT_GT(c.body["usage"]["prompt_tokens_details"]["cached_tokens"].get<size_t>(), 0u);
  EXPECT_EQ(c.body["usage"]["prompt_tokens_details"]["cached_tokens"], c.body["akv"]["reused_tokens"]);
  EXPECT_EQ(c.body["usage"]["prompt_tokens"], c.body["akv"]["reused_tokens"].get<size_t>() +
                                                  c.body["akv"]["recomputed_tokens"].get<size_t>() +
                                                  c.body["akv"]["prefill_tokens"].get<size_t>());
  // /health answers.
  httplib::Client h = s.client();
  auto r = h.Get("/health");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
}

// ---- SV6: the command: it prints where it listens, serves, and drains on SIGTERM (exit 0)

// `akv serve --model tiny --port 0 ARGS...` as a child process, and the port it printed
// (0 if it printed none within 20 s; the child is then killed).
struct Child {
  pid_t pid = -1;
  int port = 0;
  fs::path out;
};

Child spawn_serve(const std::vector<std::string>& args) {
  Child ch;
  ch.out = fs::temp_directory_path() / ("akv_test_serve_" + std::to_string(getpid()) + "_" + std::to_string(cold_counter++) + ".out");
  std::vector<std::string> argv = {AKV_CLI, "serve", "--model", "tiny", "--port", "0"};
  argv.insert(argv.end(), args.begin(), args.end());
  ch.pid = fork();
  if (ch.pid == 0) {
    if (!freopen(ch.out.c_str(), "w", stdout)) _exit(127);
    std::vector<char*> v;
    for (std::string& a : argv) v.push_back(a.data());
    v.push_back(nullptr);
    execv(AKV_CLI, v.data());
    _exit(127);
  }
  for (int i = 0; i < 400 && ch.port == 0 && ch.pid > 0; ++i) {  // at most 20 s
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    const std::string text = test::slurp(ch.out.string());
    const size_t at = text.find("http://127.0.0.1:");
    if (at != std::string::npos && text.find(' ', at) != std::string::npos) ch.port = std::atoi(text.c_str() + at + 17);
  }
  if (ch.port == 0 && ch.pid > 0) {
    kill(ch.pid, SIGKILL);
    waitpid(ch.pid, nullptr, 0);
  }
  return ch;
}

TEST(SV6_Signals, TheCommandServesAndExitsZeroOnSigterm) {
  const Child ch = spawn_serve({});
  const pid_t pid = ch.pid;
  const int port = ch.port;
  const fs::path out = ch.out;
  ASSERT_GT(pid, 0);
  ASSERT_GT(port, 0) << test::slurp(out.string());
  httplib::Client c("127.0.0.1", port);
  c.set_read_timeout(60, 0);
  auto r = c.Post("/v1/chat/completions", json{{"messages", {{{"role", "user"}, {"content", "hi"}}}}, {"max_tokens", 3}}.dump(),
                  "application/json");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  kill(pid, SIGTERM);
  int status = -1;
  for (int i = 0; i < 400; ++i) {  // at most 20 s, then it is killed and the test fails
    if (waitpid(pid, &status, WNOHANG) == pid) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    if (i == 399) {
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      ADD_FAILURE() << "akv serve did not stop on SIGTERM";
    }
  }
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  fs::remove(out);
}

// ---- SV6/SV9: SIGTERM lets a stream finish; the log replays with the server's seed, defaults and guard

TEST(SV6_Signals, SigtermFinishesAStreamAndTheLogReplaysWithTheServersOptions) {
  const fs::path log = fs::temp_directory_path() / ("akv_test_drain_" + std::to_string(getpid()) + ".jsonl");
  fs::remove(log);
  const Child ch = spawn_serve({"--seed", "7", "--max-tokens-default", "5", "--guard", "POISON", "--audit-log", log.string()});
  ASSERT_GT(ch.port, 0) << test::slurp(ch.out.string());
  httplib::Client c("127.0.0.1", ch.port);
  c.set_read_timeout(60, 0);
  // No max_tokens (the server's default, 5), and a tool result the guard flags.
  const json tool_conv = json::array({{{"role", "user"}, {"content", "look it up"}},
                                      {{"role", "assistant"}, {"content", nullptr},
                                       {"tool_calls", {{{"id", "c1"}, {"type", "function"}, {"function", {{"name", "f"}, {"arguments", "{}"}}}}}}},
                                      {{"role", "tool"}, {"tool_call_id", "c1"}, {"content", "POISON here"}}});
  auto r = c.Post("/v1/chat/completions", json{{"messages", tool_conv}}.dump(), "application/json");
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  const json j = json::parse(r->body);
  EXPECT_EQ(j["usage"]["completion_tokens"], 5);
  EXPECT_EQ(j["akv"]["guarded_messages"], json::array({2}));
  // A long stream, and SIGTERM once its first chunk arrived: it still ends with [DONE].
  std::atomic<bool> started{false};
  std::string body;
  std::thread streamer([&] {
    httplib::Client cs("127.0.0.1", ch.port);
    cs.set_read_timeout(60, 0);
    const json req = {{"messages", {{{"role", "user"}, {"content", std::string(4000, 'g')}}}}, {"max_tokens", 3000}, {"stream", true}};
    httplib::Request hr;
    hr.method = "POST";
    hr.path = "/v1/chat/completions";
    hr.body = req.dump();
    hr.set_header("Content-Type", "application/json");
    hr.content_receiver = [&](const char* d, size_t n, uint64_t, uint64_t) {
      body.append(d, n);
      started = true;
      return true;
    };
    cs.send(hr);
  });
  for (int i = 0; i < 2000 && !started; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  EXPECT_TRUE(started.load());
  kill(ch.pid, SIGTERM);
  streamer.join();
  int status = -1;
  for (int i = 0; i < 1200 && waitpid(ch.pid, &status, WNOHANG) != ch.pid; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  bool done = false;
  streamed_content(body, done);
  EXPECT_TRUE(done) << "the stream was cut by SIGTERM: " << body.substr(body.size() > 300 ? body.size() - 300 : 0);
  // akv audit replays both lines with the logged seed, default max_tokens and guard.
  const serve::AuditReport rep = serve::replay_audit_log(log.string());
  for (const auto& l : rep.lines) EXPECT_TRUE(l.reproduced) << "line " << l.line << ": " << l.why;
  EXPECT_EQ(rep.reproduced(), 2u);
  EXPECT_EQ(test::run_akv({"audit", log.string()}).code, 0);
  fs::remove(log);
  fs::remove(ch.out);
}

// ---- SV6/SV9: kill -9 loses only caches: the audit log's complete lines still replay

TEST(SV6_Signals, AKilledServerLeavesAnAuditLogThatReplays) {
  const fs::path log = fs::temp_directory_path() / ("akv_test_kill9_" + std::to_string(getpid()) + ".jsonl");
  fs::remove(log);
  const Child ch = spawn_serve({"--audit-log", log.string()});
  ASSERT_GT(ch.port, 0) << test::slurp(ch.out.string());
  httplib::Client c("127.0.0.1", ch.port);
  c.set_read_timeout(60, 0);
  for (int i = 0; i < 2; ++i) {
    auto r = c.Post("/v1/chat/completions",
                    json{{"messages", {{{"role", "user"}, {"content", "turn " + std::to_string(i)}}}}, {"max_tokens", 3}}.dump(),
                    "application/json");
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 200);
  }
  // A third request in flight when the server dies: its line is either complete or absent.
  std::thread inflight([&] {
    httplib::Client c3("127.0.0.1", ch.port);
    c3.set_read_timeout(20, 0);
    c3.Post("/v1/chat/completions", json{{"messages", {{{"role", "user"}, {"content", "long"}}}}, {"max_tokens", 2000}}.dump(),
            "application/json");
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  kill(ch.pid, SIGKILL);
  waitpid(ch.pid, nullptr, 0);
  inflight.join();
  const serve::AuditReport rep = serve::replay_audit_log(log.string());
  EXPECT_TRUE(rep.passed());
  EXPECT_GE(rep.reproduced(), 2u);
  EXPECT_EQ(test::run_akv({"audit", log.string()}).code, 0);
  fs::remove(log);
  fs::remove(ch.out);
}

// ---- SV6: limits: a stalled client is dropped, an oversized body is 413, and the server goes on

TEST(SV6_Limits, AStalledClientIsDroppedAndAnOversizedBodyIs413) {
  serve::ServerOptions so;
  so.read_timeout_s = 1;
  TestServer s({}, so);
  // A client that sends half a request and stalls: the server closes it (bounded wait: 15 s).
  const int fd = loopback_socket(s.port, 15);
  ASSERT_GE(fd, 0);
  const std::string half = "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{\"mess";
  ASSERT_EQ(send(fd, half.data(), half.size(), 0), static_cast<ssize_t>(half.size()));
  const auto t0 = std::chrono::steady_clock::now();
  char buf[4096];
  ssize_t n = 0;
  while ((n = recv(fd, buf, sizeof buf, 0)) > 0) {
  }
  const double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  close(fd);
  EXPECT_EQ(n, 0) << "the server did not close a stalled connection within 15 s";  // 0: closed by the server
  EXPECT_LT(waited, 10.0);
  // A body over the limit: 413 in OpenAI's error shape.
  httplib::Client c = s.client();
  const std::string huge = "{\"messages\": [{\"role\": \"user\", \"content\": \"" + std::string(serve::kMaxRequestBytes + 1, 'a') + "\"}]}";
  auto r = c.Post("/v1/chat/completions", huge, "application/json");
  ASSERT_TRUE(r) << httplib::to_string(r.error());
  EXPECT_EQ(r->status, 413);
  EXPECT_EQ(json::parse(r->body, nullptr, false).value("error", json::object()).value("code", ""), "body_too_large") << r->body;
  // The server goes on.
  EXPECT_EQ(post(s, request_of(json::array({{{"role", "user"}, {"content", "hi"}}}))).status, 200);
}

// ---- SV9: the audit log has one complete line per reply

// A log is a file from outside: each line, and the request body it holds, is read by the
// strict JSON reader; a hostile one fails its line naming the problem, never the replay.
TEST(SV9_Audit, HostileLinesAndBodiesFailTheirLineNamingTheProblem) {
  const fs::path log = fs::temp_directory_path() / ("akv_test_hostile_audit_" + std::to_string(getpid()) + ".jsonl");
  // Lines chained as a server chains them (SV9), so that what is checked is their content.
  std::string text, prev = serve::kGenesis;
  uint64_t seq = 0;
  auto add = [&](const std::string& line) {
    text += line + "\n";
    prev = sha256_hex(line);
    ++seq;
  };
  for (const test::HostileJson& h : test::hostile_json()) add(h.text);
  for (const test::HostileJson& h : test::hostile_json())
    add(json{{"akv_audit", 1}, {"kind", "chat"}, {"seq", seq + 1}, {"prev_sha256", prev}, {"request_body", h.text},
             {"request_sha256", sha256_hex(h.text)}, {"model", {{"name", "tiny"}, {"sha256", nullptr}}},
             {"backend", {{"name", "cpu"}, {"threads", 1}}}, {"engine", {{"default_max_tokens", 5}, {"guard", json::array()}}}}
            .dump());
  std::ofstream(log, std::ios::binary | std::ios::trunc) << text;
  const serve::AuditReport rep = serve::replay_audit_log(log.string());
  const std::vector<test::HostileJson> hs = test::hostile_json();
  ASSERT_EQ(rep.lines.size(), 2 * hs.size());
  EXPECT_FALSE(rep.passed());
  for (size_t i = 0; i < rep.lines.size(); ++i) {
    const test::HostileJson& h = hs[i % hs.size()];
    EXPECT_FALSE(rep.lines[i].reproduced) << h.what;
    EXPECT_EQ(rep.lines[i].why.rfind(i < hs.size() ? "audit line: " : "request_body: ", 0), 0u) << h.what << ": " << rep.lines[i].why;
    EXPECT_NE(rep.lines[i].why.find(h.needle), std::string::npos) << h.what << ": " << rep.lines[i].why;
  }
  fs::remove(log);
}

TEST(SV9_Audit, OneLinePerReplyWithTheDigests) {
  const fs::path log = fs::temp_directory_path() / ("akv_test_audit_" + std::to_string(getpid()) + ".jsonl");
  fs::remove(log);
  serve::ServerOptions so;
  so.audit_log = log.string();
  {
    TestServer s({}, so);
    for (int i = 0; i < 3; ++i)
      ASSERT_EQ(post(s, request_of(json::array({{{"role", "user"}, {"content", "turn " + std::to_string(i)}}}))).status, 200);
  }
  std::ifstream f(log);
  int n = 0;
  for (std::string line; std::getline(f, line); ++n) {
    const json j = json::parse(line);
    EXPECT_EQ(j["akv_audit"], 1);
    EXPECT_EQ(j["request_sha256"].get<std::string>().size(), 64u);
    EXPECT_EQ(j["reply"]["stats"]["logits_sha256"].get<std::string>().size(), 64u);
    EXPECT_EQ(json::parse(j["request_body"].get<std::string>())["messages"][0]["content"], "turn " + std::to_string(n));
  }
  EXPECT_EQ(n, 3);
  // akv audit: every line reproduces on a cold engine (exit 0) ...
  const serve::AuditReport rep = serve::replay_audit_log(log.string());
  EXPECT_TRUE(rep.passed());
  EXPECT_EQ(rep.reproduced(), 3u);
  EXPECT_EQ(test::run_akv({"audit", log.string()}).code, 0);
  // ... a last line cut by a kill (no newline) is left out and said, the others still pass ...
  std::string text = test::slurp(log.string());
  std::ofstream(log, std::ios::trunc) << text << text.substr(0, text.size() / 6);
  const serve::AuditReport cut = serve::replay_audit_log(log.string());
  EXPECT_EQ(cut.cut_lines, std::vector<size_t>{4});
  EXPECT_TRUE(cut.passed());
  EXPECT_EQ(cut.reproduced(), 3u);
  // ... and a server that appends after the cut line starts a new line: both still replay.
  {
    TestServer s2({}, so);
    ASSERT_EQ(post(s2, request_of(json::array({{{"role", "user"}, {"content", "after the kill"}}}))).status, 200);
  }
  const serve::AuditReport resumed = serve::replay_audit_log(log.string());
  EXPECT_EQ(resumed.cut_lines, std::vector<size_t>{4});
  EXPECT_TRUE(resumed.passed());
  EXPECT_EQ(resumed.reproduced(), 4u);
  // ... a request whose bytes no longer match the logged digest does not (a dropped message edited).
  {
    std::string t = text;
    const size_t at = t.find("turn 0");
    ASSERT_NE(at, std::string::npos);
    t[at + 5] = '9';
    std::ofstream(log, std::ios::trunc) << t;
    const serve::AuditReport edited = serve::replay_audit_log(log.string());
    EXPECT_EQ(edited.lines[0].why, "the request's SHA-256 is not the logged one");
  }
  // ... a line whose digest was altered does not (exit 1), and an empty log proves nothing.
  const size_t at = text.find("\"logits_sha256\":\"") + 17;
  text[at] = text[at] == '0' ? '1' : '0';
  std::ofstream(log, std::ios::trunc) << text;
  const serve::AuditReport bad = serve::replay_audit_log(log.string());
  EXPECT_FALSE(bad.passed());
  EXPECT_EQ(bad.reproduced(), 1u);
  EXPECT_EQ(bad.lines[0].why, "the logits digest differs");
  EXPECT_NE(bad.lines[1].why.find("prev_sha256"), std::string::npos) << bad.lines[1].why;  // the chain shows the edit too
  EXPECT_EQ(bad.first_failure(), 1u);
  EXPECT_EQ(test::run_akv({"audit", log.string()}).code, 1);
  std::ofstream(log, std::ios::trunc).close();
  EXPECT_FALSE(serve::replay_audit_log(log.string()).passed());
  EXPECT_EQ(test::run_akv({"audit", log.string()}).code, 1);
  fs::remove(log);
}

// ---- SV4: the sampler

TEST(SV4_Sampler, GreedyTakesTheLowestIdOfTheMaximumAndADrawIsAFunctionOfTheSeed) {
  const std::vector<float> l = {1.0f, 3.0f, 3.0f, -2.0f, 0.5f};
  serve::Sampler greedy({});
  EXPECT_EQ(greedy.next(l), 1);
  // A nucleus so small it holds one id is greedy, whatever the seed.
  for (uint64_t seed = 0; seed < 20; ++seed) EXPECT_EQ(serve::Sampler({1.0, 1e-6, seed}).next(l), 1);
  // The same seed draws the same tokens; over seeds, more than one token is drawn.
  std::set<Token> seen;
  for (uint64_t seed = 0; seed < 50; ++seed) {
    serve::Sampler a({1.0, 1.0, seed}), b({1.0, 1.0, seed});
    for (int k = 0; k < 5; ++k) {
      const Token t = a.next(l);
      EXPECT_EQ(t, b.next(l));
      seen.insert(t);
    }
  }
  EXPECT_GE(seen.size(), 3u);
  std::vector<float> bad = l;
  bad[3] = NAN;
  EXPECT_THROW(greedy.next(bad), Error);
}

TEST(SV3_Sync, ThePlanKeepsTheInOrderMatchAndEvictsTheRest) {
  const std::vector<std::vector<Token>> have = {{1}, {2, 2}, {3}, {4}};
  serve::SyncPlan p = serve::plan_sync(have, {{1}, {3}, {4}, {5}});  // a dropped interior span
  EXPECT_EQ(p.evict, std::vector<size_t>({1}));
  EXPECT_EQ(p.first_new, 3u);
  EXPECT_EQ(p.kept_tokens, 3u);
  p = serve::plan_sync(have, {{1}, {9}, {3}});  // an edit: the rest is evicted, the edit appended
  EXPECT_EQ(p.evict, std::vector<size_t>({1, 2, 3}));
  EXPECT_EQ(p.first_new, 1u);
}

// ---- O2: append_batch gives every session the bits it gets alone

TEST(O2_AppendBatch, EachSessionGetsTheBitsOfItsAppendAlone) {
  auto model = test::tiny();
  auto b = make_backend("cpu", model, {});
  const auto spans = test::spans_of("ad01_banking_ut0_gpt4omini.json");
  Session a(*b), c(*b), a1(*b), c1(*b);
  test::build(a, {spans[0]});
  test::build(c, {spans[0], spans[1]});
  test::build(a1, {spans[0]});
  test::build(c1, {spans[0], spans[1]});
  const std::vector<Token> ta = {5, 6, 7}, tc = {9};
  const auto out = Session::append_batch(std::vector<BatchAppend>{{&a, 100, ta}, {&c, 100, tc}});
  const std::vector<float> la = a1.append(100, ta, LogitRows::kLast), lc = c1.append(100, tc, LogitRows::kLast);
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(0, std::memcmp(out[0].data(), la.data(), la.size() * sizeof(float)));
  EXPECT_EQ(0, std::memcmp(out[1].data(), lc.data(), lc.size() * sizeof(float)));
  EXPECT_EQ(session_state_sha256(a), session_state_sha256(a1));
  EXPECT_EQ(session_state_sha256(c), session_state_sha256(c1));
  // A bad item changes no session: the same session twice, a token outside the vocabulary.
  const std::string before_a = session_state_sha256(a), before_c = session_state_sha256(c);
  EXPECT_THROW(Session::append_batch(std::vector<BatchAppend>{{&a, 100, ta}, {&a, 100, tc}}), Error);
  const std::vector<Token> bad = {100000};
  EXPECT_THROW(Session::append_batch(std::vector<BatchAppend>{{&a, 100, ta}, {&c, 100, bad}}), Error);
  EXPECT_EQ(session_state_sha256(a), before_a);
  EXPECT_EQ(session_state_sha256(c), before_c);
}

}  // namespace
}  // namespace akv
