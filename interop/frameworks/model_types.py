"""Every body and event `faultlab model` writes, validated against the pinned SDKs' own pydantic types (openai and
anthropic, interop/frameworks/constraints.txt): a field those types require and the endpoint leaves out is a body
a validating client refuses. Run by scripts/frameworks-eval.sh beside its eval runs (well under a second).

    python model_types.py FAULTLAB_BIN SCRIPT

Prints `model types: N bodies and events valid`; exits 1 naming the first one that is not.
"""

import json
import re
import subprocess
import sys
import urllib.request

from anthropic.types import Message, ModelInfo, RawMessageStreamEvent
from openai.types import Model
from openai.types.chat import ChatCompletion, ChatCompletionChunk
from openai.types.responses import Response, ResponseStreamEvent
from pydantic import TypeAdapter, ValidationError

RESPONSE_EVENT = TypeAdapter(ResponseStreamEvent)
MESSAGES_EVENT = TypeAdapter(RawMessageStreamEvent)


def request(base: str, path: str, body: dict | None = None, headers: dict | None = None) -> str:
    data = None if body is None else json.dumps(body).encode()
    headers = {"content-type": "application/json", **(headers or {})}
    sent = urllib.request.Request(base + path, data=data, headers=headers)
    with urllib.request.urlopen(sent, timeout=10) as answer:
        return answer.read().decode()


def events(text: str) -> list[dict]:
    data = (line.removeprefix("data: ") for line in text.split("\n") if line.startswith("data: "))
    return [json.loads(d) for d in data if d != "[DONE]"]


def conversations(results: list[str]) -> dict[str, dict]:
    """A first request and one carrying the results back, in each API's shape (tool `ping`)."""
    chat = [{"role": "user", "content": "go"}]
    responses = [{"role": "user", "content": "go"}]
    messages = [{"role": "user", "content": "go"}]
    for i, text in enumerate(results):
        call = f"c{i}"
        chat += [{"role": "assistant", "tool_calls": [{"id": call, "type": "function",
                                                       "function": {"name": "ping", "arguments": "{}"}}]},
                 {"role": "tool", "tool_call_id": call, "content": text}]
        responses += [{"type": "function_call", "call_id": call, "name": "ping", "arguments": "{}"},
                      {"type": "function_call_output", "call_id": call, "output": text}]
        messages += [{"role": "assistant", "content": [{"type": "tool_use", "id": call, "name": "ping", "input": {}}]},
                     {"role": "user", "content": [{"type": "tool_result", "tool_use_id": call, "content": text}]}]
    return {"/v1/chat/completions": {"model": "m", "messages": chat},
            "/v1/responses": {"model": "m", "input": responses},
            "/v1/messages": {"model": "m", "max_tokens": 100, "messages": messages}}


def check(base: str) -> int:
    checked = 0
    whole = {"/v1/chat/completions": ChatCompletion, "/v1/responses": Response, "/v1/messages": Message}
    stream = {"/v1/chat/completions": ChatCompletionChunk.model_validate,
              "/v1/responses": RESPONSE_EVENT.validate_python, "/v1/messages": MESSAGES_EVENT.validate_python}
    # A tool call (no results yet) and, after both steps of the script, a text answer.
    for results in ([], ["ok", "ok"]):
        for path, body in conversations(results).items():
            at = f"{path} after {len(results)} results"
            try:
                whole[path].model_validate(json.loads(request(base, path, body)))
                checked += 1
                streamed = dict(body, stream=True)
                if path == "/v1/chat/completions":
                    streamed["stream_options"] = {"include_usage": True}
                for event in events(request(base, path, streamed)):
                    stream[path](event)
                    checked += 1
            except ValidationError as e:
                raise SystemExit(f"model types: {at}: {e}") from None
    try:
        for model in json.loads(request(base, "/v1/models"))["data"]:
            Model.model_validate(model)
            checked += 1
        for model in json.loads(request(base, "/v1/models", headers={"anthropic-version": "2023-06-01"}))["data"]:
            ModelInfo.model_validate(model)
            checked += 1
    except ValidationError as e:
        raise SystemExit(f"model types: GET /v1/models: {e}") from None
    return checked


def main() -> None:
    binary, script = sys.argv[1], sys.argv[2]
    model = subprocess.Popen([binary, "model", "--script", script, "--port", "0"], stderr=subprocess.PIPE, text=True)
    try:
        line = model.stderr.readline()
        found = re.search(r"(http://\S+)/v1", line)
        if not found:
            raise SystemExit(f"model types: faultlab model did not start: {line.strip()}")
        print(f"model types: {check(found.group(1))} bodies and events valid")
    finally:
        model.terminate()
        model.wait(timeout=10)


if __name__ == "__main__":
    main()
