"""Shared by the framework drivers of tests/tools/agents_check.py (scripts/crosscheck-agents).

Each driver takes --url (akv serve's /v1 base), --model and --audit-log (the server's log),
runs its checks through `check`, which prints `PASS name: what it compared` or `FAIL name: why`
(a driver error too is that check's FAIL, never a pass), and exits 1 when one failed.
"""
import argparse
import json
import re
import sys
import time
import traceback

HEX64 = re.compile(r"^[0-9a-f]{64}$")
WEATHER = {"london": "12 C, light rain", "paris": "18 C, clear"}
QUESTION = "What is the weather in London?"
SYSTEM = "You are a helpful assistant. Use the tools to answer."
FAILED = []


class CheckFailed(Exception):
    pass


def need(cond, what):
    if not cond:
        raise CheckFailed(what)


def weather(city):
    """The real tool behind every framework's tool: a lookup, so a result is known bytes."""
    return WEATHER.get(str(city).strip().lower(), "20 C, sunny")


def args():
    ap = argparse.ArgumentParser()
    ap.add_argument("--url", required=True)
    ap.add_argument("--model", required=True)
    ap.add_argument("--audit-log", required=True)
    return ap.parse_args()


def check(name, fn):
    t0 = time.monotonic()
    try:
        what = fn()
        print(f"PASS {name}: {what} [{time.monotonic() - t0:.1f} s]", flush=True)
    except Exception as e:  # noqa: BLE001  a driver bug shows as this check's FAIL
        tb = traceback.format_exc().strip().splitlines()
        where = next((l.strip() for l in reversed(tb) if l.strip().startswith("File ") and "/tests/tools/" in l), "")
        print(f"FAIL {name}: {type(e).__name__}: {str(e)[:800]} ({where}) [{time.monotonic() - t0:.1f} s]", flush=True)
        FAILED.append(name)


def audit_lines(path):
    """The server's audit lines (spec/serving.md SV9): one per reply, with the request's bytes."""
    out = []
    with open(path) as f:
        for l in f:
            l = l.strip()
            if l:
                out.append(json.loads(l))
    return [l for l in out if l.get("kind") == "chat"]


def logged_reply(path, logits_sha256):
    """The audit line of the reply with this logits digest (the one the headers named)."""
    need(HEX64.match(logits_sha256 or ""), f"not a SHA-256: {logits_sha256!r}")
    hits = [l for l in audit_lines(path) if l["reply"]["stats"]["logits_sha256"] == logits_sha256]
    need(hits, f"no reply with logits digest {logits_sha256[:16]}... in the audit log")
    return hits[-1]


def finish():
    sys.exit(1 if FAILED else 0)
