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

import sys
from pathlib import Path

import anyio
import httpx2

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "lib"))
from serve import COULD_NOT_RUN, FIXED, REPRODUCED, run  # noqa: E402  (the shared start-up, beside this folder)
from session import listed_session  # noqa: E402

DEADLINE = 3.0  # seconds for the call



async def observe(url: str) -> dict:
    answers: list[tuple[int, str]] = []

    async def on_response(response: httpx2.Response) -> None:
        if response.request.method == "POST":
            answers.append((response.status_code, response.headers.get("content-type", "")))

    seen: dict = {"answers": answers, "error": None, "result": None}
    async with listed_session(url, DEADLINE, on_response) as session:
        try:
            seen["result"] = await session.call_tool("html_page", {"status": 502}, read_timeout_seconds=DEADLINE)
        except Exception as exc:  # the failure the caller gets
            seen["error"] = str(exc)
    return seen


def judge(seen: dict) -> tuple[int, str]:
    wire = (502, "text/html; charset=utf-8") in seen["answers"]
    error = seen["error"]
    if not wire or error is None:
        return COULD_NOT_RUN, f"could not decide: answers {seen['answers']}, error {error!r}, result {seen['result']!r}"
    if "502" not in error and "text/html" not in error:
        return REPRODUCED, (f"the server answered 502 text/html; the caller got {error!r}: neither the status nor "
                            "the content type")
    return FIXED, f"the caller's error names the answer: {error!r}"


if __name__ == "__main__":
    sys.exit(run(lambda url: anyio.run(observe, url), judge))
