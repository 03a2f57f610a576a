"""inspect-ai on akv serve (its openai-api provider): a use_tools eval and the stock basic_agent
(which adds a submit tool). inspect exits 0 even when every sample errors: the eval log's status
and each sample's error are read, and any error fails the check."""
import json
import os
import tempfile

from inspect_ai import Task, eval as inspect_eval
from inspect_ai.dataset import Sample
from inspect_ai.scorer import includes
from inspect_ai.solver import basic_agent, generate, use_tools
from inspect_ai.tool import ToolFunction, tool

from agents_common import QUESTION, args, audit_lines, check, finish, need, weather

A = args()
os.environ["AKV_BASE_URL"] = A.url  # the openai-api provider: openai-api/akv/MODEL reads AKV_BASE_URL, AKV_API_KEY
os.environ["AKV_API_KEY"] = "unused"
MODEL = f"openai-api/akv/{A.model}"
LOGS = tempfile.mkdtemp(prefix="akv-inspect-")


@tool
def get_weather():
    async def execute(city: str):
        """Get the current weather in a city.

        Args:
          city: The city's name.
        """
        return weather(city)

    return execute


def one(task):
    [log] = inspect_eval(task, model=MODEL, log_dir=LOGS, display="none", max_tokens=200, max_retries=0, timeout=300,
                         fail_on_error=False)
    need(log.status == "success", f"{log.eval.task}: status {log.status}, error {log.error}")
    need(log.samples, f"{log.eval.task}: no samples in the log")
    errs = [(s.id, s.error.message if s.error else None) for s in log.samples if s.error]
    need(not errs, f"{log.eval.task}: samples errored: {errs}")
    return log


def use_tools_eval():
    # The call forced on the first turn (a named function), its result, then an answer without tools.
    task = Task(dataset=[Sample(input=QUESTION, target="rain")], scorer=includes(),
                solver=[use_tools([get_weather()], tool_choice=ToolFunction("get_weather")), generate(tool_calls="single"),
                        use_tools([get_weather()], tool_choice="none"), generate()])
    log = one(task)
    s = log.samples[0]
    roles = [m.role for m in s.messages]
    need(roles == ["user", "assistant", "tool", "assistant"], f"messages {roles}")
    call = s.messages[1].tool_calls[0]
    need(call.function == "get_weather" and set(call.arguments) == {"city"}, f"the call {call}")
    need(s.messages[2].text == weather(call.arguments["city"]), f"the result {s.messages[2].text!r}")
    need(s.messages[3].text.strip(), "an empty answer")
    return (f"status success, 1 sample, no error: get_weather({call.arguments}) -> {s.messages[2].text!r} -> "
            f"{s.messages[3].text.strip()[:60]!r}; score {s.scores['includes'].value}")


def basic_agent_eval():
    task = Task(dataset=[Sample(input=QUESTION + " Call submit() with your answer.", target="rain")], scorer=includes(),
                solver=basic_agent(tools=[get_weather()], max_attempts=1, message_limit=8))
    log = one(task)
    s = log.samples[0]
    calls = [c.function for m in s.messages if m.role == "assistant" for c in (m.tool_calls or [])]
    sent = json.loads(audit_lines(A.audit_log)[-1]["request_body"])  # the agent's last request (drivers run alone)
    names = sorted(t["function"]["name"] for t in sent.get("tools", []))
    need(names == ["get_weather", "submit"], f"the tools sent: {names}")
    return (f"status success, 1 sample, no error; {len(s.messages)} messages, tool calls {calls or 'none'} "
            f"(basic_agent sends tool_choice auto), tools sent get_weather and its submit, score {s.scores['includes'].value}")


check("inspect-use-tools", use_tools_eval)
check("inspect-basic-agent", basic_agent_eval)
finish()
