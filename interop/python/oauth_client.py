#!/usr/bin/env python3
"""The official MCP Python SDK's OAuth client (OAuthClientProvider, an httpx2 auth flow), headless, against
`faultlab serve --transport http --auth [--auth-fault FAULT]`.

The redirect handler fetches the authorization URL without following the redirect (faultlab approves at once), and
the callback handler hands the SDK the code, state and iss of its Location. The client connects, then lists the
tools `--calls` times on the same session. One JSON line on stdout, the shape of interop/ts/oauth_client.mjs:
  {sdk, sdkVersion, fault, outcome: ok|error|timeout, error, callsOk, calls, redirects, auth: {EVENT: count}}
Every wait is bounded by --deadline (seconds); the server is killed on every path. Exit 0 when it ran.

  python oauth_client.py --bin FAULTLAB [--fault FAULT] [--calls N] [--deadline S]
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import threading
from importlib.metadata import version

import anyio
from headless_oauth import Memory, provider  # beside this script
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client


class Server:
    """`faultlab serve --auth` on a free port; its auth events counted from stderr."""

    def __init__(self, binary: str, fault: str | None) -> None:
        args = [binary, "serve", "--transport", "http", "--port", "0", "--auth"]
        if fault:
            args += ["--auth-fault", fault]
        self.proc = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                     text=True)
        self.events: dict[str, int] = {}
        self.ready = threading.Event()
        self.url: str | None = None
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            listening = re.match(r"faultlab: listening at (\S+)", line)
            if listening:
                self.url = listening.group(1)
                self.ready.set()
            if line.startswith("{"):
                try:
                    event = json.loads(line)
                except ValueError:
                    continue
                if "auth" in event:
                    self.events[event["auth"]] = self.events.get(event["auth"], 0) + 1
        self.ready.set()

    def close(self) -> None:
        self.proc.kill()
        self.proc.wait()


async def run(url: str, calls: int, record: dict) -> None:
    def redirected() -> None:
        record["redirects"] += 1

    auth = provider(url, Memory(), "faultlab-oauth-interop", redirected)
    async with create_mcp_http_client(auth=auth) as http:
        async with streamable_http_client(url, http_client=http) as streams:
            async with ClientSession(streams[0], streams[1]) as session:
                await session.initialize()
                for _ in range(calls):
                    await session.list_tools()
                    record["callsOk"] += 1


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--bin", required=True)
    parser.add_argument("--fault")
    parser.add_argument("--calls", type=int, default=3)
    parser.add_argument("--deadline", type=float, default=10.0)
    args = parser.parse_args()
    record = {"sdk": "python", "sdkVersion": version("mcp"), "fault": args.fault, "outcome": "ok", "error": None,
              "callsOk": 0, "calls": args.calls, "redirects": 0}
    server = Server(args.bin, args.fault)
    try:
        if not server.ready.wait(args.deadline) or server.url is None:
            raise RuntimeError("faultlab did not start listening")

        async def bounded() -> None:
            with anyio.fail_after(args.deadline):
                await run(server.url, args.calls, record)

        anyio.run(bounded)
    except TimeoutError:
        record.update(outcome="timeout", error=f"no end within {args.deadline} s")
    except BaseException as exc:  # noqa: BLE001  (an ExceptionGroup from the task group is what the SDK raises)
        inner = exc
        while isinstance(inner, BaseExceptionGroup) and inner.exceptions:
            inner = inner.exceptions[0]
        record.update(outcome="timeout" if isinstance(inner, TimeoutError) else "error",
                      error=f"{type(inner).__name__}: {inner}"[:300])
    finally:
        server.close()
    record["auth"] = server.events
    print(json.dumps(record), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
