#!/usr/bin/env python3
"""scripts/bench-serve's driver: akv serve measured against itself cold, and beside llama.cpp's
OpenAI-compatible server (llama_cpp.server), in one run (docs/serving.md, "Measured").

  bench_serve.py --akv PATH --model GGUF --conversations DIR --json OUT
                 [--llama-python PY] [--clients 1,4,8,16] [--requests N] [--max-tokens N]

Python's standard library only; llama_cpp.server runs from its own venv (--llama-python).
Every server listens on 127.0.0.1 and is killed on exit; every request has a timeout.
Exit 0 when every check ran (the numbers are figures, not pass/fail), 1 when an akv reply
differs from the same request sent alone and cold (SV1), 2 on a setup error.
"""
import argparse
import concurrent.futures as cf
import glob
import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request

TIMEOUT_S = 600  # one request; a hung server fails the run instead of stalling it
PROCS = []


def die(msg):
    print(f"akv: bench-serve: {msg}", file=sys.stderr)
    sys.exit(2)


def stop_all():
    for p in PROCS:
        if p.poll() is None:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()
    PROCS.clear()


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_http(port, path, proc, deadline_s, log):
    end = time.time() + deadline_s
    while time.time() < end:
        if proc.poll() is not None:
            die(f"the server exited ({proc.returncode}) before it listened; its log: {log}")
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=5):
                return
        except (urllib.error.URLError, ConnectionError, OSError):
            time.sleep(0.2)
    die(f"no answer on 127.0.0.1:{port}{path} after {deadline_s} s; its log: {log}")


def start(cmd, port, path, log):
    f = open(log, "w")
    p = subprocess.Popen(cmd, stdout=f, stderr=subprocess.STDOUT, start_new_session=True)
    PROCS.append(p)
    wait_http(port, path, p, 300, log)
    return p


def stop(p):
    if p.poll() is None:
        os.killpg(p.pid, signal.SIGKILL)
        p.wait()
    PROCS.remove(p)


class Server:
    """One OpenAI-compatible server on loopback: akv serve or llama_cpp.server."""

    def __init__(self, kind, args, logdir, kv_type="f32", budget=None):
        self.kind, self.args, self.logdir, self.proc, self.n = kind, args, logdir, None, 0
        self.kv_type, self.budget = kv_type, budget

    def up(self):
        self.port = free_port()
        self.n += 1
        log = os.path.join(self.logdir, f"{self.kind}-{self.n}.log")
        a = self.args
        if self.kind == "akv":
            cmd = [a.akv, "serve", "--model", a.model, "--port", str(self.port), "--threads", str(a.threads),
                   "--parallel", str(max(a.clients)), "--queue", "1000", "--kv-type", self.kv_type]
            if self.budget is not None:
                cmd += ["--cache-budget", str(self.budget)]
        else:
            # llama.cpp's server as it ships: one Llama object, requests served one at a time.
            cmd = [a.llama_python, "-m", "llama_cpp.server", "--model", a.model, "--host", "127.0.0.1", "--port",
                   str(self.port), "--n_threads", str(a.threads), "--n_threads_batch", str(a.threads), "--n_ctx", "8192",
                   "--seed", "1"]
        self.proc = start(cmd, self.port, "/v1/models", log)
        return self

    def down(self):
        stop(self.proc)

    def chat(self, messages, max_tokens, session=None):
        body = {"messages": messages, "max_tokens": max_tokens, "temperature": 0}
        if self.kind == "akv":
            body["logprobs"] = True
        else:
            body["seed"] = 1
        h = {"Content-Type": "application/json"}
        if session:
            h["x-akv-session"] = session
        req = urllib.request.Request(f"http://127.0.0.1:{self.port}/v1/chat/completions", json.dumps(body).encode(), h)
        t0 = time.perf_counter()
        try:
            with urllib.request.urlopen(req, timeout=TIMEOUT_S) as r:
                out = json.loads(r.read())
        except urllib.error.HTTPError as e:
            die(f"{self.kind}: HTTP {e.code}: {e.read()[:400]!r}")
        out["_seconds"] = time.perf_counter() - t0
        return out


def bits(reply):
    """What must be equal between two replies to one request: the text, and for akv the
    logprobs and the two digests (SV1)."""
    c = reply["choices"][0]
    b = {"content": c["message"].get("content"), "finish_reason": c.get("finish_reason")}
    if "akv" in reply:
        b["logprobs"] = c.get("logprobs")
        b["cache_sha256"] = reply["akv"]["cache_sha256"]
        b["logits_sha256"] = reply["akv"]["logits_sha256"]
    return json.dumps(b, sort_keys=True)


def pct(xs, q):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(q * (len(xs) - 1))))]


def conversations(folder):
    out = []
    for f in sorted(glob.glob(os.path.join(folder, "*.json"))):
        c = json.load(open(f))
        out.append((os.path.basename(f)[:-5], c["messages"], sorted(c.get("poisoned", []))))
    if not out:
        die(f"no conversations in {folder}")
    return out


def turns(msgs, poisoned):
    """The requests a host sends, turn by turn (after each user or tool message); the first
    poisoned tool result is dropped 4 messages after it arrived (as tests SV3 do)."""
    drop_at = poisoned[0] + 4 if poisoned else None
    for k in range(1, len(msgs) + 1):
        if msgs[k - 1]["role"] == "assistant":
            continue
        dropped = drop_at is not None and k >= drop_at
        part = [m for i, m in enumerate(msgs[:k]) if not (dropped and i in poisoned)]
        yield k, part


def replay(srv, convs):
    """1. Turn by turn, warm (its session) against cold (a fresh session each turn)."""
    rows, differ = [], 0
    for name, msgs, poisoned in convs:
        first_drop = True
        for k, part in turns(msgs, poisoned):
            w = srv.chat(part, 1, f"warm-{name}")
            c = srv.chat(part, 1, f"cold-{name}-{k}")
            a, b = w["akv"], c["akv"]
            drop = bool(poisoned) and k >= poisoned[0] + 4 and first_drop
            if drop:
                first_drop = False
            differ += bits(w) != bits(c)
            rows.append({"conversation": name, "turn": k, "drop": drop, "cold_prefill": b["prefill_tokens"],
                         "warm_prefill": a["prefill_tokens"], "warm_recomputed": a["recomputed_tokens"],
                         "warm_reused": a["reused_tokens"], "warm_evicted": a["evicted_tokens"],
                         "warm_s": w["_seconds"], "cold_s": c["_seconds"]})
    return rows, differ


def prompts(n):
    topics = ["a lighthouse", "the tides", "a bakery", "a comet", "a library", "a river", "a chess game", "a glacier",
              "a market", "a violin", "a desert", "a harbour", "a clock", "a forest", "a bridge", "a kite"]
    return [[{"role": "user", "content": f"Tell me a long story about {topics[i % len(topics)]}, part {i // len(topics) + 1}."}]
            for i in range(n)]


def load(srv, ps, clients, max_tokens, session_prefix):
    """2. len(ps) requests, `clients` at a time; tokens/s over the wall time, latency per reply."""
    t0 = time.perf_counter()
    with cf.ThreadPoolExecutor(clients) as pool:
        replies = list(pool.map(lambda ip: srv.chat(ip[1], max_tokens, f"{session_prefix}-{ip[0]}"), enumerate(ps)))
    wall = time.perf_counter() - t0
    tokens = sum(r["usage"]["completion_tokens"] for r in replies)
    lat = [r["_seconds"] for r in replies]
    return {"clients": clients, "requests": len(ps), "tokens": tokens, "wall_s": wall, "tokens_per_s": tokens / wall,
            "p50_s": pct(lat, 0.5), "p99_s": pct(lat, 0.99)}, [bits(r) for r in replies]


def held(srv, convs):
    """4. Sessions a --cache-budget holds: every conversation's whole history as a session of its
    own, in order, then each asked again, newest first, until one comes back not reused (the LRU
    dropped it and every older one). Returns (sessions held, their tokens)."""
    sizes = []
    for name, msgs, _ in convs:
        r = srv.chat(msgs, 1, f"held-{name}")
        sizes.append(r["usage"]["prompt_tokens"])
    kept, tokens = 0, 0
    for (name, msgs, _), n in reversed(list(zip(convs, sizes))):
        if srv.chat(msgs, 1, f"held-{name}")["akv"]["reused_tokens"] == 0:
            break
        kept, tokens = kept + 1, tokens + n
    return kept, tokens


def cold_bits(srv, requests, max_tokens):
    """Each request on a server that has seen nothing: akv by a fresh session, llama.cpp by a
    fresh process (its prompt cache keeps the previous prompt's prefix)."""
    out = []
    for i, msgs in enumerate(requests):
        if srv.kind == "akv":
            out.append(bits(srv.chat(msgs, max_tokens, f"alone-{i}-{time.time_ns()}")))
        else:
            srv.down()
            srv.up()
            out.append(bits(srv.chat(msgs, max_tokens)))
    return out


def edits(srv, convs, max_tokens):
    """3. After a history edit: the turn before the drop, then the turn without the poisoned
    result, on one server; against the edited request sent cold."""
    cases = []
    for name, msgs, poisoned in convs:
        if not poisoned:
            continue
        ts = list(turns(msgs, poisoned))
        later = [k for k, _ in ts if k >= poisoned[0] + 4]
        if not later:
            continue
        before = [p for k, p in ts if k < later[0]][-1]
        after = dict(ts)[later[0]]
        cases.append((name, before, after))
    warm = []
    for name, before, after in cases:
        srv.chat(before, max_tokens, f"edit-{name}")
        warm.append(bits(srv.chat(after, max_tokens, f"edit-{name}")))
    cold = cold_bits(srv, [a for _, _, a in cases], max_tokens)
    return {"cases": len(cases), "differ": sum(w != c for w, c in zip(warm, cold))}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--akv", required=True)
    ap.add_argument("--model", required=True)
    ap.add_argument("--conversations", required=True)
    ap.add_argument("--json", required=True)
    ap.add_argument("--llama-python")
    ap.add_argument("--clients", default="1,4,8,16")
    ap.add_argument("--requests", type=int, default=16)
    ap.add_argument("--max-tokens", type=int, default=32)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--logs", default="/tmp")
    ap.add_argument("--kv-types", default="f32,f16", help="akv's cache types: the load is measured for each")
    ap.add_argument("--budget-mib", type=int, default=256, help="--cache-budget of the sessions-held measurement")
    a = ap.parse_args()
    a.clients = [int(c) for c in a.clients.split(",")]
    if 1 not in a.clients or any(c < 1 for c in a.clients):
        die("--clients must hold 1 (the baseline of the ratios) and only positive counts")
    convs = conversations(a.conversations)
    J = {"model": a.model, "max_tokens": a.max_tokens, "requests_per_level": a.requests}
    ps = prompts(a.requests)
    failed = False
    kv_types = a.kv_types.split(",")
    try:
        # 4. Sessions held per GiB of --cache-budget, per cache type (spec/state.md S5).
        J["held"] = {"budget_mib": a.budget_mib}
        for t in kv_types + [t for t in ("f32", "f16", "q8_0") if t not in kv_types]:
            srv = Server("akv", a, a.logs, t, a.budget_mib << 20).up()
            kept, tokens = held(srv, convs)
            srv.down()
            J["held"][t] = {"sessions": kept, "tokens": tokens, "sessions_per_gib": kept * 1024 / a.budget_mib}
            print(f"akv --kv-type {t:4} --cache-budget {a.budget_mib} MiB: {kept} of {len(convs)} sessions held "
                  f"({tokens} tokens), {kept * 1024 / a.budget_mib:.1f} sessions per GiB", flush=True)
        for kind, t in [("akv", t) for t in kv_types] + ([("llama_cpp", "f16")] if a.llama_python else []):
            srv = Server(kind, a, a.logs, t).up()
            key = kind if kind == "llama_cpp" or t == kv_types[0] else f"akv_{t}"
            R = J[key] = {"kv_type": t}
            if kind == "akv" and key == "akv":
                rows, differ = replay(srv, convs)
                R["replay"] = rows
                R["replay_differ"] = differ
                failed |= differ > 0
                print(f"akv replay: {len(rows)} turns, {differ} warm replies differ from cold", flush=True)
            alone = cold_bits(srv, ps, a.max_tokens)
            R["load"], R["load_differ"] = [], {}
            for c in a.clients:
                row, got = load(srv, ps, c, a.max_tokens, f"load{c}")
                R["load"].append(row)
                R["load_differ"][str(c)] = sum(g != b for g, b in zip(got, alone))
                print(f"{key} {c:2} clients: {row['tokens_per_s']:7.1f} tokens/s, p50 {row['p50_s']:.2f} s, p99 "
                      f"{row['p99_s']:.2f} s, {R['load_differ'][str(c)]} of {len(ps)} replies differ from alone and cold",
                      flush=True)
            if kind == "akv":
                failed |= any(R["load_differ"].values())
            if key in ("akv", "llama_cpp"):
                R["edits"] = edits(srv, convs, a.max_tokens)
                print(f"{kind} history edits: {R['edits']['differ']} of {R['edits']['cases']} replies differ from cold", flush=True)
                if kind == "akv":
                    failed |= R["edits"]["differ"] > 0
            srv.down()
    finally:
        stop_all()
    with open(a.json, "w") as f:
        json.dump(J, f, indent=1)
    report(J)
    return 1 if failed else 0


def report(J):
    """The figures of docs/serving.md, as ratios within this run, and against the targets."""
    A = J["akv"]
    rows = A["replay"]
    cold = sum(r["cold_prefill"] for r in rows)
    warm = sum(r["warm_prefill"] + r["warm_recomputed"] for r in rows)
    ct, wt = sum(r["cold_s"] for r in rows), sum(r["warm_s"] for r in rows)
    drops = [r for r in rows if r["drop"]]
    dc = sum(r["cold_prefill"] for r in drops)
    dw = sum(r["warm_prefill"] + r["warm_recomputed"] for r in drops)
    print(f"reuse: {len(rows)} turns, prefill tokens cold {cold} / warm {warm} (prefill + recomputed) = "
          f"{cold / warm:.2f}x (target 3x); time cold {ct:.1f} s / warm {wt:.1f} s = {ct / wt:.2f}x")
    print(f"drop of a poisoned result: {len(drops)} turns, tokens cold re-prefill {dc} / warm evict + recompute + new "
          f"{dw} = {dc / dw:.2f}x")
    tps = {r["clients"]: r["tokens_per_s"] for r in A["load"]}
    for c in sorted(tps):
        print(f"akv throughput at {c} sessions: {tps[c] / tps[1]:.2f}x one session" + (" (target 3x)" if c == 8 else ""))
    if "llama_cpp" in J:
        L = {r["clients"]: r["tokens_per_s"] for r in J["llama_cpp"]["load"]}
        for c in sorted(L):
            if c in tps:
                print(f"akv / llama.cpp server at {c} sessions: {tps[c] / L[c]:.2f}x" + (" (target 1.0x)" if c == 8 else ""))
    print()
    print("| sessions | akv tokens/s | p50 / p99 s | replies that differ | llama.cpp server tokens/s | p50 / p99 s "
          "| replies that differ |")
    print("|---|---|---|---|---|---|---|")
    Lr = {r["clients"]: r for r in J.get("llama_cpp", {}).get("load", [])}
    for r in A["load"]:
        c = r["clients"]
        cells = [f"{c}", f"{r['tokens_per_s']:.1f}", f"{r['p50_s']:.2f} / {r['p99_s']:.2f}",
                 f"{A['load_differ'][str(c)]} of {r['requests']}"]
        if c in Lr:
            l = Lr[c]
            cells += [f"{l['tokens_per_s']:.1f}", f"{l['p50_s']:.2f} / {l['p99_s']:.2f}",
                      f"{J['llama_cpp']['load_differ'][str(c)]} of {l['requests']}"]
        else:
            cells += ["-", "-", "-"]
        print("| " + " | ".join(cells) + " |")
    for k in ("akv", "llama_cpp"):
        if k in J:
            print(f"{k}: after a history edit, {J[k]['edits']['differ']} of {J[k]['edits']['cases']} replies differ from cold")
    # Per cache type: the load at each level, and the sessions a budget holds (spec/state.md S5).
    akvs = [k for k in J if k == "akv" or k.startswith("akv_")]
    print()
    print("| cache type | sessions held in " + f"{J['held']['budget_mib']} MiB (per GiB) | " +
          " | ".join(f"tokens/s at {r['clients']}" for r in A["load"]) + " |")
    print("|---|---|" + "---|" * len(A["load"]))
    for k in akvs:
        t = J[k]["kv_type"]
        h = J["held"].get(t, {})
        print(f"| akv {t} | {h.get('sessions', '-')} ({h.get('sessions_per_gib', 0):.1f}) | " +
              " | ".join(f"{r['tokens_per_s']:.1f}" for r in J[k]["load"]) + " |")
    for t in ("f32", "f16", "q8_0"):
        if t in J["held"] and not any(J[k]["kv_type"] == t for k in akvs):
            h = J["held"][t]
            print(f"| akv {t} | {h['sessions']} ({h['sessions_per_gib']:.1f}) | " + " | ".join("-" for _ in A["load"]) + " |")
    if "llama_cpp" in J:
        print("| llama.cpp server (f16 cache) | - | " + " | ".join(f"{r['tokens_per_s']:.1f}" for r in J["llama_cpp"]["load"]) + " |")


if __name__ == "__main__":
    sys.exit(main())
