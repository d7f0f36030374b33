#!/usr/bin/env python3
"""python-sdk #3556: after a 404 for its session the Streamable HTTP client never starts a new session.

Starts `faultlab serve --transport http --port 0` (FAULTLAB_BIN), opens a 2025-11-25 session with the pinned SDK,
calls the `session_loss` tool (`after_response`: the result arrives, then the server forgets the session, so every
later request with that id gets 404 and JSON-RPC -32001), then calls `ping` twice. Every POST is logged from an httpx
event hook: the JSON-RPC method, the `Mcp-Session-Id` it carried and the status it got.

Exit 0: the bug is still there (no new `initialize` after the 404, and the stale id is sent again);
exit 3: the client started a new session and a call succeeded (fixed upstream); any other code: the check could
not run. Every wait is bounded (the whole check by 20 s); the server is killed on every path.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import anyio
import httpx2

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "lib"))
from serve import COULD_NOT_RUN, FIXED, REPRODUCED, run  # noqa: E402  (the shared start-up, beside this folder)
from session import listed_session  # noqa: E402

DEADLINE = 3.0  # seconds for one call; a correct client re-initialises well within it on loopback



async def observe(url: str) -> dict:
    posts: list[dict] = []

    async def on_response(response: httpx2.Response) -> None:
        request = response.request
        if request.method != "POST":
            return
        try:
            method = json.loads(request.content or b"{}").get("method")
        except ValueError:
            method = None
        posts.append({"method": method, "session": request.headers.get("mcp-session-id"),
                      "status": response.status_code})

    seen: dict = {"posts": posts, "calls": []}
    async with listed_session(url, DEADLINE, on_response) as session:
        await session.call_tool("session_loss", {"activation": "after_response"})
        for _ in range(2):
            try:
                result = await session.call_tool("ping", {}, read_timeout_seconds=DEADLINE)
                seen["calls"].append("ok" if not getattr(result, "is_error", False) else "tool_error")
            except Exception as exc:  # the SDK surfaced the failure of this call
                seen["calls"].append(f"error: {str(exc)[:80]}")
    return seen


def judge(seen: dict) -> tuple[int, str]:
    posts = seen["posts"]
    inits = [p for p in posts if p["method"] == "initialize"]
    after_loss = posts[next((i for i, p in enumerate(posts) if p["status"] == 404), len(posts)):]
    stale = [p for p in after_loss if p["status"] == 404 and p["session"] == posts[-1]["session"]]
    if len(inits) == 1 and len(stale) >= 2 and not any(c == "ok" for c in seen["calls"]):
        return REPRODUCED, (f"after the 404 no new initialize was sent; {len(stale)} POSTs carried the dead session "
                            f"id and got 404; calls: {seen['calls']}")
    if len(inits) >= 2 and seen["calls"] and seen["calls"][-1] == "ok":
        return FIXED, f"the client sent a new initialize after the 404 and the call succeeded; calls: {seen['calls']}"
    return COULD_NOT_RUN, f"could not decide: initializes {len(inits)}, POSTs {posts}, calls {seen['calls']}"


if __name__ == "__main__":
    sys.exit(run(lambda url: anyio.run(observe, url), judge))
