"""akv's logits on generated weights of each architecture against transformers' own model class
(docs/real-model.md "Architectures on generated weights"; spec/model.md M13-M20).

For each architecture (llama3, qwen2, qwen3, gemma3): transformers' class (LlamaForCausalLM with
llama3 rope_scaling, Qwen2ForCausalLM, Qwen3ForCausalLM, Gemma3ForCausalLM) is built from a
small config with seeded random weights; its state dict is written as a GGUF through gguf-py
(the tensor names and conventions of llama.cpp's converter: Q/K rows permuted for llama only,
Gemma's norm weights stored as 1 + w, rope_freqs for Llama 3), with a tokenizer copied from a
vocabulary GGUF. akv tokenizes a bundled conversation and writes its logits at every position
(`akv logits --positions all`); transformers runs the same ids, eager attention, three ways:
  inj f32  float32, the RoPE cos/sin of the exact angles (float64) rounded to float32 injected;
  inj f64  the model in float64 with the exact RoPE, RMSNorm and softmax in float64: the reference;
  stock f32  as shipped (for information).
Acceptance (docs/crosscheck.md, FlashAttention's rule): max|akv - inj f64| <= 2 max|inj f32 - inj f64|,
and no margin-rule violation. Exit 0 all pass, 1 a rule failed, 2 an error.
"""
import argparse, json, math, os, subprocess, sys, tempfile

import numpy as np
import torch
import gguf
import transformers
from transformers import (Gemma3ForCausalLM, Gemma3TextConfig, LlamaConfig, LlamaForCausalLM, Qwen2Config,
                          Qwen2ForCausalLM, Qwen3Config, Qwen3ForCausalLM)


class Failure(Exception):
    pass


SMOLLM_TEMPLATE_KEY = "tokenizer.chat_template"


def configs(vocab_qwen, vocab_llama, vocab_spm):
    common = dict(hidden_size=64, intermediate_size=160, num_hidden_layers=3, num_attention_heads=4,
                  num_key_value_heads=2, max_position_embeddings=4096, rms_norm_eps=1e-6, tie_word_embeddings=False)
    return {
        "llama3": (LlamaForCausalLM, LlamaConfig(vocab_size=vocab_llama, head_dim=16, **common, rope_parameters={
            "rope_type": "llama3", "rope_theta": 500000.0, "factor": 8.0, "low_freq_factor": 1.0,
            "high_freq_factor": 4.0, "original_max_position_embeddings": 64})),
        "qwen2": (Qwen2ForCausalLM, Qwen2Config(vocab_size=vocab_qwen, **common,
                                                 rope_parameters={"rope_type": "default", "rope_theta": 1000000.0})),
        "qwen3": (Qwen3ForCausalLM, Qwen3Config(vocab_size=vocab_qwen, head_dim=24, **common,
                                                 rope_parameters={"rope_type": "default", "rope_theta": 1000000.0})),
        "gemma3": (Gemma3ForCausalLM, Gemma3TextConfig(
            vocab_size=vocab_spm, hidden_size=48, intermediate_size=128, num_hidden_layers=6, num_attention_heads=4,
            num_key_value_heads=1, head_dim=32, query_pre_attn_scalar=32, max_position_embeddings=4096,
            rms_norm_eps=1e-6, sliding_window=64, tie_word_embeddings=True, hidden_activation="gelu_pytorch_tanh",
            final_logit_softcapping=None, attn_logit_softcapping=None,
            layer_types=["sliding_attention" if (i + 1) % 6 else "full_attention" for i in range(6)],
            rope_parameters={"sliding_attention": {"rope_type": "default", "rope_theta": 10000.0},
                             "full_attention": {"rope_type": "default", "rope_theta": 1000000.0}})),
    }


def read_text(path):
    with open(path, encoding="utf-8") as f:
        return f.read()


# arch -> (the vocabulary file whose tokenizer.* keys the generated GGUF copies, its chat template
# or None to keep the file's own).
TOKENIZERS = {
    "llama3": lambda a: (a.vocab_llama_bpe, read_text(a.template_llama)),
    "qwen2": lambda a: (a.vocab_qwen2, read_text(a.template_qwen)),
    "qwen3": lambda a: (a.vocab_qwen2, read_text(a.template_qwen)),
    "gemma3": lambda a: (a.vocab_spm, None),
}


def randomise(model, seed):
    """Seeded weights: matrices N(0, 1)/sqrt(fan_in) (Q/K twice that), embeddings N(0, 1), biases
    0.1 N(0, 1), norm weights 1 + 0.1 N(0, 1) (Gemma's stored w: 0.1 N(0, 1), as it computes 1 + w)."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith("norm.weight"):
                base = 0.0 if isinstance(model, Gemma3ForCausalLM) else 1.0
                p.copy_(base + 0.1 * torch.randn(p.shape, generator=g))
            elif name.endswith(".bias"):
                p.copy_(0.1 * torch.randn(p.shape, generator=g))
            elif "embed_tokens" in name:
                p.copy_(torch.randn(p.shape, generator=g))
            else:
                fan_in = p.shape[-1]
                gain = 2.0 if name.endswith(("q_proj.weight", "k_proj.weight")) else 1.0
                p.copy_(gain * torch.randn(p.shape, generator=g) / math.sqrt(fan_in))


def llama3_factors(cfg, head_dim):
    """Llama 3's per-frequency divisors as llama.cpp's converter writes rope_freqs (float32)."""
    rp = cfg.rope_parameters
    base, factor = rp["rope_theta"], rp["factor"]
    low, high, old = rp["low_freq_factor"], rp["high_freq_factor"], rp["original_max_position_embeddings"]
    out = []
    for i in range(head_dim // 2):
        freq = base ** (-2.0 * i / head_dim)
        wavelen = 2 * math.pi / freq
        if wavelen < old / high:
            f = 1.0
        elif wavelen > old / low:
            f = factor
        else:
            s = (old / wavelen - low) / (high - low)
            f = 1.0 / ((1 - s) / factor + s)
        out.append(f)
    return np.array(out, dtype=np.float32)


def permute(w, n_head):
    """llama.cpp's converter (LlamaModel.permute): HF rotate-half rows -> interleaved pairs."""
    return w.reshape(n_head, 2, w.shape[0] // n_head // 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)


def write_gguf(arch, model, cfg, tok_src, path, chat_template=None):
    w = gguf.GGUFWriter(path, "gemma3" if arch == "gemma3" else ("llama" if arch == "llama3" else arch))
    garch = w.arch
    hd = head_dim(cfg)
    w.add_uint32(f"{garch}.embedding_length", cfg.hidden_size)
    w.add_uint32(f"{garch}.block_count", cfg.num_hidden_layers)
    w.add_uint32(f"{garch}.feed_forward_length", cfg.intermediate_size)
    w.add_uint32(f"{garch}.context_length", cfg.max_position_embeddings)
    w.add_uint32(f"{garch}.attention.head_count", cfg.num_attention_heads)
    w.add_uint32(f"{garch}.attention.head_count_kv", cfg.num_key_value_heads)
    w.add_uint32(f"{garch}.attention.key_length", hd)
    w.add_uint32(f"{garch}.attention.value_length", hd)
    w.add_float32(f"{garch}.attention.layer_norm_rms_epsilon", cfg.rms_norm_eps)
    theta = cfg.rope_parameters["full_attention"]["rope_theta"] if arch == "gemma3" else cfg.rope_parameters["rope_theta"]
    w.add_float32(f"{garch}.rope.freq_base", theta)
    if arch == "gemma3":
        w.add_uint32(f"{garch}.attention.sliding_window", cfg.sliding_window)
    # The tokenizer, copied from the vocabulary file.
    r = gguf.GGUFReader(tok_src)
    for k, f in r.fields.items():
        if not k.startswith("tokenizer.") or (chat_template is not None and k == "tokenizer.chat_template"):
            continue
        v = f.contents()
        t = f.types[0]
        if t == gguf.GGUFValueType.ARRAY:
            w.add_array(k, v)
        elif t == gguf.GGUFValueType.STRING:
            w.add_string(k, v)
        elif t == gguf.GGUFValueType.BOOL:
            w.add_bool(k, v)
        elif t == gguf.GGUFValueType.FLOAT32:
            w.add_float32(k, v)
        else:
            w.add_uint32(k, int(v))
    if chat_template is not None:  # the model's published template (spec/tokenizer.md CT13)
        w.add_string("tokenizer.chat_template", chat_template)
    sd = {k: v.detach().to(torch.float32).numpy() for k, v in model.state_dict().items()}
    names = {"self_attn.q_proj": "attn_q", "self_attn.k_proj": "attn_k", "self_attn.v_proj": "attn_v",
             "self_attn.o_proj": "attn_output", "mlp.gate_proj": "ffn_gate", "mlp.up_proj": "ffn_up",
             "mlp.down_proj": "ffn_down", "input_layernorm": "attn_norm", "post_attention_layernorm": "ffn_norm",
             "self_attn.q_norm": "attn_q_norm", "self_attn.k_norm": "attn_k_norm"}
    if arch == "gemma3":
        names.update({"post_attention_layernorm": "post_attention_norm", "pre_feedforward_layernorm": "ffn_norm",
                      "post_feedforward_layernorm": "post_ffw_norm"})
    for k, v in sd.items():
        if k == "model.embed_tokens.weight":
            out = "token_embd.weight"
        elif k == "model.norm.weight":
            out = "output_norm.weight"
        elif k == "lm_head.weight":
            if cfg.tie_word_embeddings:
                continue
            out = "output.weight"
        elif k.startswith("model.layers."):
            rest = k[len("model.layers."):]
            layer, sub = rest.split(".", 1)
            stem, kind = sub.rsplit(".", 1)
            if stem not in names:
                raise Failure(f"no GGUF name for {k}")
            out = f"blk.{layer}.{names[stem]}.{kind}"
            if arch == "llama3" and stem in ("self_attn.q_proj", "self_attn.k_proj") and kind == "weight":
                heads = cfg.num_attention_heads if stem == "self_attn.q_proj" else cfg.num_key_value_heads
                v = permute(v, heads)
        else:
            raise Failure(f"unexpected tensor {k}")
        if arch == "gemma3" and k.endswith("norm.weight"):
            v = (v.astype(np.float32) + np.float32(1.0)).astype(np.float32)  # Gemma's 1 + w, as the converter
        w.add_tensor(out, np.ascontiguousarray(v, dtype=np.float32))
    if arch == "llama3":
        w.add_tensor("rope_freqs.weight", llama3_factors(cfg, hd))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def head_dim(cfg):
    return getattr(cfg, "head_dim", None) or cfg.hidden_size // cfg.num_attention_heads


def rope_tables(arch, cfg, n):
    """Exact RoPE cos/sin (float64) per layer type: angle = p * (theta^(-2i/hd) / ff_i), ff as stored."""
    hd = head_dim(cfg)
    i = np.arange(hd // 2, dtype=np.float64)
    def table(theta, ff=None):
        inv = np.power(np.float64(theta), -2.0 * i / hd)
        if ff is not None:
            inv = inv / ff.astype(np.float64)
        ang = np.arange(n, dtype=np.float64)[:, None] * inv[None, :]
        ang = np.concatenate([ang, ang], axis=1)
        return np.cos(ang), np.sin(ang)
    if arch == "gemma3":
        return {t: table(cfg.rope_parameters[t]["rope_theta"]) for t in ("sliding_attention", "full_attention")}
    ff = llama3_factors(cfg, hd) if arch == "llama3" else None
    return {None: table(cfg.rope_parameters["rope_theta"], ff)}


def patch(model, tables, f64):
    """Installs the exact RoPE (both dtypes) and, for f64, RMSNorm and softmax in the input's dtype."""
    rot = model.model.rotary_emb
    def rope_forward(x, position_ids, layer_type=None):
        c, s = tables[layer_type]
        pos = position_ids[0].cpu().numpy()
        ct = torch.from_numpy(c[pos]).to(x.dtype)[None]
        st = torch.from_numpy(s[pos]).to(x.dtype)[None]
        return ct, st
    rot.forward = rope_forward
    if not f64:
        return
    gemma = isinstance(model, Gemma3ForCausalLM)
    for m in model.modules():
        if type(m).__name__.endswith("RMSNorm"):
            def norm_forward(x, m=m):
                eps = m.eps if hasattr(m, "eps") else m.variance_epsilon
                y = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps)
                return y * ((1.0 + m.weight) if gemma else m.weight)
            m.forward = norm_forward


_softmax = torch.nn.functional.softmax


def softmax_keep_dtype(x, dim=None, dtype=None, **kw):
    return _softmax(x, dim=dim) if x.dtype == torch.float64 else _softmax(x, dim=dim, dtype=dtype, **kw)


def run(model, ids):
    with torch.no_grad():
        out = model(torch.tensor([ids]), use_cache=False)
    return out.logits[0].to(torch.float64).numpy()


def figures(a, ref):
    d = np.abs(a.astype(np.float64) - ref)
    row = d.max(axis=1)
    return {"max_abs": float(d.max()), "max_rel": float((row / np.abs(ref).max(axis=1)).max()),
            "argmax_agree": int((a.argmax(axis=1) == ref.argmax(axis=1)).sum())}


def margin_violations(a, ref):
    top2 = np.sort(ref, axis=1)[:, -2:]
    margin = top2[:, 1] - top2[:, 0]
    row = np.abs(a.astype(np.float64) - ref).max(axis=1)
    return int(((margin > row) & (a.argmax(axis=1) != ref.argmax(axis=1))).sum())


def akv(binary, *args):
    r = subprocess.run([binary, *args], capture_output=True, text=True)
    if r.returncode != 0:
        raise Failure(f"`akv {' '.join(args)}` exited {r.returncode}: {r.stderr.strip()[-300:]}")
    return r.stdout


def check(arch, cls, cfg, a, work, real=None):
    if real is None:
        cfg._attn_implementation = "eager"
        torch.manual_seed(a.seed)
        model = cls(cfg).to(torch.float32).eval()
        randomise(model, a.seed)
        # Each architecture with its own family's tokenizer and template, as step 2 of issue 25
        # checked them against llama.cpp and jinja2 (spec/tokenizer.md T11, CT11, CT13).
        tok_src, tmpl = TOKENIZERS[arch](a)
        path = os.path.join(work, f"{arch}.gguf")
        write_gguf(arch, model, cfg, tok_src, path, tmpl)
    else:  # the real file: transformers' own GGUF loader (gguf-py's dequantization, Gemma's w = stored - 1)
        path = real
        model = transformers.AutoModelForCausalLM.from_pretrained(
            os.path.dirname(real), gguf_file=os.path.basename(real), dtype=torch.float32,
            attn_implementation="eager").eval()
        cls, cfg = type(model), model.config
        want = {"sliding_window": 512, "query_pre_attn_scalar": 256, "head_dim": 256, "hidden_activation": "gelu_pytorch_tanh"}
        got = {k: getattr(cfg, k, None) for k in want}
        if got != want or cfg.rope_parameters["sliding_attention"]["rope_theta"] != 10000.0 or \
                cfg.rope_parameters["full_attention"]["rope_theta"] != 1000000.0 or \
                cfg.layer_types != ["sliding_attention" if (i + 1) % 6 else "full_attention" for i in range(cfg.num_hidden_layers)]:
            raise Failure(f"transformers read another Gemma 3 config from {real}: {got}, {cfg.rope_parameters}, {cfg.layer_types}")
    doc = json.loads(akv(a.akv, "tokenize", a.conversation, "--model", a.model_name or path, "--json"))
    ids = doc["tokens"]
    conv = a.conversation
    model_arg = a.model_name or path
    if len(ids) > a.max_tokens and arch.startswith("gemma3"):
        # The first max_tokens ids as raw tokens (spec/model.md M5): BOS is the encoder's preamble.
        ids = ids[: a.max_tokens]
        conv = os.path.join(work, f"{arch}.json")
        with open(conv, "w") as f:
            json.dump({"messages": [{"role": "system", "tokens": ids[1:]}]}, f)
    elif len(ids) > a.max_tokens:
        # The longest run of the conversation's first messages within max_tokens, rendered by the
        # model's own template (a raw-token message would change a template's default turns).
        with open(a.conversation) as f:
            whole = json.load(f)
        conv = os.path.join(work, f"{arch}.json")
        for k in range(len(whole["messages"]) - 1, 0, -1):
            with open(conv, "w") as f:
                json.dump(dict(whole, messages=whole["messages"][:k]), f)
            ids = json.loads(akv(a.akv, "tokenize", conv, "--model", model_arg, "--json"))["tokens"]
            if len(ids) <= a.max_tokens:
                break
        if len(ids) > a.max_tokens:
            raise Failure(f"{arch}: the first message alone is {len(ids)} tokens, over --max-tokens {a.max_tokens}")
    npy = os.path.join(work, f"{arch}.npy")
    akv(a.akv, "logits", conv, "--model", model_arg, "--backend", a.backend, "--positions", "all", "--out", npy)
    ak = np.load(npy)
    if ak.shape != (len(ids), cfg.vocab_size):
        raise Failure(f"{arch}: akv wrote {ak.shape}, expected {(len(ids), cfg.vocab_size)}")
    tables = rope_tables(arch, cfg, len(ids))
    stock = run(model, ids)
    patch(model, tables, False)
    inj32 = run(model, ids)
    m64 = cls(cfg).eval()
    m64.load_state_dict(model.state_dict())
    m64 = m64.double()
    del model
    patch(m64, tables, True)
    torch.nn.functional.softmax = softmax_keep_dtype
    try:
        ref = run(m64, ids)
    finally:
        torch.nn.functional.softmax = _softmax
    r = {"arch": arch, "class": cls.__name__, "tokens": len(ids), "vocab": cfg.vocab_size,
         "akv_vs_inj64": figures(ak, ref), "inj32_vs_inj64": figures(inj32.astype(np.float32), ref),
         "stock32_vs_inj64": figures(stock.astype(np.float32), ref), "margin_violations": margin_violations(ak, ref)}
    r["ratio"] = r["akv_vs_inj64"]["max_abs"] / r["inj32_vs_inj64"]["max_abs"]
    r["template"] = doc.get("encoder", "")
    r["witness"] = witness(a, path, a.model_name or path)
    r["pass"] = bool(r["ratio"] <= 2.0 and r["margin_violations"] == 0 and r["witness"]["exact"])
    return r


def witness(a, path, model):
    """E1 on the same file: akv witness on the whole conversation (its poisoned span evicted)."""
    p = subprocess.run([a.akv, "witness", a.conversation, "--model", model, "--backend", a.backend, "--json"],
                       capture_output=True, text=True)
    if p.returncode not in (0, 1):
        raise Failure(f"akv witness --model {model} exited {p.returncode}: {p.stderr.strip()[-400:]}")
    w = json.loads(p.stdout)
    return {"exact": bool(w["exact"]) and bool(w["passed"]) and p.returncode == 0, "tokens": w["tokens_poisoned"],
            "tokens_evicted": w["tokens_evicted"], "tokens_recomputed": w["tokens_recomputed"],
            "evict_vs_never_max_abs": w["evict_vs_never_max_abs"], "poison_vs_never_max_abs": w["poison_vs_never_max_abs"]}


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--akv", required=True)
    p.add_argument("--conversation", required=True)
    p.add_argument("--vocab-qwen2", required=True, help="ggml-vocab-qwen2.gguf (scripts/fetch-vocab)")
    p.add_argument("--vocab-llama-bpe", required=True, help="ggml-vocab-llama-bpe.gguf (scripts/fetch-vocab)")
    p.add_argument("--template-qwen", required=True, help="Qwen-Qwen2.5-7B-Instruct.jinja (scripts/fetch-vocab)")
    p.add_argument("--template-llama", required=True, help="meta-llama-Llama-3.1-8B-Instruct.jinja")
    p.add_argument("--vocab-spm", required=True)
    p.add_argument("--backend", default="cpu")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--max-tokens", type=int, default=1024)
    p.add_argument("--only", default="")
    p.add_argument("--real", default="", help="the Gemma 3 270M GGUF: compare on its real weights instead")
    p.add_argument("--model-name", default="", help="akv's name of --real (gemma3-270m)")
    p.add_argument("--out", required=True)
    a = p.parse_args()
    torch.set_num_threads(2)
    qwen = len(gguf.GGUFReader(a.vocab_qwen2).fields["tokenizer.ggml.tokens"].data)
    llama = len(gguf.GGUFReader(a.vocab_llama_bpe).fields["tokenizer.ggml.tokens"].data)
    spm = len(gguf.GGUFReader(a.vocab_spm).fields["tokenizer.ggml.tokens"].data)
    results = []
    os.makedirs(a.out, exist_ok=True)
    with tempfile.TemporaryDirectory() as work:
        if a.real:
            r = check("gemma3", None, None, a, work, real=a.real)
            r["arch"] = "gemma3-270m (real weights)"
            print(f"crosscheck-arch: {r['arch']} ({r['tokens']} tokens): akv vs f64 {r['akv_vs_inj64']['max_abs']:.3g}, "
                  f"transformers f32 vs f64 {r['inj32_vs_inj64']['max_abs']:.3g}, ratio {r['ratio']:.2f}, argmax "
                  f"{r['akv_vs_inj64']['argmax_agree']}/{r['tokens']}, margin violations {r['margin_violations']}: "
                  f"{'PASS' if r['pass'] else 'FAIL'}", file=sys.stderr, flush=True)
            results.append(r)
        for arch, (cls, cfg) in configs(qwen, llama, spm).items():
            if a.real or (a.only and arch not in a.only.split(",")):
                continue
            r = check(arch, cls, cfg, a, work)
            print(f"crosscheck-arch: {arch} ({r['class']}, {r['tokens']} tokens): akv vs f64 {r['akv_vs_inj64']['max_abs']:.3g}, "
                  f"transformers f32 vs f64 {r['inj32_vs_inj64']['max_abs']:.3g}, ratio {r['ratio']:.2f}, argmax "
                  f"{r['akv_vs_inj64']['argmax_agree']}/{r['tokens']}, margin violations {r['margin_violations']}: "
                  f"{'PASS' if r['pass'] else 'FAIL'}", file=sys.stderr, flush=True)
            print(f"crosscheck-arch: {arch} template {r['template']}: witness ({r['witness']['tokens']} tokens, {r['witness']['tokens_evicted']} evicted, "
                  f"{r['witness']['tokens_recomputed']} recomputed) evict vs never "
                  f"{r['witness']['evict_vs_never_max_abs']}, poison vs never {r['witness']['poison_vs_never_max_abs']}: "
                  f"{'exact' if r['witness']['exact'] else 'NOT exact'}", file=sys.stderr, flush=True)
            results.append(r)
    doc = {"transformers": transformers.__version__, "torch": torch.__version__, "seed": a.seed, "results": results}
    with open(os.path.join(a.out, "crosscheck-arch.json"), "w") as f:
        json.dump(doc, f, indent=1)
    if not results:
        raise Failure("no architecture compared")
    return 0 if all(r["pass"] for r in results) else 1


if __name__ == "__main__":
    try:
        sys.exit(main())
    except Failure as e:
        print(f"akv: crosscheck-arch: {e}", file=sys.stderr)
        sys.exit(2)
