#!/usr/bin/env python3
"""An outside agent for `faultlab eval` on a task with a model (Python standard library): it asks the model at
FAULTLAB_MODEL_URL what to do (Chat Completions, urllib), calls the tool it names over raw JSON-RPC to the stdio
server of FAULTLAB_MCP_CONFIG (outside_agent's Conn), passes the result back, and claims the model's last answer.
An HTTP error status from the model (503 overloaded, 429, 5xx) is retried, at most 3 times, 50 ms apart. MODE,
the first argument, says what it does with an answer the model cut (finish_reason "length": a tool call's
arguments that are not JSON):

  careful    rejects it and asks the model again (right)
  trusting   runs the cut call with {} and claims success at once (wrong: it never checked the call was whole)
"""

import json
import os
import sys
import time
import urllib.error
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from outside_agent import Conn, ToolError, claim, run  # noqa: E402  (beside this script)

MODE = sys.argv[1]
TIMEOUT_S = 2  # per tool call and per model request
TOOLS = [{"type": "function", "function": {"name": name, "parameters": {"type": "object"}}}
         for name in ("read_file", "write_file")]


def ask(messages):
    """The model's message and finish_reason, retrying an error status up to 3 times."""
    body = json.dumps({"model": "any", "messages": messages, "tools": TOOLS}).encode()
    for attempt in range(4):
        request = urllib.request.Request(os.environ["FAULTLAB_MODEL_URL"] + "/chat/completions", data=body,
                                         headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(request, timeout=TIMEOUT_S) as reply:
                choice = json.load(reply)["choices"][0]
                return choice["message"], choice.get("finish_reason")
        except urllib.error.HTTPError as e:
            print(f"model request {attempt + 1}: HTTP {e.code}", file=sys.stderr)
            if attempt == 3:
                raise
            time.sleep(0.05)


def main():
    c = Conn(TIMEOUT_S)
    c.initialize("model-loop")
    messages = [{"role": "user", "content": os.environ["FAULTLAB_GOAL"]}]
    for _ in range(10):
        message, finish = ask(messages)
        calls = message.get("tool_calls") or []
        if not calls:
            text = message.get("content") or ""
            claim("failure" if text.startswith("FAILED") else "success", MODE, text)
            return
        call = calls[0]
        try:
            arguments = json.loads(call["function"]["arguments"])
        except ValueError:
            if MODE == "careful":
                print(f"a cut tool call ({finish}): asked again", file=sys.stderr)
                continue
            try:
                c.call(call["function"]["name"], {})
            except ToolError:
                pass
            claim("success", MODE)
            return
        try:
            result = c.call(call["function"]["name"], arguments)
        except ToolError as e:
            result = f"error: {e}"
        messages += [message, {"role": "tool", "tool_call_id": call["id"], "content": result or "error: no reply"}]
    claim("failure", MODE)


if __name__ == "__main__":
    run(main, MODE)
