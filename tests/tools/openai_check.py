"""Drives `akv serve` with PyPI's openai client (scripts/crosscheck-openai; docs/serving.md).

Starts its own servers (`akv serve --port 0`, loopback only, each in its own process group),
runs the checks, prints one PASS/FAIL line per check with what it compared, and kills every
server at the end, on a failure, on a signal or past the deadline. Exit 0 only when every check
ran and passed, 1 when one failed, 2 for a setup error (one line on stderr).

The reference for "equal" is a second server process: each request it gets names a session it
never saw (its reply must say reused_tokens 0), so its replies are cold builds of the request.
Plain replies are compared on their raw JSON, numbers as the bytes the server wrote.
"""
import argparse
import concurrent.futures
import itertools
import json
import random
import re
import secrets
import sys
import tempfile
import threading
import time
from pathlib import Path

import openai

AKV_KEYS = {"session", "reused_tokens", "recomputed_tokens", "evicted_tokens", "prefill_tokens",
            "dropped_messages", "guarded_messages", "spans", "cache_sha256", "logits_sha256", "seed",
            "tool_call_errors"}
ERROR_KEYS = {"message", "type", "param", "code"}
SYSTEM = {"role": "system", "content": "You are a careful banking assistant."}


from akv_server import Server, SetupError, bound_run, end_run


class CheckFailed(Exception):
    pass


def need(cond, what):
    if not cond:
        raise CheckFailed(what)


# ---- requests

SESSIONS = itertools.count()


def fresh(prefix):
    return f"{prefix}-{next(SESSIONS)}"


class Api:
    """The openai client on one server; no retries, so that a 429 or an error shows as it is
    (retries=2 for the load test only: the client's default, for a kept-alive connection the
    server closed as the client reused it; a retried reply is still compared byte for byte)."""

    def __init__(self, server, model, timeout_s, key="unused", retries=0):
        self.model = model
        self.client = openai.OpenAI(base_url=server.url + "/v1", api_key=key, timeout=timeout_s, max_retries=retries)

    def close(self):  # an idle keep-alive connection would hold a draining server 5 s
        self.client.close()

    def ask(self, messages, session=None, **kw):
        """(parsed ChatCompletion, raw body text, x-akv-session of the reply)."""
        headers = {"x-akv-session": session} if session else None
        raw = self.client.chat.completions.with_raw_response.create(
            model=self.model, messages=messages, extra_headers=headers, **kw)
        return raw.parse(), raw.http_response.text, raw.headers.get("x-akv-session")

    def stream(self, messages, session=None, **kw):
        headers = {"x-akv-session": session} if session else None
        return list(self.client.chat.completions.create(model=self.model, messages=messages, stream=True,
                                                        extra_headers=headers, **kw))


def bits(text):
    """What must be byte-equal between two replies (SV1): choices, numbers as written, and digests."""
    j = json.loads(text, parse_float=str)
    return json.dumps([j["choices"], j["akv"]["cache_sha256"], j["akv"]["logits_sha256"]], sort_keys=True)


def what_differs(a, b):
    """Names the parts of two bits() or stream_bits() that differ."""
    a, b = json.loads(a), json.loads(b)
    names = ["choices", "cache_sha256", "logits_sha256"] if len(a) == 3 else ["content", "finish_reason", "logprobs",
                                                                               "cache_sha256", "logits_sha256"]
    return "differ: " + " ".join(n for n, x, y in zip(names, a, b) if x != y)


def stream_view(chunks):
    """content, finish_reason, logprobs, usage and akv of a stream, as the client parsed them."""
    content, finish, lps, usage, akv = "", None, [], None, None
    for c in chunks:
        need(c.object == "chat.completion.chunk" and c.id == chunks[0].id, f"chunk {c.object} {c.id}")
        usage = c.usage.model_dump() if c.usage else usage
        akv = (c.model_extra or {}).get("akv", akv)
        for ch in c.choices:
            content += ch.delta.content or ""
            finish = ch.finish_reason or finish
            lps += [lp.model_dump() for lp in (ch.logprobs.content if ch.logprobs and ch.logprobs.content else [])]
    return content, finish, lps, usage, akv


def stream_bits(chunks):
    content, finish, lps, _, akv = stream_view(chunks)
    return json.dumps([content, finish, lps, akv["cache_sha256"], akv["logits_sha256"]], sort_keys=True)


class Cold:
    """The reference: the cold server, each request on a session it never saw."""

    def __init__(self, api):
        self.api = api

    def ask(self, messages, **kw):
        r, text, _ = self.api.ask(messages, fresh("cold"), **kw)
        need(r.model_extra["akv"]["reused_tokens"] == 0, "the cold server reused tokens")
        return r, text

    def stream(self, messages, **kw):
        chunks = self.api.stream(messages, fresh("cold"), **kw)
        need(stream_view(chunks)[4]["reused_tokens"] == 0, "the cold server reused tokens")
        return chunks


# ---- conversations (the bundled format `akv witness` reads: messages, poisoned)

def load_conversations(dirs):
    seen = {}
    for d in dirs:
        for f in sorted(Path(d).glob("*.json")):
            seen.setdefault(f.name, json.loads(f.read_text()))
    if not seen:
        raise SetupError(f"no conversations (*.json) in {' '.join(dirs)}")
    return seen


def load_requests(convs):
    """Distinct prefixes, each ending at a user or tool message (where a host calls the model):
    through the first tool result, and through the second with the poisoned ones dropped, so a
    server that reuses the first one's session has to evict. Contents are cut to 400 characters:
    the 200 requests then take seconds on tiny, and the ad* files still share their system prompt."""
    cut = lambda m: dict(m, content=m["content"][:400]) if isinstance(m.get("content"), str) else m
    out = []
    for _, c in sorted(convs.items()):
        msgs, poisoned = c["messages"], set(c.get("poisoned", []))
        tools = [i for i, m in enumerate(msgs) if m["role"] == "tool"]
        ends = tools[:2] or [max(i for i, m in enumerate(msgs) if m["role"] != "assistant")]
        for n, end in enumerate(ends):
            out.append([cut(m) for i, m in enumerate(msgs[:end + 1]) if n == 0 or i not in poisoned])
    return out


# ---- the checks: each returns what it compared, or raises CheckFailed

def check_plain(ctx):
    req = [SYSTEM, {"role": "user", "content": "What is my balance?"}]
    s = fresh("plain")
    r, text, header = ctx.warm.ask(req, s, max_tokens=8, logprobs=True, top_logprobs=2)
    ch, u, akv = r.choices, r.usage, r.model_extra.get("akv")
    need(len(ch) == 1 and ch[0].index == 0 and ch[0].message.role == "assistant", f"choices {ch}")
    need(isinstance(ch[0].message.content, str), "content is not a string")
    fin = ch[0].finish_reason
    need(fin == "stop" or (fin == "length" and u.completion_tokens == 8), f"finish_reason {fin}, {u.completion_tokens} tokens")
    lps = ch[0].logprobs.content
    need(len(lps) == u.completion_tokens and u.total_tokens == u.prompt_tokens + u.completion_tokens, f"usage {u}")
    need(all(lp.logprob <= 0 and len(lp.top_logprobs) == 2 and lp.top_logprobs[0].token == lp.token for lp in lps),
         "a greedy token is not its own top logprob")
    need(isinstance(akv, dict) and set(akv) == AKV_KEYS, f"akv object {akv}")
    need(akv["session"] == header == s, f"session {akv['session']} / header {header} / asked {s}")
    need(all(re.fullmatch("[0-9a-f]{64}", akv[k]) for k in ("cache_sha256", "logits_sha256")), "digests")
    need(u.prompt_tokens_details.cached_tokens == akv["reused_tokens"] == 0 and akv["prefill_tokens"] == u.prompt_tokens,
         f"a fresh session: cached {u.prompt_tokens_details.cached_tokens}, {akv}")
    again, text2, _ = ctx.warm.ask(req, s, max_tokens=8, logprobs=True, top_logprobs=2)
    cached = again.usage.prompt_tokens_details.cached_tokens
    need(cached > 0 and cached == again.model_extra["akv"]["reused_tokens"], f"the second ask reused {cached}")
    need(bits(text2) == bits(text), "the reply on the reused session differs")
    ctx.plain = (req, r)
    return (f"1 choice, finish {fin}, usage {u.prompt_tokens}+{u.completion_tokens} tokens, cached_tokens 0 then "
            f"{cached} = akv.reused_tokens, akv object's {len(AKV_KEYS)} keys, same reply reused")


def check_stream(ctx):
    req, plain = ctx.plain
    chunks = ctx.warm.stream(req, fresh("stream"), max_tokens=8, logprobs=True, top_logprobs=2,
                             stream_options={"include_usage": True})
    content, finish, lps, usage, akv = stream_view(chunks)
    p = plain.choices[0]
    need(chunks[0].choices[0].delta.role == "assistant", "no role chunk first")
    need(content == p.message.content, f"content {content!r} != {p.message.content!r}")
    need(finish == p.finish_reason, f"finish_reason {finish} != {p.finish_reason}")
    need(lps == [lp.model_dump() for lp in p.logprobs.content], "logprobs differ")
    need(usage == plain.usage.model_dump(), f"usage {usage} != {plain.usage.model_dump()}")
    pa = plain.model_extra["akv"]
    need(akv and (akv["cache_sha256"], akv["logits_sha256"]) == (pa["cache_sha256"], pa["logits_sha256"]), "digests differ")
    return f"{len(chunks)} SSE chunks: content, finish_reason, {len(lps)} logprobs, usage, both digests = the plain reply"


TOOL_TURN = [
    SYSTEM,
    {"role": "user", "content": "What is my balance, and my IBAN?"},
    {"role": "assistant", "content": None, "tool_calls": [
        {"id": "call_1", "type": "function", "function": {"name": "get_balance", "arguments": "{\"account\": \"main\"}"}},
        {"id": "call_2", "type": "custom", "custom": {"name": "lookup_iban", "input": "main"}}]},
    {"role": "tool", "tool_call_id": "call_1", "content": "1,204.50 EUR"},
    {"role": "tool", "tool_call_id": "call_2", "name": "lookup_iban",
     "content": [{"type": "text", "text": "DE89 3704 0044 0532 0130 00"}]},
]


def check_tools(ctx):
    s = fresh("tools")
    r1, t1, _ = ctx.warm.ask(TOOL_TURN, s, max_tokens=8)
    need(bits(t1) == bits(ctx.cold.ask(TOOL_TURN, max_tokens=8)[1]), "the answer to the tool results != cold")
    # The host appends the client's own message object and asks again on the same session.
    follow = TOOL_TURN + [r1.choices[0].message, {"role": "user", "content": "Thanks. Anything due this week?"}]
    r2, t2, _ = ctx.warm.ask(follow, s, max_tokens=8)
    a = r2.model_extra["akv"]
    need(a["reused_tokens"] > 0 and a["evicted_tokens"] == 0 and a["prefill_tokens"] == r2.usage.prompt_tokens - a["reused_tokens"],
         f"the follow-up did not extend the session: {a}")
    need(bits(t2) == bits(ctx.cold.ask(follow, max_tokens=8)[1]), "the follow-up != cold")
    return (f"assistant tool_calls (function + custom), 2 tool messages, answer = cold; follow-up on the session reused "
            f"{a['reused_tokens']} tokens, ran {a['prefill_tokens']}, = cold")


def check_evict(ctx):
    conv = ctx.convs["ad01_banking_ut0_gpt4omini.json"]
    msgs, p = conv["messages"], conv["poisoned"][0]
    need(msgs[0]["role"] == "system" and msgs[p]["role"] == "tool" and len(msgs) >= p + 5, "ad01's shape changed")
    first, poisoned = msgs[:p + 3], msgs[:p + 5]  # the poisoned result, then later messages behind it
    clean = [m for i, m in enumerate(poisoned) if i != p]
    kw = dict(max_tokens=6, logprobs=True, top_logprobs=2)
    cold, cold_text = ctx.cold.ask(clean, **kw)
    need(bits(ctx.cold.ask(poisoned, **kw)[1]) != bits(cold_text), "the control: keeping the result changed nothing")
    # 1. the host drops the result from its next request
    s = fresh("evict")
    ctx.warm.ask(first, s, **kw)
    r, text, _ = ctx.warm.ask(clean, s, **kw)
    a = r.model_extra["akv"]
    need(a["evicted_tokens"] > 0 and a["recomputed_tokens"] > 0 and a["reused_tokens"] > 0, f"no eviction: {a}")
    need(bits(text) == bits(cold_text), "the reply after the drop != cold")
    # 2. the host flags it after the fact (SV3's endpoint; ad01 starts with its system message: no preamble span)
    s = fresh("flag")
    ctx.warm.ask(poisoned, s, **kw)
    ev = ctx.warm.client.post(f"/sessions/{s}/evict", body={"messages": [p]}, cast_to=object)
    need(ev["evicted_tokens"] > 0 and ev["recomputed_tokens"] > 0, f"evict endpoint: {ev}")
    r2, text2, _ = ctx.warm.ask(poisoned, s, **kw)
    need(r2.model_extra["akv"]["dropped_messages"] == [p], f"dropped {r2.model_extra['akv']['dropped_messages']}")
    need(bits(text2) == bits(cold_text), "the reply after POST /evict != cold")
    for path, body, cls, says in ((f"/sessions/nobody-{s}/evict", [0], openai.NotFoundError, "nobody"),
                                  (f"/sessions/{s}/evict", [999], openai.BadRequestError, "999")):
        try:
            ctx.warm.client.post(path, body={"messages": body}, cast_to=object)
            raise CheckFailed(f"{path} {body} succeeded")
        except cls as e:
            need(says in e.body["message"], f"{path}: {e.body}")
    return (f"ad01 message {p} dropped: evicted {a['evicted_tokens']}, recomputed {a['recomputed_tokens']}, reused "
            f"{a['reused_tokens']}; content, logprobs, cache_sha256, logits_sha256 = cold; POST /evict: evicted "
            f"{ev['evicted_tokens']}, dropped_messages [{p}], = cold; 404 and 400 for a bad evict; control differs")


def check_flag_scope(ctx):
    """A flag set on one session (POST /evict) must not drop messages from a request that named
    no session: SV1 makes its reply the cold one, whichever idle session the server reuses."""
    conv = ctx.convs["ad01_banking_ut0_gpt4omini.json"]
    msgs, p = conv["messages"], conv["poisoned"][0]
    kw = dict(max_tokens=6, logprobs=True, top_logprobs=2)
    srv = Server(ctx.akv, ctx.model)
    api = Api(srv, ctx.model, ctx.timeout)
    try:
        s = fresh("host-a")
        api.ask(msgs[:p + 5], s, **kw)
        api.client.post(f"/sessions/{s}/evict", body={"messages": [p]}, cast_to=object)
        r, text, header = api.ask(msgs[:p + 1], **kw)  # another host, no x-akv-session, the result kept
        a = r.model_extra["akv"]
        need(bits(text) == bits(ctx.cold.ask(msgs[:p + 1], **kw)[1]),
             f"a request naming no session got session {header}'s flag: dropped_messages {a['dropped_messages']}, "
             f"prompt_tokens {r.usage.prompt_tokens}; its reply != cold (server bug: flags leak through prefix reuse)")
    finally:
        api.close()
        srv.stop()
    return f"after POST /evict on session A, a request naming no session keeps message {p}: reply = cold (reused {a['reused_tokens']})"


def expect_error(cls, status, code, says, call):
    """Runs call, which must raise the client's exception cls; returns its error object."""
    try:
        call()
    except openai.APIStatusError as e:
        need(type(e) is cls and e.status_code == status, f"{type(e).__name__} {e.status_code}, expected {cls.__name__} {status}")
        need(isinstance(e.body, dict) and set(e.body) == ERROR_KEYS, f"error object {e.body}")
        need(code is None or e.code == code, f"code {e.code}, expected {code}")
        need(says in e.body["message"], f"the message does not say '{says}': {e.body['message']}")
        return e
    raise CheckFailed("no error")


def error_line(e):
    return f"{type(e).__name__} {e.status_code}, error {{message, type {e.type}, param {e.param}, code {e.code}}}"


def check_unknown_field(ctx):
    ok = [{"role": "user", "content": "hi"}]
    e = expect_error(openai.BadRequestError, 400, None, "bogus_field",
                     lambda: ctx.warm.ask(ok, max_tokens=2, extra_body={"bogus_field": 1}))
    return error_line(e) + ", names bogus_field"


def check_malformed(ctx):
    e = expect_error(openai.BadRequestError, 400, None, "malformed JSON", lambda: ctx.warm.client.post(
        "/chat/completions", content=b'{"messages": [', cast_to=object, options={"headers": {"Content-Type": "application/json"}}))
    return error_line(e)


def check_unknown_model(ctx):
    e = expect_error(openai.NotFoundError, 404, "model_not_found", "gpt-4o", lambda: ctx.warm.client.chat.completions.create(
        model="gpt-4o", messages=[{"role": "user", "content": "hi"}], max_tokens=2))
    return error_line(e)


def check_overflow(ctx):
    big = [{"role": "user", "content": "hello " * 40000}]
    e = expect_error(openai.BadRequestError, 400, "context_length_exceeded", "exceed the context",
                     lambda: ctx.warm.ask(big, max_tokens=2))
    m = re.search(r"request's (\d+) tokens.*\((\d+) tokens\)", e.body["message"])
    need(m and int(m.group(1)) > int(m.group(2)), f"no counts: {e.body['message']}")
    return error_line(e) + f", {m.group(1)} tokens > context {m.group(2)}"


def check_auth(ctx):
    key = secrets.token_hex(16)
    kf = Path(ctx.tmp) / "key"
    kf.write_text(key + "\n")
    srv = Server(ctx.akv, ctx.model, "--api-key-file", str(kf))
    apis = []
    try:
        apis.append(Api(srv, ctx.model, ctx.timeout, key=key[:-1] + ("0" if key[-1] != "0" else "1")))
        # Twice: the client keeps the connection, so the second request shows what the first left on it.
        for n in ("1st", "2nd"):
            try:
                e = expect_error(openai.AuthenticationError, 401, "invalid_api_key", "API key",
                                 lambda: apis[0].ask([{"role": "user", "content": "hi"}], max_tokens=2))
            except CheckFailed as f:
                raise CheckFailed(f"the {n} request with a wrong key on one connection: {f}")
            need(key not in e.response.text and key[:8] not in e.response.text, "the reply shows the key")
        apis.append(Api(srv, ctx.model, ctx.timeout, key=key))
        need(apis[1].ask([{"role": "user", "content": "hi"}], max_tokens=2)[0].choices, "the right key got no reply")
    finally:
        for api in apis:
            api.close()
        srv.stop()
    return error_line(e) + ", twice on one connection, nothing of the key in the reply; the right key gets 200"


def check_429(ctx):
    srv = Server(ctx.akv, ctx.model, "--parallel", "1", "--queue", "0")
    api = Api(srv, ctx.model, ctx.timeout)
    try:
        # A stream holds the only slot once its first chunk came; then every other request is refused.
        # On tiny a long prompt keeps the reply going (its decode runs over 6000 cached tokens, and
        # "count" alone ends within 500 tokens), so that on a loaded machine the slot is still
        # held when the others arrive.
        prompt = [{"role": "user", "content": "count " * 1000 if ctx.synthetic else "count"}]
        holder = api.client.chat.completions.create(model=ctx.model, messages=prompt, max_tokens=500 if ctx.synthetic else 2000,
                                                    stream=True)
        next(iter(holder))
        ask = lambda _: expect_error(openai.RateLimitError, 429, "queue_full", "--queue 0",
                                     lambda: api.ask([{"role": "user", "content": "me too"}], max_tokens=2))
        with concurrent.futures.ThreadPoolExecutor(4) as pool:
            errs = list(pool.map(ask, range(4)))
        holder.close()
        need(all(e.response.headers.get("retry-after") == "1" for e in errs), "no Retry-After: 1")
        # The slot comes back once the stream is closed (the server stops its generation, SV6).
        for _ in range(100):
            try:
                api.ask([{"role": "user", "content": "me too"}], max_tokens=2)
                break
            except openai.RateLimitError:
                time.sleep(0.1)
        else:
            raise CheckFailed("the slot never came back after the stream closed")
    finally:
        api.close()
        srv.stop()
    return f"--parallel 1 --queue 0, a stream holding the slot: 4 concurrent requests each " + error_line(errs[0]) + \
        ", Retry-After: 1; served again once the stream closed"


def check_seeded(ctx):
    req = [SYSTEM, {"role": "user", "content": "Tell me a story about a bank."}]
    kw = dict(max_tokens=12, temperature=0.9, top_p=0.95, seed=1234, logprobs=True, top_logprobs=3)
    a, ta, _ = ctx.warm.ask(req, fresh("seed"), **kw)
    b, tb, _ = ctx.warm.ask(req, fresh("seed"), **kw)
    _, tc = ctx.cold.ask(req, **kw)
    need(bits(ta) == bits(tb) == bits(tc), "the same seeded request drew different tokens")
    lps = a.choices[0].logprobs.content
    need(len(lps) == a.usage.completion_tokens and all(len(lp.top_logprobs) == 3 for lp in lps), "logprobs missing")
    need(all(x.logprob >= y.logprob for lp in lps for x, y in zip(lp.top_logprobs, lp.top_logprobs[1:])), "top_logprobs unsorted")
    # No seed: the default seed 0, said in akv.seed, the same draw as seed 0 given (SV4).
    d, td, _ = ctx.warm.ask(req, fresh("seed"), max_tokens=6, temperature=0.9)
    e, te, _ = ctx.warm.ask(req, fresh("seed"), max_tokens=6, temperature=0.9, seed=0)
    need(bits(td) == bits(te), "a draw without a seed differs from the draw with seed 0")
    need(d.model_extra["akv"]["seed"] == 0, f"akv.seed {d.model_extra['akv']['seed']} without a seed, not 0")
    return (f"temperature 0.9, top_p 0.95, seed 1234: twice and on the cold server the same {len(lps)} tokens and logprobs; "
            f"top_logprobs 3, sorted; no seed: the default seed 0, said in akv.seed")


BALANCE_TOOL = {"type": "function", "function": {
    "name": "get_balance", "description": "The balance of one of the user's accounts.",
    "parameters": {"type": "object", "properties": {"account": {"type": "string", "enum": ["checking", "savings"]}},
                   "required": ["account"], "additionalProperties": False}}}


def accumulate_calls(chunks):
    """The tool calls a stream carried, accumulated as the openai client's users do (by index)."""
    calls = {}
    for ch in chunks:
        for c in ch.choices:
            for d in (c.delta.tool_calls or []):
                e = calls.setdefault(d.index, {"id": None, "name": "", "arguments": ""})
                e["id"] = d.id or e["id"]
                if d.function and d.function.name:
                    e["name"] += d.function.name
                if d.function and d.function.arguments:
                    e["arguments"] += d.function.arguments
    return [calls[i] for i in sorted(calls)]


def check_agent(ctx):
    """A tool-using agent's loop through the client: a required call (constrained, SV14), the same
    call streamed, the tool's result sent back, the answer = cold, and the Responses API."""
    req = [SYSTEM, {"role": "user", "content": "What is in my checking account?"}]
    kw = dict(tools=[BALANCE_TOOL], tool_choice="required", parallel_tool_calls=False, max_tokens=200)
    r, _, sid = ctx.warm.ask(req, fresh("agent"), **kw)
    ch = r.choices[0]
    need(ch.finish_reason == "tool_calls" and ch.message.tool_calls and len(ch.message.tool_calls) == 1,
         f"tool_choice required: finish {ch.finish_reason}, message {ch.message}")
    call = ch.message.tool_calls[0]
    args = json.loads(call.function.arguments)
    need(call.function.name == "get_balance" and args.get("account") in ("checking", "savings") and set(args) == {"account"},
         f"the call {call.function.name}({call.function.arguments}) is not valid under the tool's parameters")
    streamed = accumulate_calls(ctx.warm.stream(req, fresh("agent"), **kw))
    # The ids too: each is a function of what the model read and wrote (SV15), the same streamed.
    need([(c["id"], c["name"], c["arguments"]) for c in streamed] == [(call.id, call.function.name, call.function.arguments)],
         f"the streamed calls {streamed} differ from the plain reply's")
    turn = req + [ch.message.model_dump(exclude_none=True),
                  {"role": "tool", "tool_call_id": call.id, "content": '{"balance": "1,204.50 EUR"}'}]
    _, warm, _ = ctx.warm.ask(turn, sid, tools=[BALANCE_TOOL], max_tokens=8)
    _, cold = ctx.cold.ask(turn, tools=[BALANCE_TOOL], max_tokens=8)
    need(bits(warm) == bits(cold), "the answer after the tool's result differs from cold: " + what_differs(bits(warm), bits(cold)))
    resp = ctx.warm.client.responses.create(
        model=ctx.warm.model, input="What is in my savings account?", instructions=SYSTEM["content"],
        tools=[dict(type="function", **BALANCE_TOOL["function"])], tool_choice="required", parallel_tool_calls=False,
        max_output_tokens=200)
    fcs = [o for o in resp.output if o.type == "function_call"]
    need(len(fcs) == 1 and fcs[0].name == "get_balance" and json.loads(fcs[0].arguments).get("account") in ("checking", "savings"),
         f"responses.create: output {resp.output}")
    return (f"tool_choice required: get_balance({call.function.arguments}), finish tool_calls; streamed deltas accumulate to the "
            f"same call, its id too; after the tool's result the answer = cold; responses.create: function_call get_balance({fcs[0].arguments})")


def check_load(ctx):
    """On a server of its own: the warm one holds check_flag_scope's kind of flags, not what this measures."""
    srv = Server(ctx.akv, ctx.model)
    busy = Api(srv, ctx.model, ctx.timeout, retries=2)
    try:
        return load_test(ctx, busy)
    finally:
        busy.close()
        srv.stop()


def load_test(ctx, busy):
    distinct = load_requests(ctx.convs)
    kinds = [dict(max_tokens=6, logprobs=True, top_logprobs=2),
             dict(max_tokens=6, temperature=0.7, top_p=0.9, seed=7, logprobs=True),
             dict(max_tokens=6, stream=True)]
    reqs = [(m, kinds[i % len(kinds)]) for i, m in enumerate(distinct)]
    t0 = time.monotonic()
    refs = [stream_bits(ctx.cold.stream(m, **{k: v for k, v in kw.items() if k != "stream"})) if kw.get("stream")
            else bits(ctx.cold.ask(m, **kw)[1]) for m, kw in reqs]
    t_cold = time.monotonic() - t0
    order = [i % len(reqs) for i in range(ctx.load)]
    random.Random(24).shuffle(order)
    stats = {"reused": 0, "evicted": 0, "errors": []}
    lock = threading.Lock()

    def one(i):  # no session header: the server picks the idle session sharing the longest prefix
        m, kw = reqs[i]
        try:
            if kw.get("stream"):
                chunks = busy.stream(m, **{k: v for k, v in kw.items() if k != "stream"})
                got, akv = stream_bits(chunks), stream_view(chunks)[4]
            else:
                r, text, _ = busy.ask(m, **kw)
                got, akv = bits(text), r.model_extra["akv"]
        except openai.OpenAIError as e:
            with lock:
                stats["errors"].append(f"{type(e).__name__}: {e}")
            return False
        with lock:
            stats["reused"] += akv["reused_tokens"]
            stats["evicted"] += akv["evicted_tokens"]
            if got != refs[i]:
                stats["errors"].append(f"request {i} ({len(m)} messages, {sorted(kw)}): {what_differs(got, refs[i])}; "
                                       + ", ".join(f"{k} {akv[k]}" for k in sorted(AKV_KEYS) if "sha" not in k))
        return got == refs[i]

    t0 = time.monotonic()
    with concurrent.futures.ThreadPoolExecutor(16) as pool:
        same = list(pool.map(one, order))
    wall = time.monotonic() - t0
    differ = same.count(False)
    need(differ == 0, f"{differ} of {len(same)} replies differ from alone; " + " | ".join(stats["errors"][:3]))
    # Each distinct request twice or more: some must have reused a session and evicted from one.
    need(ctx.load < 2 * len(reqs) or (stats["reused"] > 0 and stats["evicted"] > 0), f"the load reused {stats['reused']} and evicted {stats['evicted']} tokens")
    return (f"{len(same)} requests, 16 at a time, over {len(reqs)} distinct requests (plain greedy+logprobs, seeded, "
            f"streamed): 0 differ from alone on the cold server; {wall:.1f} s ({len(same) / wall:.1f} req/s; cold "
            f"references {t_cold:.1f} s); reused {stats['reused']}, evicted {stats['evicted']} tokens")


CHECKS = [("plain", check_plain), ("stream", check_stream), ("tools", check_tools), ("evict", check_evict),
          ("flag-scope", check_flag_scope), ("error-unknown-field", check_unknown_field), ("error-malformed", check_malformed),
          ("error-unknown-model", check_unknown_model), ("error-context", check_overflow), ("error-401", check_auth),
          ("error-429", check_429), ("seeded", check_seeded), ("agent", check_agent), ("load", check_load)]


# ---- main

def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--akv", required=True)
    ap.add_argument("--model", default="tiny")
    ap.add_argument("--load", type=int, default=200)
    ap.add_argument("--deadline", type=float, help="seconds for the whole run (default 300 synthetic, 1800 real)")
    ap.add_argument("dirs", nargs="+", help="folders of conversations")
    a = ap.parse_args()
    synthetic = a.model in ("tiny", "small", "bench") or a.model.startswith("synthetic:")
    deadline = a.deadline or (300 if synthetic else 1800)
    start = time.monotonic()
    current = ["setup"]

    timer = bound_run("crosscheck-openai", deadline, lambda: f" during '{current[0]}'")
    ctx = argparse.Namespace(akv=a.akv, model=a.model, load=a.load, synthetic=synthetic,
                             timeout=60 if synthetic else 300)
    passed = failed = 0
    try:
        with tempfile.TemporaryDirectory() as ctx.tmp:
            ctx.convs = load_conversations(a.dirs)
            warm, cold = Server(a.akv, a.model), Server(a.akv, a.model)
            ctx.warm, ctx.cold = Api(warm, a.model, ctx.timeout), Cold(Api(cold, a.model, ctx.timeout))
            print(f"openai {openai.__version__}, akv serve --model {a.model} ({warm.url}; cold: {cold.url})", flush=True)
            for name, check in CHECKS:
                current[0] = name
                t0 = time.monotonic()
                try:
                    what = check(ctx)
                    print(f"PASS {name}: {what} [{time.monotonic() - t0:.1f} s]", flush=True)
                    passed += 1
                except Exception as e:  # a driver bug too shows as that check's FAIL, never a pass
                    print(f"FAIL {name}: {type(e).__name__}: {e} [{time.monotonic() - t0:.1f} s]", flush=True)
                    failed += 1
            current[0] = "shutdown"
            ctx.warm.close()
            ctx.cold.api.close()
            rcs = [warm.stop(), cold.stop()]
            if rcs == [0, 0]:
                print("PASS shutdown: both servers drained on SIGTERM and exited 0", flush=True)
                passed += 1
            else:
                print(f"FAIL shutdown: exit statuses {rcs} on SIGTERM, expected 0", flush=True)
                failed += 1
    except SetupError as e:
        print(f"akv: crosscheck-openai: {e}", file=sys.stderr)
        return 2
    finally:
        end_run(timer)
    print(f"crosscheck-openai: {passed} passed, {failed} failed", flush=True)
    print(f"model {a.model}, wall {time.monotonic() - start:.1f} s", flush=True)
    return 0 if failed == 0 and passed == len(CHECKS) + 1 else 1


if __name__ == "__main__":
    sys.exit(main())
