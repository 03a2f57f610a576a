"""Writes a small byte-level BPE whose merges tie (the same pair at several places of a word,
pairs that overlap), and Hugging Face tokenizers' ids for every string of a, b and space up to
length 10 and a few longer ones (spec/tokenizer.md T4, T8).

    hf_tie_ids.py OUT_DIR      -> OUT_DIR/tokenizer.json, OUT_DIR/ids.json

The vocabulary is GPT-2's 256 byte characters, then the merges' products; the pre-tokenizer is
SmolLM2's (Digits individually, then ByteLevel with its regex), so akv's from_tokenizer_json
reads the file as it reads the real one.
"""
import itertools
import json
import os
import sys

import tokenizers
from tokenizers import Tokenizer, decoders, models, pre_tokenizers


def byte_alphabet():
    # GPT-2's bytes_to_unicode: printable bytes stand for themselves, the rest map to U+0100...
    keep = list(range(0x21, 0x7F)) + list(range(0xA1, 0xAD)) + list(range(0xAE, 0x100))
    chars, n = {}, 0
    for b in range(256):
        if b in keep:
            chars[b] = chr(b)
        else:
            chars[b] = chr(0x100 + n)
            n += 1
    return [chars[b] for b in range(256)]


# Rank order. Overlapping pairs and products reachable two ways, so that which of two equal
# pairs merges first changes the result (T4: the leftmost).
MERGES = [
    ("a", "a"), ("b", "b"), ("aa", "a"), ("aa", "aa"), ("a", "b"), ("ab", "ab"), ("b", "a"),
    ("ab", "a"), ("ba", "b"), ("\u0120", "a"), ("\u0120a", "a"), ("bb", "b"), ("b", "ab"),
    ("aba", "b"), ("\u0120", "b"), ("ba", "ba"), ("aaa", "b"), ("bbb", "a"), ("\u0120b", "b"),
]


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    alphabet = byte_alphabet()
    vocab = {c: i for i, c in enumerate(alphabet)}
    for left, right in MERGES:
        vocab.setdefault(left + right, len(vocab))
    tok = Tokenizer(models.BPE(vocab=vocab, merges=MERGES))
    tok.pre_tokenizer = pre_tokenizers.Sequence(
        [pre_tokenizers.Digits(individual_digits=True), pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)])
    tok.decoder = decoders.ByteLevel()
    tok.save(os.path.join(out, "tokenizer.json"))
    texts = ["".join(p) for n in range(1, 11) for p in itertools.product("ab ", repeat=n) if n <= 7 or " " not in p]
    texts += ["a" * n for n in range(11, 40)] + ["ab" * n for n in range(6, 20)] + ["aab" * 7, "abba" * 6, " aaaa bbbb abab"]
    cases = [[t, tok.encode(t).ids] for t in texts]
    with open(os.path.join(out, "ids.json"), "w") as f:
        json.dump({"tokenizers": tokenizers.__version__, "cases": cases}, f, separators=(",", ":"))
        f.write("\n")
    print(f"{len(cases)} strings, {len(vocab)} tokens, tokenizers {tokenizers.__version__}", file=sys.stderr)


main()
