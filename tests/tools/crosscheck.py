#!/usr/bin/env python3
"""akv's logits on the real model against Hugging Face transformers (docs/crosscheck.md).

Usage: crosscheck.py --akv BIN --model MODEL.gguf --out DIR [--count N] [--pick longest|shortest]
                     [--min-tokens N] [--backend B] [--positions all|last] CONVERSATION.json...

Of the poisoned conversations given (duplicates by content dropped), those with at least
--min-tokens tokens under `akv tokenize` are ranked by length and --count of them taken (the
longest, or the shortest for a quick run). For each, transformers runs the token ids akv used
(this check is about the model's arithmetic, not the tokenizer) three times:

  stock  float32, eager attention, transformers' own RoPE (computed in float32);
  inj32  float32 with akv's RoPE table (`akv rope`) injected into LlamaRotaryEmbedding;
  inj64  the model in float64, akv's RoPE table, RMSNorm and the eager softmax in float64:
         the near-exact reference.

and akv's logits (`akv logits --positions all`) are compared with each. Acceptance
(FlashAttention's rule): max|akv - inj64| <= 2 * max|inj32 - inj64|, and at every position where
inj64's top-2 margin exceeds that row's max|akv - inj64|, akv's argmax equals inj64's.
Writes DIR/crosscheck.json and DIR/crosscheck.md. Exit 0 pass, 1 the rule failed, 2 an error
(one line on stderr): nothing compared is an error, never a pass.
"""
import argparse
import contextlib
import copy
import hashlib
import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np
import torch
import transformers
from transformers import AutoModelForCausalLM
from transformers.models.llama import modeling_llama

RATIO_LIMIT = 2.0  # FlashAttention's acceptance factor
ROW_CHUNK = 128    # rows compared at a time (bounds the float64 temporaries)


class Failure(Exception):
    """An error that ends the run: one line on stderr, exit 2."""


# ---------------------------------------------------------------------------------------------
# akv, through its CLI

def akv(binary, *args):
    """Runs `akv ARGS`, returns stdout; a nonzero exit is a Failure quoting akv's stderr."""
    r = subprocess.run([binary, *args], capture_output=True, text=True)
    if r.returncode != 0:
        last = (r.stderr.strip().splitlines() or ["(no message)"])[-1]
        raise Failure(f"`akv {' '.join(args)}` exited {r.returncode}: {last}")
    return r.stdout


def akv_tokens(binary, model, path):
    """The token ids akv feeds the model for a conversation (`akv tokenize --json`)."""
    doc = json.loads(akv(binary, "tokenize", path, "--model", model, "--json"))
    tokens = doc.get("tokens")
    if not isinstance(tokens, list) or not tokens:
        raise Failure(f"akv tokenize {path}: no tokens")
    return tokens, doc.get("encoder")


def akv_npy(binary, args, shape, out):
    """Runs an akv command that writes a float32 .npy to `out`; checks its shape, maps it."""
    akv(binary, *args, "--out", out)
    a = np.load(out, mmap_mode="r")
    if a.dtype != np.float32 or a.shape != shape:
        raise Failure(f"`akv {args[0]}` wrote {a.dtype} {a.shape}, expected float32 {shape}")
    return a


def poisoned(path):
    """Whether a conversation file marks at least one message as poisoned."""
    with open(path, "rb") as f:
        return bool(json.load(f).get("poisoned"))


def select(binary, model, files, count, pick, min_tokens):
    """The conversations to compare: poisoned, distinct by content, >= min_tokens, ranked."""
    seen, ranked = set(), []
    for path in files:
        with open(path, "rb") as f:
            digest = hashlib.sha256(f.read()).hexdigest()
        if digest in seen or not poisoned(path):
            continue
        seen.add(digest)
        tokens, encoder = akv_tokens(binary, model, path)
        if len(tokens) >= min_tokens:
            ranked.append((len(tokens), path, tokens, encoder))
    ranked.sort(key=lambda r: (-r[0], r[1]) if pick == "longest" else (r[0], r[1]))
    if len(ranked) < count:
        raise Failure(f"{len(ranked)} distinct poisoned conversations of {min_tokens}+ tokens among "
                      f"{len(files)} files, {count} needed")
    return ranked[:count]


# ---------------------------------------------------------------------------------------------
# transformers, and the three patches

def load_transformers(model_path):
    """transformers' Llama from the same GGUF (dequantised by gguf-py), float32, eager."""
    folder, name = os.path.split(os.path.abspath(model_path))
    m = AutoModelForCausalLM.from_pretrained(folder, gguf_file=name, dtype=torch.float32,
                                             attn_implementation="eager")
    if not isinstance(m.model.rotary_emb, modeling_llama.LlamaRotaryEmbedding):
        raise Failure(f"transformers built {type(m.model.rotary_emb).__name__}, not LlamaRotaryEmbedding")
    return m.eval()


CALLS = {"rope": 0, "rmsnorm": 0, "attention": 0}


def akv_rope_forward(table):
    """A LlamaRotaryEmbedding.forward that returns akv's table: cos/sin of shape
    (batch, seq, head_dim), the (seq, head_dim/2) half duplicated (rotate-half layout)."""
    cos = torch.from_numpy(np.concatenate([table[0], table[0]], axis=-1))
    sin = torch.from_numpy(np.concatenate([table[1], table[1]], axis=-1))

    def forward(self, x, position_ids):
        CALLS["rope"] += 1
        if int(position_ids.max()) >= cos.shape[0]:
            raise Failure(f"position {int(position_ids.max())} past akv's RoPE table ({cos.shape[0]} rows)")
        return cos[position_ids].to(x.dtype), sin[position_ids].to(x.dtype)
    return forward


def rmsnorm_in_input_dtype(self, x):
    """LlamaRMSNorm without the float32 upcast: weight * (x * rsqrt(mean(x^2) + eps)) in x's
    dtype. For float32 input it is the stock expression (checked bitwise by self_test)."""
    CALLS["rmsnorm"] += 1
    return self.weight * (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.variance_epsilon))


def eager_attention_in_input_dtype(module, query, key, value, attention_mask, scaling, dropout=0.0, **kwargs):
    """Eager attention whose softmax runs in the query's dtype (stock: always float32). Same
    GQA mapping as stock (repeat_kv: query head h reads KV head h // groups)."""
    CALLS["attention"] += 1
    key = modeling_llama.repeat_kv(key, module.num_key_value_groups)
    value = modeling_llama.repeat_kv(value, module.num_key_value_groups)
    scores = torch.matmul(query, key.transpose(2, 3)) * scaling
    if attention_mask is not None:
        scores = scores + attention_mask
    probs = torch.softmax(scores, dim=-1)
    return torch.matmul(probs, value).transpose(1, 2).contiguous(), probs


@contextlib.contextmanager
def patched(rope_table=None, float64_internals=False):
    """Installs akv's RoPE table and/or the dtype-preserving RMSNorm and softmax; restores the
    stock functions on exit."""
    saved = [(modeling_llama.LlamaRotaryEmbedding, "forward"), (modeling_llama.LlamaRMSNorm, "forward"),
             (modeling_llama, "eager_attention_forward")]
    saved = [(owner, name, getattr(owner, name)) for owner, name in saved]
    try:
        if rope_table is not None:
            modeling_llama.LlamaRotaryEmbedding.forward = akv_rope_forward(rope_table)
        if float64_internals:
            modeling_llama.LlamaRMSNorm.forward = rmsnorm_in_input_dtype
            modeling_llama.eager_attention_forward = eager_attention_in_input_dtype
        yield
    finally:
        for owner, name, value in saved:
            setattr(owner, name, value)


PATCHES = [
    "transformers.models.llama.modeling_llama.LlamaRotaryEmbedding.forward -> akv's `akv rope` table "
    "(runs inj32, inj64)",
    "transformers.models.llama.modeling_llama.LlamaRMSNorm.forward -> computes in the input dtype "
    "(stock upcasts to float32) (run inj64)",
    "transformers.models.llama.modeling_llama.eager_attention_forward -> softmax in the query's dtype "
    "(stock: dtype=torch.float32) (run inj64)",
]


def logits(model, ids, expect):
    """All-position logits of one forward pass over `ids` (no cache), as numpy. `expect` maps
    each patched function to how many calls the pass must make (the patches must be real)."""
    for k in CALLS:
        CALLS[k] = 0
    with torch.inference_mode():
        out = model(input_ids=torch.tensor([ids]), use_cache=False).logits[0]
    for k, n in expect.items():
        if CALLS[k] != n:
            raise Failure(f"patched {k} ran {CALLS[k]} times in one forward pass, expected {n}")
    return out.numpy()


def self_test(model, table, ids):
    """The float64 patches change only the dtype: in float32 they equal stock bitwise."""
    with patched(rope_table=table):
        a = logits(model, ids, {"rope": 1})
    with patched(rope_table=table, float64_internals=True):
        b = logits(model, ids, expect_calls(model, rope=True, internals=True))
    if not np.array_equal(a, b):
        raise Failure(f"self-test: float32 with the patched RMSNorm/softmax differs from stock by "
                      f"{np.max(np.abs(a.astype(np.float64) - b)):.3g}")
    return len(ids)


def expect_calls(model, rope, internals):
    """Calls one forward pass makes to each patched function."""
    c = model.config
    e = {"rope": 1} if rope else {}
    if internals:
        e.update(rmsnorm=2 * c.num_hidden_layers + 1, attention=c.num_hidden_layers)
    return e


# ---------------------------------------------------------------------------------------------
# figures

def reference_rows(ref):
    """Per row of the reference: its argmax and its top-2 margin (largest minus second)."""
    top = np.empty(ref.shape[0], dtype=np.int64)
    margin = np.empty(ref.shape[0])
    for s in range(0, ref.shape[0], ROW_CHUNK):
        r = np.asarray(ref[s:s + ROW_CHUNK])
        top[s:s + len(r)] = r.argmax(axis=1)
        top2 = np.partition(r, -2, axis=1)[:, -2:]
        margin[s:s + len(r)] = top2[:, 1].astype(np.float64) - top2[:, 0]
    return top, margin


def compare(a, ref, ref_rows):
    """Figures of `a` against `ref` (both (rows, vocab); ref_rows = reference_rows(ref)):
    max |a - ref|; max relative difference, per row max|a - ref| / max|ref|; argmax agreement;
    the margin rule (argmax equal wherever ref's top-2 margin exceeds that row's max|a - ref|)."""
    rows = ref.shape[0]
    top, margin = ref_rows
    row_abs = np.empty(rows)
    row_rel = np.empty(rows)
    agree = np.empty(rows, dtype=bool)
    for s in range(0, rows, ROW_CHUNK):
        x = np.asarray(a[s:s + ROW_CHUNK], dtype=np.float64)
        r = np.asarray(ref[s:s + ROW_CHUNK], dtype=np.float64)
        d = np.abs(x - r).max(axis=1)
        row_abs[s:s + len(r)] = d
        row_rel[s:s + len(r)] = d / np.abs(r).max(axis=1)
        agree[s:s + len(r)] = x.argmax(axis=1) == top[s:s + len(r)]
    decided = margin > row_abs
    return {
        "positions": int(rows),
        "max_abs": float(row_abs.max()),
        "max_rel": float(row_rel.max()),
        "max_abs_per_256_positions": [float(row_abs[b:b + 256].max()) for b in range(0, rows, 256)],
        "argmax_agree": int(agree.sum()),
        "argmax_disagree_at": [int(p) for p in np.flatnonzero(~agree)],
        "margin_decided": int(decided.sum()),
        "margin_violations": [int(p) for p in np.flatnonzero(decided & ~agree)],
    }


def rope_drift(model, table, n):
    """Stock transformers' float32 RoPE and akv's table against cos/sin taken in float64."""
    hd = table.shape[2] * 2
    theta = float(model.config.rope_parameters["rope_theta"])
    angle = np.arange(n, dtype=np.float64)[:, None] * np.power(theta, -2.0 * np.arange(hd // 2) / hd)
    exact = np.stack([np.cos(angle), np.sin(angle)])
    with torch.inference_mode():
        cos, sin = model.model.rotary_emb(torch.zeros(1, dtype=torch.float32), torch.arange(n)[None])
    stock = np.stack([cos[0].numpy(), sin[0].numpy()]).astype(np.float64)
    if not np.array_equal(stock[..., :hd // 2], stock[..., hd // 2:]):
        raise Failure("transformers' cos/sin halves differ: not the rotate-half layout akv's table assumes")
    stock = stock[..., :hd // 2]
    ulp = np.spacing(np.abs(exact).astype(np.float32)).astype(np.float64)
    akv_err = np.abs(table.astype(np.float64) - exact)
    stock_err = np.abs(stock - exact)
    first = int(np.argmax(stock_err.max(axis=(0, 2)) > 1e-5)) if (stock_err > 1e-5).any() else None
    return {
        "positions": n, "head_dim": hd, "theta": theta,
        "stock_max_abs": float(stock_err.max()),
        "stock_max_abs_first_1000": float(stock_err[:, :1000].max()),
        "stock_max_abs_from_1000": float(stock_err[:, 1000:].max()) if n > 1000 else None,
        "stock_first_position_over_1e-5": first,
        "akv_max_abs": float(akv_err.max()),
        "akv_max_ulp": float((akv_err / ulp).max()),
        "stock_vs_akv_max_abs": float(np.abs(stock - table).max()),
    }


# ---------------------------------------------------------------------------------------------
# the run

def check(binary, model_path, backend, conv, m32, m64, work):
    """All figures for one conversation; the akv and transformers arrays live only here."""
    n, path, ids, encoder = conv
    vocab = m32.config.vocab_size
    print(f"crosscheck: {os.path.basename(path)}: {n} tokens (encoder {encoder})", file=sys.stderr, flush=True)
    t = time.monotonic()
    table = np.array(akv_npy(binary, ["rope", "--model", model_path, "--positions", str(n)],
                             (2, n, m32.config.head_dim // 2), os.path.join(work, "rope.npy")))
    ours = akv_npy(binary, ["logits", path, "--model", model_path, "--backend", backend, "--positions", "all"],
                   (n, vocab), os.path.join(work, "logits.npy"))
    t_akv = time.monotonic() - t

    t = time.monotonic()
    with patched(rope_table=table, float64_internals=True):
        inj64 = logits(m64, ids, expect_calls(m64, rope=True, internals=True))
    with patched(rope_table=table):
        inj32 = logits(m32, ids, expect_calls(m32, rope=True, internals=False))
    stock = logits(m32, ids, {})
    t_hf = time.monotonic() - t

    t = time.monotonic()
    rows64, rows32, rows_stock = reference_rows(inj64), reference_rows(inj32), reference_rows(stock)
    figures = {
        "akv_vs_stock32": compare(ours, stock, rows_stock),
        "akv_vs_inj32": compare(ours, inj32, rows32),
        "akv_vs_inj64": compare(ours, inj64, rows64),
        "inj32_vs_inj64": compare(inj32, inj64, rows64),
        "stock32_vs_inj64": compare(stock, inj64, rows64),
    }
    t_cmp = time.monotonic() - t
    akv_err, hf_err = figures["akv_vs_inj64"]["max_abs"], figures["inj32_vs_inj64"]["max_abs"]
    ratio = akv_err / hf_err if hf_err > 0 else float("inf")
    passed = (n > 0 and ratio <= RATIO_LIMIT and not figures["akv_vs_inj64"]["margin_violations"]
              and figures["akv_vs_inj64"]["margin_decided"] > 0)
    return {
        "conversation": os.path.basename(path), "path": path, "tokens": n, "encoder": encoder,
        "backend": backend, "seconds_akv": round(t_akv, 1), "seconds_transformers": round(t_hf, 1),
        "seconds_compare": round(t_cmp, 1),
        "rope": rope_drift(m32, table, n), **figures, "ratio": ratio, "pass": passed,
    }


def markdown(doc):
    """The table of docs/crosscheck.md."""
    def f(x):
        return f"{x:.3g}"
    lines = [
        "| conversation | tokens | akv vs stock f32: abs / rel | akv vs inj f32: abs / rel | "
        "akv vs inj f64: abs / rel | inj f32 vs inj f64: abs / rel | ratio (<= 2) | argmax = (akv vs f64) | "
        "margin rule | pass |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for c in doc["conversations"]:
        a, b, r, h = c["akv_vs_stock32"], c["akv_vs_inj32"], c["akv_vs_inj64"], c["inj32_vs_inj64"]
        lines.append(
            f"| {c['conversation']} | {c['tokens']} | {f(a['max_abs'])} / {f(a['max_rel'])} | "
            f"{f(b['max_abs'])} / {f(b['max_rel'])} | {f(r['max_abs'])} / {f(r['max_rel'])} | "
            f"{f(h['max_abs'])} / {f(h['max_rel'])} | {c['ratio']:.2f} | {r['argmax_agree']}/{r['positions']} | "
            f"{len(r['margin_violations'])} violations of {r['margin_decided']} decided | "
            f"{'yes' if c['pass'] else 'NO'} |")
    lines += ["", "| conversation | argmax = vs stock f32 | vs inj f32 | inj f32 vs inj f64 | stock f32 vs inj f64: abs | "
              "RoPE: stock max abs (p < 1000 / p >= 1000) | akv table max ulp | seconds akv / transformers / compare |",
              "|---|---|---|---|---|---|---|---|"]
    for c in doc["conversations"]:
        rope = c["rope"]
        late = rope["stock_max_abs_from_1000"]
        lines.append(
            f"| {c['conversation']} | {c['akv_vs_stock32']['argmax_agree']}/{c['tokens']} | "
            f"{c['akv_vs_inj32']['argmax_agree']}/{c['tokens']} | {c['inj32_vs_inj64']['argmax_agree']}/{c['tokens']} | "
            f"{f(c['stock32_vs_inj64']['max_abs'])} | {f(rope['stock_max_abs_first_1000'])} / "
            f"{f(late) if late is not None else '-'} | {rope['akv_max_ulp']:.2f} | "
            f"{c['seconds_akv']} / {c['seconds_transformers']} / {c['seconds_compare']} |")
    return "\n".join(lines) + "\n"


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--akv", required=True)
    p.add_argument("--model", required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--backend", default="cpu")
    p.add_argument("--count", type=int, default=3)
    p.add_argument("--pick", choices=["longest", "shortest"], default="longest")
    p.add_argument("--min-tokens", type=int, default=1000)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("conversations", nargs="+")
    a = p.parse_args()
    torch.set_num_threads(a.threads)
    start = time.monotonic()
    for path in a.conversations:
        if not os.path.isfile(path):
            raise Failure(f"no conversation file '{path}'")
    chosen = select(a.akv, a.model, a.conversations, a.count, a.pick, a.min_tokens)
    t_select = time.monotonic() - start

    m32 = load_transformers(a.model)
    m64 = copy.deepcopy(m32).double()
    print("crosscheck: patched (restored after each run):", *PATCHES, sep="\n  ", file=sys.stderr)
    os.makedirs(a.out, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=a.out) as work:
        probe = chosen[0][2][:64]
        table = np.array(akv_npy(a.akv, ["rope", "--model", a.model, "--positions", str(len(probe))],
                                 (2, len(probe), m32.config.head_dim // 2), os.path.join(work, "rope.npy")))
        self_test(m32, table, probe)
        t_setup = time.monotonic() - start - t_select
        results = [check(a.akv, a.model, a.backend, c, m32, m64, work) for c in chosen]

    doc = {
        "model": a.model, "backend": a.backend, "threads": a.threads,
        "versions": {"torch": torch.__version__, "transformers": transformers.__version__,
                     "numpy": np.__version__},
        "patches": PATCHES, "ratio_limit": RATIO_LIMIT, "min_tokens": a.min_tokens,
        "conversations": results, "seconds": round(time.monotonic() - start, 1),
        "seconds_select": round(t_select, 1), "seconds_load_and_self_test": round(t_setup, 1),
        "pass": bool(results) and all(c["pass"] for c in results),
    }
    with open(os.path.join(a.out, "crosscheck.json"), "w") as f:
        json.dump(doc, f, indent=1)
    table_md = markdown(doc)
    with open(os.path.join(a.out, "crosscheck.md"), "w") as f:
        f.write(table_md)
    print(table_md)
    print(f"crosscheck: {'PASS' if doc['pass'] else 'FAIL'} ({len(results)} conversations, "
          f"{sum(c['tokens'] for c in results)} positions, {doc['seconds']} s); {a.out}/crosscheck.json",
          file=sys.stderr)
    return 0 if doc["pass"] else 1


if __name__ == "__main__":
    try:
        sys.exit(main())
    except Failure as e:
        print(f"akv: crosscheck: {e}", file=sys.stderr)
        sys.exit(2)
