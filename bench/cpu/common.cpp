#include "bench/cpu/common.hpp"

#include <fstream>
#include <sys/resource.h>

#include "reference/token_stream.hpp"

namespace akv::bench {

std::vector<Token> random_tokens(size_t n, uint32_t seed, int vocab) { return lcg_tokens<Token>(n, seed, vocab); }

double layer_matmul_flops(const Config& c, size_t m) {
  const double mm = double(c.hidden) * (c.q_dim() + 2 * c.kv_dim()) + double(c.q_dim()) * c.hidden + 3.0 * c.hidden * c.ffn;
  return 2.0 * mm * c.n_layers * m;
}

double attention_flops(const Config& c, size_t p0, size_t m) {
  double keys = 0;
  for (size_t i = 0; i < m; ++i) keys += static_cast<double>(p0 + i + 1);
  return 4.0 * c.head_dim * c.n_heads * c.n_layers * keys;
}

double flops(const Config& c, size_t p0, size_t m, size_t out_rows) {
  return layer_matmul_flops(c, m) + 2.0 * double(c.hidden) * c.vocab * out_rows + attention_flops(c, p0, m);
}

std::string cpu_model() {
  std::ifstream in("/proc/cpuinfo");
  for (std::string line; std::getline(in, line);)
    if (line.rfind("model name", 0) == 0) return line.substr(line.find(':') + 2);
  return "unknown";
}

long peak_rss_kib() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return u.ru_maxrss;
}

}  // namespace akv::bench
