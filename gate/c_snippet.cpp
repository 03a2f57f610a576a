#include "gate/c_snippet.hpp"

#include <fmt/format.h>

#include <cmath>
#include <limits>
#include <vector>

#include "reference/c_kernels.hpp"
#include "reference/rope.hpp"

namespace akv::gate {

namespace {

using Vec = std::vector<float>;

Vec floats(const nlohmann::json& a) {
  Vec v;
  for (const auto& x : a) v.push_back(x.is_number() ? x.get<float>() : std::numeric_limits<float>::quiet_NaN());
  return v;
}

// A C float literal of x's exact bits.
std::string lit(float x) {
  if (std::isnan(x)) return "NAN";
  if (std::isinf(x)) return x > 0 ? "INFINITY" : "-INFINITY";
  return fmt::format("{:a}f", x);
}

std::string array(const std::string& name, const Vec& v) {
  std::string s = fmt::format("static const float {}[{}] = {{", name, std::max<size_t>(v.size(), 1));
  for (size_t i = 0; i < v.size(); ++i) s += (i % 6 == 0 ? "\n  " : " ") + lit(v[i]) + (i + 1 < v.size() ? "," : "");
  if (v.empty()) s += "0";
  return s + "};\n";
}
std::string ints(const std::string& name, const std::vector<int32_t>& v) {
  std::string s = fmt::format("static const int32_t {}[{}] = {{", name, std::max<size_t>(v.size(), 1));
  for (size_t i = 0; i < v.size(); ++i) s += (i % 12 == 0 ? "\n  " : " ") + std::to_string(v[i]) + (i + 1 < v.size() ? "," : "");
  if (v.empty()) s += "0";
  return s + "};\n";
}

// A C comment line: no "*/" inside.
std::string comment(std::string s) {
  for (size_t at; (at = s.find("*/")) != std::string::npos;) s.replace(at, 2, "* /");
  std::string out;
  for (char c : s) out += c == '\n' ? std::string("\n   ") : std::string(1, c);
  return out;
}

const char* kHelpers = R"C(#include <akv/kernels.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Scratch for one call (scratch_floats; at least one float), every float `fill`. */
static float* cx_scratch(const akv_kernels* t, uint32_t op, int32_t M, int32_t n, int32_t d, float fill) {
  size_t k = t->scratch_floats ? t->scratch_floats(t->ctx, op, M, n, d) : 0;
  if (k < 1) k = 1;
  float* s = (float*)malloc(k * sizeof(float));
  for (size_t i = 0; i < k; ++i) s[i] = fill;
  return s;
}
/* 1 when a[0..n) and b[0..n) are the same bits; else 0, printing the first difference. */
static int cx_same(const float* a, const float* b, size_t n, const char* what) {
  if (memcmp(a, b, n * sizeof(float)) == 0) return 1;
  for (size_t i = 0; i < n; ++i)
    if (memcmp(a + i, b + i, sizeof(float)) != 0) {
      fprintf(stderr, "%s: not bitwise equal at element %zu: %a vs %a\n", what, i, (double)a[i], (double)b[i]);
      break;
    }
  return 0;
}
static float* cx_nan(size_t n) {
  float* y = (float*)malloc((n ? n : 1) * sizeof(float));
  for (size_t i = 0; i < n; ++i) y[i] = NAN;
  return y;
}
)C";

// ---- per op: the call, as a C function of the snippet

const char* kMatmul = R"C(/* Y (M, d) = X (M, n) W^T by the table, W prepared once when the table prepares weights. */
static float* cx_matmul(const akv_kernels* t, const float* X, int32_t M, const float* W, int32_t n, int32_t d, float* sc) {
  float* Y = cx_nan((size_t)M * d);
  float* own = sc ? NULL : cx_scratch(t, AKV_OP_MATMUL, M, n, d, NAN);
  void* prep = t->prepare_weight ? t->prepare_weight(t->ctx, W, d, n) : NULL;
  t->matmul(t->ctx, Y, (size_t)d, X, (size_t)n, M, W, prep, n, d, sc ? sc : own);
  if (prep) t->release_weight(t->ctx, prep);
  free(own);
  return Y;
}
)C";
const char* kRmsnorm = R"C(static float* cx_rmsnorm(const akv_kernels* t, const float* x, const float* w, int32_t M, int32_t n) {
  float* y = cx_nan((size_t)M * n);
  t->rmsnorm(t->ctx, y, x, w, M, n, 1e-5f);
  return y;
}
)C";
const char* kRope = R"C(/* Rows [r0, r0 + m) of x rotated by the table, the RoPE table's rows at pos (the rest zero). */
static float* cx_rope(const akv_kernels* t, const float* x, int32_t r0, int32_t m) {
  const size_t w = (size_t)HEADS * HEAD_DIM;
  float* y = (float*)malloc((size_t)m * w * sizeof(float) + 1);
  memcpy(y, x + (size_t)r0 * w, (size_t)m * w * sizeof(float));
  float* c = (float*)calloc((size_t)MAX_POS * (HEAD_DIM / 2), sizeof(float));
  float* s = (float*)calloc((size_t)MAX_POS * (HEAD_DIM / 2), sizeof(float));
  for (int32_t r = 0; r < M; ++r) {
    memcpy(c + (size_t)pos[r] * (HEAD_DIM / 2), cos_rows + (size_t)r * (HEAD_DIM / 2), (HEAD_DIM / 2) * sizeof(float));
    memcpy(s + (size_t)pos[r] * (HEAD_DIM / 2), sin_rows + (size_t)r * (HEAD_DIM / 2), (HEAD_DIM / 2) * sizeof(float));
  }
  t->rope(t->ctx, y, w, m, HEADS, HEAD_DIM, pos + r0, c, s);
  free(c);
  free(s);
  return y;
}
)C";
const char* kAttention = R"C(/* Queries [r0, r0 + m) in one call starting at position POS0 + r0, the cache as drawn. */
static float* cx_attention(const akv_kernels* t, const float* q, int32_t r0, int32_t m, float* sc) {
  const size_t qd = (size_t)HEADS * HEAD_DIM, kvd = (size_t)KV_HEADS * HEAD_DIM;
  const int32_t p0 = POS0 + r0;
  float* out = cx_nan((size_t)m * qd);
  float* own = sc ? NULL : cx_scratch(t, AKV_OP_ATTENTION, m, p0 + m, (int32_t)qd, NAN);
  t->attention(t->ctx, out, qd, q + (size_t)r0 * qd, qd, k, v, kvd, NULL, m, p0, HEADS, KV_HEADS, HEAD_DIM,
               1.0f / sqrtf((float)HEAD_DIM), sc ? sc : own);
  free(own);
  return out;
}
)C";
const char* kElem = R"C(/* Elements [i0, i0 + m) through the table's OP in one call. */
static float* cx_elem(const akv_kernels* t, int32_t i0, int32_t m) {
  float* out = (float*)malloc((size_t)(m ? m : 1) * sizeof(float));
  memcpy(out, a + i0, (size_t)m * sizeof(float));
  CALL;
  return out;
}
)C";

std::string replace_all(std::string s, const std::string& from, const std::string& to) {
  for (size_t at = 0; (at = s.find(from, at)) != std::string::npos; at += to.size()) s.replace(at, from.size(), to);
  return s;
}

// The threads comparison, `call` a C expression of a fresh output of `count` floats.
std::string threads_body(const std::string& call, const std::string& count, const std::string& what) {
  return fmt::format(R"C(  if (!t->set_threads) {{ fprintf(stderr, "the table has no set_threads\n"); return 2; }}
  t->set_threads(t->ctx, 1);
  float* one = {0};
  int ok = 1;
  for (int32_t th = 2; th <= 3 && ok; ++th) {{
    t->set_threads(t->ctx, th);
    float* other = {0};
    t->set_threads(t->ctx, 1);
    ok = cx_same(other, one, {1}, th == 2 ? "{2} at 2 threads vs 1" : "{2} at 3 threads vs 1");
    free(other);
  }}
  free(one);
  return ok ? 0 : 1;
)C",
                     call, count, what);
}

// The scratch comparison: NaN-filled scratch against other fills, then scratch left by another call.
std::string scratch_body(const std::string& op, const std::string& dims, const std::string& call_sc, const std::string& call_other,
                         const std::string& count, const std::string& what) {
  return fmt::format(R"C(  float* sc = cx_scratch(t, {0}, {1}, NAN);
  size_t k = t->scratch_floats ? t->scratch_floats(t->ctx, {0}, {1}) : 0;
  if (k < 1) k = 1;
  float* base = {2};
  const float fills[4] = {{1e30f, -3e38f, 0.0f, 1.0f}};
  int ok = 1;
  for (int f = 0; f < 4 && ok; ++f) {{
    for (size_t i = 0; i < k; ++i) sc[i] = fills[f];
    float* y = {2};
    ok = cx_same(y, base, {4}, "{5} with scratch filled with another value vs NaN");
    free(y);
  }}
  if (ok) {{ /* scratch left by a call on other inputs (the gate's own other inputs may differ) */
    for (size_t i = 0; i < k; ++i) sc[i] = NAN;
    float* fresh = {2};
    float* junk = {3};
    float* again = {2};
    ok = cx_same(again, fresh, {4}, "{5} with scratch left by another call");
    free(fresh), free(junk), free(again);
  }}
  free(base), free(sc);
  return ok ? 0 : 1;
)C",
                     op, dims, call_sc, call_other, count, what);
}

}  // namespace

std::string c_snippet(const std::string& property, const std::string& summary, const std::string& message,
                      const std::string& reproduce, const nlohmann::json& c) {
  if (!c.is_object() || !c.contains("op") || property.find(".bound") != std::string::npos) return "";
  const std::string op = c["op"].get<std::string>(), check = property.substr(property.rfind('.') + 1);
  std::string fn = "akv_cx_" + property;
  for (char& ch : fn)
    if (ch == '.' || ch == '-') ch = '_';
  std::string data, helper, body;
  auto I = [&](const char* k) { return c.at(k).get<int>(); };
  if (op == "matmul") {
    const int M = I("M"), n = I("n"), d = I("d");
    data = fmt::format("#define M {}\n#define N {}\n#define D {}\n", M, n, d) + array("X", floats(c["X"])) + array("W", floats(c["W"]));
    helper = kMatmul;
    if (check == "rows") {
      body = R"C(  float* all = cx_matmul(t, X, M, W, N, D, NULL);
  int ok = 1;
  for (int32_t i = 0; i < M && ok; ++i) {
    float* alone = cx_matmul(t, X + (size_t)i * N, 1, W, N, D, NULL);
    ok = cx_same(all + (size_t)i * D, alone, D, "a row of the call vs the row alone (M=1)");
    free(alone);
  }
  free(all);
)C";
      if (c.contains("other") && c["other"].is_object()) {  // the row among the rows of another batch
        const auto& o = c["other"];
        data += fmt::format("#define ROW {}\n#define M2 {}\n#define J {}\n", o.at("row").get<int>(), o.at("M").get<int>(), o.at("j").get<int>()) +
                array("X2", floats(o["X"]));
        body += R"C(  if (ok) { /* row ROW of X as row J of another batch X2 of M2 rows */
    float* alone = cx_matmul(t, X + (size_t)ROW * N, 1, W, N, D, NULL);
    float* other = cx_matmul(t, X2, M2, W, N, D, NULL);
    ok = cx_same(other + (size_t)J * D, alone, D, "the row as a row of another batch vs alone");
    free(alone), free(other);
  }
)C";
      }
      body += "  return ok ? 0 : 1;\n";
    } else if (check == "threads") {
      body = threads_body("cx_matmul(t, X, M, W, N, D, NULL)", "(size_t)M * D", "matmul");
    } else if (check == "scratch") {
      data += "static float Xneg[M * N];\n";
      body = "  for (size_t i = 0; i < (size_t)M * N; ++i) Xneg[i] = -X[i];\n" +
             scratch_body("AKV_OP_MATMUL", "M, N, D", "cx_matmul(t, X, M, W, N, D, sc)", "cx_matmul(t, Xneg, M, W, N, D, sc)",
                          "(size_t)M * D", "matmul");
    }
  } else if (op == "rmsnorm") {
    const int M = I("M"), n = I("n");
    data = fmt::format("#define M {}\n#define N {}\n", M, n) + array("x", floats(c["x"])) + array("w", floats(c["w"]));
    helper = kRmsnorm;
    if (check == "rows")
      body = R"C(  float* all = cx_rmsnorm(t, x, w, M, N);
  int ok = 1;
  for (int32_t i = 0; i < M && ok; ++i) {
    float* alone = cx_rmsnorm(t, x + (size_t)i * N, w, 1, N);
    ok = cx_same(all + (size_t)i * N, alone, N, "a row of the call vs the row alone");
    free(alone);
  }
  free(all);
  return ok ? 0 : 1;
)C";
    else if (check == "threads")
      body = threads_body("cx_rmsnorm(t, x, w, M, N)", "(size_t)M * N", "rmsnorm");
  } else if (op == "rope") {
    const int M = I("M"), heads = I("heads"), hd = I("head_dim");
    std::vector<int32_t> pos;
    for (const auto& p : c["pos"]) pos.push_back(p.get<int32_t>());
    const RopeTable tab = make_rope_table(hd, 10000.0f, 4096);  // the gate's one table (verify/check/op_props.cpp rope_table)
    Vec cr, sr;
    int max_pos = 1;
    for (int32_t p : pos) {
      const float* cp = tab.cos_rows(tab.max_pos) + static_cast<size_t>(p) * (hd / 2);
      const float* sp = tab.sin_rows(tab.max_pos) + static_cast<size_t>(p) * (hd / 2);
      cr.insert(cr.end(), cp, cp + hd / 2), sr.insert(sr.end(), sp, sp + hd / 2);
      max_pos = std::max(max_pos, p + 1);
    }
    const Vec x = floats(c["x"]);
    data = fmt::format("#define M {}\n#define HEADS {}\n#define HEAD_DIM {}\n#define MAX_POS {}\n", M, heads, hd, max_pos) + ints("pos", pos) +
           array("x", x) + "/* cos and sin rows pos[r] of the table (spec/model.md M6, theta 10000) */\n" + array("cos_rows", cr) +
           array("sin_rows", sr);
    helper = kRope;
    if (check == "rows")
      body = R"C(  const size_t w = (size_t)HEADS * HEAD_DIM;
  float* all = cx_rope(t, x, 0, M);
  int ok = 1;
  for (int32_t i = 0; i < M && ok; ++i) {
    float* alone = cx_rope(t, x, i, 1);
    ok = cx_same(all + (size_t)i * w, alone, w, "a row of the call vs the row alone");
    free(alone);
  }
  free(all);
  return ok ? 0 : 1;
)C";
    else if (check == "threads")
      body = threads_body("cx_rope(t, x, 0, M)", "(size_t)M * HEADS * HEAD_DIM", "rope");
    else if (check == "bitwise") {
      Vec ref = x;
      const akv_kernels* r = reference_kernels();
      r->rope(r->ctx, ref.data(), static_cast<size_t>(heads) * hd, M, heads, hd, pos.data(), tab.cos_rows(tab.max_pos),
              tab.sin_rows(tab.max_pos));
      data += "/* the reference's output (B3: the same operations, bit for bit) */\n" + array("expected", ref);
      body = R"C(  float* y = cx_rope(t, x, 0, M);
  const int ok = cx_same(y, expected, (size_t)M * HEADS * HEAD_DIM, "RoPE vs the reference");
  free(y);
  return ok ? 0 : 1;
)C";
    }
  } else if (op == "attention") {
    const int M = I("M"), pos0 = I("pos0"), heads = I("heads"), kvh = I("kv_heads"), hd = I("head_dim");
    data = fmt::format("#define M {}\n#define POS0 {}\n#define HEADS {}\n#define KV_HEADS {}\n#define HEAD_DIM {}\n", M, pos0, heads, kvh, hd) +
           array("q", floats(c["q"])) + array("k", floats(c["k"])) + array("v", floats(c["v"]));
    helper = kAttention;
    const std::string qd = "(size_t)HEADS * HEAD_DIM";
    if (check == "rows" || check == "start")
      body = fmt::format(R"C(  const size_t qd = {};
  float* all = cx_attention(t, q, 0, M, NULL);
  int ok = 1;
  for (int32_t i = {}; i < M && ok; ++i) {{
    float* part = cx_attention(t, q, i, {}, NULL);
    ok = cx_same(all + (size_t)i * qd, part, (size_t){} * qd, "{}");
    free(part);
  }}
  free(all);
  return ok ? 0 : 1;
)C",
                         qd, check == "rows" ? 0 : 1, check == "rows" ? "1" : "M - i", check == "rows" ? "1" : "(M - i)",
                         check == "rows" ? "a query of the call vs the query alone" : "queries from i in one call vs a call starting there");
    else if (check == "threads")
      body = threads_body("cx_attention(t, q, 0, M, NULL)", "(size_t)M * " + qd, "attention");
    else if (check == "decode" && c.contains("row")) {
      data += fmt::format("#define ROW {}\n", I("row"));
      body = fmt::format(R"C(  const size_t qd = {};
  if (t->set_threads) t->set_threads(t->ctx, 1);
  float* all = cx_attention(t, q, 0, M, NULL);
  int ok = 1;
  for (int th = 1; th <= 3 && ok; ++th) {{
    if (!t->set_threads && th > 1) break;
    if (t->set_threads) t->set_threads(t->ctx, th);
    float* one = cx_attention(t, q, ROW, 1, NULL);
    if (t->set_threads) t->set_threads(t->ctx, 1);
    ok = cx_same(one, all + (size_t)ROW * qd, qd, th == 1 ? "row ROW decoded alone at 1 thread vs its row in the prefill at 1 thread"
                 : th == 2 ? "row ROW decoded alone at 2 threads vs its row in the prefill at 1 thread"
                           : "row ROW decoded alone at 3 threads vs its row in the prefill at 1 thread");
    free(one);
  }}
  free(all);
  return ok ? 0 : 1;
)C",
                         qd);
    } else if (check == "scratch") {
      data += "static float qneg[M * HEADS * HEAD_DIM];\n";
      body = "  for (size_t i = 0; i < (size_t)M * HEADS * HEAD_DIM; ++i) qneg[i] = -q[i];\n" +
             scratch_body("AKV_OP_ATTENTION", "M, POS0 + M, HEADS * HEAD_DIM", "cx_attention(t, q, 0, M, sc)",
                          "cx_attention(t, qneg, 0, M, sc)", "(size_t)M * " + qd, "attention");
    }
  } else if (op == "swiglu" || op == "add") {
    const int n = I("n");
    const Vec a = floats(c["a"]), b = floats(c["b"]);
    data = fmt::format("#define N {}\n", n) + array("a", a) + array("b", b);
    helper = replace_all(kElem, "CALL", op == "swiglu" ? "t->swiglu(t->ctx, out, out, b + i0, m)" : "t->add(t->ctx, out, b + i0, m)");
    helper = replace_all(helper, "OP", op);
    if (check == "split")
      body = R"C(  float* all = cx_elem(t, 0, N);
  int ok = 1;
  for (int32_t i = 0; i < N && ok; ++i) {
    float* tail = cx_elem(t, i, N - i);
    ok = cx_same(all + i, tail, (size_t)(N - i), "elements from i in one call vs a call starting there");
    free(tail);
  }
  free(all);
  return ok ? 0 : 1;
)C";
    else if (check == "threads")
      body = threads_body("cx_elem(t, 0, N)", "(size_t)N", op);
    else if (check == "bitwise") {
      Vec ref = a;
      const akv_kernels* r = reference_kernels();
      if (op == "swiglu")
        r->swiglu(r->ctx, ref.data(), ref.data(), b.data(), n);
      else
        r->add(r->ctx, ref.data(), b.data(), n);
      data += "/* the reference's output (B8: bit for bit) */\n" + array("expected", ref);
      body = R"C(  float* y = cx_elem(t, 0, N);
  const int ok = cx_same(y, expected, (size_t)N, "vs the reference");
  free(y);
  return ok ? 0 : 1;
)C";
    }
  }
  if (body.empty()) return "";
  // Sizes as enum constants (a helper's parameter of the same name hides one, as a macro would not).
  std::string sized;
  for (size_t at = 0; at < data.size();) {
    const size_t nl = data.find('\n', at);
    const std::string line = data.substr(at, nl - at);
    at = nl + 1;
    if (line.rfind("#define ", 0) == 0) {
      const size_t sp = line.find(' ', 8);
      sized += "enum { " + line.substr(8, sp - 8) + " = " + line.substr(sp + 1) + " };\n";
    } else {
      sized += line + "\n";
    }
  }
  data = sized;
  std::string lead = message.substr(0, message.find('\n'));
  return fmt::format(R"C(/* akv gate counterexample: {0} ({1})
   failed: {2}
   {3}
   Paste into a unit test of your library: {4}(table) returns 0 when the case holds, 1 when it
   fails. Standalone: cc -std=c11 -DAKV_CX_MAIN -I AKV_INCLUDE this.c LIBRARY.so -lm && ./a.out */
{5}
{6}{7}
int {4}(const akv_kernels* t) {{
{8}}}

#ifdef AKV_CX_MAIN
const akv_kernels* akv_get_kernels(void);
int main(void) {{ return {4}(akv_get_kernels()); }}
#endif
)C",
                     property, comment(summary), comment(lead), comment("RC_PARAMS=\"" + reproduce + "\""), fn, kHelpers, data, helper, body);
}

}  // namespace akv::gate
