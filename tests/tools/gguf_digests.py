#!/usr/bin/env python3
"""Per-tensor SHA-256 of gguf-py's dequantization of a GGUF file (spec/gguf.md Q6).

Usage: gguf_digests.py MODEL.gguf OUT.json

For every tensor, in file order: gguf.quants.dequantize(tensor.data, tensor.tensor_type) as
float32, C order (ggml's order: dims[0] fastest), and the SHA-256 of those bytes. Written as
JSON: {"model": path, "gguf_version": ..., "numpy_version": ..., "seconds": ...,
"tensors": [{"name", "type", "dims", "n_elements", "sha256"}]}. akv's test compares each digest
with its own dequantization of the same tensor.
"""
import hashlib
import json
import sys
import time

import gguf
import numpy as np
from gguf.quants import dequantize


def main() -> int:
    if len(sys.argv) != 3:
        print("usage: gguf_digests.py MODEL.gguf OUT.json", file=sys.stderr)
        return 2
    path, out = sys.argv[1:]
    start = time.monotonic()
    reader = gguf.GGUFReader(path)
    tensors = []
    for t in reader.tensors:
        values = dequantize(t.data, t.tensor_type)
        values = np.ascontiguousarray(values, dtype=np.float32)
        if values.dtype != np.float32 or values.size != int(t.n_elements):
            print(f"gguf_digests: tensor {t.name}: got {values.size} {values.dtype}, expected {t.n_elements} float32", file=sys.stderr)
            return 1
        tensors.append({
            "name": t.name,
            "type": t.tensor_type.name,
            "dims": [int(d) for d in t.shape],
            "n_elements": int(t.n_elements),
            "sha256": hashlib.sha256(values.tobytes()).hexdigest(),
        })
    doc = {
        "model": path,
        "gguf_version": getattr(gguf, "__version__", None) or _dist_version("gguf"),
        "numpy_version": np.__version__,
        "seconds": round(time.monotonic() - start, 3),
        "tensors": tensors,
    }
    with open(out, "w") as f:
        json.dump(doc, f, indent=1)
    print(f"gguf_digests: {len(tensors)} tensors in {doc['seconds']} s -> {out}", file=sys.stderr)
    return 0


def _dist_version(name: str) -> str:
    from importlib.metadata import version
    return version(name)


if __name__ == "__main__":
    sys.exit(main())
