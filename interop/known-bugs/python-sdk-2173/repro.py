#!/usr/bin/env python3
"""python-sdk #2173: a non-2xx answer that is not JSON-RPC surfaces as "Server returned an error response",
without the HTTP status.

Starts `faultlab serve --transport http --port 0` (FAULTLAB_BIN), opens a 2025-11-25 session with the pinned SDK and
calls the `html_page` tool with status 502: the server answers that POST as a reverse proxy would, `502` with
nginx's `text/html` error page. An httpx event hook records the status and Content-Type the SDK received.

Exit 0: the bug is still there (the 502 text/html arrived on the wire, and the error the caller gets names neither
502 nor the content type); exit 3: the error names the status (fixed upstream); any other code: the check could
not run. Every wait is bounded (the call 3 s, the whole check 20 s); the server is killed on every path.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import threading

import anyio
import httpx2
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client

DEADLINE = 3.0  # seconds for the call
URL_RE = re.compile(r"listening at (http://\S+)")


def start_server(binary: str) -> tuple[subprocess.Popen[str], str]:
    proc = subprocess.Popen([binary, "serve", "--transport", "http", "--port", "0"], stdin=subprocess.DEVNULL,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, errors="replace")
    found: list[str] = []
    ready = threading.Event()

    def pump() -> None:
        assert proc.stderr is not None
        for line in proc.stderr:
            if not found and (m := URL_RE.search(line)):
                found.append(m.group(1))
                ready.set()
        ready.set()

    threading.Thread(target=pump, daemon=True).start()
    if not ready.wait(15) or not found:
        proc.kill()
        raise RuntimeError("faultlab serve printed no 'listening at' URL within 15 s")
    return proc, found[0]


async def observe(url: str) -> dict:
    answers: list[tuple[int, str]] = []

    async def on_response(response: httpx2.Response) -> None:
        if response.request.method == "POST":
            answers.append((response.status_code, response.headers.get("content-type", "")))

    seen: dict = {"answers": answers, "error": None, "result": None}
    http = httpx2.AsyncClient(event_hooks={"response": [on_response]}, timeout=DEADLINE)
    with anyio.fail_after(20):
        async with http, streamable_http_client(url, http_client=http, terminate_on_close=False) as (read, write):
            async with ClientSession(read, write, read_timeout_seconds=DEADLINE) as session:
                await session.initialize()
                await session.list_tools()  # listed now, so the result check does not list again
                try:
                    seen["result"] = await session.call_tool("html_page", {"status": 502}, read_timeout_seconds=DEADLINE)
                except Exception as exc:  # the failure the caller gets
                    seen["error"] = str(exc)
    return seen


def main() -> int:
    binary = os.environ.get("FAULTLAB_BIN")
    if not binary:
        print("could not run: FAULTLAB_BIN is not set")
        return 2
    proc, url = start_server(binary)
    try:
        seen = anyio.run(observe, url)
    except Exception as exc:
        print(f"could not run: {type(exc).__name__}: {exc}")
        return 2
    finally:
        proc.kill()
        proc.wait(timeout=5)
    wire = (502, "text/html; charset=utf-8") in seen["answers"]
    error = seen["error"]
    if not wire or error is None:
        print(f"could not decide: answers {seen['answers']}, error {error!r}, result {seen['result']!r}")
        return 2
    if "502" not in error and "text/html" not in error:
        print(f"the server answered 502 text/html; the caller got {error!r}: neither the status nor the content type")
        return 0
    print(f"the caller's error names the answer: {error!r}")
    return 3


if __name__ == "__main__":
    sys.exit(main())
