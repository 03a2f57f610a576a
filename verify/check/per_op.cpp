#include "verify/check/per_op.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <optional>
#include <sstream>
#include <tuple>

#include "reference/error.hpp"
#include "reference/forward.hpp"
#include "verify/bounds/end_to_end.hpp"
#include "verify/bounds/kv_bounds.hpp"
#include "verify/bounds/op_bounds.hpp"
#include "verify/bounds/rigorous.hpp"
#include "runtime/digest.hpp"
#include "verify/json_number.hpp"

namespace akv::check {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

using Buf = std::vector<float>;

size_t sz(int a) { return static_cast<size_t>(a); }

// Records one output element held to `bound` (B_ref + B_opt).
void note(OpStat& s, float opt, float ref, double bound, int row, int col) {
  ++s.elements;
  if (!(bound < kInf)) ++s.vacuous;
  const double diff = std::fabs(static_cast<double>(opt) - static_cast<double>(ref));
  double ratio;
  if (!std::isfinite(opt) || !std::isfinite(ref) || std::isnan(diff))
    ratio = kInf;
  else if (diff == 0)
    ratio = 0;
  else if (bound > 0)
    ratio = diff / bound;  // 0 when the bound is +inf: counted as vacuous above
  else
    ratio = kInf;
  if (ratio == kInf || diff > bound) ++s.over;
  if (diff > s.max_abs) s.max_abs = diff;
  if (s.worst_row < 0 || ratio > s.max_ratio) {
    s.max_ratio = ratio;
    s.bound_at_max = bound;
    s.worst_row = row;
    s.worst_col = col;
  }
}

// Records one output element held to the reference's bits.
void note_bits(OpStat& s, float opt, float ref, int row, int col) {
  ++s.elements;
  if (std::memcmp(&opt, &ref, sizeof(float)) == 0) {
    if (s.worst_row < 0) s.worst_row = row, s.worst_col = col;
    return;
  }
  ++s.over;
  const double diff = std::fabs(static_cast<double>(opt) - static_cast<double>(ref));
  if (diff > s.max_abs) s.max_abs = diff;
  if (s.max_ratio < kInf) {
    s.max_ratio = kInf;
    s.worst_row = row;
    s.worst_col = col;
  }
}

// The trace: the reference's op on each input, then every table's on the same input.
class Tracer {
 public:
  // Rows at positions P .. P + M - 1.
  Tracer(const Model& m, int P, int M, std::vector<const OpTable*> tables, PerOpReport& rep)
      : m_(m), c_(m.config), P_(P), M_(M), tables_(std::move(tables)), rep_(rep) {}

  // out (M, n) = RMSNorm of x (M, n) with w.
  Buf rmsnorm(const char* op, int layer, const Buf& x, const std::vector<float>& w) {
    const int n = static_cast<int>(w.size());
    Buf ref(x.size());
    reference_ops().rmsnorm(ref.data(), x.data(), w.data(), M_, n, c_.rms_eps);
    std::vector<Buf> outs = run_each([&](const OpTable& t, Buf& o) {
      o.resize(x.size());
      t.rmsnorm(o.data(), x.data(), w.data(), M_, n, c_.rms_eps);
    });
    std::vector<OpStat*> st = stats(op, "B2", false, layer);
    for (int r = 0; r < M_; ++r) {
      const std::span<const float> row(x.data() + sz(r) * sz(n), sz(n));
      const std::vector<double> b = bounds::rmsnorm_bounds(row, w, c_.rms_eps);
      for (size_t t = 0; t < outs.size(); ++t)
        for (int j = 0; j < n; ++j) {
          const size_t i = sz(r) * sz(n) + sz(j);
          note(*st[t], outs[t][i], ref[i], bounds::add_up(b[sz(j)], b[sz(j)]), P_ + r, j);
        }
    }
    return ref;
  }

  // Y (M, d) = X (M, n) W^T, W (d, n).
  Buf matmul(const char* op, int layer, const Buf& X, const std::vector<float>& W, int n, int d) {
    Buf ref(sz(M_) * sz(d));
    reference_ops().matmul(ref.data(), X.data(), W.data(), M_, n, d);
    std::vector<Buf> outs = run_each([&](const OpTable& t, Buf& o) {
      o.resize(ref.size());
      t.matmul(o.data(), X.data(), W.data(), M_, n, d);
    });
    std::vector<OpStat*> st = stats(op, "B1", false, layer);
    std::vector<double> b1(static_cast<size_t>(d));
    for (int r = 0; r < M_; ++r) {
      bounds::matmul_bounds(X.data() + sz(r) * sz(n), W.data(), 1, n, d, b1.data());
      for (int j = 0; j < d; ++j) {
        const size_t i = sz(r) * sz(d) + sz(j);
        for (size_t t = 0; t < outs.size(); ++t) note(*st[t], outs[t][i], ref[i], 2 * b1[sz(j)], P_ + r, j);  // x2: exact
      }
    }
    return ref;
  }

  // x (M, heads * hd) rotated at positions P .. P + M - 1; the reference's bits (B3).
  void rope(const char* op, int layer, Buf& x, int heads) {
    const int hd = c_.head_dim;
    const float* cos = m_.rope->cos_rows(P_ + M_);
    const float* sin = m_.rope->sin_rows(P_ + M_);
    std::vector<int32_t> pos(static_cast<size_t>(M_));
    for (int r = 0; r < M_; ++r) pos[static_cast<size_t>(r)] = P_ + r;
    std::vector<Buf> outs = run_each([&](const OpTable& t, Buf& o) {
      o = x;
      t.rope(o.data(), M_, heads, hd, pos.data(), cos, sin);
    });
    reference_ops().rope(x.data(), M_, heads, hd, pos.data(), cos, sin);
    bits(op, "B3", layer, outs, x, heads * hd);
  }

  // Causal GQA attention of q (M, q_dim) at positions P .. over k, v (P + M, kv_dim).
  Buf attention(int layer, const Buf& q, const Buf& k, const Buf& v) {
    const int H = c_.n_heads, G = c_.n_kv_heads, hd = c_.head_dim, qd = c_.q_dim(), kvd = c_.kv_dim();
    Buf ref(sz(M_) * sz(qd));
    reference_ops().attention(ref.data(), q.data(), k.data(), v.data(), M_, P_, H, G, hd);
    std::vector<Buf> outs = run_each([&](const OpTable& t, Buf& o) {
      o.resize(ref.size());
      t.attention(o.data(), q.data(), k.data(), v.data(), M_, P_, H, G, hd);
    });
    std::vector<OpStat*> st = stats("attention", "B14", false, layer);
    using Key = std::tuple<int, int, int>;
    for (int r = 0; r < M_; ++r) {
      const int n = P_ + r + 1;  // causal: keys 0 .. P + r
      const bounds::AttnRounding ref_how = bounds::attn_rounding_reference(n);
      for (int h = 0; h < H; ++h) {
        const float* qh = q.data() + sz(r) * sz(qd) + sz(h) * sz(hd);
        const size_t kv = sz(h / (H / G)) * sz(hd);
        auto bound = [&](const bounds::AttnRounding& how) {
          return bounds::attention_bounds(qh, k.data() + kv, v.data() + kv, n, kvd, hd, how);
        };
        const std::vector<double> b_ref = bound(ref_how);
        std::map<Key, std::vector<double>> by_counts;  // tables that round alike share a bound
        for (size_t t = 0; t < outs.size(); ++t) {
          const bounds::AttnRounding how = tables_[t]->attention_rounding(n);
          const Key key{how.k, how.r, how.a};
          auto it = by_counts.find(key);
          if (it == by_counts.end()) it = by_counts.emplace(key, bound(how)).first;
          for (int i = 0; i < hd; ++i) {
            const size_t at = sz(r) * sz(qd) + sz(h) * sz(hd) + sz(i);
            note(*st[t], outs[t][at], ref[at], bounds::add_up(b_ref[sz(i)], it->second[sz(i)]), P_ + r, h * hd + i);
          }
        }
      }
    }
    return ref;
  }

  // out (M, n) = silu(g) * u, the reference's bits (B8).
  Buf swiglu(int layer, const Buf& g, const Buf& u) {
    const int n = static_cast<int>(g.size());
    Buf ref(g.size());
    reference_ops().swiglu(ref.data(), g.data(), u.data(), n);
    std::vector<Buf> outs = run_each([&](const OpTable& t, Buf& o) {
      o.resize(g.size());
      t.swiglu(o.data(), g.data(), u.data(), n);
    });
    bits("swiglu", "B8", layer, outs, ref, c_.ffn);
    return ref;
  }

  // The K/V rows (M, kv_dim) of layer l stored as type t (S6, S7): each table's bytes against
  // the reference's encoder, bit for bit ("kv_store"), and each stored value within B18 of the
  // float32 value it rounds ("kv_round"). Returns the stored rows as float32 (S8).
  Buf kv_store(int layer, const Buf& rows, KvType t, const char* what) {
    const int kvd = c_.kv_dim();
    const size_t rb = kv_row_bytes(t, kvd);
    std::vector<uint8_t> ref(sz(M_) * rb);
    Buf out(rows.size());
    for (int r = 0; r < M_; ++r) {
      kv_encode_row(t, rows.data() + sz(r) * sz(kvd), kvd, ref.data() + sz(r) * rb);
      kv_decode_row(t, ref.data() + sz(r) * rb, kvd, out.data() + sz(r) * sz(kvd));
    }
    std::vector<OpStat*> st = stats((std::string("kv_store_") + what).c_str(), t == KvType::kF16 ? "S6" : "S7", true, layer);
    std::vector<OpStat*> rnd = stats((std::string("kv_round_") + what).c_str(), "B18", false, layer);
    std::vector<uint8_t> got(rb);
    Buf back(sz(kvd));
    for (int r = 0; r < M_; ++r) {
      const std::span<const float> row(rows.data() + sz(r) * sz(kvd), sz(kvd));
      const std::vector<double> eps = bounds::kv_round_bounds(t, row);
      for (size_t i = 0; i < tables_.size(); ++i) {
        tables_[i]->kv_encode(t, row.data(), kvd, got.data());
        const bool same = std::memcmp(got.data(), ref.data() + sz(r) * rb, rb) == 0;
        kv_decode_row(t, got.data(), kvd, back.data());
        for (int j = 0; j < kvd; ++j) {
          // Bytes that differ count even where the values agree (a q8_0 block of zero scale).
          if (same) note_bits(*st[i], back[sz(j)], out[sz(r) * sz(kvd) + sz(j)], P_ + r, j);
          else note_bits(*st[i], std::numeric_limits<float>::quiet_NaN(), 0.0f, P_ + r, j);
          note(*rnd[i], back[sz(j)], row[sz(j)], eps[sz(j)], P_ + r, j);
        }
      }
    }
    return out;
  }

  // x += y, the reference's bits (M11).
  void add(const char* op, int layer, Buf& x, const Buf& y) {
    const int n = static_cast<int>(x.size());
    std::vector<Buf> outs = run_each([&](const OpTable& t, Buf& o) {
      o = x;
      t.add(o.data(), y.data(), n);
    });
    reference_ops().add(x.data(), y.data(), n);
    bits(op, "M11", layer, outs, x, c_.hidden);
  }

 private:
  template <class F>
  std::vector<Buf> run_each(F&& f) {
    std::vector<Buf> outs(tables_.size());
    for (size_t t = 0; t < tables_.size(); ++t) f(*tables_[t], outs[t]);
    return outs;
  }

  std::vector<OpStat*> stats(const char* op, const char* clause, bool bitwise, int layer) {
    const size_t first = rep_.stats.size();
    for (const OpTable* t : tables_) {
      OpStat s;
      s.table = t->label;
      s.op = op;
      s.clause = clause;
      s.bitwise = bitwise;
      s.layer = layer;
      rep_.stats.push_back(std::move(s));
    }
    std::vector<OpStat*> out;
    for (size_t i = first; i < rep_.stats.size(); ++i) out.push_back(&rep_.stats[i]);
    return out;
  }

  void bits(const char* op, const char* clause, int layer, const std::vector<Buf>& outs, const Buf& ref, int row) {
    std::vector<OpStat*> st = stats(op, clause, true, layer);
    for (size_t t = 0; t < outs.size(); ++t)
      for (size_t i = 0; i < ref.size(); ++i)
        note_bits(*st[t], outs[t][i], ref[i], P_ + static_cast<int>(i / sz(row)), static_cast<int>(i % sz(row)));
  }

  const Model& m_;
  const Config& c_;
  int P_, M_;
  std::vector<const OpTable*> tables_;
  PerOpReport& rep_;
};

std::string fmt_g(double v) {
  std::ostringstream o;
  o.precision(3);
  o << v;
  return o.str();
}


}  // namespace

size_t PerOpReport::over() const {
  size_t n = 0;
  for (const OpStat& s : stats) n += s.over;
  return n;
}

size_t PerOpReport::vacuous() const {
  size_t n = 0;
  for (const OpStat& s : stats) n += s.vacuous;
  return n;
}

bool PerOpReport::sound() const {
  size_t compared = 0;
  for (const OpStat& s : stats) compared += s.elements;
  return !tables.empty() && compared > 0 && over() == 0 && vacuous() == 0;
}

std::string PerOpReport::verdict() const {
  if (sound()) return "SOUND";
  return over() > 0 ? "VIOLATED" : "VACUOUS";
}

const OpStat* PerOpReport::worst() const {
  const OpStat* w = nullptr;
  for (const OpStat& s : stats)
    if (!s.bitwise && (w == nullptr || s.max_ratio > w->max_ratio)) w = &s;
  return w;
}

PerOpReport per_op_check(const Model& model, std::span<const Token> tokens, const std::vector<OpTable>& tables,
                         const std::string& model_name, size_t from, KvType kv) {
  std::optional<Model> dense;  // the reference reads float32 (spec/kernels-cpu.md K15)
  if (!has_dense_weights(model)) dense = Model{model.config, dense_weights(model), model.rope, model.rope_local, nullptr};
  const Model& m = dense ? *dense : model;
  const Config& c = m.config;
  bounds::check_tokens(c, tokens);
  if (from >= tokens.size())
    throw Error(ErrorCode::kBadInput, "per-op check: --from " + std::to_string(from) + " is not below the " +
                                          std::to_string(tokens.size()) + " tokens");
  const auto t0 = std::chrono::steady_clock::now();
  PerOpReport rep;
  rep.model = model_name;
  rep.kv_type = kv_type_name(kv);
  check_kv_type(kv, c);
  rep.tokens = tokens.size();
  rep.from = from;
  std::vector<const OpTable*> run;
  for (const OpTable& t : tables) {
    if (t.label == "reference") continue;
    if (!t.unavailable.empty()) {
      rep.unavailable.push_back(t.label + ": " + t.unavailable);
      continue;
    }
    run.push_back(&t);
    rep.tables.push_back(t.label);
  }
  const int P = static_cast<int>(from), M = static_cast<int>(tokens.size() - from);
  const int d = c.hidden, kvd = c.kv_dim(), qd = c.q_dim();
  // Each layer's stats: tables x ops; reserve so the pointers handed out stay valid.
  rep.stats.reserve(run.size() * (sz(c.n_layers) * 19 + 2));
  Tracer tr(m, P, M, run, rep);

  // The prefix [0, P): the reference's forward pass alone, for its keys and values.
  KVCache prefix(c, kv);  // its rows stored as the type (S5), read back as float32 below (S8)
  std::vector<float> prefix_k, prefix_v;
  {
    ref::RunState<float> s(c);
    for (int i = 0; i < P; ++i) ref::forward_token(m, prefix, tokens[sz(i)], static_cast<float*>(nullptr), s);
  }
  // The keys or values of layer l: the prefix's rows, then `rows` (M, kv_dim).
  auto with_prefix = [&](const float* cached, const Buf& rows) {
    Buf all(sz(P + M) * sz(kvd));
    std::copy_n(cached, sz(P) * sz(kvd), all.begin());
    std::copy(rows.begin(), rows.end(), all.begin() + static_cast<ptrdiff_t>(sz(P) * sz(kvd)));
    return all;
  };

  Buf x(sz(M) * sz(d));
  for (int r = 0; r < M; ++r)
    std::copy_n(m.weights.tok_emb.begin() + static_cast<ptrdiff_t>(tokens[sz(P + r)]) * d, d, x.begin() + sz(r) * sz(d));
  for (int l = 0; l < c.n_layers; ++l) {
    const LayerWeights<float>& w = m.weights.layers[sz(l)];
    const Buf xb = tr.rmsnorm("attn_norm", l, x, w.attn_norm);
    Buf q = tr.matmul("wq", l, xb, w.wq, d, qd);
    Buf k = tr.matmul("wk", l, xb, w.wk, d, kvd);
    const Buf v = tr.matmul("wv", l, xb, w.wv, d, kvd);
    tr.rope("rope_q", l, q, c.n_heads);
    tr.rope("rope_k", l, k, c.n_kv_heads);
    const float* pk = prefix.k_rows(l, 0, sz(P), prefix_k);
    const float* pv = prefix.v_rows(l, 0, sz(P), prefix_v);
    Buf att;
    if (kv == KvType::kF32) {
      att = tr.attention(l, q, with_prefix(pk, k), with_prefix(pv, v));
    } else {  // S6-S8: the rows stored as the type, then attention on both sides reads them back
      const Buf ks = tr.kv_store(l, k, kv, "k"), vs = tr.kv_store(l, v, kv, "v");
      att = tr.attention(l, q, with_prefix(pk, ks), with_prefix(pv, vs));
    }
    const Buf o = tr.matmul("wo", l, att, w.wo, qd, d);
    tr.add("attn_residual", l, x, o);
    const Buf xf = tr.rmsnorm("ffn_norm", l, x, w.ffn_norm);
    const Buf g = tr.matmul("w1", l, xf, w.w1, d, c.ffn);
    const Buf u = tr.matmul("w3", l, xf, w.w3, d, c.ffn);
    const Buf h = tr.swiglu(l, g, u);
    const Buf dn = tr.matmul("w2", l, h, w.w2, c.ffn, d);
    tr.add("ffn_residual", l, x, dn);
  }
  const Buf xn = tr.rmsnorm("final_norm", c.n_layers, x, m.weights.final_norm);
  const Buf logits = tr.matmul("logits", c.n_layers, xn, classifier(m.weights), d, c.vocab);
  rep.logits_sha256 = sha256_floats(logits);
  rep.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return rep;
}

nlohmann::json to_json(const PerOpReport& r) {
  nlohmann::json j;
  j["model"] = r.model;
  j["kv_type"] = r.kv_type;
  j["tokens"] = r.tokens;
  j["from"] = r.from;
  j["tables"] = r.tables;
  j["unavailable"] = r.unavailable;
  j["logits_sha256"] = r.logits_sha256;
  j["seconds"] = r.seconds;
  j["over"] = r.over();
  j["vacuous"] = r.vacuous();
  j["sound"] = r.sound();
  j["verdict"] = r.verdict();
  if (const OpStat* w = r.worst())
    j["worst"] = {{"table", w->table}, {"op", w->op}, {"layer", w->layer}, {"ratio", json_number(w->max_ratio)}};
  nlohmann::json ops = nlohmann::json::array();
  for (const OpStat& s : r.stats)
    ops.push_back({{"table", s.table},
                   {"op", s.op},
                   {"clause", s.clause},
                   {"bitwise", s.bitwise},
                   {"layer", s.layer},
                   {"elements", s.elements},
                   {"over", s.over},
                   {"vacuous", s.vacuous},
                   {"max_ratio", json_number(s.max_ratio)},
                   {"max_abs", json_number(s.max_abs)},
                   {"bound_at_max", json_number(s.bound_at_max)},
                   {"worst_row", s.worst_row},
                   {"worst_col", s.worst_col}});
  j["ops"] = std::move(ops);
  return j;
}

std::string to_text(const PerOpReport& r) {
  std::ostringstream o;
  o << "per-op check (spec/bounds.md B16): " << r.model << (r.kv_type == "f32" ? "" : ", cache " + r.kv_type) << ", positions " << r.from << " .. " << r.tokens - 1 << " of "
    << r.tokens << " tokens, tables";
  for (const std::string& t : r.tables) o << " " << t;
  o << "\n";
  for (const std::string& u : r.unavailable) o << "  not run: " << u << "\n";
  o << "  per op, each table's largest |opt - ref| / (B_ref + B_opt) over the layers, and that layer;\n"
       "  bitwise ops: \"bits =\" when every output has the reference's bits\n";
  // Ops in the order they run; per (op, table) the stat with the largest ratio and the count over.
  std::vector<std::string> ops;
  std::map<std::pair<std::string, std::string>, const OpStat*> top;
  std::map<std::pair<std::string, std::string>, size_t> over;
  for (const OpStat& s : r.stats) {
    const auto key = std::make_pair(s.op, s.table);
    if (std::find(ops.begin(), ops.end(), s.op) == ops.end()) ops.push_back(s.op);
    auto it = top.find(key);
    if (it == top.end() || s.max_ratio > it->second->max_ratio) top[key] = &s;
    over[key] += s.over;
  }
  auto cell = [](std::string text) { return text.size() >= 16 ? text + " " : text + std::string(16 - text.size(), ' '); };
  o << "  " << cell("op") << "clause  ";
  for (const std::string& t : r.tables) o << cell(t);
  o << "\n";
  for (const std::string& op : ops) {
    o << "  " << cell(op) << top[{op, r.tables.front()}]->clause << std::string(8 - std::min<size_t>(7, top[{op, r.tables.front()}]->clause.size()), ' ');
    for (const std::string& t : r.tables) {
      const OpStat& s = *top[{op, t}];
      const size_t n = over[{op, t}];
      if (s.bitwise)
        o << cell(n == 0 ? "bits =" : "bits differ: " + std::to_string(n));
      else
        o << cell(fmt_g(s.max_ratio) + " (L" + std::to_string(s.layer) + ")" + (n ? " " + std::to_string(n) + " over" : ""));
    }
    o << "\n";
  }
  if (r.sound()) {
    o << "SOUND: every op of every layer within its bound";
    if (const OpStat* w = r.worst())
      o << "; largest ratio " << fmt_g(w->max_ratio) << " (" << w->table << " " << w->op << ", layer " << w->layer << ")";
  } else if (r.over() > 0) {
    for (const OpStat& s : r.stats)
      if (s.over > 0) {
        o << "VIOLATED: " << s.table << " " << s.op << " layer " << s.layer << " row " << s.worst_row << " col "
          << s.worst_col << ": |opt - ref| " << fmt_g(s.max_abs) << (s.bitwise ? " (bits must equal)" : " > bound " + fmt_g(s.bound_at_max))
          << "; " << r.over() << " outputs over in all";
        break;
      }
  } else {
    o << (r.vacuous() > 0 ? "VACUOUS: " + std::to_string(r.vacuous()) + " outputs had an infinite bound"
                          : "VACUOUS: nothing was compared (no table ran)");
  }
  o << " (" << fmt_g(r.seconds) << " s)\n";
  return o.str();
}

}  // namespace akv::check
