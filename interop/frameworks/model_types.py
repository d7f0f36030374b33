"""Every body and event `faultlab model` writes, validated against the pinned SDKs' own pydantic types (openai and
anthropic, interop/frameworks/constraints.txt): a field those types require and the endpoint leaves out is a body
a validating client refuses. Run by scripts/frameworks-eval.sh beside its eval runs (a few seconds).

    python model_types.py FAULTLAB_BIN SCRIPT

The script's answers first, then the same requests with each of the model hop's own faults (MODEL_FAULTS, on every
request): the bodies they change (a refusal, a tool call cut at its token limit, arguments that are not JSON, an
unknown tool, two calls with one id, a slow drip's body) against the same types, and their errors (a stream's
error event, an overloaded, context-length or quota refusal) against the SDKs' error types: OpenAI's
`ErrorObject` (the `error` member of its error bodies and of a Chat Completions stream's error chunk) and
Anthropic's `ErrorResponse`. Gemini's `generateContent` shape is not validated here: the google-genai SDK (its
types) cannot join the pinned venv (every release wants tenacity < 9.2, the venv pins 9.2.1); the crate's tests
check its required fields.

Prints `model types: N bodies and events valid`; exits 1 naming the first one that is not.
"""

import json
import os
import re
import subprocess
import sys
import tempfile
import urllib.error
import urllib.request

from anthropic.types import ErrorResponse, Message, ModelInfo, RawMessageStreamEvent
from openai.types import ErrorObject, Model
from openai.types.chat import ChatCompletion, ChatCompletionChunk
from openai.types.responses import Response, ResponseStreamEvent
from pydantic import TypeAdapter, ValidationError

RESPONSE_EVENT = TypeAdapter(ResponseStreamEvent)
MESSAGES_EVENT = TypeAdapter(RawMessageStreamEvent)


# The model hop's own faults (docs/model.md), each put on every request of a run of its own.
MODEL_FAULTS = [
    {"type": "refusal"},
    {"type": "tool_call_cut"},
    {"type": "tool_arguments_invalid"},
    {"type": "unknown_tool_call"},
    {"type": "duplicate_call_id"},
    {"type": "overloaded"},
    {"type": "overloaded", "before_stream": True},
    {"type": "context_length_exceeded"},
    {"type": "token_quota", "requests_per_minute": 1},
    {"type": "slow_drip", "token_ms": 1},
]


def request(base: str, path: str, body: dict | None = None, headers: dict | None = None) -> str:
    return exchange(base, path, body, headers)[1]


def exchange(base: str, path: str, body: dict | None = None, headers: dict | None = None) -> tuple[int, str]:
    """The status and body of one request; an error status is an answer too (its body is checked)."""
    data = None if body is None else json.dumps(body).encode()
    headers = {"content-type": "application/json", **(headers or {})}
    sent = urllib.request.Request(base + path, data=data, headers=headers)
    try:
        with urllib.request.urlopen(sent, timeout=10) as answer:
            return answer.status, answer.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode()


def error_body(path: str, body: dict) -> None:
    """An error answer or error event in the API's own shape."""
    if path == "/v1/messages":
        ErrorResponse.model_validate(body)
    else:
        ErrorObject.model_validate(body["error"])


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
    return checked + check_models(base)


def check_faulted(base: str) -> int:
    """The script's requests again, under a model-hop fault: every answer, streamed or not, error or not."""
    checked = 0
    whole = {"/v1/chat/completions": ChatCompletion, "/v1/responses": Response, "/v1/messages": Message}
    for results in ([], ["ok", "ok"]):
        for path, body in conversations(results).items():
            for stream in (False, True):
                sent = dict(body, stream=True) if stream else body
                status, text = exchange(base, path, sent)
                if status >= 400:
                    error_body(path, json.loads(text))
                elif not stream:
                    whole[path].model_validate(json.loads(text))
                else:
                    for event in events(text):
                        if path == "/v1/responses":
                            RESPONSE_EVENT.validate_python(event)
                        elif event.get("type") == "error" or "error" in event:
                            error_body(path, event)
                        elif path == "/v1/messages":
                            MESSAGES_EVENT.validate_python(event)
                        else:
                            ChatCompletionChunk.model_validate(event)
                        checked += 1
                checked += 1
    return checked


def check_models(base: str) -> int:
    checked = 0
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


def serving(argv: list[str], check_with) -> int:
    """Starts `faultlab model` with argv, checks it with check_with(base URL), ends it."""
    model = subprocess.Popen(argv, stderr=subprocess.PIPE, text=True)
    try:
        line = model.stderr.readline()
        found = re.search(r"(http://\S+)/v1", line)
        if not found:
            raise SystemExit(f"model types: faultlab model did not start: {line.strip()}")
        return check_with(found.group(1))
    finally:
        model.terminate()
        model.wait(timeout=10)


def main() -> None:
    binary, script = sys.argv[1], sys.argv[2]
    argv = [binary, "model", "--script", script, "--port", "0"]
    checked = serving(argv, check)
    with tempfile.TemporaryDirectory() as scratch:
        for fault in MODEL_FAULTS:
            rules = os.path.join(scratch, "rules.json")
            with open(rules, "w", encoding="utf-8") as out:
                json.dump({"seed": 1, "rules": [{"name": "every-request", "fault": fault}]}, out)
            try:
                checked += serving(argv + ["--rules", rules], check_faulted)
            except ValidationError as e:
                raise SystemExit(f"model types: under {json.dumps(fault)}: {e}") from None
    print(f"model types: {checked} bodies and events valid")


if __name__ == "__main__":
    main()
