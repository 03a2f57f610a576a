// The block variants (spec/model.md M13-M20) on the synthetic tiny-* models: each feature moves
// the logits, evict == never on every backend that runs them, a sliding layer's query sees its
// window and nothing else, the RoPE factors divide the frequencies, and the backends that run
// the llama block only refuse another architecture by name.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "optimized/cpu/cpu_backend.hpp"
#include "readers/conversation/chat_parse.hpp"
#include "reference/backend.hpp"
#include "reference/error.hpp"
#include "reference/model.hpp"
#include "reference/ops.hpp"
#include "reference/session.hpp"
#include "support.hpp"
#include "runtime/backends.hpp"
#include "verify/witness.hpp"

using namespace akv;

namespace {

const std::vector<std::string> kVariants = {"tiny-qwen2", "tiny-qwen3", "tiny-gemma3", "tiny-llama3"};

// Logits (n, vocab) of `tokens` appended as one span.
std::vector<float> logits(const std::shared_ptr<const Model>& m, const std::string& backend, const std::vector<Token>& tokens) {
  auto b = make_backend(backend, m);
  Session s(*b);
  return s.append(0, tokens);
}

std::vector<Token> seq(int n, int salt = 0) {
  std::vector<Token> t;
  for (int i = 0; i < n; ++i) t.push_back(static_cast<Token>((i * 37 + 11 + salt) % 256));
  return t;
}

// The same weights with one feature turned off: the logits must move (the feature is read).
void expect_feature_moves(const std::string& name, void (*off)(Model&)) {
  const auto m = make_model(config_by_name(name), 1);
  auto o = std::make_shared<Model>(*m);
  off(*o);
  for (const char* be : {"reference", "cpu"}) {
    const auto a = logits(m, be, seq(40)), b = logits(o, be, seq(40));
    ASSERT_EQ(a.size(), b.size());
    EXPECT_NE(std::memcmp(a.data(), b.data(), a.size() * sizeof(float)), 0) << name << " on " << be << ": the feature changed nothing";
  }
}

}  // namespace

TEST(M13_BlockVariants, NamedAndListed) {
  const auto names = config_names();
  for (const auto& v : kVariants) EXPECT_NE(std::find(names.begin(), names.end(), v), names.end()) << v;
  EXPECT_EQ(config_by_name("tiny-qwen2").arch, "qwen2");
  EXPECT_TRUE(config_by_name("tiny-qwen2").qkv_bias);
  EXPECT_TRUE(config_by_name("tiny-qwen3").qk_norm);
  const Config g = config_by_name("tiny-gemma3");
  EXPECT_TRUE(g.qk_norm && g.post_norms && g.geglu);
  EXPECT_EQ(g.sliding_window, 64);
  EXPECT_FALSE(config_by_name("tiny").extended());
  for (const auto& v : kVariants) EXPECT_TRUE(config_by_name(v).extended()) << v;
  try {
    Config c = config_by_name("tiny");
    apply_arch(c, "phi3");
    FAIL() << "phi3 accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("'phi3'"), std::string::npos) << e.what();
  }
}

TEST(M13_BlockVariants, TheLlamaBlockOnlyBackendsRefuseThemByName) {
  for (const auto& v : kVariants) {
    const auto m = make_model(config_by_name(v), 1);
    for (const std::string be : {"cuda-emu", "cuda"}) {
      try {
        make_backend(be, m);
        ADD_FAILURE() << be << " accepted " << v;
      } catch (const Error& e) {
        const std::string w = e.what();
        EXPECT_EQ(e.code(), ErrorCode::kBackendUnavailable) << w;
        // cuda without a device (or a build without it) says so; with one, it names the architecture
        if (w.find("does not run architecture") != std::string::npos)
          EXPECT_NE(w.find("'" + be + "'"), std::string::npos) << w;
      }
    }
  }
  // The check every llama-block-only backend makes (cuda, cuda-emu, a kernel library's composed forward).
  try {
    require_llama_block(config_by_name("tiny-gemma3"), "cuda-emu");
    FAIL() << "gemma3 accepted";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()).find("backend 'cuda-emu' does not run architecture 'gemma3'"), 0u) << e.what();
  }
  EXPECT_NO_THROW(require_llama_block(config_by_name("tiny"), "cuda-emu"));
  try {
    require_llama_block(config_by_name("tiny-llama3"), "cuda");
    FAIL() << "llama3 RoPE accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("Llama 3 RoPE frequency factors"), std::string::npos) << e.what();
  }
}

TEST(M13_BlockVariants, EvictEqualsNeverOnReferenceAndCpu) {
  const Conversation c = load_conversation(test::example("ad01_banking_ut0_gpt4omini.json"));
  for (const auto& v : kVariants)
    for (const char* be : {"reference", "cpu"}) {
      WitnessOptions o;
      o.model = v;
      o.backend = be;
      const WitnessReport r = run_witness(c, o);
      EXPECT_TRUE(r.passed()) << v << " on " << be;
      EXPECT_EQ(r.evict_vs_never_max_abs, 0.0f) << v << " on " << be;
      EXPECT_GT(r.poison_vs_never_max_abs, 0.0f) << v << " on " << be;
      EXPECT_EQ(r.cache_sha256_evicted, r.cache_sha256_never) << v << " on " << be;
      EXPECT_TRUE(r.cross_config_identical) << v << " on " << be << ": " << r.cross_config_diff;
    }
}

TEST(M14_QkvBias, TheBiasIsAdded) {
  expect_feature_moves("tiny-qwen2", [](Model& m) { m.config.qkv_bias = false; });
}

TEST(M15_QkNorm, TheHeadsAreNormalised) {
  expect_feature_moves("tiny-qwen3", [](Model& m) { m.config.qk_norm = false; });
}

TEST(M16_PostNorms, TheBlockOutputsAreNormalised) {
  expect_feature_moves("tiny-gemma3", [](Model& m) { m.config.post_norms = false; });
}

TEST(M17_GeGLU, TheGateIsTanhGelu) {
  expect_feature_moves("tiny-gemma3", [](Model& m) { m.config.geglu = false; });
}

TEST(M17_GeGLU, TheFloatOperationsOfTheSpec) {
  // The spec's order of operations, written out: a3 = (a a) a; z = k1 (a + k0 a3); a / (1 + exp(-z)).
  for (float a : {0.0f, -0.0f, 1.0f, -1.0f, 0.5f, -3.25f, 7.0f, 1e-20f, -1e-20f, 30.0f, -30.0f, 1e10f, -1e10f}) {
    const float a3 = (a * a) * a;
    const float z = 1.5957691216057308f * (a + 0.044715f * a3);
    const float want = a / (1.0f + akv::exp(-z));
    const float got = ref::gelu_tanh(a);
    EXPECT_EQ(std::memcmp(&got, &want, sizeof got), 0) << a;
  }
  EXPECT_EQ(ref::gelu_tanh(0.0f), 0.0f);
  EXPECT_EQ(ref::gelu_tanh(1e10f), 1e10f);  // exp(-z) = 0: the identity
  EXPECT_EQ(ref::gelu_tanh(-1e10f), 0.0f);  // exp(-z) = inf: the limit 0
}

TEST(M18_EmbedScale, TheRowIsScaledByTheFloatNearestSqrtHidden) {
  const Config g = config_by_name("tiny-gemma3");
  EXPECT_EQ(g.embed_scale, static_cast<float>(std::sqrt(32.0)));
  expect_feature_moves("tiny-gemma3", [](Model& m) { m.config.embed_scale = 0.0f; });
}

TEST(M19_SlidingWindow, AQuerySeesItsWindowAndNothingElse) {
  // Two sliding layers of window 4: the last position p depends on tokens (p - 2*3 - 1, p] only
  // (each layer reaches back window - 1 = 3 positions), so token p - 7 changes nothing, bit for
  // bit, and token p - 6 changes the logits.
  Config c = config_by_name("tiny-gemma3");
  c.sliding_window = 4;
  c.sliding_layers = {1, 1};
  const auto m = make_model(c, 1);
  const int n = 30, p = n - 1;
  for (const char* be : {"reference", "cpu"}) {
    const auto base = logits(m, be, seq(n));
    auto last = [&](const std::vector<float>& l) { return std::vector<float>(l.end() - c.vocab, l.end()); };
    auto t = seq(n);
    t[p - 7] = static_cast<Token>((t[p - 7] + 1) % 256);
    EXPECT_EQ(last(logits(m, be, t)), last(base)) << be << ": a token before the window moved the logits";
    t = seq(n);
    t[p - 6] = static_cast<Token>((t[p - 6] + 1) % 256);
    EXPECT_NE(last(logits(m, be, t)), last(base)) << be << ": the oldest token in reach did not move the logits";
  }
}

TEST(M19_SlidingWindow, EvictionAroundTheWindowIsExact) {
  // Spans before, inside and across the window of tiny-gemma3's sliding layer (64): evicting any
  // one equals never having appended it, on reference and cpu.
  const auto m = make_model(config_by_name("tiny-gemma3"), 1);
  const std::vector<int> sizes = {50, 30, 90, 20, 70};
  for (const char* be : {"reference", "cpu"})
    for (SpanId ev = 0; ev < sizes.size(); ++ev) {
      auto b1 = make_backend(be, m), b2 = make_backend(be, m);
      Session s(*b1), never(*b2);
      for (SpanId i = 0; i < sizes.size(); ++i) {
        s.append(i, seq(sizes[i], static_cast<int>(i)), LogitRows::kLast);
        if (i != ev) never.append(i, seq(sizes[i], static_cast<int>(i)), LogitRows::kLast);
      }
      s.evict(std::vector<SpanId>{ev});
      const auto a = s.logits(), b = never.logits();
      ASSERT_EQ(a.size(), b.size());
      EXPECT_EQ(std::memcmp(a.data(), b.data(), a.size() * sizeof(float)), 0) << be << " evicting span " << ev;
    }
}

TEST(M20_RopeFactors, EachFrequencyIsDividedByItsFactor) {
  const Config c = config_by_name("tiny-llama3");
  ASSERT_EQ(c.rope_freq_factors.size(), 4u);
  // head_dim 8, theta 1e4: wavelengths 2pi, 62.8, 628, 6283 against original 64 / high 4 = 16
  // and / low 1 = 64: the first kept, the last two divided by 8, the second blended.
  EXPECT_EQ(c.rope_freq_factors[0], 1.0f);
  EXPECT_EQ(c.rope_freq_factors[2], 8.0f);
  EXPECT_EQ(c.rope_freq_factors[3], 8.0f);
  EXPECT_GT(c.rope_freq_factors[1], 1.0f);
  EXPECT_LT(c.rope_freq_factors[1], 8.0f);
  const auto m = make_model(c, 1);
  for (int p : {0, 1, 17, 300, 16383})
    for (int i = 0; i < 4; ++i) {
      const double a = static_cast<double>(p) * (std::pow(10000.0, -2.0 * i / 8) / static_cast<double>(c.rope_freq_factors[i]));
      EXPECT_EQ(m->rope->cos_at(p)[i], static_cast<float>(std::cos(a))) << p << " " << i;
      EXPECT_EQ(m->rope->sin_at(p)[i], static_cast<float>(std::sin(a))) << p << " " << i;
    }
  expect_feature_moves("tiny-llama3", [](Model& m) {
    m.config.rope_freq_factors.clear();
    m.rope = make_global_rope(m.config);
  });
}
