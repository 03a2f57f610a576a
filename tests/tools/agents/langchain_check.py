"""LangChain on akv serve: ChatOpenAI(temperature=0.7) without a seed, bind_tools with a real
Python tool, create_agent's whole loop, and the digests as response headers (docs/serving.md)."""
import json

from langchain.agents import create_agent
from langchain.agents.middleware import wrap_model_call
from langchain_core.messages import AIMessage, ToolMessage
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI

from agents_common import HEX64, QUESTION, SYSTEM, args, check, finish, logged_reply, need, weather

A = args()
RAN = []


@tool
def get_weather(city: str) -> str:
    """Get the current weather in a city."""
    RAN.append(city)
    return weather(city)


def llm():
    # The wiring of docs/serving.md: no seed (akv draws with seed 0 and says so), the headers kept.
    return ChatOpenAI(base_url=A.url, api_key="unused", model=A.model, temperature=0.7, max_tokens=120,
                      include_response_headers=True, max_retries=0, timeout=300)


def headers_of(msg):
    h = msg.response_metadata.get("headers") or {}
    for k in ("x-akv-cache-sha256", "x-akv-logits-sha256"):
        need(HEX64.match(h.get(k, "")), f"header {k} missing or not a SHA-256: {h}")
    need(json.loads(h.get("x-akv-guarded-messages", "null")) == [], f"x-akv-guarded-messages: {h}")
    return h


def bind_tools():
    m = llm().bind_tools([get_weather], tool_choice="required", parallel_tool_calls=False).invoke(QUESTION)
    need(isinstance(m, AIMessage) and len(m.tool_calls) == 1, f"bind_tools(required): {m!r}")
    c = m.tool_calls[0]
    need(c["name"] == "get_weather" and set(c["args"]) == {"city"} and isinstance(c["args"]["city"], str),
         f"the call {c} is not valid under get_weather's parameters")
    need(m.response_metadata.get("finish_reason") == "tool_calls", f"finish_reason {m.response_metadata.get('finish_reason')}")
    h = headers_of(m)
    line = logged_reply(A.audit_log, h["x-akv-logits-sha256"])
    body = json.loads(line["request_body"])
    need(line["reply"]["stats"]["cache_sha256"] == h["x-akv-cache-sha256"], "x-akv-cache-sha256 is not the logged reply's")
    need(body.get("temperature") == 0.7 and "seed" not in body and line["reply"]["stats"]["seed"] == 0,
         f"temperature {body.get('temperature')}, seed sent {body.get('seed')}, seed used {line['reply']['stats']['seed']}")
    return (f"tool_calls [get_weather({json.dumps(c['args'])})], finish tool_calls; temperature 0.7 sent without a seed, "
            f"akv drew with seed 0; x-akv-cache-sha256 {h['x-akv-cache-sha256'][:12]}.. and x-akv-logits-sha256 "
            f"{h['x-akv-logits-sha256'][:12]}.. in response_metadata['headers'] = the audit log's reply")


def agent_loop():
    # create_agent sends tool_choice auto; the small models call more reliably when the first turn
    # requires one call, and answer in text when the last has none (a documented middleware hook).
    @wrap_model_call
    def first_turn_calls(request, handler):
        answered = any(isinstance(m, ToolMessage) for m in request.messages)
        return handler(request.override(tool_choice="none" if answered else "required",
                                        model_settings={**request.model_settings, "parallel_tool_calls": False}))

    RAN.clear()
    agent = create_agent(llm(), tools=[get_weather], middleware=[first_turn_calls], system_prompt=SYSTEM)
    out = agent.invoke({"messages": [{"role": "user", "content": QUESTION}]})
    msgs = out["messages"]
    kinds = [type(m).__name__ for m in msgs]
    need(kinds == ["HumanMessage", "AIMessage", "ToolMessage", "AIMessage"], f"the loop's messages: {kinds}")
    call, result, final = msgs[1], msgs[2], msgs[3]
    need(len(call.tool_calls) == 1 and call.tool_calls[0]["name"] == "get_weather", f"the call: {call.tool_calls}")
    need(RAN == [call.tool_calls[0]["args"]["city"]] and result.content == weather(RAN[0])
         and result.tool_call_id == call.tool_calls[0]["id"], f"the tool ran {RAN}, result {result!r}")
    need(not final.tool_calls and isinstance(final.content, str) and final.content.strip(), f"the answer: {final!r}")
    for m in (call, final):
        headers_of(m)
        logged_reply(A.audit_log, m.response_metadata["headers"]["x-akv-logits-sha256"])
    return (f"create_agent: Human -> AI get_weather({json.dumps(call.tool_calls[0]['args'])}) -> Tool {result.content!r} "
            f"(the Python function ran once) -> AI answer {final.content.strip()[:60]!r} "
            f"(finish {final.response_metadata.get('finish_reason')}); both model turns' headers = logged replies")


check("langchain-bind-tools", bind_tools)
check("langchain-create-agent", agent_loop)
finish()
