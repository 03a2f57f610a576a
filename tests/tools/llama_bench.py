"""llama.cpp's side of scripts/bench-real, through llama-cpp-python (run by that script).

  llama_bench.py to-f32 IN.gguf OUT.gguf
      OUT: IN with every tensor dequantized to F32 (gguf-py), metadata unchanged but file_type.
  llama_bench.py bench MODEL.gguf [MODEL2.gguf ...] --threads N --runs N --steps N --json OUT
      Per model and flash-attention setting, as llama-bench measures: prefill (pp) of 512 and
      2048 random tokens in one llama_decode (n_batch = n_ubatch = the prompt, the batch's logits
      flag set on the last row only, as logits_all=False does) on a cleared cache; decode (tg) of single tokens after a 4096-token context. Each
      figure is the median of --runs timed runs after one warm-up run. The KV cache is llama.cpp's
      default (f16, "cache_type" of each record); with --q8-cache, a quantized model also decodes
      with a q8_0 cache (type_k = type_v = GGML_TYPE_Q8_0; flash attention on, which llama.cpp
      needs for a quantized V cache), beside akv's --kv-type q8_0.
"""
import argparse
import json
import os
import random
import statistics
import sys
import time


def to_f32(src, dst):
    import numpy as np
    from gguf import GGUFReader, GGUFWriter, GGUFValueType, GGMLQuantizationType
    from gguf.quants import dequantize

    r = GGUFReader(src)
    arch = r.fields["general.architecture"].contents()
    w = GGUFWriter(dst, arch)
    for key, field in r.fields.items():
        if key.startswith("GGUF.") or key == "general.architecture":
            continue
        vtype = field.types[0]
        sub = field.types[-1] if vtype == GGUFValueType.ARRAY else None
        val = field.contents()
        if key == "general.file_type":
            val = 0  # LLAMA_FTYPE_ALL_F32
        w.add_key_value(key, val, vtype, sub_type=sub)
    for t in r.tensors:
        a = dequantize(t.data, t.tensor_type).astype(np.float32, copy=False)
        w.add_tensor(t.name, np.ascontiguousarray(a), raw_dtype=GGMLQuantizationType.F32)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def bench(args):
    import llama_cpp as L

    L.llama_backend_init()
    out = {"llama_cpp_python": L.__version__, "system_info": L.llama_print_system_info().decode(), "results": []}
    rng = random.Random(1)
    for path in args.models:
        settings = [(True, "f16"), (False, "f16")] + ([(True, "q8_0")] if args.q8_cache and quantized(path) else [])
        for fa, cache in settings:
            for kind, n, depth in (("pp", 512, 0), ("pp", 2048, 0), ("tg", args.steps, 4096)):
                if args.tests and f"{kind}{n if kind == 'pp' else ''}" not in args.tests.split(","):
                    continue
                if cache != "f16" and kind != "tg":  # the cache type is a decode setting here
                    continue
                cache_kw = {} if cache == "f16" else {"type_k": L.GGML_TYPE_Q8_0, "type_v": L.GGML_TYPE_Q8_0}
                n_ctx = depth + n
                batch = n if kind == "pp" else 512
                no_extra = quantized(path)
                L.llama_cpp.llama_model_default_params = model_defaults(L, no_extra)
                llm = L.Llama(model_path=path, n_ctx=n_ctx, n_batch=batch, n_ubatch=batch, n_threads=args.threads,
                              n_threads_batch=args.threads, logits_all=False, n_gpu_layers=0, verbose=False,
                              **flash_kw(L, fa), **cache_kw)
                vocab = llm.n_vocab()
                batch_obj, ctx = llm._batch, llm._ctx

                def decode(tokens, n_past):
                    # The wrapper's own batch: only the last row's logits flag is set.
                    batch_obj.set_batch(batch=tokens, n_past=n_past, logits_all=False)
                    ctx.decode(batch_obj)

                times = []
                ctx.kv_cache_clear()
                for i in range(0, depth, batch):  # the context, once: each run drops what it generated
                    decode([rng.randrange(vocab) for _ in range(min(batch, depth - i))], i)
                for run in range(args.runs + 1):  # run 0: warm-up
                    if depth:
                        ctx.kv_cache_seq_rm(0, depth, -1)
                    else:
                        ctx.kv_cache_clear()
                    toks = [rng.randrange(vocab) for _ in range(n)]
                    if kind == "pp":
                        batch_obj.set_batch(batch=toks, n_past=0, logits_all=False)
                        t0 = time.perf_counter()
                        ctx.decode(batch_obj)
                    else:
                        t0 = time.perf_counter()
                        for i, t in enumerate(toks):
                            decode([t], depth + i)
                    L.llama_synchronize(ctx.ctx)
                    if run > 0:
                        times.append(time.perf_counter() - t0)
                med = statistics.median(times)
                rec = {"model": os.path.basename(path), "flash_attn": fa, "cache_type": cache, "extra_buffer_types": not no_extra, "test": f"{kind}{n}" + (f"@d{depth}" if depth else ""),
                       "tokens": n, "depth": depth, "seconds": times, "median_seconds": med, "tokens_per_second": n / med}
                out["results"].append(rec)
                print(f"llama.cpp {rec['model']:40} fa={'on ' if fa else 'off'} cache {cache:4} {rec['test']:10} {n / med:9.1f} tokens/s"
                      f"  (median {med:.3f} s of {args.runs})", flush=True)
                del llm
    with open(args.json, "w") as f:
        json.dump(out, f, indent=2)


def one_pass(args):
    """One session of args.tokens random tokens in batches of 512 (n_ctx 2048, flash attention
    as llama.cpp's default), logits of the last row: the process whose peak RSS scripts/bench-real
    sets beside akv's `akv logits` of the witness conversation (1445 tokens, one session)."""
    import llama_cpp as L
    L.llama_backend_init()
    L.llama_cpp.llama_model_default_params = model_defaults(L, quantized(args.model))
    llm = L.Llama(model_path=args.model, n_ctx=2048, n_batch=512, n_ubatch=512, n_threads=args.threads,
                  n_threads_batch=args.threads, logits_all=False, n_gpu_layers=0, verbose=False)
    rng = random.Random(1)
    toks = [rng.randrange(llm.n_vocab()) for _ in range(args.tokens)]
    for i in range(0, len(toks), 512):
        llm._batch.set_batch(batch=toks[i:i + 512], n_past=i, logits_all=False)
        llm._ctx.decode(llm._batch)
    L.llama_synchronize(llm._ctx.ctx)


_DEFAULTS = None


def model_defaults(L, no_extra):
    """llama_model_default_params, with use_extra_bufts off when no_extra. On quantized files the
    CPU backend's extra buffer types put the weights in AMX tiles where the CPU has AMX; that
    path crashes in this machine's VM (SIGSEGV in ggml_backend_amx_mul_mat), so quantized files
    run llama.cpp's ordinary AVX-512 kernels. F32 files never use AMX and keep the default."""
    global _DEFAULTS
    if _DEFAULTS is None:
        _DEFAULTS = L.llama_cpp.llama_model_default_params

    def f():
        p = _DEFAULTS()
        if no_extra:
            p.use_extra_bufts = False
        return p
    return f


def quantized(path):
    from gguf import GGUFReader
    return GGUFReader(path).fields["general.file_type"].contents() != 0


def flash_kw(L, on):
    import inspect
    params = inspect.signature(L.Llama.__init__).parameters
    if "flash_attn_type" in params:
        return {"flash_attn_type": L.LLAMA_FLASH_ATTN_TYPE_ENABLED if on else L.LLAMA_FLASH_ATTN_TYPE_DISABLED}
    return {"flash_attn": on}


def main():
    p = argparse.ArgumentParser()
    sub = p.add_subparsers(dest="cmd", required=True)
    c = sub.add_parser("to-f32")
    c.add_argument("src")
    c.add_argument("dst")
    b = sub.add_parser("bench")
    b.add_argument("models", nargs="+")
    b.add_argument("--threads", type=int, default=2)
    b.add_argument("--runs", type=int, default=5)
    b.add_argument("--steps", type=int, default=32)
    b.add_argument("--json", required=True)
    b.add_argument("--tests", default="", help="comma-separated subset of pp512,pp2048,tg (default: all)")
    b.add_argument("--q8-cache", action="store_true", help="also decode quantized models with a q8_0 KV cache (flash attention on)")
    o = sub.add_parser("one-pass")
    o.add_argument("model")
    o.add_argument("--tokens", type=int, default=1445)
    o.add_argument("--threads", type=int, default=2)
    a = p.parse_args()
    if a.cmd == "to-f32":
        to_f32(a.src, a.dst)
    elif a.cmd == "one-pass":
        one_pass(a)
    else:
        bench(a)


if __name__ == "__main__":
    main()
