#include "chat/published_templates.hpp"

#include <openssl/evp.h>

#include <string>

namespace akv {

const std::vector<PublishedTemplate>& published_templates() {
  // The texts checked against jinja2 and llama.cpp by scripts/crosscheck-templates (CT11):
  // llama.cpp's models/templates/*.jinja in the llama-cpp-python 0.3.36 sdist, and the
  // chat_template of its ggml-vocab-phi-3.gguf.
  static const std::vector<PublishedTemplate> t = {
      {"Qwen/Qwen2.5-7B-Instruct", "55b2f4a26ac9ee719330a61a0c39d9e538b0e9322212f048326318cff4f8674a",
       chat::TurnTemplate::kQwen25},
      {"meta-llama/Llama-3.1-8B-Instruct", "93c0e9aa3629bbd77e68dbc0f5621f6e6b23aa8d74b932595cdb8d64684526d7",
       chat::TurnTemplate::kLlama3},
      {"meta-llama/Llama-3.2-3B-Instruct", "d82792f95932f1c9cef5c4bd992f171225e3bf8c7b609b4557c9e1ec96be819f",
       chat::TurnTemplate::kLlama3},
      {"microsoft/Phi-3-mini (ggml-vocab-phi-3.gguf)", "268b6082ceb7176dc6ed80557a2f7837f9f0339592fbee677d405a553af15f88",
       chat::TurnTemplate::kPhi3},
      {"Qwen/Qwen3-0.6B", "87a2728cb8dc9fe424d624542f6060ec05a1d285ebbec578bb078900e33396b5", chat::TurnTemplate::kQwen3},
  };
  return t;
}

namespace {
// Lower-case hex SHA-256 (OpenSSL's one-shot EVP digest).
std::string sha256_of(std::string_view s) {
  unsigned char d[EVP_MAX_MD_SIZE];
  unsigned int n = 0;
  EVP_Digest(s.data(), s.size(), d, &n, EVP_sha256(), nullptr);
  static const char* hex = "0123456789abcdef";
  std::string out;
  for (unsigned int i = 0; i < n; ++i) out += hex[d[i] >> 4], out += hex[d[i] & 15];
  return out;
}
}  // namespace

std::optional<chat::TurnTemplate> published_turn_template(std::string_view chat_template) {
  if (chat_template.ends_with('\n')) chat_template.remove_suffix(1);
  const std::string h = sha256_of(chat_template);
  for (const PublishedTemplate& p : published_templates())
    if (h == p.sha256) return p.renders_as;
  return std::nullopt;
}

}  // namespace akv
