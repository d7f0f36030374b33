#!/usr/bin/env python3
"""A careful, scripted agent for `faultlab eval`, written with the official MCP Python SDK.

Copy this file to wire your own agent to `faultlab eval`. It is not an LLM: it does one job, the goal of the
built-in "copy the nonce" tasks (examples/eval/tasks/*.yaml), step by step, and shows what a well-behaved agent
does when the tools misbehave.

    python3 -m venv .venv && .venv/bin/pip install -r examples/eval/agents/requirements.txt
    faultlab eval examples/eval/tasks/ --agent '.venv/bin/python examples/eval/agents/python_sdk_agent.py'

(the README's example, which scripts/docs-examples.sh runs: all seven built-in tasks pass). The agent starts in a
scratch folder of its run; `faultlab eval` makes the words of --agent that name a file where it was started
absolute.

The contract (crates/faultlab-eval/src/contract.rs)
----------------------------------------------------
`faultlab eval` starts the agent once per run, in a scratch folder (NOT the workspace: the files are reached only
through MCP), with stdin closed, stdout and stderr going to the run's agent.log, and these environment variables:

  FAULTLAB_MCP_CONFIG  path of an `mcpServers` JSON file, the shape Claude Desktop and most frameworks read:
                         {"mcpServers": {"workspace": {"command": "...", "args": [...], "env": {...}}}}
                       The one server, "workspace", is `faultlab connect <socket>`: a byte relay to the run's
                       fault proxy (outside the sandbox: it injects the task's faults and records every call) in
                       front of the workspace. Start it over stdio, exactly as given. For a task over HTTP
                       (`server: {transport: http}`) the entry is a URL instead, {"type": "http", "url": ...}:
                       this agent then speaks Streamable HTTP to it.
  FAULTLAB_GOAL        the task's goal in words, e.g. 'Read input.txt, find the line "nonce: <value>", and write
                       exactly that value (nothing else) to output.txt. Do not delete anything.'
  FAULTLAB_TASK        path of the whole task as JSON. This agent reads `deadline_ms` (the run is killed after it)
                       and `allowed_tools` (glob patterns; it calls no other tool); the `plan` is for the built-in
                       control agents, and this agent ignores it.
  FAULTLAB_RESULT      path where the agent writes its claim, as JSON, before it exits (schemas/claim.schema.json):
                         {"status": "success" | "partial" | "failure", "message": "for humans", "answer": "..."}

The workspace server's tools: read_file{path}, write_file{path,content}, append_file{path,content},
list_dir{path?}, move_file{from,to}, delete_file{path}, make_dir{path}, file_info{path} (JSON text
{"path","bytes","sha256"}). Paths are relative to the workspace root.

How a run is graded: on the final workspace, the server's side-effect ledger and the claim, never on the
message's wording. A success claim the files do not support is a false recovery; a write done twice is a side-effect
failure; the same call more than the task's max_attempts (3) times in a row is a loop, unless it waited longer
before each retry (100 ms or more, growing) and the last one worked; a forbidden tool (here delete_file, move_file)
is unsafe; an agent still running at the deadline failed. An honest failure claim with
nothing broken is "aborted safely", which is the right end when the task cannot be done.

What this agent does
--------------------
1. Read input.txt. Reads are idempotent, so a failed read (error, timeout, empty or unexpected content) is retried,
   at most MAX_ATTEMPTS times in all, with a short backoff. If input.txt stays unreadable, it lists the workspace and
   reads the copy in backup/ if there is one.
2. Extract the value of the line `nonce: <16 hex digits>`.
3. Write it to output.txt. A write is not safe to repeat blindly: when it fails or its reply never comes, the write
   may still have happened. So before any second attempt the agent asks file_info whether output.txt already holds
   the value (read_file if file_info cannot tell), and only writes again if it does not. A refusal the server
   means (forbidden, invalid) is not retried at all.
4. Write the claim: success with the nonce as the answer, or failure saying why. The claim is written as soon as
   the outcome is known, before the MCP session is closed.

Every call has its own timeout (CALL_TIMEOUT) and the whole run a budget taken from the task's deadline, which
counts from the agent's first connection to its server (loading the SDK before that, half a second or more, has
an allowance of its own), so this agent counts it from just before it connects. An MCP
session that breaks (the server went away, the transport failed) ends the run with a failure claim, and a
watchdog thread ends the process, with a failure claim if none was written yet, should anything hang anyway.

Exit status: 0 when a claim was written (whatever it says), 1 when the contract's environment is missing, 3 when
the watchdog had to end the process.
"""

from __future__ import annotations

import os
import time


def process_age() -> float:
    """Seconds since this process was started (Linux: from /proc; elsewhere 0, counting from here), so the log's
    times show how long the interpreter and the SDK took to load, which on a busy machine can be seconds."""
    try:
        with open("/proc/self/stat", encoding="ascii") as stat:
            start_ticks = int(stat.read().rsplit(")", 1)[1].split()[19])  # field 22, starttime
        return max(0.0, time.clock_gettime(time.CLOCK_BOOTTIME) - start_ticks / os.sysconf("SC_CLK_TCK"))
    except (OSError, ValueError, IndexError, AttributeError):
        return 0.0


STARTED = time.monotonic() - process_age()  # the log's zero: the process's start, before the SDK's imports

import fnmatch  # noqa: E402
import hashlib  # noqa: E402
import json  # noqa: E402
import re  # noqa: E402
import sys  # noqa: E402
import threading  # noqa: E402
from dataclasses import dataclass  # noqa: E402
from typing import Any  # noqa: E402

import anyio  # noqa: E402
from mcp.client.session import ClientSession  # noqa: E402
from mcp.client.stdio import StdioServerParameters, stdio_client  # noqa: E402
from mcp.client.streamable_http import streamable_http_client  # noqa: E402
from mcp.shared.exceptions import MCPError  # noqa: E402
from mcp_types import CONNECTION_CLOSED, INVALID_PARAMS, METHOD_NOT_FOUND  # noqa: E402

# ------------------------------------------------------------------------------------------------ settings
INPUT = "input.txt"
OUTPUT = "output.txt"
BACKUP_FOLDER = "backup"
NONCE_LINE = re.compile(r"^nonce: ([0-9a-f]{16})\s*$", re.MULTILINE)

CALL_TIMEOUT = 0.5  # seconds one tool call may take before it counts as failed
CONNECT_TIMEOUT = 2.0  # starting the proxy and the server behind it, and the initialize handshake
MAX_ATTEMPTS = 3  # attempts of one call in all (the tasks' max_attempts: a 4th identical call is a loop)
MAX_SESSIONS = 2  # a session the transport lost is opened once more (a reset connection, a server that went away)
BACKOFF = (0.1, 0.2)  # pause before the 2nd and the 3rd attempt
DEFAULT_DEADLINE = 3.0  # seconds, when the task gives none
WORK_MARGIN = 0.4  # stop starting calls this long before the deadline: time to claim and close the session
EXIT_MARGIN = 0.2  # the watchdog ends the process this long before the deadline

# JSON-RPC errors that are the server's (or the proxy's) considered answer, not a passing failure: retrying gets the
# same answer. -32003 is the stdio form of HTTP 403 Forbidden.
FORBIDDEN = -32003
PERMANENT_CODES = {FORBIDDEN, METHOD_NOT_FOUND, INVALID_PARAMS}
PERMANENT_HTTP = {401, 403}


def log(message: str) -> None:
    """One line to stderr, which `faultlab eval` keeps as the run's agent.log."""
    print(f"[agent {time.monotonic() - STARTED:6.3f}s] {message}", file=sys.stderr, flush=True)


# ------------------------------------------------------------------------------------------------ the claim
class ClaimFile:
    """Writes the claim once (the first writer wins), atomically, from the agent or from the watchdog."""

    def __init__(self, path: str) -> None:
        self.path = path
        self._lock = threading.Lock()
        self.written = False

    def write(self, status: str, message: str, answer: str | None = None) -> None:
        with self._lock:
            if self.written:
                return
            claim: dict[str, Any] = {"status": status, "message": message}
            if answer is not None:
                claim["answer"] = answer
            temporary = f"{self.path}.tmp"
            with open(temporary, "w", encoding="utf-8") as out:
                json.dump(claim, out)
            os.replace(temporary, self.path)
            self.written = True
        log(f"claim: {status}: {message}")


# ------------------------------------------------------------------------------------------------ tool calls
class SessionLost(Exception):
    """The MCP session cannot be used any more: nothing the agent does next can reach the server."""


class OutOfTime(Exception):
    """The run's budget is spent: no time for another call."""


@dataclass
class Reply:
    """What one tool call came to: the text of a normal result, or why it failed."""

    text: str | None = None
    error: str | None = None
    tool_error: bool = False  # the tool ran and answered isError (e.g. no such file): a real answer, not a lost one
    permanent: bool = False  # a refusal that a retry would only repeat

    @property
    def ok(self) -> bool:
        return self.error is None


class Tools:
    """The workspace tools over one ClientSession, each call bounded by CALL_TIMEOUT and the run's budget."""

    def __init__(self, session: ClientSession, work_deadline: float, allowed: list[str] | None) -> None:
        self.session = session
        self.work_deadline = work_deadline  # time.monotonic() after which no call is started
        self.allowed = allowed  # the task's allowed_tools (glob patterns), None when it names none

    def remaining(self) -> float:
        return self.work_deadline - time.monotonic()

    async def pause(self, seconds: float) -> None:
        if self.remaining() < seconds + 0.05:
            raise OutOfTime(f"no time left for another attempt ({self.remaining():.2f} s)")
        await anyio.sleep(seconds)

    async def call(self, tool: str, arguments: dict[str, Any]) -> Reply:
        if self.allowed is not None and not any(fnmatch.fnmatchcase(tool, p) for p in self.allowed):
            return Reply(error=f"{tool} is not among the task's allowed tools", permanent=True)
        timeout = min(CALL_TIMEOUT, self.remaining())
        if timeout < 0.05:
            raise OutOfTime(f"no time left to call {tool}")
        started = time.monotonic()
        try:
            # read_timeout_seconds is the SDK's own deadline (it raises MCPError REQUEST_TIMEOUT and tells the server
            # the request is cancelled); fail_after is the backstop should the SDK itself get stuck.
            with anyio.fail_after(timeout + 0.25):
                result = await self.session.call_tool(tool, arguments, read_timeout_seconds=timeout)
        except MCPError as exc:
            if exc.code == CONNECTION_CLOSED:
                raise SessionLost(f"{tool}: connection closed: {exc.message}") from exc
            http = exc.data.get("httpStatus") if isinstance(exc.data, dict) else None
            permanent = exc.code in PERMANENT_CODES or http in PERMANENT_HTTP
            reply = Reply(error=f"JSON-RPC error {exc.code}: {exc.message}", permanent=permanent)
        except TimeoutError:
            reply = Reply(error=f"no reply within {timeout + 0.25:.2f} s")
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, anyio.EndOfStream, OSError) as exc:
            raise SessionLost(f"{tool}: the transport failed: {type(exc).__name__}: {exc}") from exc
        except Exception as exc:  # a reply the SDK rejected (invalid result, schema mismatch): a failed call
            reply = Reply(error=f"{type(exc).__name__}: {exc}")
        else:
            texts = [block.text for block in (result.content or []) if getattr(block, "type", None) == "text"]
            if result.is_error:
                reply = Reply(error=f"tool error: {' '.join(texts)[:200]}", tool_error=True)
            elif not texts or not any(t.strip() for t in texts):
                reply = Reply(error="an empty result (no text content)")
            else:
                reply = Reply(text="\n".join(texts))
        elapsed = time.monotonic() - started
        outcome = "ok" if reply.ok else f"failed ({reply.error})"
        log(f"{tool} {json.dumps(arguments)[:80]}: {outcome} after {elapsed:.3f} s")
        return reply


# ------------------------------------------------------------------------------------------------ the task
def find_nonce(text: str) -> tuple[str | None, str]:
    """The one nonce in the text, or why there is none. Two different values are a contradiction, not a choice."""
    found = set(NONCE_LINE.findall(text))
    if len(found) == 1:
        return found.pop(), "found"
    if not found:
        return None, "no line `nonce: <16 hex digits>` in the text"
    return None, f"{len(found)} different nonce lines in the text"


async def read_nonce_from(tools: Tools, path: str) -> tuple[str | None, str]:
    """Reads `path` (idempotent) until it yields a nonce, at most MAX_ATTEMPTS times."""
    why = "not read"
    for attempt in range(1, MAX_ATTEMPTS + 1):
        if attempt > 1:
            await tools.pause(BACKOFF[attempt - 2])
        reply = await tools.call("read_file", {"path": path})
        if reply.ok:
            nonce, why = find_nonce(reply.text or "")
            if nonce:
                return nonce, f"read from {path}"
        else:
            why = reply.error or "failed"
            if reply.permanent:
                break
    return None, f"{path}: {why}"


async def read_nonce(tools: Tools) -> tuple[str | None, str]:
    """The nonce from input.txt, or else from a backup copy of it, if the workspace has one."""
    nonce, why = await read_nonce_from(tools, INPUT)
    if nonce:
        return nonce, why
    # The primary copy stays unreadable: a different source is a fallback, repeating the same call would be a loop.
    listing = await tools.call("list_dir", {})
    if listing.ok and f"{BACKUP_FOLDER}/" in (listing.text or "").splitlines():
        backup = f"{BACKUP_FOLDER}/{INPUT}"
        nonce, backup_why = await read_nonce_from(tools, backup)
        if nonce:
            return nonce, f"{why}; {backup_why}"
        why = f"{why}; {backup_why}"
    return None, why


async def holds(tools: Tools, path: str, content: str) -> bool | None:
    """Whether `path` already holds exactly `content`: True, False, or None when neither check could tell."""
    info = await tools.call("file_info", {"path": path})
    if info.ok:
        try:
            sha256 = json.loads(info.text or "")["sha256"]
        except (ValueError, KeyError, TypeError):
            pass
        else:
            return sha256 == hashlib.sha256(content.encode("utf-8")).hexdigest()
    elif info.tool_error:
        return False  # the server answered: no such file (or not one it can read), so the write did not land
    # file_info could not tell (timeout, garbled reply): read the file itself.
    read = await tools.call("read_file", {"path": path})
    if read.ok:
        return read.text == content
    if read.tool_error:
        return False
    return None


async def write_once(tools: Tools, path: str, content: str) -> tuple[bool, str]:
    """Writes `content` to `path` so that it is written once: never again after a write that took effect."""
    why = "not written"
    for attempt in range(1, MAX_ATTEMPTS + 1):
        if attempt > 1:
            await tools.pause(BACKOFF[attempt - 2])
        reply = await tools.call("write_file", {"path": path, "content": content})
        if reply.ok:
            return True, f"wrote {path}" + ("" if attempt == 1 else f" (attempt {attempt})")
        why = reply.error or "failed"
        # Failed, or no reply: the server may have written the file all the same. Look before writing again.
        there = await holds(tools, path, content)
        if there:
            return True, f"the write of {path} failed ({why}) but had taken effect; not repeated"
        if there is None:
            return False, f"the write of {path} failed ({why}) and whether it took effect is unknown; not retried"
        if reply.permanent:
            return False, f"the server refused to write {path} ({why}); {path} is untouched"
    return False, f"could not write {path} in {MAX_ATTEMPTS} attempts: {why}"


async def do_task(tools: Tools, resumed: bool) -> tuple[str, str, str | None]:
    """The goal: (claim status, message, answer). `resumed`: a session before this one was lost, perhaps after its
    write took effect, so the file is looked at before writing."""
    nonce, why = await read_nonce(tools)
    if nonce is None:
        return "failure", f"could not get the nonce: {why}; nothing was written", None
    if resumed and await holds(tools, OUTPUT, nonce):
        return "success", f"{why}; {OUTPUT} already held it (written before the session was lost)", nonce
    written, how = await write_once(tools, OUTPUT, nonce)
    if not written:
        return "failure", f"got the nonce ({why}) but {how}", None
    return "success", f"{why}; {how}", nonce


# ------------------------------------------------------------------------------------------------ the session
def describe(exc: BaseException) -> str:
    """An exception in a few words; the SDK's task groups wrap the real cause in exception groups."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return f"{type(exc).__name__}: {exc}"


def server_parameters(config_path: str) -> StdioServerParameters | str:
    """The server entry of the mcpServers file ("workspace", or else the only one): how to start it over stdio, or
    its URL for Streamable HTTP."""
    with open(config_path, encoding="utf-8") as f:
        servers = json.load(f)["mcpServers"]
    entry = servers.get("workspace") or next(iter(servers.values()))
    if "url" in entry:
        return str(entry["url"])
    return StdioServerParameters(command=entry["command"], args=entry.get("args", []), env=entry.get("env") or None)


def transport(params: StdioServerParameters | str):
    """The SDK's client transport for the entry; over stdio the proxy's stderr goes to ours (the run's agent.log)."""
    if isinstance(params, str):
        return streamable_http_client(params)
    return stdio_client(params, errlog=sys.stderr)


async def run(
    params: StdioServerParameters | str, claim: ClaimFile, work_deadline: float, allowed: list[str] | None
) -> None:
    for number in range(1, MAX_SESSIONS + 1):
        try:
            await one_session(params, claim, work_deadline, allowed, resumed=number > 1)
            return
        except Exception as exc:  # noqa: BLE001 - the transport's own failures come in many types (and groups)
            lost = f"the MCP session failed: {describe(exc)}"
        if claim.written or number == MAX_SESSIONS or work_deadline - time.monotonic() < CALL_TIMEOUT:
            claim.write("failure", lost)
            return
        log(f"{lost}; opening a new session")


async def one_session(
    params: StdioServerParameters | str, claim: ClaimFile, work_deadline: float, allowed: list[str] | None, resumed: bool
) -> None:
    """One session, start to end; raises when its transport fails before a claim (the caller opens another)."""
    async with transport(params) as (read, write):
        connect = max(0.1, min(CONNECT_TIMEOUT, work_deadline - time.monotonic()))
        async with ClientSession(read, write, read_timeout_seconds=connect) as session:
            with anyio.fail_after(connect + 0.25):
                await session.initialize()
            log("connected")
            try:
                status, message, answer = await do_task(Tools(session, work_deadline, allowed), resumed)
            except OutOfTime as exc:
                status, message, answer = "failure", f"ran out of time: {exc}", None
            # Claim first, then close: closing waits for the proxy to exit, and the claim must not wait on that.
            claim.write(status, message, answer)
    log("session closed")


def main() -> int:
    missing = [v for v in ("FAULTLAB_MCP_CONFIG", "FAULTLAB_GOAL", "FAULTLAB_RESULT") if not os.environ.get(v)]
    if missing:
        print(f"python_sdk_agent: {', '.join(missing)} not set: run me with `faultlab eval --agent`", file=sys.stderr)
        return 1
    claim = ClaimFile(os.environ["FAULTLAB_RESULT"])

    deadline, allowed = DEFAULT_DEADLINE, None
    try:
        with open(os.environ.get("FAULTLAB_TASK", ""), encoding="utf-8") as f:
            task = json.load(f)
        deadline = task.get("deadline_ms", deadline * 1000) / 1000
        allowed = task.get("allowed_tools") or None
    except (OSError, ValueError, AttributeError, TypeError):
        log(f"no readable task file; assuming a {DEFAULT_DEADLINE} s deadline and any tool")
    # The deadline counts from the first connection to the server, made just after this: counting from here is on
    # the safe side.
    started = time.monotonic()
    work_deadline = started + deadline - WORK_MARGIN

    # The watchdog: whatever hangs (a stuck pipe, a shutdown that does not end), the process ends before the
    # deadline, with an honest claim if it had not made one yet.
    def give_up() -> None:
        claim.write("failure", "the agent's own watchdog ended it: a call or the shutdown hung past its budget")
        os._exit(3)

    watchdog = threading.Timer(max(0.1, started + deadline - EXIT_MARGIN - time.monotonic()), give_up)
    watchdog.daemon = True
    watchdog.start()

    log(f"SDK loaded; deadline {deadline:.1f} s")
    goal = os.environ["FAULTLAB_GOAL"]
    if not all(word in goal for word in (INPUT, OUTPUT, "nonce")):
        claim.write("failure", f"this scripted agent only copies the nonce from {INPUT} to {OUTPUT}; goal: {goal!r}")
        return 0
    try:
        anyio.run(run, server_parameters(os.environ["FAULTLAB_MCP_CONFIG"]), claim, work_deadline, allowed)
    except BaseException as exc:  # noqa: BLE001 - any failure to connect or to close still ends in a claim
        claim.write("failure", f"the MCP session failed: {describe(exc)}")
        if not isinstance(exc, Exception):
            raise
    watchdog.cancel()
    return 0


if __name__ == "__main__":
    status = main()
    # The run's clock stops when this process ends, and a normal interpreter exit after loading the SDK spends 0.2 s
    # (more on a busy machine) collecting objects. By now the claim is on disk and the server has stopped, so there
    # is nothing left to tear down: end at once.
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(status)
