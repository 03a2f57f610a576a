"""The openai client's chat.completions.parse(response_format=PydanticModel) on akv serve: a
strict json_schema, constrained by the grammar (spec/serving.md SV16), parsed into the model."""
import json

import openai
from pydantic import BaseModel

from agents_common import HEX64, args, check, finish, logged_reply, need

A = args()


class Weather(BaseModel):
    city: str
    celsius: int
    rain: bool


def parse():
    c = openai.OpenAI(base_url=A.url, api_key="unused", max_retries=0, timeout=300)
    raw = c.chat.completions.with_raw_response.parse(
        model=A.model, messages=[{"role": "user", "content": "London: 12 C and light rain. Give the weather as JSON."}],
        response_format=Weather, max_tokens=120)
    r = raw.parse()
    m = r.choices[0].message
    need(isinstance(m.parsed, Weather), f"parsed {m.parsed!r}, content {m.content!r}")
    need(Weather.model_validate_json(m.content) == m.parsed, "content and parsed differ")
    body = json.loads(logged_reply(A.audit_log, raw.headers.get("x-akv-logits-sha256", ""))["request_body"])
    rf = body.get("response_format", {})
    need(rf.get("type") == "json_schema" and rf["json_schema"].get("strict") is True, f"response_format sent: {rf}")
    need(HEX64.match(r.model_extra["akv"]["cache_sha256"]), "no akv object")
    return (f"openai {openai.__version__}: response_format=Weather sent as a strict json_schema; message.parsed = "
            f"{m.parsed!r} (finish {r.choices[0].finish_reason})")


check("openai-parse", parse)
finish()
