"""llama.cpp's own batch invariance on the real model, through llama-cpp-python (run by
scripts/engine-invariance; docs/engine-invariance.md).

  llama_invariance.py MODEL.gguf [MODEL2.gguf ...] --tokens DIR --json OUT [--threads 1,2]
                      [--steps 32] [--max-tokens N] [--token-by-token-max N] [--model-only M=NAME,...]

DIR holds one NAME.json per conversation: {"tokens": [...]} (akv tokenize's ids, which match
llama.cpp's, spec/tokenizer.md T11). For every model and conversation, each configuration
evaluates the prompt with logits for every row (a fresh context, n_ctx = the prompt plus the
continuation, flash attention as llama.cpp's default picks it unless --flash-attn says):

  one batch      n_batch = n_ubatch = the whole prompt: one llama_decode, one ubatch;
  chunks B/U     n_batch = B, n_ubatch = U (llama.cpp's defaults 2048/512, 64/64, and 512/8:
                 ubatches under the 16 rows where ggml's kernels change path);
  token by token n_batch = n_ubatch = 1: one llama_decode per token;

at each thread count (n_threads = n_threads_batch). The reference is one batch at the first
thread count. Per configuration: rows whose logits differ bitwise from the reference's, the
first such row, max|delta| over all rows, and the greedy continuation (--steps tokens, each
decoded alone after the prompt, in the same context): the first step where it leaves the
reference's, or none. --max-tokens cuts every prompt (0: whole); token by token runs only on
prompts up to --token-by-token-max tokens (one decode per token is slow), the rest on their
first that many tokens in a configuration of its own ("token by token, first N").
"""
import argparse
import json
import os
import sys
import time


def run_config(L, np, path, tokens, n_ctx, n_batch, n_ubatch, threads, steps, fa):
    """Logits of every row of `tokens` (rows, vocab) and the greedy continuation of `steps` tokens."""
    kw = dict(model_path=path, n_ctx=n_ctx, n_batch=n_batch, n_ubatch=n_ubatch, n_threads=threads,
              n_threads_batch=threads, logits_all=True, n_gpu_layers=0, verbose=False, seed=1)
    kw.update(flash_kw(L, fa))
    llm = L.Llama(**kw)
    llm.reset()
    llm.eval(tokens)
    rows = np.array(llm.scores[:len(tokens)], dtype=np.float32, copy=True)
    cont = []
    nxt = int(np.argmax(rows[-1]))
    for _ in range(steps):
        cont.append(nxt)
        llm.eval([nxt])
        nxt = int(np.argmax(np.asarray(llm.scores[llm.n_tokens - 1], dtype=np.float32)))
    del llm
    return rows, cont


def flash_kw(L, fa):
    import inspect
    if fa is None:
        return {}
    params = inspect.signature(L.Llama.__init__).parameters
    if "flash_attn_type" in params:
        return {"flash_attn_type": L.LLAMA_FLASH_ATTN_TYPE_ENABLED if fa else L.LLAMA_FLASH_ATTN_TYPE_DISABLED}
    return {"flash_attn": fa}


def compare(np, rows, cont, ref_rows, ref_cont):
    n = min(len(rows), len(ref_rows))
    a, b = rows[:n], ref_rows[:n]
    differ = np.any(a.view(np.uint32) != b.view(np.uint32), axis=1)
    d = np.abs(a.astype(np.float64) - b.astype(np.float64))
    first_cont = None if not cont else next((i for i, (x, y) in enumerate(zip(cont, ref_cont)) if x != y), None)
    top1 = int(np.sum(np.argmax(a, axis=1) != np.argmax(b, axis=1)))
    return {"rows": n, "rows_differing": int(differ.sum()),
            "first_differing_row": int(np.argmax(differ)) if differ.any() else None,
            "max_abs": float(d.max()) if n else 0.0, "argmax_changes": top1,
            "continuation_measured": bool(cont), "continuation_first_change": first_cont, "continuation": cont}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("models", nargs="+")
    ap.add_argument("--tokens", required=True)
    ap.add_argument("--json", required=True)
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--steps", type=int, default=32)
    ap.add_argument("--max-tokens", type=int, default=0)
    ap.add_argument("--token-by-token-max", type=int, default=640)
    ap.add_argument("--flash-attn", choices=["default", "on", "off"], default="default")
    ap.add_argument("--only", default="", help="comma-separated conversation names (default: all)")
    ap.add_argument("--model-only", default="", help="MODEL.gguf=NAME,NAME;...: the conversations a model runs on")
    a = ap.parse_args()
    import numpy as np
    import llama_cpp as L

    L.llama_backend_init()
    # bench-real's model parameters: quantized files without the CPU's extra buffer types (AMX,
    # which crashes in some VMs); F32 files keep llama.cpp's defaults (llama_bench.py).
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import llama_bench
    fa = {"default": None, "on": True, "off": False}[a.flash_attn]
    threads = [int(t) for t in a.threads.split(",")]
    convs = []
    for f in sorted(os.listdir(a.tokens)):
        if f.endswith(".json") and (not a.only or f[:-5] in a.only.split(",")):
            toks = json.load(open(os.path.join(a.tokens, f)))["tokens"]
            convs.append((f[:-5], toks[:a.max_tokens] if a.max_tokens else toks))
    out = {"llama_cpp_python": L.__version__, "system_info": L.llama_print_system_info().decode(),
           "threads": threads, "steps": a.steps, "flash_attn": a.flash_attn, "results": []}
    only_for = {}  # model basename -> the conversations it runs on
    for item in filter(None, a.model_only.split(";")):
        model, _, names = item.partition("=")
        only_for[model] = set(names.split(","))
    for path in a.models:
        L.llama_cpp.llama_model_default_params = llama_bench.model_defaults(L, llama_bench.quantized(path))
        for name, toks in convs:
            if os.path.basename(path) in only_for and name not in only_for[os.path.basename(path)]:
                continue
            n = len(toks)
            n_ctx = n + a.steps + 1
            # llama.cpp's defaults, smaller ubatches, and ubatches of 8 (below the 16 rows where its
            # kernels switch to their batched paths)
            configs = [("one batch", n, n), ("chunks 2048/512", 2048, 512), ("chunks 64/64", 64, 64),
                       ("chunks 512/8", 512, 8)]
            tbt = n if n <= a.token_by_token_max else a.token_by_token_max
            ref = {}
            for t in threads:
                runs = list(configs)
                runs.append(("token by token" if tbt == n else f"token by token, first {tbt}", 1, 1))
                for label, nb, nu in runs:
                    use = toks if nb != 1 or tbt == n else toks[:tbt]
                    t0 = time.monotonic()
                    rows, cont = run_config(L, np, path, use, n_ctx, nb, nu, t, a.steps if len(use) == n else 0, fa)
                    secs = time.monotonic() - t0
                    if not ref:
                        ref = {"rows": rows, "cont": cont}
                    r = compare(np, rows, cont, ref["rows"], ref["cont"])
                    r.update({"model": os.path.basename(path), "conversation": name, "tokens": len(use),
                              "config": label, "n_batch": nb, "n_ubatch": nu, "threads": t, "seconds": secs})
                    out["results"].append(r)
                    print(f"{os.path.basename(path)} {name} {label:24} t={t}: rows {r['rows']} differing "
                          f"{r['rows_differing']} (first {r['first_differing_row']}), max|d| {r['max_abs']:.3g}, "
                          f"argmax changes {r['argmax_changes']}, continuation first change "
                          f"{r['continuation_first_change']} ({secs:.1f} s)", flush=True)
    with open(a.json, "w") as f:
        json.dump(out, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
