"""The tables of docs/engine-invariance.md from scripts/engine-invariance's JSON.

  engine_invariance_report.py engine-invariance.json "CPU NAME" > engine-invariance.md

Per model: one row per configuration and thread count, summed over the conversations (rows
compared, rows whose logits differ bitwise from the reference's, the largest max|delta|, rows
whose argmax changed, conversations whose greedy continuation changed and the earliest step
it changed at); then per conversation the same for the configurations that differ.
"""
import json
import sys


def main():
    j = json.load(open(sys.argv[1]))
    cpu = sys.argv[2] if len(sys.argv) > 2 else "?"
    R = j["results"]
    out = [f"llama-cpp-python {j['llama_cpp_python']}; CPU: {cpu}; threads compared {j['threads']}; "
           f"{j['steps']} greedy steps; flash attention: {j['flash_attn']} (llama.cpp's own choice when default).",
           "", f"System info (llama.cpp): `{j['system_info'].strip()}`", ""]
    for model in dict.fromkeys(r["model"] for r in R):
        rows = [r for r in R if r["model"] == model]
        convs = list(dict.fromkeys(r["conversation"] for r in rows))
        ref = rows[0]
        out += [f"### `{model}`", "",
                f"Reference: `{ref['config']}` at {ref['threads']} thread(s), per conversation. "
                f"{len(convs)} conversations, {sum(r['tokens'] for r in rows if r is not None and r['config'] == ref['config'] and r['threads'] == ref['threads'])} prompt tokens.", "",
                "| configuration | threads | rows compared | rows differing | max\\|Δ\\| | argmax changes | continuations changed | earliest change (step) |",
                "|---|---|---|---|---|---|---|---|"]
        keys = list(dict.fromkeys((r["config"].split(", first")[0], r["threads"]) for r in rows))
        for cfg, t in keys:
            sel = [r for r in rows if r["config"].split(", first")[0] == cfg and r["threads"] == t]
            n = sum(r["rows"] for r in sel)
            d = sum(r["rows_differing"] for r in sel)
            mx = max(r["max_abs"] for r in sel)
            am = sum(r["argmax_changes"] for r in sel)
            measured = [r for r in sel if r.get("continuation_measured", True)]
            ch = [r["continuation_first_change"] for r in measured if r["continuation_first_change"] is not None]
            cont = f"{len(ch)} of {len(measured)}" if measured else "not run (prompts cut)"
            out.append(f"| {cfg} | {t} | {n} | {d} | {mx:.3g} | {am} | {cont} | {min(ch) if ch else '-'} |")
        out.append("")
        diff = [r for r in rows if r["rows_differing"] or (r["continuation_first_change"] is not None)]
        if diff:
            out += ["Per conversation, the configurations that differ:", "",
                    "| conversation | tokens | configuration | threads | rows differing | first row | max\\|Δ\\| | argmax changes | continuation changes at |",
                    "|---|---|---|---|---|---|---|---|---|"]
            for r in diff:
                out.append(f"| {r['conversation']} | {r['tokens']} | {r['config']} | {r['threads']} | {r['rows_differing']} | "
                           f"{r['first_differing_row']} | {r['max_abs']:.3g} | {r['argmax_changes']} | "
                           f"{r['continuation_first_change'] if r['continuation_first_change'] is not None else '-'} |")
            out.append("")
    print("\n".join(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
