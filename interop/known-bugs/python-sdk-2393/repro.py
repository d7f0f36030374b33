#!/usr/bin/env python3
"""python-sdk #2393: a resumed SSE stream that ends without the response resets the reconnection attempt counter, so
`MAX_RECONNECTION_ATTEMPTS` never bounds the resumes and the client reconnects until its caller gives up.

Starts `faultlab serve --transport http --port 0` (FAULTLAB_BIN), opens a 2025-11-25 session with the pinned SDK and
calls the `stream_cut_again` tool with `resumes` 1000 and `retryMs` 25: the POST stream is cut after its priming event,
and every GET resuming it is answered `200 text/event-stream` and closed before any event (as a server whose replay
failed answers it; rust-sdk #958). Every GET carrying `Last-Event-ID` is logged from an httpx event hook.

Exit 0: the bug is still there (the client resumed more times than its own bound and the call ran into the caller's
deadline); exit 3: the client stopped after a bounded number of resumes and failed the call before the deadline (fixed
upstream); any other code: the check could not run. Every wait is bounded (the whole check by 20 s); the server is
killed on every path.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import anyio
import httpx2
import mcp.client.streamable_http as transport

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "lib"))
from serve import COULD_NOT_RUN, FIXED, REPRODUCED, run  # noqa: E402  (the shared start-up, beside this folder)
from session import listed_session  # noqa: E402

DEADLINE = 1.0  # seconds the caller waits for the call: 40 retry: intervals, far more than a bounded client needs
RETRY_MS = 25  # the priming event's retry:, so that the resumes come quickly
# The SDK's own bound on resumes (2 in 2.3.0); read from the SDK so that the verdict follows its setting.
BOUND = getattr(transport, "MAX_RECONNECTION_ATTEMPTS", 2)


async def observe(url: str) -> dict:
    resumes: list[dict] = []

    async def on_response(response: httpx2.Response) -> None:
        request = response.request
        if request.method == "GET" and "last-event-id" in request.headers:
            resumes.append({"id": request.headers["last-event-id"], "status": response.status_code,
                            "at": round(time.monotonic() - started, 2)})

    seen: dict = {"resumes": resumes}
    async with listed_session(url, DEADLINE, on_response) as session:
        started = time.monotonic()
        try:
            result = await session.call_tool("stream_cut_again", {"resumes": 1000, "retryMs": RETRY_MS},
                                             read_timeout_seconds=DEADLINE)
            seen["outcome"] = "tool_error" if getattr(result, "is_error", False) else "result"
        except Exception as exc:  # the SDK surfaced the failure of this call
            seen["outcome"] = f"error: {str(exc)[:100]}"
        seen["ended_after"] = round(time.monotonic() - started, 2)
        seen["resumes_by_then"] = len(resumes)
    return seen


def judge(seen: dict) -> tuple[int, str]:
    resumes, outcome, ended = seen["resumes"], seen.get("outcome", "none"), seen.get("ended_after")
    counted = seen.get("resumes_by_then", len(resumes))
    same_id = len({r["id"] for r in resumes}) == 1
    empty = all(r["status"] == 200 for r in resumes)
    if counted > BOUND + 1 and same_id and empty and outcome.startswith("error") and ended >= DEADLINE * 0.9:
        return REPRODUCED, (f"reproduced: {counted} GETs resumed the stream with Last-Event-ID {resumes[0]['id']}, "
                            f"each answered 200 and closed empty, past the SDK's bound of {BOUND} attempts; the call "
                            f"ended only at the caller's {DEADLINE:.0f} s deadline ({outcome})")
    if 1 <= counted <= BOUND + 1 and outcome.startswith("error") and ended < DEADLINE * 0.9:
        return FIXED, (f"behaved correctly: the client stopped after {counted} empty resumes and failed the call "
                       f"after {ended} s ({outcome})")
    return COULD_NOT_RUN, (f"could not decide: {counted} resumes ({resumes[:5]}...), outcome {outcome}, "
                           f"ended after {ended} s")


if __name__ == "__main__":
    sys.exit(run(lambda url: anyio.run(observe, url), judge))
