#!/usr/bin/env python3
"""python-sdk #2673: an exception raised in a ClientSession callback is swallowed; the server gets an error reply
and the caller of call_tool never sees the exception.

Starts `faultlab serve --transport http --port 0` (FAULTLAB_BIN) and opens a 2025-11-25 session with the pinned SDK,
given an `elicitation_callback` that raises `HostStoppedToAsk` (what a host raises to stop and ask its user, e.g. a
LangGraph `interrupt()`, the issue's case). It calls the `ask_client` tool with `ask: elicitation_form`: during the
call the server sends `elicitation/create` on the call's response stream and finishes the call with what the client
answered (the answer as it arrived, in the result's JSON). Every POST the client sends is logged from an httpx event
hook, so the client's answer to the server's request is seen as it went on the wire.

Exit 0: the bug is still there (the client POSTed an error response to the server's `elicitation/create` and
call_tool returned a result: the callback's exception never reached its caller); exit 3: call_tool raised the
callback's exception (fixed upstream); any other code: the check could not run. Every wait is bounded (one call by
5 s, the whole check by 20 s); the server is killed on every path.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import anyio
import httpx2

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "lib"))
from serve import COULD_NOT_RUN, FIXED, REPRODUCED, run  # noqa: E402  (the shared start-up, beside this folder)
from session import initialized_session  # noqa: E402

DEADLINE = 5.0  # seconds for one call; the server asks and the client answers within milliseconds on loopback
MESSAGE = "the host stopped the call to ask its user"


class HostStoppedToAsk(Exception):
    """What the client application raises in its callback to stop and hand the question to its user."""


def _carries(exc: BaseException, kind: type[BaseException]) -> bool:
    """Whether `exc` is, groups, or is caused by an exception of `kind`."""
    seen: set[int] = set()
    stack = [exc]
    while stack:
        current = stack.pop()
        if id(current) in seen:
            continue
        seen.add(id(current))
        if isinstance(current, kind):
            return True
        stack.extend(getattr(current, "exceptions", ()) or ())
        stack.extend(e for e in (current.__cause__, current.__context__) if e is not None)
    return False


async def observe(url: str) -> dict:
    posts: list[dict] = []

    async def on_request(request: httpx2.Request) -> None:
        if request.method != "POST":
            return
        try:
            body = json.loads(request.content or b"{}")
        except ValueError:
            body = None
        posts.append(body if isinstance(body, dict) else {"unparsed": True})

    async def on_response(response: httpx2.Response) -> None:
        return None

    async def elicitation_callback(context, params):  # noqa: ANN001  (the SDK's ElicitationFnT)
        raise HostStoppedToAsk(MESSAGE)

    seen: dict = {"posts": posts, "call": None, "result": None}
    try:
        async with initialized_session(url, DEADLINE, on_response, on_request,
                                       elicitation_callback=elicitation_callback) as session:
            result = await session.call_tool("ask_client", {"ask": "elicitation_form"}, read_timeout_seconds=DEADLINE)
            seen["call"] = "result"
            seen["result"] = {"is_error": bool(getattr(result, "is_error", False)),
                              "text": next((c.text for c in result.content if getattr(c, "text", None)), "")}
    except BaseException as exc:  # the SDK surfaced something to the caller: the callback's exception or another
        if not isinstance(exc, Exception) and not _carries(exc, HostStoppedToAsk):
            raise
        seen["call"] = "raised the callback's exception" if _carries(exc, HostStoppedToAsk) else (
            f"raised {type(exc).__name__}: {str(exc)[:80]}")
    return seen


def judge(seen: dict) -> tuple[int, str]:
    asked = [p for p in seen["posts"] if "error" in p and "method" not in p]  # the client's error answers
    answer = asked[0]["error"] if asked else None
    if seen["call"] == "result" and answer is not None:
        return REPRODUCED, (f"the callback's exception became the error answer {json.dumps(answer)} POSTed to the "
                            f"server's elicitation/create, and call_tool returned a result (isError "
                            f"{seen['result']['is_error']}, {seen['result']['text'][:90]}): the exception never "
                            f"reached the caller")
    if seen["call"] == "raised the callback's exception":
        return FIXED, f"call_tool raised the callback's exception; the client's answers: {asked}"
    return COULD_NOT_RUN, f"could not decide: call {seen['call']}, result {seen['result']}, POSTs {seen['posts']}"


if __name__ == "__main__":
    sys.exit(run(lambda url: anyio.run(observe, url), judge))
