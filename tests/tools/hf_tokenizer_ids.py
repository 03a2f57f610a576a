"""Hugging Face's token ids for the real model's tokenizer and chat template (spec/tokenizer.md T7, CT5).

    python hf_tokenizer_ids.py MODEL.gguf OUT.json CONVERSATION_DIR...

Run by scripts/crosscheck-tokenizer in its venv; the real-model tests compare akv with OUT.json.

The tokenizer is built with Hugging Face `tokenizers` from the GGUF's vocabulary and merges and the
pre-tokenizer of SmolLM2's published tokenizer.json (HuggingFaceTB/SmolLM2-135M-Instruct):
Sequence[Digits(individual_digits=true), ByteLevel(add_prefix_space=false, trim_offsets=true,
use_regex=true)], BPE with no unk token, no byte fallback, merges not ignored. The Digits step is
why this script does not use transformers' own GGUF loader: in transformers 5.24.0
(integrations/gguf/gguf_tokenizer_mapping.py) the pre-tokenizer name 'smollm' is absent from
GGUF_PRE_TOKENIZER_SPLITS, so a GGUF with tokenizer.ggml.pre = smollm gets GPT2Tokenizer's
ByteLevel-only pre-tokenizer, which keeps digit runs together ("2024" one piece) where SmolLM2's
tokenizer.json (and llama.cpp's smollm regexes, `\\p{N}` first) split every digit.

What goes into OUT.json:
  - "byte_level": transformers' bytes_to_unicode (byte -> character), the alphabet of T2;
  - "strings": hard strings (bytes as hex) with their ids. Valid UTF-8 goes to the tokenizer as
    text, with no special-token parsing. Invalid UTF-8 follows spec T5: the bytes are decoded with
    Python's surrogateescape; each escaped byte is a piece of its own whose token is its byte-level
    character's id (none when the vocabulary lacks it), and each valid run is tokenized alone;
  - "conversations": per file, every message's content and its ids; the ids of transformers'
    apply_chat_template (the file's template, add_generation_prompt false) on the plain messages
    (role and content only) in order; and the spans of spec CT2 (headers with name= and
    tool_call_id=, refusal and tool-call blocks), written here in Python from the spec and
    tokenized by Hugging Face, for akv's encoder to equal.
"""

import glob
import json
import os
import sys

from gguf import GGUFReader
from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers
from transformers import PreTrainedTokenizerFast
from transformers.convert_slow_tokenizer import bytes_to_unicode

CONTROL = 3  # GGUF token type


def field(reader, key):
    return reader.fields[key].contents()


def build(model_path):
    r = GGUFReader(model_path)
    tokens = field(r, "tokenizer.ggml.tokens")
    types = field(r, "tokenizer.ggml.token_type")
    merges = [tuple(m.split(" ")) for m in field(r, "tokenizer.ggml.merges")]
    template = field(r, "tokenizer.chat_template")
    vocab = {t: i for i, t in enumerate(tokens)}
    assert len(vocab) == len(tokens), "the vocabulary repeats a token"
    bpe = models.BPE(vocab=vocab, merges=merges, unk_token=None, fuse_unk=False, byte_fallback=False, ignore_merges=False)
    plain = Tokenizer(bpe)
    plain.pre_tokenizer = pre_tokenizers.Sequence(
        [pre_tokenizers.Digits(individual_digits=True),
         pre_tokenizers.ByteLevel(add_prefix_space=False, trim_offsets=True, use_regex=True)])
    plain.decoder = decoders.ByteLevel()
    chat = Tokenizer.from_str(plain.to_str())
    chat.add_special_tokens([AddedToken(tokens[i], special=True, normalized=False, lstrip=False, rstrip=False)
                             for i, t in enumerate(types) if t == CONTROL])
    bos = field(r, "tokenizer.ggml.bos_token_id")
    eos = field(r, "tokenizer.ggml.eos_token_id")
    fast = PreTrainedTokenizerFast(tokenizer_object=chat, bos_token=tokens[bos], eos_token=tokens[eos])
    fast.chat_template = template
    return plain, fast, vocab, template


def hard_strings():
    """Inputs only: every expected id comes from Hugging Face below."""
    s = [
        "Hello, world!", "", " ", "\n", "a", "It's 2024-11-06; we'll've done 3.14159 x 10^23.",
        "日本語のテキストと中文文本和한국어 텍스트", "Emoji: 😀👍🏽 👨‍👩‍👧‍👦 🏳️‍🌈 ❤️‍🔥 🇫🇷🇯🇵",
        "Combining: e\u0301 a\u0308 n\u0303 \u0915\u094d\u0937 Z\u0351\u0352\u0357\u035b",
        "spaces:" + " " * 37 + "end   \t\t\n\n\n  \u00a0\u2003\u3000x", " " * 300, "\n" * 50 + "x" + "\t " * 20,
        "digits " + "0123456789" * 40, "٣٤٥ ²³ Ⅻ ① 五 𝟗", "mixed: Привет мир, Γειά σου, مرحبا, שלום, नमस्ते",
        "<|im_end|> and <|im_start|>user\nnot special<|endoftext|>", "tabs\tand\r\nCRLF\r\n", "a'S 'LL 's't're've'm'll'd",
        "\u200b\u200c\u200d\ufeff zero-width", "control \x01\x02\x03\x04\x06\x13\x14\x16\x1d\x7f bytes",
        "𐍈 Gothic, 𝔘𝔫𝔦𝔠𝔬𝔡𝔢, 🀄", "x" * 5000, "ab" * 3000 + "😀" * 300,
    ]
    out = [t.encode("utf-8") for t in s]
    out += [b"\xff", b"abc\xffdef", b"\xc3\x28 bad continuation", b"\xe2\x82 truncated", b"end\xf0\x9f\x98",
            b"\xed\xa0\x80 surrogate", b"\xc0\xaf overlong", b"\xf4\x90\x80\x80 above max", b"\x80\x80\x80 12\xfe34",
            "ok é".encode() + b"\xe9" + " ok".encode()]
    return out


def encode_bytes(plain, vocab, byte_char, data):
    text = data.decode("utf-8", errors="surrogateescape")
    ids, run = [], ""
    for ch in text:
        if 0xDC80 <= ord(ch) <= 0xDCFF:  # an escaped invalid byte (T5)
            if run:
                ids += plain.encode(run, add_special_tokens=False).ids
                run = ""
            tid = vocab.get(byte_char[ord(ch) - 0xDC00])
            if tid is not None:
                ids.append(tid)
        else:
            run += ch
    if run:
        ids += plain.encode(run, add_special_tokens=False).ids
    return ids


def content_text(m):
    c = m.get("content")
    if c is None:
        return ""
    if isinstance(c, str):
        return c
    return "".join(p["text"] for p in c if p.get("type") == "text")


def is_plain(m):
    return not any(m.get(k) for k in ("name", "tool_call_id", "tool_calls", "function_call", "refusal", "tokens"))


def json_string(s):
    return json.dumps(s, ensure_ascii=False)


def is_json(text):
    try:
        json.loads(text, parse_constant=lambda c: (_ for _ in ()).throw(ValueError(c)))
        return True
    except ValueError:
        return False


def call_text(tc):
    """A tool call as spec CT2 writes it (function calls; None for a shape this script does not know)."""
    if tc.get("type", "function") != "function":
        return None
    f = tc["function"]
    args = f.get("arguments")
    args = "" if args is None else args if isinstance(args, str) else json.dumps(args, separators=(",", ":"))
    # The call's id is not rendered (CT2: the model would copy it from the history; listed as ignored).
    return '{"name": ' + json_string(f["name"]) + ', "arguments": ' + (args if is_json(args) else json_string(args)) + "}"


def message_text(m):
    """Spec CT2: header, newline, body. None for fields this script does not serialise."""
    if m.get("function_call") or not isinstance(m.get("content", ""), (str, type(None))):
        return None
    header = m["role"] + (" name=" + m["name"] if m.get("name") else "")
    header += " tool_call_id=" + m["tool_call_id"] if m.get("tool_call_id") else ""
    body = content_text(m)
    if m.get("refusal"):
        body += ("\n" if body else "") + "<refusal>" + m["refusal"] + "</refusal>"
    for tc in m.get("tool_calls") or []:
        t = call_text(tc)
        if t is None:
            return None
        body += ("\n" if body else "") + "<tool_call>\n" + t + "\n</tool_call>"
    return header + "\n" + body


def spans(plain, vocab, messages, default_system):
    start, end = vocab["<|im_start|>"], vocab["<|im_end|>"]
    nl = plain.encode("\n", add_special_tokens=False).ids

    def wrap(text):
        return [start] + plain.encode(text, add_special_tokens=False).ids + [end] + nl

    out = []
    for m in messages:
        if m.get("tokens"):
            out.append(m["tokens"])
            continue
        t = message_text(m)
        if t is None:
            return None, None
        out.append(wrap(t))
    has_default = default_system is not None
    preamble = wrap("system\n" + default_system) if has_default and messages and messages[0]["role"] != "system" else []
    return preamble, out


def chat_ids(fast, messages):
    r = fast.apply_chat_template(messages, tokenize=True, add_generation_prompt=False)
    if isinstance(r, dict) or hasattr(r, "keys"):
        r = r["input_ids"]
    return list(r)


def main():
    model_path, out_path, dirs = sys.argv[1], sys.argv[2], sys.argv[3:]
    plain, fast, vocab, template = build(model_path)
    byte_char = bytes_to_unicode()
    # The default system message, read from the template by rendering one user message.
    marker = "<|im_start|>system\n"
    rendered = fast.apply_chat_template([{"role": "user", "content": "x"}], tokenize=False)
    default_system = rendered[len(marker):rendered.index("<|im_end|>")] if rendered.startswith(marker) else None

    strings = [{"hex": b.hex(), "ids": encode_bytes(plain, vocab, byte_char, b)} for b in hard_strings()]
    convs = []
    files = sorted({os.path.realpath(p) for d in dirs for p in glob.glob(os.path.join(d, "*.json"))})
    for path in files:
        with open(path, encoding="utf-8") as f:
            doc = json.load(f)
        msgs = doc["messages"]
        texts = [{"index": i, "text": content_text(m), "ids": plain.encode(content_text(m), add_special_tokens=False).ids}
                 for i, m in enumerate(msgs) if not m.get("tokens")]
        keep = [i for i, m in enumerate(msgs) if is_plain(m)]
        sub = [{"role": msgs[i]["role"], "content": content_text(msgs[i])} for i in keep]
        preamble, sp = spans(plain, vocab, msgs, default_system)
        convs.append({"file": path, "texts": texts, "plain": keep, "chat_template_ids": chat_ids(fast, sub) if sub else [],
                      "preamble": preamble, "spans": sp})
    out = {"model": os.path.realpath(model_path), "chat_template": template, "default_system": default_system,
           "byte_level": {str(b): c for b, c in byte_char.items()}, "strings": strings, "conversations": convs}
    with open(out_path, "w", encoding="utf-8") as f:
        json.dump(out, f, ensure_ascii=False)


if __name__ == "__main__":
    main()
