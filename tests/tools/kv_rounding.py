#!/usr/bin/env python3
"""gguf-py's and numpy's rounding of seeded K/V rows (spec/state.md S6, S7).

Usage: kv_rounding.py OUT.json

Writes OUT.f32 (the rows: ROWS x COLS little-endian float32), OUT.f16 (numpy's astype(float16) of
each value: round to nearest even, as VCVTPS2PH) and OUT.q8_0 (gguf-py's Q8_0 quantizer,
gguf.quants.quantize: ggml's quantize_row_q8_0_ref, 34 bytes a block of 32), and OUT.json with
their SHA-256 and the versions. akv's test (S6_GgufPy, S7_GgufPy) encodes OUT.f32 with its own
kv_encode_row and compares the bytes.

The rows are seeded (numpy PCG64, seed 46) and adversarial: values of every binade a key or value
reaches (2^-30 .. 2^15), exact binary16 ties and their float neighbours, binary16 subnormals and
the underflow edge, values just below the binary16 overflow (65504 .. 65519.99), blocks whose
x * (1/d) land on .5 (roundf's ties), blocks of one large value among small ones, all-zero blocks,
signed zeros. Every value is finite, with |x| < 65520 (above it binary16 is inf; the Q8_0 scale
overflows beyond 127 * 65504, which no row here reaches).
"""
import hashlib
import json
import sys

import gguf
import numpy as np
from gguf import GGMLQuantizationType as T

ROWS, COLS = 256, 256  # 2048 blocks of 32


def rows(rng: np.random.Generator) -> np.ndarray:
    x = np.empty((ROWS, COLS), dtype=np.float32)
    n = ROWS * COLS
    flat = x.reshape(-1)
    kinds = rng.integers(0, 8, ROWS)
    for r in range(ROWS):
        k = kinds[r]
        row = flat[r * COLS:(r + 1) * COLS]
        if k == 0:  # any binade a key or value reaches
            e = rng.uniform(-30, 15, COLS)
            row[:] = (np.sign(rng.standard_normal(COLS)) * np.exp2(e)).astype(np.float32)
        elif k == 1:  # binary16 ties (midpoints of two normals) and their float neighbours
            h = rng.integers(0x0400, 0x7BFF, COLS, dtype=np.uint16)
            lo = h.view(np.float16).astype(np.float32)
            hi = (h + np.uint16(1)).view(np.float16).astype(np.float32)
            mid = ((lo.astype(np.float64) + hi.astype(np.float64)) / 2).astype(np.float32)  # exact
            nudge = rng.integers(-1, 2, COLS)
            mid = np.where(nudge < 0, np.nextafter(mid, np.float32(0)), np.where(nudge > 0, np.nextafter(mid, np.float32(np.inf)), mid))
            row[:] = mid * np.where(rng.integers(0, 2, COLS) == 1, -1, 1).astype(np.float32)
        elif k == 2:  # binary16 subnormals and the underflow edge (2^-25 rounds to 0, just above to 2^-24)
            units = rng.uniform(0, 1024, COLS)
            row[:] = (units * 2.0 ** -24).astype(np.float32)
            row[:8] = np.array([2.0 ** -25, np.nextafter(np.float32(2.0 ** -25), np.float32(1)), 2.0 ** -26, 3 * 2.0 ** -25,
                                2.0 ** -14, np.nextafter(np.float32(2.0 ** -14), np.float32(0)), 1.5 * 2.0 ** -24, 0.0],
                               dtype=np.float32)
        elif k == 3:  # just below the binary16 overflow, and the largest finite ones
            row[:] = rng.uniform(60000, 65519.99, COLS).astype(np.float32)
            row[:4] = np.array([65504, 65519.99, 65519, np.nextafter(np.float32(65520), np.float32(0))], dtype=np.float32)
            row[:] *= np.where(rng.integers(0, 2, COLS) == 1, -1, 1).astype(np.float32)
        elif k == 4:  # q8_0 ties: in each block x_j = (m_j + 1/2) * amax / 127 for small integers m_j
            for b in range(COLS // 32):
                amax = np.float32(np.exp2(rng.uniform(-8, 8)))
                m = rng.integers(-126, 126, 32).astype(np.float32)
                blk = ((m + np.float32(0.5)) * (amax / np.float32(127))).astype(np.float32)
                blk[rng.integers(0, 32)] = amax * (1 if rng.integers(0, 2) else -1)
                row[b * 32:(b + 1) * 32] = blk
        elif k == 5:  # one large value among small ones (a block's scale set by an outlier)
            row[:] = rng.standard_normal(COLS).astype(np.float32) * np.float32(1e-3)
            row[rng.integers(0, COLS, 8)] = rng.standard_normal(8).astype(np.float32) * np.float32(1e3)
        elif k == 6:  # zero blocks, signed zeros
            row[:] = np.float32(0)
            row[1::2] = np.float32(-0.0)
            row[64:96] = rng.standard_normal(32).astype(np.float32)
        else:  # keys and values as a real model makes them: normal, a few units
            row[:] = (rng.standard_normal(COLS) * rng.uniform(0.1, 20)).astype(np.float32)
    assert np.all(np.isfinite(x)) and np.all(np.abs(x) < 65520), "rows must be finite and below the binary16 overflow"
    assert n == x.size
    return x


def _dist_version(name: str) -> str:
    from importlib.metadata import version
    return version(name)


def main() -> int:
    if len(sys.argv) != 2 or not sys.argv[1].endswith(".json"):
        print("usage: kv_rounding.py OUT.json", file=sys.stderr)
        return 2
    out = sys.argv[1]
    base = out[: -len(".json")]
    x = rows(np.random.default_rng(46))
    f16 = x.astype(np.float16)
    q8 = gguf.quants.quantize(x, T.Q8_0)  # (ROWS, COLS / 32 * 34) bytes
    files = {"f32": x.tobytes(), "f16": f16.tobytes(), "q8_0": np.ascontiguousarray(q8).tobytes()}
    assert len(files["q8_0"]) == ROWS * COLS // 32 * 34
    meta = {"rows": ROWS, "cols": COLS, "seed": 46, "gguf_version": getattr(gguf, "__version__", None) or _dist_version("gguf"),
            "numpy_version": np.__version__, "files": {}}
    for k, b in files.items():
        with open(f"{base}.{k}", "wb") as f:
            f.write(b)
        meta["files"][k] = {"path": f"{base}.{k}", "bytes": len(b), "sha256": hashlib.sha256(b).hexdigest()}
    with open(out, "w") as f:
        json.dump(meta, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
