#!/usr/bin/env python3
"""A GGUF file of seeded random blocks of every type akv dequantizes (spec/gguf.md Q10).

Usage: gguf_blocks.py OUT.gguf

Two tensors of ggml dims [256, 16] per type, named TYPE.narrow and TYPE.any, written with
gguf-py's GGUFWriter as raw bytes (raw_dtype). Block bytes are random (numpy PCG64, seed 2025);
then every binary16 scale or min of a block is redrawn finite: magnitude in [2^-10, 2^4) in
.narrow, any finite binary16 (subnormals, zero) in .any. F32, F16, BF16 elements are any finite
pattern. gguf_digests.py then gives gguf-py's digests of the file; akv's test compares.
"""
import sys

import gguf
import numpy as np
from gguf import GGMLQuantizationType as T

ROWS, COLS = 16, 256
# Byte offsets of the binary16 scales (d, and m / dmin) inside one block (ggml's block structs).
SCALES = {T.Q8_0: [0], T.Q4_0: [0], T.Q4_1: [0, 2], T.Q5_0: [0], T.Q5_1: [0, 2],
          T.Q4_K: [0, 2], T.Q5_K: [0, 2], T.Q6_K: [208]}


def finite_halves(rng: np.random.Generator, n: int, narrow: bool) -> np.ndarray:
    if narrow:  # sign, exponent 2^-10 .. 2^3, any mantissa
        e = rng.integers(15 - 10, 15 + 4, n, dtype=np.uint16)  # biased exponent field
        bits = (e << np.uint16(10)) | rng.integers(0, 1024, n, dtype=np.uint16)
        return bits | (rng.integers(0, 2, n, dtype=np.uint16) << np.uint16(15))
    bits = rng.integers(0, 1 << 16, n, dtype=np.uint16)
    bad = (bits & 0x7C00) == 0x7C00  # inf / NaN: exponent all ones
    bits[bad] &= np.uint16(0xBFFF)  # clear the exponent's top bit: finite
    return bits


def tensor_bytes(rng: np.random.Generator, t: T, narrow: bool) -> np.ndarray:
    block, size = gguf.GGML_QUANT_SIZES[t]
    n_blocks = ROWS * COLS // block
    if t == T.F32:
        v = rng.integers(0, 1 << 32, n_blocks, dtype=np.uint32)
        v[(v & 0x7F800000) == 0x7F800000] &= np.uint32(0xBFFFFFFF)
        return v.view(np.uint8).reshape(ROWS, -1)
    if t == T.F16:
        return finite_halves(rng, n_blocks, narrow=False).view(np.uint8).reshape(ROWS, -1)
    if t == T.BF16:
        v = rng.integers(0, 1 << 16, n_blocks, dtype=np.uint16)
        v[(v & 0x7F80) == 0x7F80] &= np.uint16(0xBFFF)
        return v.view(np.uint8).reshape(ROWS, -1)
    b = rng.integers(0, 256, (n_blocks, size), dtype=np.uint8)
    for off in SCALES[t]:
        b[:, off:off + 2] = finite_halves(rng, n_blocks, narrow).view(np.uint8).reshape(n_blocks, 2)
    return b.reshape(ROWS, -1)


def main() -> int:
    if len(sys.argv) != 2:
        print("usage: gguf_blocks.py OUT.gguf", file=sys.stderr)
        return 2
    rng = np.random.default_rng(2025)
    w = gguf.GGUFWriter(sys.argv[1], "akv-blocks")
    for t in [T.F32, T.F16, T.BF16, *SCALES]:
        for narrow in (True, False):
            w.add_tensor(f"{t.name}.{'narrow' if narrow else 'any'}", tensor_bytes(rng, t, narrow), raw_dtype=t)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
