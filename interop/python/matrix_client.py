#!/usr/bin/env python3
"""Interop matrix client: the official MCP Python SDK (`mcp` on PyPI) against `faultlab serve`.

For every case in interop/matrix-cases.json and every transport asked for (stdio via `initialize`, HTTP 2025-11-25
via `initialize`, HTTP 2026-07-28 via `server/discover`) it opens a fresh connection (a fresh server process per
cell), calls the case's tool with the deadline from the cases file, then calls `ping` on the same connection, and
prints one raw JSON record per cell on stdout:

  {sdk, sdkVersion, transport, tool, args, outcome, errorType, errorCode, message, text, elapsedMs, nextCallOk}

outcome is result | tool_error | error | timeout | transport_loss | hang (the SDK did not return within the
harness's bound, deadline + grace). interop/matrix_report.py buckets and judges the records. Every wait is bounded.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from typing import Any

import anyio
from mcp import types
from mcp.client import Client
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError
from mcp_types import CONNECTION_CLOSED, REQUEST_TIMEOUT

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from client_check import HttpServer  # noqa: E402  (the same launcher the interop check uses)

try:
    from importlib.metadata import version as _dist_version

    SDK_VERSION = _dist_version("mcp")
except Exception:  # pragma: no cover
    SDK_VERSION = "unknown"

LEGACY = "2025-11-25"
MODERN = "2026-07-28"
TRANSPORTS = ("stdio", "http-2026-07-28", "http-2025-11-25")
GRACE = 2.5  # seconds past the deadline before the harness calls the SDK hung


def leaf(exc: BaseException) -> BaseException:
    """The first non-group exception inside (nested) exception groups."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return exc


def classify(exc: BaseException) -> dict[str, Any]:
    exc = leaf(exc)
    out: dict[str, Any] = {"errorType": type(exc).__name__, "message": str(exc)[:200]}
    if isinstance(exc, MCPError):
        out["errorCode"] = exc.code
        # -32001 is also used for HTTP 401 and "Session not found": only the SDK's own deadline is a timeout.
        if exc.code == REQUEST_TIMEOUT and "timed out" in str(exc):
            out["outcome"] = "timeout"
        elif exc.code == CONNECTION_CLOSED:
            out["outcome"] = "transport_loss"
        else:
            out["outcome"] = "error"
    elif isinstance(exc, (anyio.ClosedResourceError, anyio.BrokenResourceError, anyio.EndOfStream,
                          ConnectionError, EOFError)) or "httpx" in type(exc).__module__:
        out["outcome"] = "transport_loss"
    else:
        out["outcome"] = "error"
    return out


def text_of(result: Any) -> str:
    parts = [getattr(c, "text", "") for c in (getattr(result, "content", None) or [])]
    return "".join(p for p in parts if p)[:300]


async def accept_elicitation(_context, params) -> types.ElicitResult:
    """Accepts a form with confirm: true, and a URL (URL mode's accept carries no content: the user went to the
    page)."""
    if getattr(params, "mode", "form") == "url":
        return types.ElicitResult(action="accept")
    return types.ElicitResult(action="accept", content={"confirm": True})


async def one_root(_context) -> types.ListRootsResult:
    return types.ListRootsResult(roots=[types.Root(uri="file:///tmp/faultlab-matrix")])


TASKS_EXTENSION = "io.modelcontextprotocol/tasks"


def answering(tool: str, args: dict[str, Any]) -> dict[str, Any]:
    """The ask_client cells' client declares elicitation and roots (its callbacks; this SDK declares both
    elicitation modes, form and URL, for one callback), not sampling (so an undeclared sampling request shows how the
    SDK refuses what it did not declare), accepts every form with confirm: true and every URL, and lists one root. The task_lifecycle cells' client (task_work with a fault) declares the tasks
    extension, as a client that wants task handles does; this SDK has no tasks client (no tasks/get polling), so the
    cell shows what call_tool makes of the handle. Every other cell's client declares nothing, as before."""
    if tool == "ask_client":
        return {"elicitation_callback": accept_elicitation, "list_roots_callback": one_root}
    if tool == "task_work" and "fault" in args:
        return {"extensions": {TASKS_EXTENSION: {}}}
    return {}


async def call_then_ping(rec: dict[str, Any], caller, deadline: float) -> None:
    """The cell's call, then ping on the same connection, through `caller` (a ClientSession or a Client: both have
    call_tool); phases tell cell_with_bound what was in flight if the transport context itself raised."""
    rec["phase"] = "call"
    started = time.monotonic()
    try:
        result = await caller.call_tool(rec["tool"], rec["args"], read_timeout_seconds=deadline)
        rec["elapsedMs"] = round((time.monotonic() - started) * 1000)
        rec["outcome"] = "tool_error" if getattr(result, "is_error", False) else "result"
        rec["text"] = text_of(result)
    except Exception as exc:  # the SDK surfaced a failure for this call
        rec["elapsedMs"] = round((time.monotonic() - started) * 1000)
        rec.update(classify(exc))
    rec["phase"] = "next"
    try:
        nxt = await caller.call_tool("ping", {}, read_timeout_seconds=deadline)
        rec["nextCallOk"] = not getattr(nxt, "is_error", False) and '"ok"' in text_of(nxt)
    except Exception as exc:
        rec["nextCallOk"] = False
        rec["nextDetail"] = classify(exc)["errorType"]
    rec["phase"] = "close"


async def run_rounds_cell(rec: dict[str, Any], url: str, deadline: float) -> None:
    """The input_rounds cells (2026-07-28 multi-round-trip): the SDK's high-level Client, whose call_tool drives
    the input_required rounds itself (answering each form through elicitation_callback, at most
    input_required_max_rounds rounds); the low-level ClientSession.call_tool the other cells use would refuse the
    first input_required reply instead of answering it."""
    rec["phase"] = "connect"
    async with Client(url, mode="auto", read_timeout_seconds=deadline, elicitation_callback=accept_elicitation) as client:
        await call_then_ping(rec, client, deadline)


async def run_cell(rec: dict[str, Any], transport: str, open_transport, deadline: float) -> None:
    """Fills rec in place (see call_then_ping)."""
    rec["phase"] = "connect"
    async with open_transport() as (read, write):
        async with ClientSession(read, write, read_timeout_seconds=deadline,
                                 **answering(rec["tool"], rec["args"])) as session:
            if transport == "http-2026-07-28":
                await session.discover()
            else:
                await session.initialize()
            await call_then_ping(rec, session, deadline)


async def cell_with_bound(rec: dict[str, Any], transport: str, open_transport, deadline: float,
                          url: str | None = None) -> None:
    started = time.monotonic()
    bound = 2 * deadline + GRACE + 3
    try:
        with anyio.fail_after(bound):
            if rec["tool"] == "input_rounds" and transport == "http-2026-07-28":
                await run_rounds_cell(rec, url, deadline)
            else:
                await run_cell(rec, transport, open_transport, deadline)
    except TimeoutError:
        if rec["phase"] == "call":
            rec.update(outcome="hang", elapsedMs=round((time.monotonic() - started) * 1000),
                       errorType="HarnessDeadline", message=f"no answer within {bound} s")
            rec["nextCallOk"] = None
        elif rec["phase"] == "next":
            rec["nextCallOk"] = False
            rec["nextDetail"] = "HarnessDeadline"
        elif rec["phase"] == "connect":
            rec.update(outcome="error", errorType="ConnectTimeout", message="connect did not finish",
                       elapsedMs=0, nextCallOk=None)
    except BaseException as exc:  # the transport context raised (often an ExceptionGroup)
        if isinstance(exc, (KeyboardInterrupt, SystemExit)):
            raise
        info = classify(exc)
        if rec["phase"] == "call":
            rec.update(info)
            rec["outcome"] = "transport_loss"
            rec["elapsedMs"] = round((time.monotonic() - started) * 1000)
            rec["nextCallOk"] = False
        elif rec["phase"] == "next":
            rec["nextCallOk"] = False
            rec["nextDetail"] = info["errorType"]
        elif rec["phase"] == "connect":
            rec.update(info)
            rec.update(outcome="error", elapsedMs=0, nextCallOk=None)
            rec["message"] = "connect failed: " + rec.get("message", "")
        # phase close: the cell was decided; an error while tearing down is not part of the observation


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--bin", required=True, help="the faultlab binary")
    parser.add_argument("--cases", required=True, help="interop/matrix-cases.json")
    parser.add_argument("--transport", action="append", choices=TRANSPORTS,
                        help="transport(s) to run (default: all three)")
    parser.add_argument("--server-log", default=os.devnull, help="append server stderr here")
    args = parser.parse_args()

    binary = os.path.abspath(args.bin)
    with open(args.cases, encoding="utf-8") as f:
        spec = json.load(f)
    deadline = spec["deadlineMs"] / 1000
    transports = args.transport or list(TRANSPORTS)
    errlog = open(args.server_log, "a", encoding="utf-8")

    for transport in transports:
        for case in spec["cases"]:
            if transport not in case.get("transports", spec["transports"]):
                continue
            rec: dict[str, Any] = {"sdk": "python", "sdkVersion": f"mcp {SDK_VERSION}", "transport": transport,
                                   "tool": case["tool"], "args": case["args"]}
            server = None
            url = None
            try:
                if transport == "stdio":
                    params = StdioServerParameters(command=binary, args=["serve"])
                    opener = lambda: stdio_client(params, errlog=errlog)  # noqa: E731
                else:
                    server = HttpServer(binary, args.server_log, startup_timeout=15.0)
                    url = server.url
                    opener = lambda: streamable_http_client(url)  # noqa: E731
                anyio.run(cell_with_bound, rec, transport, opener, deadline, url)
            except Exception as exc:
                rec.update(outcome="error", errorType="HarnessError", message=str(exc)[:200], nextCallOk=None)
            finally:
                if server is not None:
                    server.close()
            rec.pop("phase", None)
            print(json.dumps(rec, sort_keys=True), flush=True)
    errlog.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
