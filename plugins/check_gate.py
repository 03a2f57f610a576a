#!/usr/bin/env python3
"""Runs `akv gate --kernels LIB --json ARGS...` and checks its outcome (the CTest driver of the
plugins' gate tests, plugins/CMakeLists.txt akv_gate_test).

--expect 0: the gate passes; --expect 1: it rejects, every --property P is among the failed
checks and one failure's message contains --message; --expect verdict: either (a third-party finding is a result, not a test failure). In
every case the exit status must agree with the JSON verdict, and the checks must have run
cases (a gate that checked nothing does not count). Exit 0 when all of this holds, 1 when not.
"""
import argparse
import json
import re
import subprocess
import sys


def property_matches(name, wanted):
    """P matches the property P itself and its refinements (GT2 matches GT2.M, GT2_threads)."""
    return name == wanted or (name.startswith(wanted) and not re.match(r"[0-9A-Za-z]", name[len(wanted)]))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--akv", required=True)
    ap.add_argument("--kernels", required=True)
    ap.add_argument("--expect", required=True, choices=["0", "1", "verdict"])
    ap.add_argument("--property", action="append", default=[])
    ap.add_argument("--message", help="a failed check's message must contain it")
    ap.add_argument("args", nargs="*")
    a = ap.parse_args()
    cmd = [a.akv, "gate", "--kernels", a.kernels, "--json", *a.args]
    print("$", " ".join(cmd), flush=True)
    p = subprocess.run(cmd, capture_output=True, text=True)
    sys.stderr.write(p.stderr)
    problems = []
    if p.returncode not in (0, 1):
        print(f"check_gate: akv gate exited {p.returncode} (2: bad input or plugin; no verdict)")
        return 1
    try:
        report = json.loads(p.stdout)
    except json.JSONDecodeError as e:
        print(f"check_gate: stdout is not JSON ({e}): {p.stdout[:400]!r}")
        return 1
    verdict = report.get("verdict")
    checks = report.get("checks", [])
    failed = [c for c in checks if c.get("result") == "fail"]
    cases = sum(int(c.get("cases") or 0) for c in checks)
    print(f"verdict {verdict}, exit {p.returncode}, {len(checks)} checks, {cases} cases, "
          f"failed: {', '.join(sorted({str(c.get('property')) + ':' + str(c.get('op')) for c in failed})) or 'none'}")
    if verdict != ("pass" if p.returncode == 0 else "fail"):
        problems.append(f"exit {p.returncode} disagrees with verdict {verdict!r}")
    if cases == 0:
        problems.append("the checks ran no cases")
    if a.expect != "verdict" and p.returncode != int(a.expect):
        problems.append(f"expected exit {a.expect}, got {p.returncode}")
    for want in a.property:
        if not any(property_matches(str(c.get("property", "")), want) for c in failed):
            problems.append(f"property {want} is not among the failures")
    if a.message and not any(a.message in str(c.get("message", "")) for c in failed):
        problems.append(f"no failure's message contains {a.message!r}")
    for msg in problems:
        print("check_gate: " + msg)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
