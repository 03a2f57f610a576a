"""The inference engines' part of scripts/gate-catalog: `akv gate` on ggml's and PyTorch's kernels
(plugins/ggml, plugins/torch, built from PyPI by scripts/fetch-engines) as the section of
docs/gate-findings.md between its engine markers, and the catch rate per decode path of the
catalog's split_decode_path defect (plugins/broken) as the section of docs/gate-catalog.md
between its path markers. Each writer replaces its own section only."""
import concurrent.futures
import ctypes
import os
import re
import subprocess
import sys

# (key, folder, library, title, the plugin's info function)
ENGINES = [
    ("ggml", "ggml", "libakv_ggml.so", "ggml: float32 weights, flash attention (llama.cpp's default)", "akv_ggml_info"),
    ("ggml-nofa", "ggml", "libakv_ggml_nofa.so", "ggml: float32 weights, the unfused attention (flash attention off)",
     "akv_ggml_info"),
    ("ggml-q8_0", "ggml", "libakv_ggml_q8_0.so", "ggml: Q8_0 weights, flash attention", "akv_ggml_info"),
    ("ggml-q4_1", "ggml", "libakv_ggml_q4_1.so", "ggml: Q4_1 weights (SmolLM2's file), flash attention", "akv_ggml_info"),
    ("torch", "torch", "libakv_torch.so", "PyTorch: F.linear, F.scaled_dot_product_attention", "akv_torch_info"),
    ("torch-eager", "torch", "libakv_torch_eager.so", "PyTorch: torch.matmul, Hugging Face's eager attention",
     "akv_torch_info"),
]

# Where kernels.h's contract cannot express what the library does: said per op, not adapted.
CONTRACT = {
    ("ggml", "rope"): "kernels.h's RoPE is given the one table and must use it (M6); ggml_rope_ext takes no table, "
                      "only freq_base, and computes its own angles in float (theta_scale powers, cosf/sinf), so "
                      "GT3.rope.bitwise compares two tables, not a defect. The plugin reads theta back from the "
                      "table. llama.cpp's llama models use mode NORM on permuted weights: the same products on "
                      "other pairs; the ABI's rotate-half pairs are mode NEOX",
    ("ggml", "swiglu"): "kernels.h fixes SwiGLU's exp to akv's (A4, <akv/exp.h>); ggml's silu has its own (a SIMD "
                        "exp in the vector body, expf in the scalar tail), so GT3.swiglu.bitwise differs by design; "
                        "the ABI's SwiGLU is flat (n,), so ggml gets one row of n where llama.cpp has (ffn, M)",
    ("ggml", "attention"): "the ABI passes float32 K and V; llama.cpp keeps its cache in F16 by default and, with "
                           "flash attention, casts a float32 cache to F16 itself (build_attn_mha), as the plugin "
                           "does, so GT3.attention.bound measures F16 rounding of K and V that the float32 contract "
                           "does not allow. The keys are padded to llama.cpp's 256 cells, masked",
    ("ggml-nofa", "attention"): "none: the unfused path keeps float32 K and V (V transposed, as llama.cpp's cache is "
                                "without flash attention); the keys are padded to llama.cpp's 256 cells and masked, "
                                "as llama.cpp pads them",
    ("torch-eager", "attention"): "none: Hugging Face's eager attention is two ATen matmuls and a softmax on float32",
    ("ggml-q", "matmul"): "kernels.h's matmul is X W^T of float32 X and W within B1; with quantized weights ggml "
                          "also quantizes each row of X (to Q8_0, Q8_1 for Q4_1), so GT3.matmul.bound measures "
                          "quantization, not rounding; n is padded to a multiple of 32 with zeros",
    ("torch", "swiglu"): "kernels.h fixes SwiGLU's exp to akv's (A4); ATen's silu has its own (Sleef's vectorised "
                         "exp), so GT3.swiglu.bitwise differs by design",
    ("torch", "attention"): "F.scaled_dot_product_attention picks its CPU kernel (the flash kernel, or the math "
                            "path) per call from the shapes and the mask; the ABI has no way to pin one, so the "
                            "checks see whichever it picks, as a user does",
}

# The plain-words finding of a failed property (LIB, the counterexample's shape and the message
# filled in); the message's own line follows it in the table.
WORDS = {
    "GT2.matmul.rows": "{lib}'s matmul gives a row other bits in a call of {M} rows than alone (M = 1): a token "
                       "decoded alone and the same token prefilled with {others} other(s) disagree",
    "GT2.matmul.threads": "{lib}'s matmul gives other bits at another thread count ({shape}; {msg})",
    "GT2.rmsnorm.rows": "{lib}'s RMSNorm gives a row other bits among other rows than alone",
    "GT2.rmsnorm.threads": "{lib}'s RMSNorm gives other bits at another thread count",
    "GT3.rmsnorm.exact": "{lib}'s RMSNorm takes other operations after the sum of squares than M7's (ss / n, + eps, "
                         "sqrtf, 1 / it, (x * inv) * w)",
    "GT3.rmsnorm.bound": "{lib}'s RMSNorm is outside twice B2 of the reference",
    "GT2.rope.rows": "{lib}'s RoPE gives a row other bits among other rows than alone",
    "GT2.rope.threads": "{lib}'s RoPE gives other bits at another thread count",
    "GT3.rope.bitwise": "{lib}'s RoPE gives other bits than the one table's rotation",
    "GT2.attention.start": "{lib}'s attention gives a query other bits when its call starts elsewhere: the same "
                           "queries in one prefill call and in a chunk that starts at them disagree ({shape})",
    "GT2.attention.rows": "{lib}'s attention gives a query other bits among other queries than alone: a token "
                          "decoded alone and prefilled with others disagree ({shape})",
    "GT2.attention.decode": "{lib}'s attention gives a token other bits decoded alone than in a prefill of its rows "
                            "(first: {msg})",
    "GT2.attention.threads": "{lib}'s attention gives other bits at another thread count ({shape}; {msg})",
    "GT3.attention.bound": "{lib}'s attention is outside B14 of the exact value",
    "GT2.swiglu.split": "{lib}'s SwiGLU gives an element other bits depending on where its call starts ({shape})",
    "GT2.swiglu.threads": "{lib}'s SwiGLU gives other bits at another thread count",
    "GT3.swiglu.bitwise": "{lib}'s SwiGLU gives other bits than silu with akv's exp",
    "GT2.add.split": "{lib}'s add gives an element other bits depending on where its call starts",
    "GT3.add.bitwise": "{lib}'s add is not x + y",
    "GT3.matmul.bound": "{lib}'s matmul is outside B1 of the exact dot product",
    "GT4.E1_PropEvictEqualsNever.Requests": "through the model composed of {lib}'s ops, evicting a span and "
                                            "recomputing is not the never-shown run, bit for bit",
    "GT4.E1_PropEvictEqualsNever.OneAtATimeAnyOrder": "through {lib}'s ops, evicting spans one at a time, together "
                                                      "and never showing them give three different caches",
    "GT4.I1_PropInvariance.Chunkings": "through {lib}'s ops, the same tokens in one call, per span, at random cuts "
                                       "and token by token give different caches or logits",
    "GT4.I1_PropInvariance.PoisonedScratch": "through {lib}'s ops, runs of the same chunking differ (scratch "
                                             "contents or the thread counts the runs drew)",
}


def family(key):
    return "torch" if key.startswith("torch") else "ggml"


def info(lib, fn):
    """The plugin's own description (its info function), read in a child process."""
    code = ("import ctypes,sys; l=ctypes.CDLL(sys.argv[1]); f=getattr(l, sys.argv[2]); f.restype=ctypes.c_char_p; "
            "print(f().decode())")
    try:
        p = subprocess.run([sys.executable, "-c", code, lib, fn], capture_output=True, text=True, timeout=120)
        return p.stdout.strip() or "no description (" + (p.stderr.strip().splitlines() or ["?"])[-1] + ")"
    except (OSError, subprocess.TimeoutExpired) as e:
        return f"no description ({e})"


def engine_stamps(engines_dir):
    out = {}
    for sub, name in (("ggml-0.3.36", "ggml"), ("libtorch-2.15.0", "libtorch")):
        stamp = os.path.join(engines_dir, sub, ".akv-stamp")
        if os.path.exists(stamp):
            out[name] = open(stamp).read().split()[0][:16] + "…"
    return out


def model_cases(spec, cases):
    """[(model, cases)] of 'tiny:1000,smollm2' (a model without its own count takes `cases`; "" is
    the gate's default)."""
    out = []
    for item in spec.split(","):
        model, _, n = item.partition(":")
        out.append((model, n or cases))
    return out


def run_engines(akv, build, models, cases, seed, tmp, run_gate):
    """[(key, title, lib, model, cases, (rc, report, secs, err) or None, info)] for every engine
    library and every (model, cases) of `models` (model_cases)."""
    out = []
    for key, folder, so, title, fn in ENGINES:
        lib = os.path.join(build, "plugins", folder, so)
        if not os.path.exists(lib):
            out.append((key, title, lib, None, "", None, f"not built ({so}: run scripts/fetch-engines, then configure)"))
            continue
        desc = info(lib, fn)
        for model, n in models:
            args = ["--model", model, "--seed", seed] + (["--cases", n] if n else [])
            print(f"gate-catalog: engines: {key} on {model}", file=sys.stderr)
            res = run_gate(akv, lib, args, os.path.join(tmp, f"engine-{key}-{model}"))
            out.append((key, title, lib, model, n, res, desc))
    return out


def first_line(message):
    """What failed: the message's first line (the property's own words; the source location, the
    reruns and RapidCheck's notes follow it), with the repository's path dropped."""
    lines = [l.strip() for l in (message or "").splitlines()
             if l.strip() and not l.strip().startswith(("Falsifiable after", "re-run:"))]
    return lines[0] if lines else ""


def shape_fields(shape):
    return {k: int(v) for k, v in re.findall(r"(\w+)=(\d+)", shape or "")}


def words(key, title, check):
    prop = check.get("property", "")
    shape = check.get("counterexample_shape") or ""
    f = shape_fields(shape)
    lib = "ggml" if family(key) == "ggml" else "PyTorch"
    t = WORDS.get(prop, "{lib}: " + prop + " failed")
    m = f.get("M", 0)
    msg = first_line(check.get("message")).split(": not bitwise equal")[0]
    return t.format(lib=lib, M=m or "M", others=(m - 1) if m else "other", shape=shape or "see the message", msg=msg)


# Why, from the library's source (the sdist's ggml-cpu/ops.cpp, ATen's dispatch), where the
# findings have one cause a kernel author can act on.
WHY = {
    ("ggml", "attention"): "ggml's CPU flash attention (ops.cpp) has three paths: one query row over 512 or more "
                           "cells splits the keys over the threads (one chunk of cells / threads each, partials "
                           "reduced after: GT2.attention.decode's first failure, 513 keys at 2 threads against 1); "
                           "64 or more query rows take the tiled path; other calls go row by row, with V's "
                           "weighted sum accumulated in F16 when V is F16 (VKQ16). A token's output so depends on "
                           "how many rows share its call and on the thread count",
    ("ggml-nofa", "attention"): "the unfused path is two ggml_mul_mat calls around soft_max_ext: the float32 matmul's "
                                "rows/decode failures are the matmul's own (below)",
    ("ggml", "matmul"): "ggml's float32 mul_mat hands a contiguous batch to llamafile's tinyBLAS when k is a multiple "
                        "of 16 (AVX-512), whose tiles depend on M; other widths take ggml's vec_dot per output, "
                        "which is M-invariant",
    ("ggml", "swiglu"): "ggml_vec_swiglu_f32 computes silu with a SIMD exp over whole vectors and expf on the tail "
                        "of a row, so an element's bits depend on its offset from the row's start",
    ("torch", "swiglu"): "ATen's vectorised silu and its scalar tail differ, so an element's bits depend on its "
                         "offset in the call",
    ("torch", "matmul"): "F.linear and torch.matmul go to MKL's sgemm (oneMKL 2024.2 in the wheel), which picks "
                         "kernels by shape and splits work by the thread count",
}


def why(key, op):
    fam = family(key)
    if key.startswith("ggml-q") and op == "matmul":
        return ""
    return WHY.get((key, op)) or WHY.get((fam, op)) or ""


def contract(key, op):
    fam = family(key)
    if (key, op) in CONTRACT:
        return CONTRACT[(key, op)]
    notes = [CONTRACT.get((fam, op))]
    if key.startswith("ggml-q") and op == "matmul":
        notes.append(CONTRACT[("ggml-q", "matmul")])
    return "; ".join(n for n in notes if n)


def reproduce_line(lib_rel, args, check, env):
    rc = check.get("reproduce") or ""
    pre = " ".join(f"{k}={v}" for k, v in sorted(env.items()))
    return (pre + " " if pre else "") + f'RC_PARAMS="{rc}" akv gate --kernels {lib_rel} ' + " ".join(args) + \
        f" --check {check.get('property')}"


def save_sections(path, sections, cpu, env_text, seed, stamps):
    """The runs' reports and what the text says of them, as JSON (re-rendered by --from)."""
    import json
    rows = [{"key": k, "title": t, "lib": lib, "model": m, "cases": n, "desc": d,
             "rc": r[0] if r else None, "report": r[1] if r else None, "seconds": r[2] if r else None,
             "err": r[3] if r else None} for k, t, lib, m, n, r, d in sections]
    with open(path, "w") as f:
        json.dump({"cpu": cpu, "env": env_text, "seed": seed, "stamps": stamps, "runs": rows}, f, indent=1)


def load_sections(path):
    """(sections, cpu, env_text, seed, stamps) of save_sections' file."""
    import json
    j = json.load(open(path))
    sections = [(r["key"], r["title"], r["lib"], r["model"], r["cases"],
                 None if r["report"] is None and r["rc"] is None else (r["rc"], r["report"], r["seconds"], r["err"] or []),
                 r["desc"]) for r in j["runs"]]
    return sections, j["cpu"], j["env"], j["seed"], j["stamps"]


def findings_text(sections, root, cpu, env_text, seed, stamps, cell, first_field, ce_size):
    L = ["<!-- engines: scripts/gate-catalog --only engines writes this section -->",
         "## Inference engines' kernels: ggml and PyTorch", "",
         "Every op of llama.cpp's ggml and of PyTorch's ATen behind include/akv/kernels.h, called as llama.cpp's "
         "graph and Hugging Face's Llama code call them ([plugins/README.md](../plugins/README.md): ggml/, torch/), "
         "built from PyPI by `scripts/fetch-engines` (pinned by SHA-256: the llama-cpp-python 0.3.36 sdist "
         f"{stamps.get('ggml', '?')}, the torch 2.15.0 wheel {stamps.get('libtorch', '?')}). Each library through "
         "the whole gate, per op and end to end through the model composed of its ops, on `tiny` and on SmolLM2's "
         "real weights (`--model smollm2`; the op properties draw SmolLM2's widths, 576/1536/192 and heads 9/3, on "
         "either). A finding is a result, not a test failure: CTest (label `gate-thirdparty`) asserts only that each "
         "run gave a verdict.", "",
         f"CPU: {cpu}. Environment: {env_text}. Command (LIB, MODEL, N below): "
         f"`akv gate --kernels LIB --json --model MODEL --seed {seed} --cases N` (the gate's defaults otherwise: "
         "N / 5 cases per end-to-end check, 20 s a check: a check that passes stops there, saying how many cases "
         "ran). "
         "Thread counts: the op properties run at the library's default, the threads properties compare 2 and 3 "
         "threads with 1, `GT2.attention.decode` decodes at 1, 2 and 3, the end-to-end ones draw 1 to 3 per run.", ""]
    plain = []
    for key, title, lib, model, cases, res, desc in sections:
        lib_rel = os.path.relpath(lib, root)
        if res is None:
            L += [f"### {title}", "", desc, ""]
            continue
        rc, report, secs, err = res
        L += [f"### {title}, model `{model}`, {cases or 'the default'} cases", "", f"`{lib_rel}`: {desc}. Verdict: "
              f"**{report.get('verdict') if report else 'none'}** (exit {rc}, {secs:.0f} s).", ""]
        if report is None:
            L += [f"No report: {' '.join(err)}", ""]
            continue
        args = ["--model", model, "--seed", seed] + (["--cases", cases] if cases else [])
        L += ["| op | property | verdict | cases | first failing case | shrunk counterexample | what failed | reproduce |",
              "|---|---|---|---|---|---|---|---|"]
        for c in report.get("checks", []):
            res_c = c.get("result")
            ff = first_field(c, "first_failure_case", "first_failure", default="") if res_c == "fail" else ""
            ce = ce_size(c) if res_c == "fail" else ""
            msg = cell(first_line(c.get("message"))) if res_c != "pass" else ""
            rep = f"`{cell(reproduce_line(lib_rel, args, c, {}))}`" if res_c == "fail" and c.get("reproduce") else ""
            L.append(f"| {c.get('op')} | `{c.get('property')}` | {res_c} | {c.get('cases')} | {ff} | {ce} | {msg} | {rep} |")
            if res_c == "fail":
                plain.append((title, model, c.get("op"), c.get("property"), words(key, title, c), contract(key, c.get("op")),
                              why(key, c.get("op"))))
        L.append("")
    if plain:
        L += ["### In plain words", "",
              "Each property that failed, per library, as a kernel author reads it (the models it failed on after "
              "it); where kernels.h cannot express what the library does, the contract note after the op says so: "
              "the check is not adapted to the library.", ""]
        by_title = {}
        for title, model, op, prop, w, note, cause in plain:
            entry = by_title.setdefault(title, {})
            e = entry.setdefault(prop, [w, note, cause, op, []])
            e[4].append(model)
        for title, props in by_title.items():
            L.append(f"- **{title}**:")
            noted = set()
            for prop, (w, note, cause, op, models) in props.items():
                line = f"  - `{prop}` ({', '.join(f'`{m}`' for m in dict.fromkeys(models))}): {w}."
                if op not in noted:
                    if cause:
                        line += f" *Why ({op}):* {cause}."
                    if note:
                        line += f" *Contract ({op}):* {note}."
                    noted.add(op)
                L.append(line)
        L.append("")
    L.append("<!-- end engines -->")
    return "\n".join(L) + "\n"


def replace_section(path, begin, end, text):
    """path's section from the line starting with `begin` to the line `end` replaced by text (appended
    when absent)."""
    doc = open(path).read() if os.path.exists(path) else ""
    b = doc.find(begin)
    if b >= 0:
        e = doc.find(end, b)
        e = len(doc) if e < 0 else doc.find("\n", e) + 1 or len(doc)
        doc = doc[:b] + text + doc[e:]
    else:
        doc = doc.rstrip("\n") + "\n\n" + text
    with open(path, "w") as f:
        f.write(doc)


def section(path, begin, end):
    """The section as it stands (begin to end, with a newline), or ""."""
    doc = open(path).read() if os.path.exists(path) else ""
    b = doc.find(begin)
    if b < 0:
        return ""
    e = doc.find(end, b)
    return doc[b:] if e < 0 else doc[b:doc.find("\n", e) + 1 or len(doc)]


# ---- The catch rate per decode path (the split_decode_path defect moved to each path)

def decode_paths(head_dims):
    return [(hd, where, t) for hd in head_dims for where in ("first", "past") for t in (1, 2, 3)]


def head_dims(root):
    """kernels.hpp's kAttentionCheckHeadDims (the dispatch list), read from the source so that a new
    path is measured once it is listed there."""
    src = open(os.path.join(root, "optimized", "cpu", "kernels.hpp")).read()
    named = [int(x) for x in re.search(r"kAttentionPathHeadDims = \{([^}]*)\}", src).group(1).split(",")]
    lanes = int(re.search(r"kLanes = (\d+);", src).group(1))
    out = []
    for tok in re.search(r"kAttentionCheckHeadDims = \{([^}]*)\}", src).group(1).split(","):
        tok = tok.strip()
        if tok.startswith("kAttentionPathHeadDims"):
            out.append(named[int(re.search(r"\[(\d)\]", tok).group(1))])
        elif "kLanes" in tok:
            out.append(int(tok.split("*")[0]) * lanes)
        else:
            out.append(int(tok))
    return out


def paths_rate(akv, build, root, seeds, jobs, tmp, run_gate, cases=""):
    """Rows of the per-path table: for each path, seeds where the gate rejected the defect, where
    GT2.attention.decode caught it, and where any other property did (what the gate had before)."""
    lib = os.path.join(build, "plugins", "broken", "libakv_broken_split_decode_path.so")
    rows, ok = [], True
    for hd, where, t in decode_paths(head_dims(root)):
        env = {"AKV_BROKEN_DECODE_PATH": f"{hd}:{where}:{t}"}

        def one(seed):
            args = ["--ops", "attention", "--model", "tiny", "--seed", str(seed)] + (["--cases", cases] if cases else [])
            return run_gate(akv, lib, args, os.path.join(tmp, f"path-{hd}-{where}-{t}-{seed}"), env)

        with concurrent.futures.ThreadPoolExecutor(max_workers=jobs) as pool:
            results = list(pool.map(one, range(1, seeds + 1)))
        rejected = by_decode = by_other = 0
        missed, secs = [], []
        for seed, (rc, report, s, _) in zip(range(1, seeds + 1), results):
            secs.append(s)
            ok &= rc in (0, 1) and report is not None
            failed = {c.get("property", "") for c in (report or {}).get("checks", []) if c.get("result") == "fail"}
            rejected += rc == 1
            by_decode += "GT2.attention.decode" in failed
            by_other += bool(failed - {"GT2.attention.decode"})
            if "GT2.attention.decode" not in failed:
                missed.append(str(seed))
        secs.sort()
        rows.append(f"| {hd} | {'first 64 keys' if where == 'first' else 'past 64 keys'} | {t} | {rejected}/{seeds} | "
                    f"{by_decode}/{seeds} | {by_other}/{seeds} | {', '.join(missed) or 'none'} | "
                    f"{secs[len(secs) // 2]:.1f} |")
        print(f"gate-catalog: path {hd}:{where}:{t}: rejected {rejected}/{seeds}, decode {by_decode}, other {by_other}",
              file=sys.stderr)
    return rows, ok


def paths_text(rows, seeds, cmd):
    return "\n".join([
        "<!-- paths: scripts/gate-catalog --paths N writes this section -->",
        f"## Catch rate per decode path over {seeds} seeds", "",
        "`akv_broken_split_decode_path` moved to every path a decode is dispatched to (`AKV_BROKEN_DECODE_PATH=HD:"
        "first|past:T`: a decode at head dim HD, in the first 64 keys or past them, at exactly T threads, splits its "
        "keys in two halves; every other call is the sound base's), each head dim of the cpu kernels' dispatch list "
        "(optimized/cpu/kernels.hpp `kAttentionCheckHeadDims`) × the first key block or past it × 1, 2, 3 threads, "
        "at seeds 1 to " + str(seeds) + " with the gate's default case count:", "",
        f"    {cmd}", "",
        "\"By decode\": seeds where `GT2.attention.decode` (spec/gate.md GT2: a table's decode against its own "
        "prefill on every path) caught it; \"by the others\": seeds where any other check did, which is all the "
        "gate had before it: the others run at the library's default of 1 thread but for GT2.attention.threads, "
        "which draws one head dim in 8 and a one-row call one case in 16. Goal: every path at " +
        f"{seeds}/{seeds} by decode.", "",
        "| head dim | decode | threads | rejected | by decode | by the others | seeds decode missed | gate s (median) |",
        "|---|---|---|---|---|---|---|---|", *rows, "", "<!-- end paths -->", ""])
