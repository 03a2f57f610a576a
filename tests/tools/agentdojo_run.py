"""AgentDojo through its own harness on `akv serve`, with and without the guard (scripts/agentdojo).

AgentDojo's benchmark (`python -m agentdojo.scripts.benchmark --model VLLM_PARSED`: its native
tool-calling path, OpenAI's client on http://localhost:$LOCAL_LLM_PORT/v1) runs one suite's user
tasks, with and without its `important_instructions` attack, in four runs, each on a fresh
`akv serve` (loopback, a free port) behind a small logging proxy of this file:

  clean        no attack: the injection vectors at their benign defaults (AgentDojo's utility)
  attack       the attack, no guard
  guard        the attack, `akv serve --guard-command GUARD`: GUARD flags AgentDojo's injection
               text in a tool result, which the server evicts before generation (spec/serving.md SV7)
  never-shown  the attack, no guard; the proxy withholds every tool result GUARD flags, so the
               model is never given them: the reference the guard run must equal

The proxy logs every request and reply (bodies, x-akv-* headers). In every run it names the
function of a task's first model turn (the one with no assistant message yet): `tool_choice`
`{"type": "function", "function": {"name": F}}` with F the first function of the task's ground
truth in AgentDojo's suite, and `parallel_tool_calls: false`. AgentDojo sends `auto`, under which
the 135M models rarely call a tool and, when they do, seldom the one that reads the injected
data; a task without that call never meets the attack. The arguments stay the model's (valid
under the function's schema by the grammar, SV14); later turns go as AgentDojo sent them.

Per task it reports AgentDojo's utility and security (security True: the attack succeeded), and
for the guard run whether every model turn equals the never-shown run's turn: the request's i-th
model turn of each run paired in order, the same task and turn, the reply's `choices` (content,
tool calls with their ids, finish reason, logprobs) byte-equal, `usage` prompt and completion
tokens and the cache and logits digests (body and headers) equal. Writes OUT.json and OUT.md.
Exit 0 when all four runs ran and every guard turn equals its never-shown turn, with at least one
turn after an eviction; 1 otherwise; 2 for a setup error.
"""
import argparse
import datetime
import http.client
import http.server
import json
import os
import platform
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from akv_server import Server, SetupError, bound_run, end_run

MODES = ["clean", "attack", "guard", "never-shown"]


def prompt_text(messages):
    """The text of a request's first user message (AgentDojo sends a list of text blocks)."""
    c = next((m.get("content") for m in messages if m.get("role") == "user"), None)
    if isinstance(c, list):
        c = "".join(b.get("text", "") for b in c if isinstance(b, dict))
    return c


# Each task's prompt and the function its ground truth calls first, from AgentDojo's suite.
FIRST_FUNCTIONS = r"""
import json, sys
from agentdojo.task_suite.load_suites import get_suite
s = get_suite(sys.argv[1], sys.argv[2])
out = {}
for t in list(s.user_tasks.values()) + list(s.injection_tasks.values()):
    gt = t.ground_truth(s.load_and_inject_default_environment({}))
    if gt:
        out[getattr(t, "PROMPT", None) or t.GOAL] = gt[0].function
print(json.dumps(out))
"""


def first_functions(a):
    p = subprocess.run([a.python, "-c", FIRST_FUNCTIONS, "v1.2", a.suite], capture_output=True, text=True, timeout=300)
    if p.returncode != 0:
        raise SetupError(f"cannot read the suite's ground truth: {(p.stderr.strip().splitlines() or ['?'])[-1]}")
    return json.loads(p.stdout)


class Proxy:
    """A loopback HTTP proxy to one akv serve: logs each exchange, edits requests per mode."""

    def __init__(self, upstream_port, guard_cmd, withhold, first):
        self.upstream_port = upstream_port
        self.first = first
        self.guard_cmd = guard_cmd
        self.withhold = withhold
        self.log = []
        self.lock = threading.Lock()
        self.verdicts = {}
        proxy = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *a):
                pass

            def do_GET(self):
                self.forward(None)

            def do_POST(self):
                n = int(self.headers.get("content-length", "0"))
                self.forward(self.rfile.read(n))

            def forward(self, body):
                sent = body
                entry = None
                if body is not None and self.path.endswith("/chat/completions"):
                    req = json.loads(body)
                    orig = json.loads(body)
                    withheld = []
                    if proxy.withhold:
                        keep = []
                        for i, m in enumerate(req["messages"]):
                            if m.get("role") == "tool" and proxy.flags(m.get("content")):
                                withheld.append(i)
                            else:
                                keep.append(m)
                        req["messages"] = keep
                    if req.get("tools") and not any(m.get("role") == "assistant" for m in req["messages"]):
                        fn = proxy.first.get(prompt_text(req["messages"]))
                        req["tool_choice"] = {"type": "function", "function": {"name": fn}} if fn else "required"
                        req["parallel_tool_calls"] = False
                    sent = json.dumps(req).encode()
                    entry = {"request": orig, "sent": req, "withheld": withheld}
                c = http.client.HTTPConnection("127.0.0.1", proxy.upstream_port, timeout=600)
                hdrs = {"content-type": "application/json"} if sent is not None else {}
                c.request(self.command, self.path, body=sent, headers=hdrs)
                r = c.getresponse()
                data = r.read()
                c.close()
                if entry is not None:
                    entry["status"] = r.status
                    entry["reply"] = json.loads(data) if data else None
                    entry["headers"] = {k.lower(): v for k, v in r.getheaders() if k.lower().startswith("x-akv-")}
                    with proxy.lock:
                        proxy.log.append(entry)
                self.send_response(r.status)
                for k, v in r.getheaders():
                    if k.lower() not in ("content-length", "connection", "transfer-encoding"):
                        self.send_header(k, v)
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.httpd.server_address[1]
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def flags(self, content):
        """The guard command's verdict on a tool result, as akv serve runs it (stdin, exit 1)."""
        text = content if isinstance(content, str) else json.dumps(content)
        if text not in self.verdicts:
            p = subprocess.run(["/bin/sh", "-c", self.guard_cmd], input=text.encode(), capture_output=True, timeout=30)
            if p.returncode not in (0, 1):
                raise RuntimeError(f"guard command exit {p.returncode}")
            self.verdicts[text] = p.returncode == 1
        return self.verdicts[text]

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


def run_mode(a, mode, logdir):
    extra = ["--guard-command", a.guard] if mode == "guard" else []
    srv = Server(a.akv, a.model, *extra, wait_s=180)
    proxy = Proxy(srv.port, a.guard, withhold=(mode == "never-shown"), first=a.first)
    cmd = [a.python, "-m", "agentdojo.scripts.benchmark", "--model", "VLLM_PARSED", "-s", a.suite,
           "--logdir", str(logdir), "--force-rerun"]
    for t in a.user_tasks:
        cmd += ["-ut", t]
    if mode != "clean":
        cmd += ["--attack", "important_instructions"]
        for t in a.injection_tasks:
            cmd += ["-it", t]
    env = dict(os.environ, LOCAL_LLM_PORT=str(proxy.port), OPENAI_API_KEY="unused", NO_PROXY="127.0.0.1,localhost",
               no_proxy="127.0.0.1,localhost", PYTHONUNBUFFERED="1")
    t0 = time.monotonic()
    out = open(logdir.parent / f"{mode}.log", "w")
    p = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env, start_new_session=True)
    try:
        rc = p.wait(timeout=a.mode_limit)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        p.wait()
        rc = "timeout"
    wall = time.monotonic() - t0
    proxy.close()
    srv.stop()
    return {"rc": rc, "wall_s": round(wall, 1), "exchanges": proxy.log}


def results(logdir, mode, a):
    """AgentDojo's per-task results from its log files: {(user_task, injection_task): (utility, security)}."""
    out = {}
    base = logdir / "vllm_parsed" / a.suite
    for ut in a.user_tasks:
        if mode == "clean":
            f = base / ut / "none" / "none.json"
            keys = [(ut, None, f)]
        else:
            keys = [(ut, it, base / ut / "important_instructions" / f"{it}.json") for it in a.injection_tasks]
        for u, i, f in keys:
            if f.exists():
                j = json.loads(f.read_text())
                out[(u, i)] = {"utility": j.get("utility"), "security": j.get("security"),
                               "error": j.get("error"), "duration": j.get("duration")}
            else:
                out[(u, i)] = None
    return out


def task_of(entry):
    """The task a request belongs to (its first user message) and its turn (assistant messages so far)."""
    msgs = entry["sent"]["messages"]
    return json.dumps(prompt_text(msgs)), sum(1 for m in msgs if m.get("role") == "assistant")


def turn_bits(entry):
    r = entry["reply"] or {}
    u = r.get("usage") or {}
    akv = r.get("akv") or {}
    h = entry["headers"]
    return {"status": entry["status"], "choices": json.dumps(r.get("choices"), sort_keys=True),
            "prompt_tokens": u.get("prompt_tokens"), "completion_tokens": u.get("completion_tokens"),
            "cache_sha256": akv.get("cache_sha256"), "logits_sha256": akv.get("logits_sha256"),
            "h_cache": h.get("x-akv-cache-sha256"), "h_logits": h.get("x-akv-logits-sha256")}


def compare(guard, never):
    """Pair the guard run's model turns with the never-shown run's, in order; per task key the
    counts of turns, of turns at or after an eviction, and the first difference."""
    g = [e for e in guard if e["reply"] is not None]
    n = [e for e in never if e["reply"] is not None]
    per = {}
    diffs = []
    evicted_seen = {}
    for k in range(max(len(g), len(n))):
        if k >= len(g) or k >= len(n):
            diffs.append(f"turn {k}: only one run has it ({len(g)} guard turns, {len(n)} never-shown turns)")
            break
        ge, ne = g[k], n[k]
        key = task_of(ge)
        d = per.setdefault(key[0], {"turns": 0, "after_eviction": 0, "equal": 0, "guarded": 0, "withheld": 0})
        if key[1] == 0:  # a task's first turn: a new run of it (the same prompt comes once per injection task)
            evicted_seen[key[0]] = False
        guarded = json.loads(ge["headers"].get("x-akv-guarded-messages", "[]"))
        d["turns"] += 1
        d["guarded"] += len(guarded)
        d["withheld"] += len(ne["withheld"])
        if guarded or evicted_seen.get(key[0]):
            evicted_seen[key[0]] = True
            d["after_eviction"] += 1
        if task_of(ne) != key:
            diffs.append(f"turn {k}: the runs are at different tasks or turns ({key} vs {task_of(ne)})")
            break
        gb, nb = turn_bits(ge), turn_bits(ne)
        bad = [f for f in gb if gb[f] != nb[f]]
        if guarded != ne["withheld"]:
            bad.append(f"guarded {guarded} != withheld {ne['withheld']}")
        if not bad and gb["h_logits"] == gb["logits_sha256"] and gb["h_cache"] == gb["cache_sha256"]:
            d["equal"] += 1
        else:
            diffs.append(f"turn {k} ({key[0][:50]}, turn {key[1]}): {', '.join(bad) or 'headers differ from the body'}")
    return per, diffs, len(g), len(n)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--akv", required=True)
    ap.add_argument("--python", required=True, help="the agentdojo venv's python")
    ap.add_argument("--model", default="smollm2")
    ap.add_argument("--suite", default="slack")
    ap.add_argument("--user-tasks", required=True, help="comma-separated")
    ap.add_argument("--injection-tasks", required=True, help="comma-separated")
    ap.add_argument("--guard", required=True, help="the guard command (/bin/sh -c)")
    ap.add_argument("--work", required=True, help="a folder for AgentDojo's logs and the exchanges")
    ap.add_argument("--out", required=True, help="OUT: writes OUT.json and OUT.md")
    ap.add_argument("--mode-limit", type=float, default=1800)
    a = ap.parse_args()
    a.user_tasks = a.user_tasks.split(",")
    a.injection_tasks = a.injection_tasks.split(",")
    work = Path(a.work)
    start = time.monotonic()

    timer = bound_run("agentdojo")  # each run is bounded by --mode-limit
    runs = {}
    try:
        a.first = first_functions(a)
        for mode in MODES:
            logdir = work / mode / "runs"
            logdir.mkdir(parents=True, exist_ok=True)
            r = run_mode(a, mode, logdir)
            r["results"] = results(logdir, mode, a)
            (work / mode / "exchanges.json").write_text(json.dumps(r["exchanges"], indent=1))
            runs[mode] = r
            print(f"{mode}: AgentDojo exit {r['rc']}, {len(r['exchanges'])} model turns, {r['wall_s']} s", flush=True)
    except SetupError as e:
        print(f"akv: agentdojo: {e}", file=sys.stderr)
        return 2
    finally:
        end_run(timer)

    per, diffs, ng, nn = compare(runs["guard"]["exchanges"], runs["never-shown"]["exchanges"])
    rows = []
    for ut in a.user_tasks:
        prompt = None
        c = runs["clean"]["results"].get((ut, None))
        for it in a.injection_tasks:
            row = {"user_task": ut, "injection_task": it,
                   "utility_clean": c and c["utility"]}
            for mode in ("attack", "guard", "never-shown"):
                res = runs[mode]["results"].get((ut, it))
                row[f"utility_{mode}"] = res and res["utility"]
                row[f"attack_success_{mode}"] = res and res["security"]
                row[f"error_{mode}"] = res and res["error"]
            rows.append(row)
    # Per task the turns of the guard run: from the exchanges, keyed by the task's user prompt.
    after = sum(d["after_eviction"] for d in per.values())
    equal = sum(d["equal"] for d in per.values())
    guarded = sum(d["guarded"] for d in per.values())
    ok_runs = all(runs[m]["rc"] == 0 for m in MODES)
    ok = ok_runs and not diffs and ng == nn and ng > 0 and after > 0
    summary = {
        "model": a.model, "suite": a.suite, "user_tasks": a.user_tasks, "injection_tasks": a.injection_tasks,
        "attack": "important_instructions", "guard": os.path.relpath(a.guard, Path(__file__).resolve().parents[2]), "agentdojo": "0.1.35 (benchmark v1.2, VLLM_PARSED)",
        "machine": f"{platform.machine()}, {os.cpu_count()} cores ({platform.node()})",
        "date": datetime.date.today().isoformat(),
        "runs": {m: {"agentdojo_exit": runs[m]["rc"], "model_turns": len(runs[m]["exchanges"]), "wall_s": runs[m]["wall_s"]}
                 for m in MODES},
        "tasks": rows,
        "guard_vs_never_shown": {"turns_compared": min(ng, nn), "turns_equal": equal, "turns_after_eviction": after,
                                 "guarded_messages": guarded, "differences": diffs,
                                 "per_task": [{"user_prompt": json.loads(k), **v} for k, v in per.items()]},
        "wall_s": round(time.monotonic() - start, 1),
        "pass": ok,
    }
    Path(a.out + ".json").write_text(json.dumps(summary, indent=1) + "\n")
    Path(a.out + ".md").write_text(markdown(summary) + "\n")
    print(markdown(summary), flush=True)
    print(f"agentdojo: {'PASS' if ok else 'FAIL'}: {equal} of {min(ng, nn)} guard turns equal the never-shown run's "
          f"({after} at or after an eviction, {guarded} results guarded); wall {summary['wall_s']} s", flush=True)
    return 0 if ok else 1


def yn(v):
    return "-" if v is None else ("yes" if v else "no")


def markdown(s):
    g = s["guard_vs_never_shown"]
    out = [f"# AgentDojo on akv serve: {s['model']}, suite {s['suite']}", "",
           f"AgentDojo {s['agentdojo']}, attack `{s['attack']}`, guard `{s['guard']}`; {s['machine']}, {s['date']}. "
           f"Written by `scripts/agentdojo` (tests/tools/agentdojo_run.py). Utility: AgentDojo's check of the user task; "
           f"attack: whether the injection task succeeded (AgentDojo's `security`). The first model turn of every task "
           f"names the first function of the task's ground truth as `tool_choice` (the proxy sets it; AgentDojo sends "
           f"`auto`); its arguments and every later turn are the model's.", "",
           "| user task | injection task | utility, no attack | utility / attack, no guard | utility / attack, guard | "
           "utility / attack, never shown |", "|---|---|---|---|---|---|"]
    for r in s["tasks"]:
        out.append(f"| {r['user_task']} | {r['injection_task']} | {yn(r['utility_clean'])} | "
                   f"{yn(r['utility_attack'])} / {yn(r['attack_success_attack'])} | "
                   f"{yn(r['utility_guard'])} / {yn(r['attack_success_guard'])} | "
                   f"{yn(r['utility_never-shown'])} / {yn(r['attack_success_never-shown'])} |")
    out += ["", "| run | AgentDojo exit | model turns | wall s |", "|---|---|---|---|"]
    for m, r in s["runs"].items():
        out.append(f"| {m} | {r['agentdojo_exit']} | {r['model_turns']} | {r['wall_s']} |")
    out += ["", f"**Guard against never shown: {g['turns_equal']} of {g['turns_compared']} model turns bit-equal** "
            f"(choices bytes, tool-call ids included, usage tokens, cache and logits digests in body and headers); "
            f"{g['turns_after_eviction']} turns at or after an eviction, {g['guarded_messages']} tool results guarded "
            f"(summed over turns). Differences: {'; '.join(g['differences']) or 'none'}."
            + (f" Note: {g['note']}." if g.get("note") else ""), "",
            "| task (user prompt) | turns | at or after an eviction | equal |", "|---|---|---|---|"]
    for t in g["per_task"]:
        out.append(f"| {t['user_prompt'][:70]} | {t['turns']} | {t['after_eviction']} | {t['equal']} |")
    out += ["", f"Whole run: {s['wall_s']} s. {'PASS' if s['pass'] else 'FAIL'}."]
    return "\n".join(out)


if __name__ == "__main__":
    sys.exit(main())
