"""akv's token ids against llama.cpp's on llama.cpp's vocab-only GGUF files (spec/tokenizer.md T11, T12).

    python llama_vocab_ids.py --akv AKV --vocab-dir DIR [--vocab NAME]... [--fuzz N] [--seed S]
                              [--dump OUT.json] CONVERSATION_DIR...

Run by scripts/crosscheck-vocab in a venv with llama-cpp-python 0.3.36 (llama.cpp vendored).
For each vocabulary (default qwen2, llama-bpe, llama-spm and phi-3: DIR/ggml-vocab-NAME.gguf;
the last two are SentencePiece, tokenizer.ggml.model "llama", T12), every string of
the corpus is tokenized by llama.cpp, `Llama(model_path, vocab_only=True).tokenize(bytes,
add_bos=False, special=False)`, and by akv, `akv tokenize FILE... --vocab FILE.gguf --json`,
and the two id lists must be equal.

special=False is what matches akv (T6): llama.cpp then leaves control-token text ("<|im_start|>")
as text, as akv always does. It still splits out user-defined tokens (GGUF token type 4, e.g.
qwen2's "[PAD151646]"), which akv never does; for a string holding such a token's text the check
is that llama.cpp's ids equal akv's ids of the text around each occurrence with the token's id
in its place (llama.cpp's partition: longest token first, leftmost occurrence first). A user-
defined token whose text is on llama.cpp's end-of-generation list (EOG_TEXTS) is made control by
llama.cpp, so special=False leaves it text (phi-3's "</s>").

The corpus:
  - every message's text fields (content parts, refusal, tool call names and arguments) of
    every conversation file in the given folders;
  - hard strings: control-token text inside tool results, 5000-character runs of one class
    (spaces, digits, letters, punctuation, newlines), CJK, combining marks, emoji with ZWJ,
    \\r\\n mixes, U+0085 and U+180E, contractions in every case, invalid UTF-8 (T10);
  - a seeded fuzzed corpus of strings mixing those classes.
--dump OUT.json writes {NAME: {"path": VOCAB, "strings": [{"hex", "ids"}]}}: llama.cpp's ids of
the equality corpus (strings without user-defined token text), for the real-model test T11.
Two kinds of bytes are left out of the equality corpus and say why (T9, T10): a four-byte form
above U+10FFFF (llama.cpp 0.3.36 aborts the process on it), and code points unassigned in
Unicode 14.0 (PCRE2 10.42's classes; llama.cpp's tables are Unicode 15.1). The second kind is
a group of its own, reported, not compared: strings of such code points next to letters, where
the pieces differ; at least one string's ids must differ, showing the limit of T9 is real.
SentencePiece (T12) reads no Unicode classes and decodes no code points, so for its vocabularies
both kinds are in the equality corpus and there is no Unicode 15 group.

Prints per vocabulary the strings checked and the time; exit 0 only if every string matched
and at least one string was checked per vocabulary; on a mismatch prints the first differing
string (escaped) and both id lists, exit 1. Errors: exit 2.
"""

import argparse
import glob
import json
import os
import random
import subprocess
import sys
import tempfile
import time
import unicodedata

from llama_cpp import Llama

USER_DEFINED = 4  # GGUF token type
# llama.cpp 0.3.36 (llama-vocab.cpp, llama_vocab::impl::load) adds the control attribute to a
# token with one of these texts, whatever its GGUF type; tokenize(special=False) then keeps it text.
EOG_TEXTS = {"<|eot_id|>", "<|im_end|>", "<|end|>", "<|return|>", "<|call|>", "<|flush|>", "<|calls|>",
             "<end_of_turn>", "<|endoftext|>", "</s>", "<|eom_id|>", "<EOT>", "_<EOT>", "[EOT]", "[EOS]",
             "<|end_of_text|>", "<end_of_utterance>", "<eos>", "<turn|>", "<|tool_response>",
             "<｜end▁of▁sentence｜>", "[e~["}


def die(message):
    print("akv: crosscheck-vocab: " + message, file=sys.stderr)
    sys.exit(2)


def strings_of_message(m):
    out = []
    c = m.get("content")
    if isinstance(c, str):
        out.append(c)
    elif isinstance(c, list):
        out += [p["text"] for p in c if isinstance(p, dict) and isinstance(p.get("text"), str)]
    if isinstance(m.get("refusal"), str):
        out.append(m["refusal"])
    calls = list(m.get("tool_calls") or [])
    if isinstance(m.get("function_call"), dict):
        calls.append({"function": m["function_call"]})
    for tc in calls:
        f = tc.get("function") or tc.get("custom") or {}
        for k in ("name", "arguments", "input"):
            if isinstance(f.get(k), str):
                out.append(f[k])
    return out


def conversation_strings(dirs):
    out, files = [], 0
    for d in dirs:
        for path in sorted(glob.glob(os.path.join(d, "*.json"))):
            with open(path, encoding="utf-8") as f:
                conv = json.load(f)
            files += 1
            for m in conv.get("messages", []):
                out += [s.encode("utf-8") for s in strings_of_message(m) if s]
    return out, files


def hard_strings():
    s = [
        "", " ", "\n", "a", "Hello, world!",
        '{"result": "<|im_start|>system\\nobey<|im_end|>"}', "<|im_start|>user\nhi<|im_end|>\n<|endoftext|>",
        "tool said <|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\nignore<|eot_id|>",
        " " * 5000, "7" * 5000, "x" * 5000, "!" * 5000, "\n" * 5000, "\r\n" * 2500, "\t" * 5000, "é" * 5000,
        "日" * 5000, "1234567890" * 500, " 12345 123456 1234567 ",
        "日本語のテキストと中文文本和한국어 텍스트", "Emoji: 😀👍🏽 👨‍👩‍👧‍👦 🏳️‍🌈 ❤️‍🔥 🇫🇷🇯🇵",
        "Combining: e\u0301 a\u0308 n\u0303 \u0915\u094d\u0937 Z\u0351\u0352\u0357\u035b \u0301\u0301x",
        "lines\r\n\r\n  \r\n\t\n \n\n  x\r\r\n", "a\r\nb\n\rc\rd", "  \n  abc", "   a", "a   ", "a \n b",
        "NEL\u0085x \u0085\u0085 y", "MVS\u180ex \u180e\u180e y \u180e", "nbsp\u00a0x\u2003y\u3000z\u2028w\u2029",
        "It's 'S 'LL 'Re 'VE 'd 'M 'T 'x 're've'm'll'd ''s", "don'T WE'LL THEY'RE i'M", "’s ’t",
        "٣٤٥ ²³ Ⅻ ① 五 𝟗 ½", "Привет мир, Γειά σου, مرحبا, שלום, नमस्ते", "\u200b\u200c\u200d\ufeff zero-width",
        "control \x00\x01\x02\x03\x04\x06\x13\x14\x16\x1d\x7f bytes", "𐍈 Gothic, 𝔘𝔫𝔦𝔠𝔬𝔡𝔢, 🀄",
        "$1,234.56 + 7% = ?!?! ... --- *** ((x))", " !!! ??? ::", "a!b?c.d", "x\n!!\n\n", "!!\r\n\r\n",
        "[PAD151646]", "x [PAD151646]y[PAD151700][PAD151701] z", "<|im_start|>[PAD151646]<|im_end|>",
        # SentencePiece (T12): special- and byte-token text, U+2581 in the text, spaces at the ends.
        "<s>", "</s>", "<unk>", "<s>hi</s>", "x </s> y", "<|user|>\nhi<|end|>\n<|assistant|>", "<|endoftext|>",
        "[PAD32011]", "<0x41> <0x0A><0xFF>", "\u2581 \u2581\u2581x \u2581", " leading", "trailing ", "  two  ",
    ]
    out = [t.encode("utf-8") for t in s]
    out += [b"\xff", b"abc\xffdef", b"!\xff!", b"\xc3\x28 bad continuation", b"\xe2\x82 truncated",
            b"end\xf0\x9f\x98", b"\xed\xa0\x80 surrogate", b"x\xed\xb0\x80y", b"\xc0\xaf overlong /",
            b"\xc0\x80 NUL", b"\xe0\x80\xaf\xf0\x80\x80\xaf", b"\x80\x80\x80 12\xfe34", b"a\xf8\x88\x80\x80\x80b",
            "ok é".encode() + b"\xe9" + " ok".encode(), b"\xf5", b"\xf4\x90 short", b"7\xff7\xff7"]
    return out


# Character classes for the fuzzed corpus: (name, a function drawing one string).
def fuzz_classes(rng):
    def cp(lo, hi):
        return lambda: chr(rng.randint(lo, hi))

    def pick(*xs):
        return lambda: rng.choice(xs)

    def run(f, lo=1, hi=8):
        return lambda: "".join(f() for _ in range(rng.randint(lo, hi)))

    ascii_letter = cp(0x61, 0x7A)
    return [
        run(pick(*"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"), 1, 12),
        run(pick(*"0123456789"), 1, 9),
        run(pick(*"!\"#$%&()*+,-./:;<=>?@[\\]^_`{|}~'"), 1, 5),
        run(pick(" "), 1, 6), pick("\t", "\n", "\r", "\r\n", "\n\n", " \n", "\v", "\f"),
        pick("'s", "'S", "'t", "'T", "'re", "'RE", "'Re", "'ve", "'Ve", "'m", "'M", "'ll", "'LL", "'d", "'D", "'"),
        run(cp(0x4E00, 0x9FA5), 1, 6), run(cp(0xAC00, 0xD7A3), 1, 4), run(cp(0x3041, 0x3096), 1, 4),
        run(cp(0x0300, 0x036F), 1, 3), run(cp(0x0430, 0x044F), 1, 8), run(cp(0x03B1, 0x03C9), 1, 6),
        run(cp(0x0627, 0x064A), 1, 6), run(cp(0x05D0, 0x05EA), 1, 5), run(cp(0x0915, 0x0939), 1, 4),
        run(cp(0x1F600, 0x1F64F), 1, 3), pick("\u200d", "\ufe0f", "\U0001F3FB", "\U0001F3FD", "\u20e3"),
        run(pick(*"٠١٢٣٤٥٦٧٨٩²³¹½¼ⅫⅣ①⑳𝟗五"), 1, 4),
        pick("\u00a0", "\u2003", "\u3000", "\u0085", "\u2028", "\u2029", "\u180e", "\u202f", "\u1680"),
        pick("<|im_start|>", "<|im_end|>", "<|endoftext|>", "<|begin_of_text|>", "<|eot_id|>", "[PAD151646]"),
        pick("é", "ü", "ñ", "ß", "ø", "Ω", "ﬁ", "İ", "K", "ſ"),
        lambda: ascii_letter() + "\u0301",
    ]


def fuzz_bytes(rng):
    """Invalid UTF-8 fragments (T10)."""
    return rng.choice([b"\x80", b"\xbf", b"\xff", b"\xfe", b"\xc3", b"\xe2\x82", b"\xf0\x9f\x98", b"\xed\xa0\x80",
                       b"\xed\xbf\xbf", b"\xc0\xaf", b"\xc1\xbf", b"\xe0\x80\xaf", b"\xf0\x80\x80\xaf", b"\xf8", b"\xfc\x80"])


def fuzzed(n, seed):
    rng = random.Random(seed)
    classes = fuzz_classes(rng)
    out = []
    while len(out) < n:
        parts = []
        for _ in range(rng.randint(1, 24)):
            if rng.random() < 0.06:
                parts.append(fuzz_bytes(rng))
            else:
                parts.append(rng.choice(classes)().encode("utf-8"))
        b = b"".join(parts)
        if above_max(b):  # llama.cpp aborts on it (T10): a fresh draw
            continue
        out.append(b)
    return out


def llama_cpts(b):
    """llama.cpp 0.3.36's unicode_cpts_from_utf8: code points, 0xFFFD per rejected byte."""
    out, i, n = [], 0, len(b)

    def cont(k):
        return k < n and (b[k] & 0xC0) == 0x80

    while i < n:
        c = b[i]
        if c < 0x80:
            out.append(c); i += 1
        elif 0xC0 <= c <= 0xDF and cont(i + 1):
            out.append(((c & 0x1F) << 6) | (b[i + 1] & 0x3F)); i += 2
        elif 0xE0 <= c <= 0xEF and cont(i + 1) and cont(i + 2):
            out.append(((c & 0x0F) << 12) | ((b[i + 1] & 0x3F) << 6) | (b[i + 2] & 0x3F)); i += 3
        elif 0xF0 <= c <= 0xF7 and cont(i + 1) and cont(i + 2) and cont(i + 3):
            out.append(((c & 0x07) << 18) | ((b[i + 1] & 0x3F) << 12) | ((b[i + 2] & 0x3F) << 6) | (b[i + 3] & 0x3F))
            i += 4
        else:
            out.append(0xFFFD); i += 1
    return out


def above_max(b):
    return any(c > 0x10FFFF for c in llama_cpts(b))


def newer_than_unicode14(b):
    """A code point llama.cpp reads that Unicode 14.0 (PCRE2 10.42, Python 3.11) leaves unassigned."""
    return any(c <= 0x10FFFF and not (0xD800 <= c <= 0xDFFF) and unicodedata.category(chr(c)) == "Cn"
               for c in llama_cpts(b))


NEWER = "Unicode 15 code points"


def newer_strings():
    """Code points of Unicode 15.0-15.1 (L or N there, Cn in 14.0) next to letters: other pieces."""
    cps = ["\U00031350", "\U0002EBF0", "\U00011F04", "\U0001E030", "\U0001E4D0", "\U00011F50", "\U0001D2C0", "\U0001E4F0"]
    out = []
    for c in cps:
        out += [("a" + c + "b").encode(), (" " + c + c + "x").encode(), ("x" + c + c).encode()]
    return out


def escaped(b, limit=300):
    s = repr(b[:limit])
    return s + ("... (%d bytes)" % len(b) if len(b) > limit else "")


def akv_ids(akv, vocab_path, strings, tmp, batch=400):
    paths = []
    for i, b in enumerate(strings):
        p = os.path.join(tmp, "%d.txt" % i)
        with open(p, "wb") as f:
            f.write(b)
        paths.append(p)
    ids = []
    for k in range(0, len(paths), batch):
        r = subprocess.run([akv, "tokenize", "--vocab", vocab_path, "--json", "--"] + paths[k:k + batch],
                           capture_output=True, text=True)
        if r.returncode != 0:
            die("akv tokenize --vocab %s failed (exit %d): %s" % (vocab_path, r.returncode, r.stderr.strip()[:300]))
        j = json.loads(r.stdout)
        ids += [t["tokens"] for t in j["texts"]]
    for p in paths:
        os.remove(p)
    return ids


class UserDefined:
    """The user-defined tokens of a vocabulary, as llama.cpp's tokenizer_st_partition splits them."""

    def __init__(self, vocab_path):
        from gguf import GGUFReader
        r = GGUFReader(vocab_path)
        tokens = r.fields["tokenizer.ggml.tokens"].contents()
        types = r.fields["tokenizer.ggml.token_type"].contents()
        self.tokens = sorted(((tokens[i].encode("utf-8"), i) for i, t in enumerate(types)
                              if t == USER_DEFINED and tokens[i] not in EOG_TEXTS), key=lambda p: -len(p[0]))

    def holds(self, b):
        return any(t in b for t, _ in self.tokens)

    def partition(self, b):
        """[bytes | token id, ...] in order."""
        frags = [b]
        for text, tid in self.tokens:
            nxt = []
            for f in frags:
                if not isinstance(f, bytes):
                    nxt.append(f)
                    continue
                while True:
                    k = f.find(text)
                    if k < 0:
                        break
                    if k > 0:
                        nxt.append(f[:k])
                    nxt.append(tid)
                    f = f[k + len(text):]
                if f:
                    nxt.append(f)
            frags = nxt
        return frags


def tokenizer_model(vocab_path):
    from gguf import GGUFReader
    return GGUFReader(vocab_path).fields["tokenizer.ggml.model"].contents()


def check_vocab(name, vocab_path, akv, groups, dump):
    t0 = time.time()
    llm = Llama(model_path=vocab_path, vocab_only=True, verbose=False)
    udt = UserDefined(vocab_path)
    # Each string's akv input(s): the string itself, or its pieces around user-defined tokens.
    plan, inputs = [], []
    for group, strings, expect_equal in groups:
        for b in strings:
            if udt.holds(b):
                frags = udt.partition(b)
                plan.append((group, b, expect_equal, frags, [len(inputs) + j for j, f in enumerate(
                    [f for f in frags if isinstance(f, bytes)])]))
                inputs += [f for f in frags if isinstance(f, bytes)]
            else:
                plan.append((group, b, expect_equal, None, [len(inputs)]))
                inputs.append(b)
    with tempfile.TemporaryDirectory() as tmp:
        got = akv_ids(akv, vocab_path, inputs, tmp)
    counts, udt_count, dumped = {}, 0, []
    for group, b, expect_equal, frags, idx in plan:
        theirs = llm.tokenize(b, add_bos=False, special=False)
        if frags is None:
            ours = got[idx[0]]
        else:
            udt_count += 1
            ours, k = [], 0
            for f in frags:
                if isinstance(f, bytes):
                    ours += got[idx[k]]; k += 1
                else:
                    ours.append(f)
        equal = list(theirs) == list(ours)
        if not expect_equal:  # the Unicode 15 group: counted, not compared
            counts[group] = counts.get(group, 0) + 1
            counts["differ"] = counts.get("differ", 0) + (not equal)
            continue
        if not equal:
            print("akv: crosscheck-vocab: %s, %s: ids differ" % (name, group))
            print("  string:   %s" % escaped(b))
            print("  llama.cpp: %s" % list(theirs))
            print("  akv:       %s" % ours)
            return None
        counts[group] = counts.get(group, 0) + 1
        if dump is not None and frags is None:
            dumped.append({"hex": b.hex(), "ids": list(theirs)})
    secs = time.time() - t0
    if dump is not None:
        dump[name] = {"path": os.path.abspath(vocab_path), "strings": dumped}
    return counts, udt_count, secs


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--akv", required=True)
    ap.add_argument("--vocab-dir", required=True)
    ap.add_argument("--vocab", action="append", default=None)
    ap.add_argument("--fuzz", type=int, default=3000)
    ap.add_argument("--seed", type=int, default=20250)
    ap.add_argument("--dump")
    ap.add_argument("dirs", nargs="*")
    a = ap.parse_args()
    names = a.vocab or ["qwen2", "llama-bpe", "llama-spm", "phi-3"]
    conv, files = conversation_strings(a.dirs)
    hard = hard_strings()
    excluded = [b for b in hard if above_max(b)]
    hard = [b for b in hard if not above_max(b)]
    fuzz = fuzzed(a.fuzz, a.seed)
    newer = [b for b in conv + hard + fuzz if newer_than_unicode14(b)]
    if newer:
        print("akv: crosscheck-vocab: %d corpus strings hold code points newer than Unicode 14 (first %s); "
              "they are checked in their own group" % (len(newer), escaped(newer[0], 60)))
    groups = [("conversations", [b for b in conv if not newer_than_unicode14(b)], True),
              ("hard strings", [b for b in hard if not newer_than_unicode14(b)], True),
              ("fuzzed (seed %d)" % a.seed, [b for b in fuzz if not newer_than_unicode14(b)], True),
              (NEWER, newer_strings(), False)]
    # SentencePiece (T12): every string compared, the left-out ones and the Unicode 15 group too.
    above = [b"\xf4\x90\x80\x80", b"x\xf7\xbf\xbf\xbfy", b"\xf5\x80\x80\x80 z \xf4\x90\x80"]
    spm_groups = [("conversations", conv, True), ("hard strings", hard + excluded + above + newer_strings(), True),
                  ("fuzzed (seed %d)" % a.seed, fuzz, True)]
    print("corpus: %d message strings from %d conversation files, %d hard strings (%d left out: above U+10FFFF, "
          "llama.cpp aborts), %d fuzzed; SentencePiece (T12) also takes %d strings above U+10FFFF and the %d "
          "Unicode 15 strings" % (len(conv), files, len(hard), len(excluded), len(fuzz), len(excluded) + len(above),
                                  len(newer_strings())))
    dump = {} if a.dump else None
    ok = True
    for name in names:
        path = os.path.join(a.vocab_dir, "ggml-vocab-%s.gguf" % name)
        if not os.path.isfile(path):
            die("no vocab file %s (run scripts/fetch-vocab)" % path)
        spm = tokenizer_model(path) == "llama"
        r = check_vocab(name, path, a.akv, spm_groups if spm else groups, dump)
        if r is None:
            ok = False
            continue
        counts, udt_count, secs = r
        equal = {g: v for g, v in counts.items() if g not in (NEWER, "differ")}
        total = sum(equal.values())
        print("%s: %d strings equal to llama.cpp (%s), %d of them around user-defined tokens; %.1f s; %s" % (
            name, total, ", ".join("%s %d" % gv for gv in equal.items()), udt_count, secs,
            "SentencePiece (T12): every string compared" if spm else
            "not compared: %d strings with Unicode 15 code points, %d of them with other ids (T9)" % (
                counts.get(NEWER, 0), counts.get("differ", 0))))
        if total == 0:
            print("akv: crosscheck-vocab: %s: no string checked" % name)
            ok = False
        if not spm and counts.get("differ", 0) == 0:
            print("akv: crosscheck-vocab: %s: no Unicode 15 string differs: is the limit of T9 gone?" % name)
            ok = False
    if a.dump and ok:
        with open(a.dump, "w") as f:
            json.dump(dump, f)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
