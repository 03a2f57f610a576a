"""akv's chat templates against the models' own Jinja templates and llama.cpp's tokenizer
(spec/tokenizer.md CT11).

For each template (qwen2.5 and qwen3 over the qwen2 vocab, llama3 over llama-bpe, phi3 over phi-3) and
each conversation file: the text `akv tokenize FILE --vocab V --template T --json` renders must
equal jinja2's rendering of the published template (transformers' environment: trim_blocks,
lstrip_blocks, loopcontrols, its `tojson`), and akv's ids must equal llama.cpp's tokenization of
that text (llama-cpp-python, vocab_only, special tokens parsed). A conversation the template
cannot carry must be refused by akv (exit 2) for the reason the check expects. Exit 0 only when
every case matched and each template compared at least one conversation; 1 on a mismatch.
"""
import argparse
import glob
import json
import os
import subprocess
import sys
import tempfile

import jinja2
import jinja2.ext
from jinja2.sandbox import ImmutableSandboxedEnvironment


def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
    # transformers' chat-template filter (chat_template_utils): json.dumps, UTF-8 kept.
    return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)


def raise_exception(message):
    raise jinja2.exceptions.TemplateError(message)


def environment():
    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True, extensions=[jinja2.ext.loopcontrols])
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    return env


def text_of(content):
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    return "".join(p.get("text", "") for p in content if isinstance(p, dict))


def arguments(text):
    # The object transformers is handed: the arguments parsed, when they are strict JSON.
    def no_constants(name):
        raise ValueError(name)
    try:
        return json.loads(text, parse_constant=no_constants)
    except (ValueError, TypeError):
        return text


def hf_messages(conv):
    out = []
    for m in conv["messages"]:
        h = {"role": m["role"], "content": text_of(m.get("content"))}
        calls = m.get("tool_calls") or []
        if calls:
            h["tool_calls"] = [{"type": "function", "function": {"name": c["function"]["name"],
                                                                  "arguments": arguments(c["function"].get("arguments", ""))}}
                               for c in calls]
        out.append(h)
    return out


def phi3_subset(conv):
    # Phi-3's template renders user and assistant turns only (CT9): the check keeps those.
    # It has no tool syntax (akv refuses tools under it): the tools are left out too.
    keep = [m for m in conv["messages"] if m["role"] in ("user", "assistant") and not m.get("tool_calls")]
    return {"messages": keep}


def gguf_template(path):
    import gguf
    r = gguf.GGUFReader(path)
    f = r.fields["tokenizer.chat_template"]
    return bytes(f.parts[f.data[0]]).decode()


def run_akv(akv, conv_path, vocab, template):
    p = subprocess.run([akv, "tokenize", conv_path, "--vocab", vocab, "--template", template, "--json"],
                       capture_output=True, text=True)
    if p.returncode == 0:
        return json.loads(p.stdout), None
    return None, (p.returncode, p.stderr.strip())


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--akv", required=True)
    ap.add_argument("--vocab-dir", required=True)
    ap.add_argument("dirs", nargs="+")
    a = ap.parse_args()
    from llama_cpp import Llama

    vd = a.vocab_dir
    cases = [
        ("qwen2.5", "ggml-vocab-qwen2.gguf", [("Qwen2.5-7B-Instruct", open(f"{vd}/templates/Qwen-Qwen2.5-7B-Instruct.jinja").read())],
         None, None),
        ("llama3", "ggml-vocab-llama-bpe.gguf",
         [("Llama-3.1-8B-Instruct", open(f"{vd}/templates/meta-llama-Llama-3.1-8B-Instruct.jinja").read()),
          ("Llama-3.2-3B-Instruct", open(f"{vd}/templates/meta-llama-Llama-3.2-3B-Instruct.jinja").read())],
         "<|begin_of_text|>", None),
        ("phi3", "ggml-vocab-phi-3.gguf", [("phi-3 vocab file", gguf_template(f"{vd}/ggml-vocab-phi-3.gguf"))], "<s>", "</s>"),
        # Qwen3 reads the Qwen2 BPE (the sdist has no Qwen3 vocab file; its <think> tags are text in both).
        ("qwen3", "ggml-vocab-qwen2.gguf", [("Qwen3-0.6B", open(f"{vd}/templates/Qwen-Qwen3-0.6B.jinja").read())], None, None),
    ]
    files = sorted(f for d in a.dirs for f in glob.glob(os.path.join(d, "*.json")))
    env = environment()
    failures = 0
    summary = []
    with tempfile.TemporaryDirectory() as tmp:
        for name, vocab_file, templates, bos, eos in cases:
            vocab = os.path.join(vd, vocab_file)
            llama = Llama(model_path=vocab, vocab_only=True, verbose=False)
            compiled = [(label, env.from_string(t)) for label, t in templates]
            texts_equal = ids_equal = ids_skipped = refused = convs = 0
            for f in files:
                conv = json.load(open(f))
                if "messages" not in conv:
                    continue
                if name == "phi3":
                    conv = phi3_subset(conv)
                    if not conv["messages"]:
                        continue
                path = os.path.join(tmp, f"{name}-{os.path.basename(f)}")
                json.dump(conv, open(path, "w"), ensure_ascii=False)
                convs += 1
                out, err = run_akv(a.akv, path, vocab, name)
                msgs = hf_messages(conv)
                for label, t in compiled:
                    try:
                        extra = {"tools": conv["tools"]} if conv.get("tools") else {}
                        want = t.render(messages=msgs, add_generation_prompt=False, bos_token=bos or "",
                                        eos_token=eos or "", **extra)
                        raised = None
                    except jinja2.exceptions.TemplateError as e:
                        want, raised = None, str(e)
                    if raised is not None or err is not None:
                        # Both must refuse: the template raises where akv exits 2 (one tool call per
                        # message, Llama 3), or akv refuses text the template would drop.
                        dropped = err is not None and err[0] == 2 and "tool calls; the template takes one" in err[1]
                        if dropped and raised is not None:
                            refused += 1
                            continue
                        print(f"{name} [{label}] {os.path.basename(f)}: template raised {raised!r}, akv: {err}")
                        failures += 1
                        continue
                    if out["text"] != want:
                        i = next((k for k, (x, y) in enumerate(zip(out["text"], want)) if x != y), min(len(out["text"]), len(want)))
                        print(f"{name} [{label}] {os.path.basename(f)}: text differs at char {i}: "
                              f"akv {out['text'][i - 20:i + 40]!r} jinja {want[i - 20:i + 40]!r}")
                        failures += 1
                        continue
                    texts_equal += 1
                if out is None:
                    continue
                # Special-token text inside a message stays text in akv (T6), where llama.cpp's
                # special=True would make it the token: such conversations skip the id check.
                contents = [text_of(m.get("content")).encode() for m in conv["messages"]]
                if any(llama.tokenize(c, add_bos=False, special=True) != llama.tokenize(c, add_bos=False, special=False)
                       for c in contents if c):
                    ids_skipped += 1
                    continue
                ids = llama.tokenize(out["text"].encode(), add_bos=False, special=True)
                if ids == out["tokens"]:
                    ids_equal += 1
                else:
                    i = next((k for k, (x, y) in enumerate(zip(ids, out["tokens"])) if x != y), min(len(ids), len(out["tokens"])))
                    print(f"{name} {os.path.basename(f)}: ids differ at {i}: akv {out['tokens'][i:i + 8]} llama.cpp {ids[i:i + 8]}")
                    failures += 1
            renders = convs * len(compiled)
            summary.append(f"{name}: {convs} conversations, texts equal to jinja2 {texts_equal} of {renders} "
                           f"({len(compiled)} template(s)), refused as expected {refused}, ids equal to llama.cpp "
                           f"{ids_equal} of {convs - refused // len(compiled) - ids_skipped} (skipped, special-token text in a message: {ids_skipped})")
            if texts_equal == 0 or ids_equal == 0:
                print(f"{name}: nothing compared")
                failures += 1
    print("\n".join(summary))
    print("PASS" if failures == 0 else f"FAIL: {failures} mismatches")
    return 0 if failures == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
