"""litellm on akv serve: completion with tools through its OpenAI-compatible provider
(`openai/MODEL` with api_base), plain and streamed, and the tool's result sent back."""
import json
import os

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # no fetch of the price list (offline)
import litellm

litellm.suppress_debug_info = True  # its banner for a model missing from its price list

from agents_common import HEX64, QUESTION, SYSTEM, args, check, finish, logged_reply, need, weather

A = args()
TOOLS = [{"type": "function", "function": {"name": "get_weather", "description": "Get the current weather in a city.",
          "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"],
                         "additionalProperties": False}}}]
MSGS = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": QUESTION}]


def call(**kw):
    return litellm.completion(model="openai/" + A.model, api_base=A.url, api_key="unused", timeout=300, num_retries=0, **kw)


def tools_round_trip():
    r = call(messages=MSGS, tools=TOOLS, tool_choice="required", parallel_tool_calls=False, max_tokens=120)
    ch = r.choices[0]
    need(ch.finish_reason == "tool_calls" and ch.message.tool_calls and len(ch.message.tool_calls) == 1,
         f"finish {ch.finish_reason}, message {ch.message}")
    c = ch.message.tool_calls[0]
    a = json.loads(c.function.arguments)
    need(c.function.name == "get_weather" and set(a) == {"city"} and isinstance(a["city"], str), f"the call {c}")
    h = r._hidden_params.get("additional_headers") or {}
    logits = h.get("llm_provider-x-akv-logits-sha256", "")
    need(HEX64.match(logits) and HEX64.match(h.get("llm_provider-x-akv-cache-sha256", "")), f"headers {h}")
    line = logged_reply(A.audit_log, logits)
    need(line["reply"]["finish_reason"] == "tool_calls", "the logged reply is another")
    need(getattr(r, "akv", None) and r.akv["logits_sha256"] == logits, "the akv object (kept by litellm) differs from the header")
    # Streamed: litellm's own chunk builder gives the same call.
    chunks = list(call(messages=MSGS, tools=TOOLS, tool_choice="required", parallel_tool_calls=False, max_tokens=120, stream=True))
    s = litellm.stream_chunk_builder(chunks, messages=MSGS)
    sc = s.choices[0].message.tool_calls
    need(sc and len(sc) == 1 and (sc[0].function.name, sc[0].function.arguments) == (c.function.name, c.function.arguments),
         f"streamed {sc} != plain {c}")
    # The result back, tool_choice none: the answer (under auto Gemma 3 270M calls again).
    turn = MSGS + [ch.message.model_dump(exclude_none=True),
                   {"role": "tool", "tool_call_id": c.id, "content": weather(a["city"])}]
    r2 = call(messages=turn, tools=TOOLS, tool_choice="none", max_tokens=60)
    ans = r2.choices[0]
    need(not ans.message.tool_calls and (ans.message.content or "").strip(), f"the answer {ans}")
    return (f"get_weather({c.function.arguments}) finish tool_calls, headers llm_provider-x-akv-* = the logged reply and the "
            f"akv object; streamed through stream_chunk_builder: the same call; after the result: "
            f"{ans.message.content.strip()[:60]!r} (finish {ans.finish_reason})")


check("litellm-tools", tools_round_trip)
finish()
