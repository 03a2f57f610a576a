#!/usr/bin/env python3
"""scripts/serve-replicas' driver: one conversation through nginx to two akv serve replicas, one
replica killed (kill -9) mid-way, every turn compared with the same conversation on a fresh
single server (docs/serving.md, "Scale out: replicas behind nginx"; spec SV1).

  replicas.py --nginx PORT --replica PORT:PID --replica PORT:PID --reference PORT
              --conversation FILE [--kill-after N] [--max-tokens N] [--session NAME]

The conversation is sent turn by turn as a host sends it (after each user or tool message, the
whole recorded history so far), under one x-akv-session. After the kill, the next turn goes
without the poisoned tool results (evicted on the surviving replica). Python's standard
library only. One PASS/FAIL line per check; exit 0 all passed, 1 one failed, 2 setup error.
"""
import argparse
import http.client
import json
import os
import signal
import socket
import sys
import time

TIMEOUT_S = 300  # one request; a hung server fails the run instead of stalling it
failed = []


class Refused(Exception):
    """A request that got no 200: a failed check, not a setup error."""


def die(msg):
    print(f"akv: serve-replicas: {msg}", file=sys.stderr)
    sys.exit(2)


def check(ok, what):
    print(f"{'PASS' if ok else 'FAIL'} {what}", flush=True)
    if not ok:
        failed.append(what)


def post(port, messages, session, max_tokens):
    body = json.dumps({"messages": messages, "max_tokens": max_tokens, "temperature": 0,
                       "logprobs": True, "top_logprobs": 2})
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=TIMEOUT_S)
    try:
        c.request("POST", "/v1/chat/completions", body,
                  {"Content-Type": "application/json", "x-akv-session": session})
        r = c.getresponse()
        raw = r.read()
        headers = {k.lower(): v for k, v in r.getheaders()}
    except (OSError, http.client.HTTPException) as e:
        raise Refused(f"POST to 127.0.0.1:{port}: {e}")
    finally:
        c.close()
    if r.status != 200:
        raise Refused(f"127.0.0.1:{port} answered HTTP {r.status}: {raw[:300]!r}")
    # Floats kept as their text: equal replies are equal in the bytes of their numbers too.
    return json.loads(raw, parse_float=str), headers


def bits(reply):
    """What SV1 makes equal across servers: choices (text, logprobs, finish_reason) and the digests."""
    return json.dumps([reply["choices"], reply["akv"]["cache_sha256"], reply["akv"]["logits_sha256"]])


def counts(reply):
    a = reply["akv"]
    return "/".join(str(a[k]) for k in ("reused_tokens", "recomputed_tokens", "evicted_tokens", "prefill_tokens"))


def refused(port):
    try:
        socket.create_connection(("127.0.0.1", port), timeout=2).close()
        return False
    except ConnectionRefusedError:
        return True
    except OSError:
        return False


def plan(msgs, poisoned, kill_after):
    """(k, request messages, dropped indexes) per turn; the poisoned results dropped from the
    turn after the failover on."""
    ks = [k for k in range(1, len(msgs) + 1) if msgs[k - 1]["role"] in ("user", "tool")]
    if not 1 <= kill_after < len(ks) - 1:
        die(f"--kill-after {kill_after}: needs turns before the kill and two after ({len(ks)} turns)")
    fail_k, drop_k = ks[kill_after], ks[kill_after + 1]
    if not poisoned or poisoned[0] >= fail_k:
        die("the conversation needs a poisoned tool result before the failover turn")
    out = []
    for k in ks:
        drop = sorted(i for i in poisoned if i < k) if k >= drop_k else []
        out.append((k, [m for i, m in enumerate(msgs[:k]) if i not in drop], drop))
    return out


def main():
    try:
        return run()
    except Refused as e:
        check(False, f"a request failed: {e}")
        return 1


def run():
    ap = argparse.ArgumentParser()
    ap.add_argument("--nginx", type=int, required=True)
    ap.add_argument("--replica", action="append", required=True, help="PORT:PID")
    ap.add_argument("--reference", type=int, required=True)
    ap.add_argument("--conversation", required=True)
    ap.add_argument("--kill-after", type=int)
    ap.add_argument("--max-tokens", type=int, default=8)
    ap.add_argument("--session", default="agent-replicas")
    a = ap.parse_args()
    replicas = {f"127.0.0.1:{p}": int(pid) for p, pid in (r.split(":") for r in a.replica)}
    if len(replicas) != 2:
        die("two --replica PORT:PID expected")
    conv = json.load(open(a.conversation))
    msgs, poisoned = conv["messages"], sorted(conv.get("poisoned", []))
    n_turns = sum(m["role"] in ("user", "tool") for m in msgs)
    kill_after = a.kill_after if a.kill_after is not None else n_turns // 2
    turns = plan(msgs, poisoned, kill_after)
    print(f"{os.path.basename(a.conversation)}: {len(turns)} turns, kill -9 after turn {kill_after}, "
          f"poisoned message(s) {poisoned} dropped from turn {kill_after + 2}", flush=True)

    # The undisturbed run: a fresh single server, no nginx, the same session turn by turn.
    t0 = time.perf_counter()
    ref = [post(a.reference, part, a.session, a.max_tokens)[0] for _, part, _ in turns]
    t_ref = time.perf_counter() - t0

    t0 = time.perf_counter()
    got, via, tried, sessions, killed = [], [], [], [], None
    for i, (k, part, drop) in enumerate(turns):
        if i == kill_after:
            killed = via[0]
            os.kill(replicas[killed], signal.SIGKILL)
            for _ in range(50):  # its sockets close as it dies
                if refused(int(killed.split(":")[1])):
                    break
                time.sleep(0.1)
            check(refused(int(killed.split(":")[1])),
                  f"kill -9: replica {killed} (pid {replicas[killed]}) is gone (connection refused)")
        reply, h = post(a.nginx, part, a.session, a.max_tokens)
        up = [u.strip() for u in h.get("x-akv-upstream", "").split(",")]
        got.append(reply), via.append(up[-1]), tried.append(up), sessions.append(h.get("x-akv-session"))
    t_rep = time.perf_counter() - t0

    before, after = via[:kill_after], via[kill_after:]
    check(len(set(before)) == 1 and before[0] in replicas,
          f"affinity: turns 1-{kill_after} all answered by one replica ({', '.join(before)})")
    other = (set(replicas) - {killed}).pop()
    check(tried[kill_after] == [killed, other],
          f"failover: turn {kill_after + 1} answered by {other} after nginx tried {killed} "
          f"(upstreams: {', '.join(tried[kill_after])})")
    check(all(v == other for v in after),
          f"affinity after the failover: turns {kill_after + 1}-{len(turns)} all answered by {other}")
    check(all(s == a.session for s in sessions), f"every reply carries x-akv-session: {a.session}")
    for i, ((k, _, drop), g, r) in enumerate(zip(turns, got, ref)):
        gb, rb = bits(g), bits(r)
        what = f"turn {i + 1} ({k} messages" + (f", without {drop}" if drop else "") + f", {via[i]}): "
        check(gb == rb, what + ("byte-equal" if gb == rb else "DIFFERS") +
              f" to the undisturbed run ({len(gb)} bytes: choices, cache {g['akv']['cache_sha256'][:8]}, "
              f"logits {g['akv']['logits_sha256'][:8]}); reused/recomputed/evicted/prefill {counts(g)} here, "
              f"{counts(r)} undisturbed")
    f = got[kill_after]["akv"]
    check(f["reused_tokens"] == 0 and f["prefill_tokens"] > 0,
          f"the survivor answered turn {kill_after + 1} from a cold cache: reused 0, prefill {f['prefill_tokens']} "
          f"(undisturbed: reused {ref[kill_after]['akv']['reused_tokens']})")
    e = got[kill_after + 1]["akv"]
    check(e["evicted_tokens"] > 0 and e["recomputed_tokens"] > 0,
          f"eviction after the failover: turn {kill_after + 2} dropped message(s) {turns[kill_after + 1][2]} on "
          f"{other}: evicted {e['evicted_tokens']} tokens, recomputed {e['recomputed_tokens']}")
    print(f"wall: undisturbed run {t_ref:.2f} s, replicas run (kill and failover included) {t_rep:.2f} s", flush=True)
    print(f"FAIL: {len(failed)} check(s) failed" if failed else
          "PASS: failover to the other replica, every reply byte-equal to the undisturbed run", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
