#include "verify/models.hpp"

#include <array>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <sys/wait.h>

#include "readers/tokenizer/chatml.hpp"
#include "readers/gguf/gguf.hpp"
#include "readers/gguf/gguf_config.hpp"
#include "readers/gguf/gguf_weights.hpp"
#include "readers/hf/hf_weights.hpp"
#include "readers/json_limited.hpp"
#include "readers/mapped_file.hpp"
#include "reference/error.hpp"
#include "reference/synthetic_spec.hpp"
#include "verify/digest.hpp"

namespace akv {

namespace {
namespace fs = std::filesystem;

// The pins of scripts/fetch-model (spec/gguf.md F1; a test keeps the two equal).
constexpr const char* kRealFile = "SmolLM2-135M-Instruct.Q4_1.gguf";
constexpr uint64_t kRealSize = 98362432;
constexpr const char* kRealSha256 = "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53";

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// Runs scripts/fetch-model (its path is compiled in) and returns what it printed, or "" when
// the script is not there or failed (it printed its own one-line reason on stderr).
std::string run_fetch_script() {
  const fs::path script = fs::path(AKV_SOURCE_DIR) / "scripts" / "fetch-model";
  if (!fs::exists(script)) return "";
  FILE* p = popen(("'" + script.string() + "'").c_str(), "r");
  if (!p) return "";
  std::string out;
  std::array<char, 4096> buf{};
  while (fgets(buf.data(), buf.size(), p)) out += buf.data();
  const int st = pclose(p);
  if (st == -1 || !WIFEXITED(st) || WEXITSTATUS(st) != 0) return "";
  while (!out.empty() && (out.back() == '\n' || out.back() == '\r')) out.pop_back();
  return out;
}

// The cached default model, verified against the pins; fetched once when missing.
std::string real_model_file() {
  std::string path = default_real_model_path();
  if (!fs::exists(path)) {
    const std::string fetched = run_fetch_script();
    if (fetched.empty() || !fs::exists(fetched))
      throw Error(ErrorCode::kBadModel,
                  fmt::format("model '{}': {} is not in the model cache and could not be fetched; run "
                              "scripts/fetch-model with network to PyPI, or use --model small offline",
                              kDefaultRealModel, path));
    path = fetched;
  }
  const auto bytes = model::map_file(path);
  if (bytes->size() != kRealSize ||
      sha256_hex({bytes->data(), static_cast<size_t>(bytes->size())}) != kRealSha256)
    throw Error(ErrorCode::kBadModel,
                fmt::format("model '{}': {} does not match the pinned size and SHA-256 (spec/gguf.md F1); delete it "
                            "and run scripts/fetch-model",
                            kDefaultRealModel, path));
  return path;
}

// C6: every id the tokenizer can produce has a logit and an embedding row: a model with fewer
// would fail only when a high id is appended, far from the cause.
void check_vocab(const LoadedModel& m, const std::string& file) {
  const int tok = m.encoder->vocab_size(), model = m.model->config.vocab;
  if (tok > model)
    throw Error(ErrorCode::kBadModel,
                fmt::format("{}: the model has {} token rows (vocab) but its tokenizer has {} tokens: ids {}..{} would have no "
                            "embedding and no logit (spec/gguf.md C6)",
                            file, model, tok, model, tok - 1));
}

LoadedModel load_gguf(const std::string& path, const std::string& name) {
  LoadedModel m;
  const model::GgufFile f = model::GgufFile::open(path);
  m.encoder = model::make_chatml_encoder(f);  // the tokenizer first: it fails fast on a bad file
  m.model = model::load_gguf_model(f, name);
  check_vocab(m, path);
  m.name = name;
  m.source = path;
  m.real = true;
  return m;
}
// A Hugging Face folder (spec/safetensors.md): config.json + safetensors; its tokenizer.json and
// the chat template of tokenizer_config.json give the encoder (spec/tokenizer.md T1, CT1).
LoadedModel load_hf(const std::string& dir) {
  const fs::path tj = fs::path(dir) / "tokenizer.json", tc = fs::path(dir) / "tokenizer_config.json";
  if (!fs::exists(tj) || !fs::exists(tc))
    throw Error(ErrorCode::kBadModel, fmt::format("{}: no tokenizer.json and tokenizer_config.json: akv needs the model's own "
                                                  "tokenizer and chat template (save the tokenizer with the model)",
                                                  dir));
  constexpr model::JsonLimits kTokenizerConfigJson{size_t{16} << 20, 32, "spec/tokenizer.md CT1"};
  const nlohmann::json cfg = model::read_json_file(tc.string(), kTokenizerConfigJson, {ErrorCode::kBadModel, tc.string()});
  if (!cfg.is_object() || !cfg.contains("chat_template") || !cfg["chat_template"].is_string())
    throw Error(ErrorCode::kBadModel, fmt::format("{}: no string 'chat_template'", tc.string()));
  LoadedModel m;
  m.encoder = model::make_chatml_encoder(model::BpeTokenizer::from_tokenizer_json(tj.string()),
                                         cfg["chat_template"].get<std::string>(), tc.string());
  m.model = model::load_hf_model(dir, dir);
  check_vocab(m, dir);
  m.name = dir;
  m.source = dir;
  m.real = true;
  return m;
}
}  // namespace

std::vector<std::string> model_names() {
  std::vector<std::string> n = config_names();
  n.push_back(kDefaultRealModel);
  return n;
}

std::vector<std::string> model_forms() {
  std::vector<std::string> n = model_names();
  n.push_back("PATH.gguf");
  n.push_back("HF-FOLDER");
  n.push_back("synthetic:SPEC");
  return n;
}

std::string default_real_model_path() {
  fs::path dir;
  if (const char* m = std::getenv("AKV_MODELS"); m && *m) {
    dir = m;
  } else if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x) {
    dir = fs::path(x) / "akv" / "models";
  } else {
    const char* h = std::getenv("HOME");
    dir = fs::path(h && *h ? h : "/") / ".cache" / "akv" / "models";
  }
  return (dir / kRealFile).string();
}

LoadedModel load_model(const std::string& spec, uint64_t seed) {
  if (spec == kDefaultRealModel) return load_gguf(real_model_file(), kDefaultRealModel);
  if (ends_with(spec, ".gguf")) return load_gguf(spec, spec);
  if (fs::is_directory(spec)) return load_hf(spec);
  const auto synthetic = [&](const Config& c) {
    LoadedModel m;
    m.model = make_model(c, seed);
    m.encoder = make_fixture_encoder(c.vocab);
    m.name = c.name;
    m.source = fmt::format("synthetic, seed {}", seed);
    m.seed = seed;
    return m;
  };
  if (is_synthetic_spec(spec)) return synthetic(synthetic_config(spec));
  for (const std::string& n : config_names())
    if (n == spec) return synthetic(config_by_name(spec));
  std::string names;
  for (const std::string& n : model_names()) names += (names.empty() ? "" : ", ") + n;
  throw Error(ErrorCode::kUnknownModel,
              fmt::format("unknown model '{}' (models: {}, a synthetic shape 'synthetic:hidden=...', a path to a .gguf file, or a "
                          "Hugging Face model folder)",
                          spec, names));
}

}  // namespace akv
