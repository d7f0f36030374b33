#!/usr/bin/env python3
"""Interop check: the official MCP Python SDK (`mcp` on PyPI) against `faultlab serve`.

For each protocol era (2025-11-25 via `initialize`, 2026-07-28 via `server/discover`) it opens one
connection over the chosen transport and checks, in order:

  connect          the handshake / discovery succeeds at the expected protocol version
  list_tools       tools/list names ping, delay, hang and disconnect
  ping             tools/call ping answers {"status": "ok"}
  delay            tools/call delay {delayMs: 50} answers, and not before 50 ms
  hang_timeout     tools/call hang raises the SDK's client-side read timeout (MCPError REQUEST_TIMEOUT)
  ping_after_hang  the same connection still works after the abandoned request
  disconnect       tools/call disconnect raises a transport failure (never a result, never a mere timeout)

and over HTTP additionally:

  reconnect_after_disconnect  a new connection to the same server works (the server keeps listening)
  sigterm_exit                the server exits 0 on SIGTERM (checked once, at the end)

Each check prints one JSON line {"check", "ok", "detail", "transport", "protocol", "seconds"} on stdout.
Exit status: 0 if every check passed, 1 if any failed, 2 on a usage or setup error. Every wait is bounded:
per request (--request-timeout), per check run (--overall-timeout) and by a watchdog that kills the process.
"""

from __future__ import annotations

import argparse
import json
import os
import queue
import re
import signal
import subprocess
import sys
import threading
import time
from contextlib import ExitStack
from typing import Any, Callable

import anyio
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError
from mcp_types import CONNECTION_CLOSED, REQUEST_TIMEOUT

from checklog import SDK_VERSION, Checks, describe

LEGACY = "2025-11-25"
MODERN = "2026-07-28"
REQUIRED_TOOLS = ("ping", "delay", "hang", "disconnect")
URL_RE = re.compile(r"listening at (http://\S+)")


def is_timeout(exc: BaseException) -> bool:
    return isinstance(exc, MCPError) and exc.code == REQUEST_TIMEOUT


def text_of(result: Any) -> str:
    parts = [getattr(c, "text", "") for c in (result.content or [])]
    return "".join(p for p in parts if p)


class EraRun:
    """Runs the per-connection checks for one protocol era and remembers which check is in flight."""

    def __init__(self, checks: Checks, protocol: str, args: argparse.Namespace) -> None:
        self.checks = checks
        self.protocol = protocol
        self.args = args
        self.pending: str | None = None
        self.pending_started = 0.0
        self.remaining = ["connect", "list_tools", "ping", "delay", "hang_timeout", "ping_after_hang", "disconnect"]

    def record(self, check: str, ok: bool, detail: Any, seconds: float | None = None) -> None:
        if check in self.remaining:
            self.remaining.remove(check)
        self.pending = None
        self.checks.record(check, ok, detail, protocol=self.protocol, seconds=seconds)

    async def step(self, check: str, body: Callable[[], Any]) -> bool:
        """Run one check; `body` returns (ok, detail). An Exception fails the check, nothing else is caught."""
        self.pending, self.pending_started = check, time.monotonic()
        try:
            ok, detail = await body()
        except Exception as exc:  # a failed request is a failed check; cancellation propagates
            self.record(check, False, {"exception": describe(exc)}, time.monotonic() - self.pending_started)
            return False
        self.record(check, ok, detail, time.monotonic() - self.pending_started)
        return ok

    async def run(self, session: ClientSession) -> None:
        a = self.args

        async def connect():
            if self.protocol == LEGACY:
                result = await session.initialize()
                info = result.server_info
            else:
                await session.discover()
                info = session.server_info
            negotiated = session.protocol_version
            detail = {"negotiated": negotiated, "server": info.model_dump(exclude_none=True) if info else None}
            return negotiated == self.protocol, detail

        if not await self.step("connect", connect):
            return  # nothing else can work; the rest are reported as not reached

        async def list_tools():
            result = await session.list_tools()
            names = sorted(t.name for t in result.tools)
            missing = [n for n in REQUIRED_TOOLS if n not in names]
            return not missing, {"count": len(names), "missing": missing}

        await self.step("list_tools", list_tools)

        async def ping(check: str = "ping"):
            result = await session.call_tool("ping", {})
            text = text_of(result)
            try:
                status = json.loads(text).get("status")
            except (ValueError, AttributeError):
                status = None
            return (not result.is_error and status == "ok"), {"isError": result.is_error, "text": text}

        await self.step("ping", ping)

        async def delay():
            started = time.monotonic()
            result = await session.call_tool("delay", {"delayMs": a.delay_ms})
            elapsed = time.monotonic() - started
            text = text_of(result)
            ok = not result.is_error and elapsed >= a.delay_ms / 1000 * 0.9
            return ok, {"isError": result.is_error, "text": text, "elapsedMs": round(elapsed * 1000, 1)}

        await self.step("delay", delay)

        async def timed_call(tool: str, timeout: float):
            """Calls `tool` without arguments and with a read timeout of `timeout` s: the result or the exception
            it raised (the other is None), and the seconds it took."""
            started = time.monotonic()
            try:
                result, exc = await session.call_tool(tool, {}, read_timeout_seconds=timeout), None
            except Exception as exc_:  # what an exception means is each check's to decide
                result, exc = None, exc_
            return result, exc, time.monotonic() - started

        async def hang_timeout():
            result, exc, elapsed = await timed_call("hang", a.hang_timeout)
            if isinstance(exc, MCPError):
                ok = is_timeout(exc) and elapsed >= a.hang_timeout * 0.9
                return ok, {"raised": describe(exc), "elapsedMs": round(elapsed * 1000, 1)}
            if exc is not None:
                raise exc
            return False, {"unexpected": "hang answered", "isError": result.is_error, "text": text_of(result)}

        await self.step("hang_timeout", hang_timeout)
        await self.step("ping_after_hang", ping)

        async def disconnect():
            result, exc, elapsed = await timed_call("disconnect", a.disconnect_timeout)
            if exc is None:
                return False, {"unexpected": "disconnect returned a result", "isError": result.is_error,
                               "text": text_of(result)}
            detail = {"raised": describe(exc), "elapsedMs": round(elapsed * 1000, 1)}
            if not isinstance(exc, MCPError):  # any other transport exception is the expected outcome too
                return True, detail
            if is_timeout(exc):
                detail["problem"] = (
                    f"no transport failure within {a.disconnect_timeout} s: the SDK only timed out, "
                    "so the connection was never seen to close"
                )
                return False, detail
            detail["connectionClosed"] = exc.code == CONNECTION_CLOSED
            return True, detail

        await self.step("disconnect", disconnect)

    def connection_failed(self, exc: BaseException) -> None:
        """The transport context itself raised: decide the in-flight check, then mark the rest not reached."""
        if self.pending is not None:
            check, seconds = self.pending, time.monotonic() - self.pending_started
            # A disconnect that tears the whole transport down is exactly the failure the check wants to see.
            self.record(check, check == "disconnect", {"transportRaised": describe(exc)}, seconds)
        self.not_reached(f"connection ended early: {type(exc).__name__}: {exc}")

    def not_reached(self, why: str) -> None:
        for check in list(self.remaining):
            self.record(check, False, {"notReached": why})


async def run_era(checks: Checks, protocol: str, args: argparse.Namespace, open_transport) -> None:
    era = EraRun(checks, protocol, args)
    try:
        with anyio.fail_after(args.era_timeout):
            async with open_transport() as (read, write):
                async with ClientSession(read, write, read_timeout_seconds=args.request_timeout) as session:
                    await era.run(session)
    except TimeoutError as exc:
        era.connection_failed(TimeoutError(f"era did not finish within {args.era_timeout} s ({exc!r})"))
    except Exception as exc:
        era.connection_failed(exc)
    # Only a failed connect leaves checks unreported without an exception.
    if era.remaining:
        era.not_reached("connect failed")


class HttpServer:
    """`BIN serve --transport http --port 0`: reads the URL from stderr, keeps draining it to a log."""

    def __init__(self, binary: str, log_path: str | None, startup_timeout: float) -> None:
        self.log = open(log_path, "a", encoding="utf-8") if log_path else None
        self.proc = subprocess.Popen(
            [binary, "serve", "--transport", "http", "--port", "0"],
            stdin=subprocess.DEVNULL,
            stdout=self.log or subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
            errors="replace",
        )
        self._urls: queue.Queue[str | None] = queue.Queue()
        self._drain = threading.Thread(target=self._pump, daemon=True)
        self._drain.start()
        try:
            url = self._urls.get(timeout=startup_timeout)
        except queue.Empty:
            url = None
        if url is None:
            try:
                exited = self.proc.wait(timeout=1)
            except subprocess.TimeoutExpired:
                exited = None
            self.stop_hard()
            why = f"exited with {exited}" if exited is not None else f"still silent after {startup_timeout} s"
            raise RuntimeError(f"server printed no 'listening at' URL ({why})")
        self.url = url

    def _pump(self) -> None:
        assert self.proc.stderr is not None
        found = False
        for line in self.proc.stderr:
            if self.log:
                self.log.write(line)
                self.log.flush()
            if not found and (m := URL_RE.search(line)):
                found = True
                self._urls.put(m.group(1))
        if not found:
            self._urls.put(None)

    def sigterm(self, grace: float) -> tuple[bool, dict[str, Any]]:
        started = time.monotonic()
        self.proc.send_signal(signal.SIGTERM)
        try:
            code = self.proc.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            self.stop_hard()
            return False, {"problem": f"still running {grace} s after SIGTERM; killed"}
        self._drain.join(timeout=2)
        return code == 0, {"exitCode": code, "elapsedMs": round((time.monotonic() - started) * 1000, 1)}

    def stop_hard(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            try:
                self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                pass

    def close(self) -> None:
        self.stop_hard()
        if self.log:
            self.log.close()


async def http_reconnect_check(checks: Checks, url: str, protocol: str, args: argparse.Namespace) -> None:
    started = time.monotonic()
    try:
        with anyio.fail_after(args.request_timeout * 2):
            async with streamable_http_client(url) as (read, write):
                async with ClientSession(read, write, read_timeout_seconds=args.request_timeout) as session:
                    if protocol == LEGACY:
                        await session.initialize()
                    else:
                        await session.discover()
                    result = await session.call_tool("ping", {})
        text = text_of(result)
        ok = not result.is_error and '"ok"' in text
        checks.record("reconnect_after_disconnect", ok, {"text": text}, protocol=protocol,
                      seconds=time.monotonic() - started)
    except Exception as exc:
        checks.record("reconnect_after_disconnect", False, {"exception": describe(exc)}, protocol=protocol,
                      seconds=time.monotonic() - started)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--transport", choices=("stdio", "http"), required=True)
    parser.add_argument("--bin", required=True, help="the faultlab binary")
    parser.add_argument("--protocol", choices=(LEGACY, MODERN, "all"), default="all",
                        help="which protocol era(s) to check (default: all)")
    parser.add_argument("--server-log", help="append the server's stderr to this file (default: discard)")
    parser.add_argument("--delay-ms", type=int, default=50)
    parser.add_argument("--hang-timeout", type=float, default=1.0, help="client read timeout for hang, s")
    parser.add_argument("--disconnect-timeout", type=float, default=5.0,
                        help="how long disconnect may take to surface as a failure, s")
    parser.add_argument("--request-timeout", type=float, default=10.0, help="read timeout for every other request, s")
    parser.add_argument("--era-timeout", type=float, default=45.0, help="bound on one era's connection, s")
    parser.add_argument("--overall-timeout", type=float, default=150.0,
                        help="watchdog: the process exits with a failure after this many seconds")
    args = parser.parse_args()

    binary = os.path.abspath(args.bin)
    if not (os.path.isfile(binary) and os.access(binary, os.X_OK)):
        print(f"client_check: not an executable file: {args.bin}", file=sys.stderr)
        return 2
    protocols = [LEGACY, MODERN] if args.protocol == "all" else [args.protocol]
    checks = Checks(transport=args.transport, protocol=None)
    print(f"client_check: mcp {SDK_VERSION}, transport {args.transport}, protocols {', '.join(protocols)}",
          file=sys.stderr, flush=True)

    with ExitStack() as stack:
        server: HttpServer | None = None

        def watchdog_fired() -> None:
            checks.record("overall_timeout", False, {"problem": f"run exceeded {args.overall_timeout} s"})
            if server is not None:
                server.stop_hard()
            os._exit(1)

        watchdog = threading.Timer(args.overall_timeout, watchdog_fired)
        watchdog.daemon = True
        watchdog.start()
        stack.callback(watchdog.cancel)

        if args.transport == "stdio":
            errlog = stack.enter_context(open(args.server_log or os.devnull, "a", encoding="utf-8"))
            params = StdioServerParameters(command=binary, args=["serve"])
            for protocol in protocols:
                anyio.run(run_era, checks, protocol, args, lambda: stdio_client(params, errlog=errlog))
        else:
            try:
                server = HttpServer(binary, args.server_log, startup_timeout=15.0)
            except Exception as exc:
                checks.record("server_start", False, {"exception": describe(exc)})
                return 1
            stack.callback(server.close)
            print(f"client_check: server at {server.url}", file=sys.stderr, flush=True)
            for protocol in protocols:
                anyio.run(run_era, checks, protocol, args, lambda: streamable_http_client(server.url))
                anyio.run(http_reconnect_check, checks, server.url, protocol, args)
            ok, detail = server.sigterm(grace=10.0)
            checks.record("sigterm_exit", ok, detail)

    return 1 if checks.failed else 0


if __name__ == "__main__":
    sys.exit(main())
