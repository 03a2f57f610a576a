"""openai-agents on akv serve: an Agent with a @function_tool on its default model API
(Responses, set_default_openai_client) and on the chat completions model; the tool is called."""
import asyncio

from agents import (Agent, ModelSettings, OpenAIChatCompletionsModel, OpenAIResponsesModel, Runner, function_tool,
                    set_default_openai_api, set_default_openai_client, set_tracing_disabled)
from openai import AsyncOpenAI

from agents_common import QUESTION, SYSTEM, args, check, finish, need, weather

A = args()
RAN = []


@function_tool
def get_weather(city: str) -> str:
    """Get the current weather in a city."""
    RAN.append(city)
    return weather(city)


class Counting(AsyncOpenAI):
    """The client, counting the requests of each API (so the Responses path is seen taken)."""
    paths = []

    async def post(self, path, *a, **kw):
        Counting.paths.append(path)
        return await super().post(path, *a, **kw)


def run(api):
    client = Counting(base_url=A.url, api_key="unused", max_retries=0, timeout=300)
    set_tracing_disabled(True)
    set_default_openai_client(client, use_for_tracing=False)
    set_default_openai_api("responses" if api == "responses" else "chat_completions")
    model = (OpenAIResponsesModel(model=A.model, openai_client=client) if api == "responses"
             else OpenAIChatCompletionsModel(model=A.model, openai_client=client))
    # tool_choice required for the first turn; the SDK resets it to auto after the call
    # (reset_tool_choice, its default), so the second turn may answer.
    agent = Agent(name="weather", instructions=SYSTEM, tools=[get_weather], model=model,
                  model_settings=ModelSettings(tool_choice="required", parallel_tool_calls=False, max_tokens=200))
    RAN.clear()
    Counting.paths.clear()
    r = asyncio.run(Runner.run(agent, QUESTION, max_turns=4))
    kinds = [type(i).__name__ for i in r.new_items]
    need(kinds == ["ToolCallItem", "ToolCallOutputItem", "MessageOutputItem"], f"items {kinds}")
    need(len(RAN) == 1 and r.new_items[1].output == weather(RAN[0]), f"the tool ran {RAN}")
    need(isinstance(r.final_output, str) and r.final_output.strip(), f"final_output {r.final_output!r}")
    want = "/responses" if api == "responses" else "/chat/completions"
    need(Counting.paths == [want, want], f"requests {Counting.paths}, expected two to {want}")
    return (f"Runner.run: get_weather({r.new_items[0].raw_item.arguments}) ran once -> {r.new_items[1].output!r} -> "
            f"final_output {r.final_output.strip()[:60]!r}; 2 requests to {want}")


check("openai-agents-responses", lambda: run("responses"))
check("openai-agents-chat", lambda: run("chat"))
finish()
