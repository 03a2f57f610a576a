"""Runs real agent frameworks against `akv serve` (scripts/crosscheck-agents; docs/serving.md).

Starts one `akv serve` on loopback (a free port, its own process group, an audit log), runs each
framework's driver (tests/tools/agents/NAME.py) in that framework's pinned venv with a time
limit, reads the PASS/FAIL lines each prints, then replays the audit log with `akv audit`: every
reply any framework received is rebuilt on a cold engine and must reproduce bit for bit (tokens,
finish reason, both digests). Kills the server at the end, on a signal or past the deadline.
Exit 0 only when every selected driver ran, printed at least one PASS and no FAIL, and the audit
reproduced every reply; 1 when a check failed; 2 for a setup error (one line on stderr).

Standard library only: it runs under the system python3, the drivers under their venvs.
"""
import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent

from akv_server import Server, SetupError, bound_run, end_run


def run_driver(name, python, args, limit_s):
    """(PASS lines, FAIL lines, wall s) of one driver; a timeout or a crash is a FAIL."""
    cmd = [python, str(HERE / "agents" / f"{name}_check.py"), *args]
    env = dict(os.environ, PYTHONUNBUFFERED="1", NO_PROXY="127.0.0.1,localhost", no_proxy="127.0.0.1,localhost")
    t0 = time.monotonic()
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL,
                         env=env, start_new_session=True, text=True)
    try:
        out, err = p.communicate(timeout=limit_s)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        out, err = p.communicate()
        return [], [f"{name}: no end within {limit_s} s (killed)"], time.monotonic() - t0, out
    wall = time.monotonic() - t0
    passes = [l[5:] for l in out.splitlines() if l.startswith("PASS ")]
    fails = [l[5:] for l in out.splitlines() if l.startswith("FAIL ")]
    if p.returncode != 0 and not fails:
        tail = (err.strip().splitlines() or ["no output"])[-1]
        fails.append(f"{name}: exit {p.returncode}: {tail}")
    if not passes and not fails:
        fails.append(f"{name}: printed no check")
    return passes, fails, wall, out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--akv", required=True)
    ap.add_argument("--model", default="smollm2")
    ap.add_argument("--driver", action="append", default=[], metavar="NAME=PYTHON",
                    help="a driver to run and its venv's python, in order")
    ap.add_argument("--deadline", type=float, default=1800, help="seconds for the whole run")
    ap.add_argument("--driver-limit", type=float, default=600, help="seconds for one driver")
    a = ap.parse_args()
    drivers = [d.split("=", 1) for d in a.driver]
    if not drivers:
        print("akv: crosscheck-agents: no driver selected", file=sys.stderr)
        return 2

    timer = bound_run("crosscheck-agents", a.deadline)
    start = time.monotonic()
    passed = failed = 0
    try:
        with tempfile.TemporaryDirectory() as tmp:
            log = Path(tmp) / "audit.jsonl"
            srv = Server(a.akv, a.model, "--audit-log", str(log), wait_s=180)
            print(f"akv serve --model {a.model} on {srv.url}, audit log {log}", flush=True)
            for name, python in drivers:
                passes, fails, wall, out = run_driver(
                    name, python, ["--url", srv.url + "/v1", "--model", a.model, "--audit-log", str(log)], a.driver_limit)
                for l in passes:
                    print(f"PASS {l}", flush=True)
                for l in fails:
                    print(f"FAIL {l}", flush=True)
                for l in out.splitlines():
                    if l.startswith("INFO "):
                        print(f"  {l[5:]}", flush=True)
                print(f"  {name}: {len(passes)} passed, {len(fails)} failed [{wall:.1f} s]", flush=True)
                passed += len(passes)
                failed += len(fails)
            rc = srv.stop()
            if rc != 0:
                print(f"FAIL shutdown: akv serve exited {rc} on SIGTERM", flush=True)
                failed += 1
            # Every reply the frameworks got, rebuilt on a cold engine (spec/serving.md SV9, SV1).
            t0 = time.monotonic()
            au = subprocess.run([a.akv, "audit", str(log), "--json"], capture_output=True, text=True, timeout=a.deadline)
            try:
                rep = json.loads(au.stdout)
            except json.JSONDecodeError:
                rep = None
            lines = sum(1 for _ in open(log)) if log.exists() else 0
            if au.returncode == 0 and rep is not None:
                print(f"PASS audit: akv audit replayed the {lines} replies the frameworks received on a cold engine: "
                      f"every one reproduced (tokens, finish reason, cache and logits digests) [{time.monotonic() - t0:.1f} s]",
                      flush=True)
                passed += 1
            else:
                why = (au.stdout.strip() or au.stderr.strip() or "no output")[-600:]
                print(f"FAIL audit: akv audit exit {au.returncode} on {lines} lines: {why}", flush=True)
                failed += 1
    except SetupError as e:
        print(f"akv: crosscheck-agents: {e}", file=sys.stderr)
        return 2
    finally:
        end_run(timer)
    print(f"crosscheck-agents: {passed} passed, {failed} failed", flush=True)
    print(f"model {a.model}, wall {time.monotonic() - start:.1f} s", flush=True)
    return 0 if failed == 0 and passed > 0 else 1


if __name__ == "__main__":
    sys.exit(main())
