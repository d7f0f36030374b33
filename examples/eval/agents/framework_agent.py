#!/usr/bin/env python3
"""An agent for `faultlab eval` built on a real agent framework and its own MCP integration: the OpenAI Agents SDK
(`openai-agents`, pinned in interop/frameworks/requirements.txt), or with `--framework pydantic-ai` PydanticAI
(its MCPToolset, from the same venv). What `faultlab eval` grades is the framework:
how its MCP layer carries the task's faults back to the model, and what its run loop does about them.

    scripts/frameworks-eval.sh       # installs the framework, runs this agent on the 7 built-in tasks, checks the verdicts
    faultlab eval --agent '.cache/frameworks/venv/bin/python examples/eval/agents/framework_agent.py' --deadline-ms 15000

(docs/eval.md, "A framework agent": the verdicts, and why the longer deadline.)

The model. By default the agent starts `faultlab model --script model-script.yaml --port 0` (the file beside this
one) as its child and uses it as its model: a scripted endpoint that asks for read_file input.txt, then
write_file output.txt with the nonce it read, then answers the nonce; so the run is offline, free and the same
every time, and the model's recording (one line per model request, printed to the run's agent.log at the end)
shows what the framework passed back after each fault. The child is ended when the agent exits, whatever
happens (and by the kernel should the agent die first).

When the task has a `model` (docs/eval.md), `faultlab eval` serves it outside the sandbox, with the task's model
faults and its recording as the run's evidence, and gives its base URL as FAULTLAB_MODEL_URL: the agent uses that
instead of starting its own.

A real model instead: `--model-url URL` (an OpenAI-compatible base URL, e.g. https://api.openai.com/v1),
`--model NAME`, and the API key in the variable `--api-key-env` names (default OPENAI_API_KEY). `faultlab eval`
passes the agent only the variables it is told to: run it with `--pass-env OPENAI_API_KEY --network host`.

The contract (docs/eval.md, "One run"): the `workspace` server of the mcpServers file in FAULTLAB_MCP_CONFIG is
started over stdio as configured, by the framework (MCPServerStdio, everything at the SDK's defaults); the goal
is FAULTLAB_GOAL; the claim goes to FAULTLAB_RESULT as {"status", "message", "answer"}: success with the final
answer as the answer, or failure when the answer starts with FAILED (the instructions ask a real model for that
when it cannot do the task; the script's give_up says so) or when the framework's run raised. The task's
deadline (FAULTLAB_TASK's deadline_ms, counted from the first connection to the server) is kept by a watchdog
that writes a failure claim and ends the process just before it.

Exit status: 0 when a claim was written, 1 when the contract's environment is missing or the model could not
start, 3 when the watchdog had to end the process.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
MODEL_START_S = 10.0  # `faultlab model` prints its address within this long, or the run is given up
EXIT_MARGIN_S = 0.15  # the watchdog ends the process this long before the task's deadline
DEFAULT_DEADLINE_S = 30.0  # when the task names none
INSTRUCTIONS = (
    "You work on files through the tools of the `workspace` server. Do the user's task exactly. When you are done, "
    "answer with the value the task asked for and nothing else; if you could not do it, answer with a line starting "
    "with FAILED: and why."
)


def log(message: str) -> None:
    """One line to stderr, which `faultlab eval` keeps as the run's agent.log."""
    print(f"[framework_agent {time.monotonic() - STARTED:6.3f}s] {message}", file=sys.stderr, flush=True)


STARTED = time.monotonic()


class Claim:
    """The claim file, written once (the first writer wins: the agent or its watchdog), atomically."""

    def __init__(self, path: str) -> None:
        self.path, self.lock, self.done = path, threading.Lock(), False

    def write(self, status: str, message: str, answer: str | None = None) -> None:
        with self.lock:
            if self.done:
                return
            body: dict[str, Any] = {"status": status, "message": message}
            if answer is not None:
                body["answer"] = answer
            Path(f"{self.path}.tmp").write_text(json.dumps(body), encoding="utf-8")
            os.replace(f"{self.path}.tmp", self.path)
            self.done = True
        log(f"claim: {status}: {message}")


# ------------------------------------------------------------------------------------------------ the model
class ScriptedModel:
    """`faultlab model` as a child process: its own process group, SIGTERM to it should this process die first
    (Linux's parent-death signal), and stopped (SIGTERM, then SIGKILL after a second) by `stop`."""

    def __init__(self, faultlab: str, script: Path, record: Path) -> None:
        self.record = record
        command = [faultlab, "model", "--script", str(script), "--port", "0", "--record", str(record)]
        self.process = subprocess.Popen(
            command, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
            preexec_fn=_die_with_parent, process_group=0,
        )

    def url(self) -> str:
        """The base URL it prints on stderr (`faultlab: model listening at http://127.0.0.1:PORT/v1`)."""
        found: list[str] = []

        def read() -> None:
            assert self.process.stderr is not None
            for line in self.process.stderr:
                if not found and " listening at " in line:
                    found.append(line.split(" listening at ", 1)[1].split()[0])
                    ready.set()
                sys.stderr.write(f"[faultlab model] {line}")
            ready.set()

        ready = threading.Event()
        threading.Thread(target=read, daemon=True).start()
        ready.wait(MODEL_START_S)
        if not found:
            raise RuntimeError(f"faultlab model did not start within {MODEL_START_S} s (exit {self.process.poll()})")
        return found[0]

    def stop(self) -> None:
        if self.process.poll() is None:
            try:
                os.killpg(self.process.pid, signal.SIGTERM)
                self.process.wait(1.0)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait()
            except ProcessLookupError:
                pass

    def replay_recording(self) -> None:
        """Each model request, short (the body left out), into the run's agent.log: what the framework passed back."""
        try:
            lines = self.record.read_text(encoding="utf-8").splitlines()
        except OSError:
            return
        for line in lines:
            try:
                seen = json.loads(line)
            except ValueError:
                continue
            seen.pop("request", None)
            log(f"model request: {json.dumps(seen)[:600]}")


def _die_with_parent() -> None:
    """In the child, before exec: SIGTERM when the agent ends (PR_SET_PDEATHSIG; Linux only, else nothing)."""
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)  # 1: PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


def faultlab_binary(server: dict[str, Any], given: str | None) -> str:
    """The faultlab to run `faultlab model` with: --faultlab, else the one the mcpServers file starts (eval names
    itself there: `faultlab connect SOCKET`), else `faultlab` on PATH."""
    if given:
        return given
    command = server.get("command", "")
    if Path(command).name.startswith("faultlab") and Path(command).is_file():
        return command
    return shutil.which("faultlab") or "faultlab"


# ------------------------------------------------------------------------------------------------ the framework
async def run_openai_agents(model_url: str, api_key: str, model_name: str, api: str, server: dict[str, Any],
                            goal: str, connected: threading.Event) -> str:
    """The OpenAI Agents SDK: MCPServerStdio started as the mcpServers entry says, everything at the defaults."""
    from agents import Agent, OpenAIChatCompletionsModel, OpenAIResponsesModel, Runner, set_tracing_disabled
    from agents.mcp import MCPServerStdio
    from openai import AsyncOpenAI

    set_tracing_disabled(True)  # nothing leaves the machine but the model requests
    client = AsyncOpenAI(base_url=model_url, api_key=api_key)
    if api == "responses":
        model = OpenAIResponsesModel(model=model_name, openai_client=client)
    else:
        model = OpenAIChatCompletionsModel(model=model_name, openai_client=client)
    params = {"command": server["command"], "args": server.get("args", [])}
    if server.get("env"):
        params["env"] = server["env"]
    connected.set()  # the task's deadline counts from here
    async with MCPServerStdio(params=params, name="workspace") as mcp:
        agent = Agent(name="faultlab-eval", instructions=INSTRUCTIONS, model=model, mcp_servers=[mcp])
        result = await Runner.run(agent, goal, max_turns=10)
        return openai_agents_status(result), str(result.final_output or "")


async def run_pydantic_ai(model_url: str, api_key: str, model_name: str, api: str, server: dict[str, Any],
                          goal: str, connected: threading.Event) -> str:
    """PydanticAI (pydantic-ai-slim): MCPToolset on a FastMCP stdio transport, everything at the defaults."""
    from fastmcp.client.transports import StdioTransport
    from pydantic_ai import Agent
    from pydantic_ai.mcp import MCPToolset
    from pydantic_ai.models.openai import OpenAIChatModel, OpenAIResponsesModel
    from pydantic_ai.providers.openai import OpenAIProvider

    provider = OpenAIProvider(base_url=model_url, api_key=api_key)
    kind = OpenAIResponsesModel if api == "responses" else OpenAIChatModel
    transport = StdioTransport(server["command"], server.get("args", []), env=server.get("env") or None)
    agent = Agent(kind(model_name, provider=provider), instructions=INSTRUCTIONS, toolsets=[MCPToolset(transport)])
    connected.set()  # the task's deadline counts from here
    async with agent:
        result = await agent.run(goal)
    return pydantic_ai_status(result), str(result.output or "")


# The framework's own word on how its run ended, read before any success is claimed: a framework may hand back as
# its "answer" a refusal, a reply cut at the token limit, or an error's text (agno returns an HTTP error as the
# answer), and its final text alone would read as success. None when the run completed; else why not.
def openai_agents_status(result: Any) -> str | None:
    if result.final_output is None or not str(result.final_output).strip():
        return "the run ended without a final output"
    for response in reversed(getattr(result, "raw_responses", None) or []):
        for item in getattr(response, "output", None) or []:
            for part in getattr(item, "content", None) or []:
                if getattr(part, "type", None) == "refusal":
                    return f"the model refused: {getattr(part, 'refusal', '')}"
        break  # only the last model response decides
    return None


def pydantic_ai_status(result: Any) -> str | None:
    if result.output is None or not str(result.output).strip():
        return "the run ended without an output"
    response = getattr(result, "response", None)
    finish = getattr(response, "finish_reason", None)
    if finish in ("length", "content_filter", "error"):
        return f"the last model response ended with finish_reason {finish}"
    return None


# --framework: the frameworks of interop/frameworks/requirements.txt this agent drives (one venv has both).
FRAMEWORKS = {"openai-agents": run_openai_agents, "pydantic-ai": run_pydantic_ai}


def describe(error: BaseException) -> str:
    """An exception in a few words, with its cause (task groups wrap the real one)."""
    while isinstance(error, BaseExceptionGroup) and error.exceptions:
        error = error.exceptions[0]
    cause = error.__cause__ or error.__context__
    text = f"{type(error).__name__}: {error}"
    return f"{text} (from {type(cause).__name__}: {cause})" if cause is not None else text


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--framework", choices=sorted(FRAMEWORKS), default="openai-agents")
    parser.add_argument("--model-url", help="a real model's OpenAI-compatible base URL instead of the scripted one")
    parser.add_argument("--model", default="faultlab-scripted", help="the model name sent with each request")
    parser.add_argument("--api-key-env", default="OPENAI_API_KEY", help="the variable holding --model-url's API key")
    parser.add_argument("--api", choices=["responses", "chat"], default="responses",
                        help="the OpenAI API the framework speaks (the SDK's default: responses)")
    parser.add_argument("--script", type=Path, default=HERE / "model-script.yaml", help="the scripted model's script")
    parser.add_argument("--faultlab", help="the faultlab binary for `faultlab model` (default: the one eval runs)")
    args = parser.parse_args()

    missing = [v for v in ("FAULTLAB_MCP_CONFIG", "FAULTLAB_GOAL", "FAULTLAB_RESULT") if not os.environ.get(v)]
    if missing:
        print(f"framework_agent: {', '.join(missing)} not set: run me with `faultlab eval --agent`", file=sys.stderr)
        return 1
    api_key = "faultlab-no-key"
    if args.model_url:
        api_key = os.environ.get(args.api_key_env, "")
        if not api_key:
            print(f"framework_agent: --model-url needs the API key in ${args.api_key_env}", file=sys.stderr)
            return 1
    claim = Claim(os.environ["FAULTLAB_RESULT"])
    with open(os.environ["FAULTLAB_MCP_CONFIG"], encoding="utf-8") as f:
        servers = json.load(f)["mcpServers"]
    server = servers.get("workspace") or next(iter(servers.values()))
    deadline = DEFAULT_DEADLINE_S
    try:
        with open(os.environ.get("FAULTLAB_TASK", ""), encoding="utf-8") as f:
            deadline = json.load(f).get("deadline_ms", deadline * 1000) / 1000
    except (OSError, ValueError, AttributeError, TypeError):
        log(f"no readable task file; assuming a {deadline} s deadline")

    model = None
    if args.model_url:
        model_url = args.model_url
    elif os.environ.get("FAULTLAB_MODEL_URL"):
        # The task has a model: eval serves it outside the sandbox, with the task's model faults, and records it.
        model_url = os.environ["FAULTLAB_MODEL_URL"]
    else:
        try:
            model = ScriptedModel(faultlab_binary(server, args.faultlab), args.script, Path.cwd() / "model.jsonl")
            model_url = model.url()
        except (OSError, RuntimeError) as error:
            print(f"framework_agent: cannot start the scripted model: {error}", file=sys.stderr)
            if model is not None:
                model.stop()
            return 1
    log(f"{args.framework} on {model_url}; deadline {deadline:.1f} s")

    # The watchdog: the deadline counts from the first connection to the server; just before it, the process ends
    # with an honest claim if it has none yet (and the model child with it).
    connected = threading.Event()

    def watch() -> None:
        connected.wait()
        time.sleep(max(0.0, deadline - EXIT_MARGIN_S))
        claim.write("failure", f"{args.framework} was still running at the task's deadline ({deadline:.1f} s)")
        if model is not None:
            model.stop()
            model.replay_recording()
        os._exit(3)

    threading.Thread(target=watch, daemon=True).start()
    runner = FRAMEWORKS[args.framework]
    try:
        problem, answer = asyncio.run(
            runner(model_url, api_key, args.model, args.api, server, os.environ["FAULTLAB_GOAL"], connected))
        if problem is not None:
            claim.write("failure", f"{args.framework}'s run did not complete: {problem}"[:1000], answer.strip())
        elif answer.strip().startswith("FAILED"):
            claim.write("failure", f"the model gave up: {answer.strip()}")
        else:
            claim.write("success", f"{args.framework} ended with a final answer", answer.strip())
    except BaseException as error:  # noqa: BLE001 - whatever ended the run, the claim says so
        claim.write("failure", f"{args.framework}'s run failed: {describe(error)}"[:1000])
    finally:
        if model is not None:
            model.stop()
            model.replay_recording()
    return 0


if __name__ == "__main__":
    code = main()
    # The claim is written and the model stopped: skip the interpreter's teardown (a fraction of a second after
    # loading the SDK), which would count against the run's deadline.
    for stream in (sys.stdout, sys.stderr):
        stream.flush()
    os._exit(code)
