#!/usr/bin/env python3
"""Loads a GGUF file with Hugging Face transformers and saves it as a Hugging Face folder
(spec/safetensors.md H8).

Usage: hf_export.py MODEL.gguf OUT_DIR

transformers reads the GGUF file (`from_pretrained(folder, gguf_file=name, dtype=float32)`:
gguf-py dequantizes each tensor, and Q/K rows are un-permuted to transformers' rotate-half
layout), then `save_pretrained(OUT_DIR)` writes config.json and model.safetensors (float32).
transformers 5.24 keeps a model loaded from GGUF marked as quantized and refuses to save it,
although its weights are plain float32 tensors; this script checks that they are (no module
other than torch's and the Llama model's, every state-dict tensor float32) and drops the
marker before saving. It also writes OUT_DIR/akv_export.json: the GGUF path, the package
versions and the time taken.
"""
import json
import os
import sys
import time


def main() -> int:
    if len(sys.argv) != 3:
        print("usage: hf_export.py MODEL.gguf OUT_DIR", file=sys.stderr)
        return 2
    gguf_path, out = sys.argv[1:]
    start = time.monotonic()
    import torch
    import transformers
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(
        os.path.dirname(os.path.abspath(gguf_path)), gguf_file=os.path.basename(gguf_path), dtype=torch.float32)
    allowed = ("torch.nn.", "transformers.models.llama.", "transformers.activations")
    for name, module in model.named_modules():
        kind = type(module).__module__ + "." + type(module).__name__
        if not kind.startswith(allowed):
            print(f"hf_export: module {name or '<root>'} is {kind}: the weights are not plain tensors; not saved", file=sys.stderr)
            return 1
    for name, tensor in model.state_dict().items():
        if type(tensor) is not torch.Tensor or tensor.dtype != torch.float32:
            print(f"hf_export: tensor {name} is {type(tensor).__name__} {tensor.dtype}, expected float32", file=sys.stderr)
            return 1
    # Plain float32 weights: drop the GGUF quantization marker so save_pretrained writes them.
    model.hf_quantizer = None
    model.is_quantized = False
    if hasattr(model.config, "quantization_config"):
        del model.config.quantization_config
    model.save_pretrained(out, safe_serialization=True)

    from importlib.metadata import version
    doc = {
        "model": os.path.abspath(gguf_path),
        "versions": {p: version(p) for p in ("torch", "transformers", "gguf", "numpy", "safetensors", "accelerate")},
        "seconds": round(time.monotonic() - start, 3),
        "files": sorted(os.listdir(out)),
    }
    with open(os.path.join(out, "akv_export.json"), "w") as f:
        json.dump(doc, f, indent=1)
    print(f"hf_export: {gguf_path} -> {out} in {doc['seconds']} s (transformers {transformers.__version__})", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
