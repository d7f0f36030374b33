#!/usr/bin/env python3
"""python-sdk #3522: one request whose connection is reset before its response ends the whole Streamable HTTP client.

Starts `faultlab serve --transport http --port 0` behind `faultlab proxy --listen 127.0.0.1:0 --upstream` (FAULTLAB_BIN)
with one rule: a `tools/call` of `delay` gets the `disconnect` fault, so the proxy resets that POST's connection
before any response header (the server stays up; every other request is forwarded). The proxy's trajectory is
faultlab's side of the wire: every frame it received. Two 2025-11-25 sessions of the pinned SDK, one after the other:

- held: the session is opened by one task and held open for the application's lifetime, its calls made by another
  task (how an application keeps one MCP client for its requests: the issue's sequence). It calls `delay`
  (the reset), then, on the same session, sends a `ping`.
- plain: the same two requests inside the `async with` blocks themselves.

Every request the client's HTTP client sends (the JSON-RPC method) and every response it gets are logged from httpx
event hooks.

Exit 0: the bug is still there (the POST fails with `httpx2.TransportError`, which escapes the transport's task group:
in the held session the reset call and then the ping fail with "Connection closed", the ping never sent, and leaving
the client's context raises an ExceptionGroup holding the transport error; in the plain one neither call returns or
raises: the block is cancelled and the same ExceptionGroup escapes); exit 3: the reset call failed alone and the ping
on the same session succeeded in both (fixed upstream); any other code: the check could not run. Every wait is
bounded (each request by 3 s, each session by 20 s); both faultlab processes are stopped on every path.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import anyio
import httpx2

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "lib"))
from serve import COULD_NOT_RUN, FIXED, REPRODUCED, run_proxied  # noqa: E402  (the shared start-up, beside this folder)
from session import initialized_session  # noqa: E402

DEADLINE = 3.0  # seconds for one request; on loopback a reset fails at once and a ping is answered at once
WHOLE = 20.0  # seconds both sessions may take together
RESET_TOOL = "delay"  # any plain tool of faultlab serve: the proxy's rule, not the tool, breaks the call
RULE = f"{{match: {{tool: {RESET_TOOL}}}, fault: {{type: disconnect}}}}"  # one proxy --fault spec


def wire_log(log: list[dict]):
    """httpx event hooks: each request as it is sent ("sent"), each response as it arrives ("answered")."""

    def method_of(request: httpx2.Request) -> str | None:
        try:
            return json.loads(request.content or b"{}").get("method")
        except ValueError:
            return None

    async def on_request(request: httpx2.Request) -> None:
        if request.method == "POST":
            log.append({"sent": method_of(request)})

    async def on_response(response: httpx2.Response) -> None:
        if response.request.method == "POST":
            log.append({"answered": method_of(response.request), "status": response.status_code})

    return on_request, on_response


def describe(exc: BaseException) -> str:
    """An exception and, for a group, what it holds (one level down is where the transport's error sits)."""
    if isinstance(exc, BaseExceptionGroup):
        inner = ", ".join(describe(e) for e in exc.exceptions)
        return f"{type(exc).__name__}[{inner}]"
    return f"{type(exc).__module__.split('.')[0]}.{type(exc).__name__}: {str(exc)[:80]}"


async def two_requests(session, seen: dict) -> None:
    """The two requests, each outcome recorded as soon as it is known (a cancelled block records nothing more)."""
    try:
        await session.call_tool(RESET_TOOL, {"delayMs": 0}, read_timeout_seconds=DEADLINE)
        seen["call"] = "returned a result"
    except Exception as exc:  # the SDK reported this call's failure: what a correct client does
        seen["call"] = f"raised {type(exc).__name__}: {exc}"
    try:
        await session.send_ping()
        seen["ping"] = "ok"
    except Exception as exc:
        seen["ping"] = f"raised {type(exc).__name__}: {exc}"


async def held(url: str) -> dict:
    seen: dict = {"wire": []}
    on_request, on_response = wire_log(seen["wire"])
    opened, done = anyio.Event(), anyio.Event()
    sessions: list = []

    async def owner() -> None:
        try:
            async with initialized_session(url, DEADLINE, on_response, on_request) as session:
                sessions.append(session)
                opened.set()
                await done.wait()
            seen["close"] = "clean"
        except Exception as exc:  # what leaving the client's context raised: where the bug shows itself
            seen["close"] = describe(exc)
        finally:
            opened.set()

    async with anyio.create_task_group() as tg:
        tg.start_soon(owner)
        await opened.wait()
        if sessions:
            await two_requests(sessions[0], seen)
        done.set()
    return seen


async def plain(url: str) -> dict:
    seen: dict = {"wire": []}
    on_request, on_response = wire_log(seen["wire"])
    try:
        async with initialized_session(url, DEADLINE, on_response, on_request) as session:
            await two_requests(session, seen)
        seen["close"] = "clean"
    except Exception as exc:
        seen["close"] = describe(exc)
    return seen


async def observe_both(url: str) -> dict:
    with anyio.fail_after(WHOLE):
        return {"held": await held(url), "plain": await plain(url)}


def after_call(wire: list[dict]) -> list[str]:
    """The POSTs the client sent after the reset call's."""
    sent = [e["sent"] for e in wire if "sent" in e]
    return sent[sent.index("tools/call") + 1:] if "tools/call" in sent else []


def judge(seen: dict) -> tuple[int, str]:
    trajectory = seen["trajectory"]
    frames = [e for e in trajectory if e.get("event") == "frame"]
    resets = [e for e in frames if e.get("direction") == "client_to_server" and e.get("method") == "tools/call"
              and e.get("fault") == "disconnect"]
    pings_in = [e for e in frames if e.get("direction") == "client_to_server" and e.get("method") == "ping"]
    ping_ids = {e.get("id") for e in pings_in}
    # A ping's answer: a reply forwarded with its id (the reset call's is consumed by the fault).
    pings_out = [e for e in frames if e.get("direction") == "server_to_client" and e.get("id") in ping_ids
                 and e.get("action") == "forwarded" and not e.get("error")]
    held_s, plain_s = seen["held"], seen["plain"]
    # The scenario is a reset before any response header: a call's POST that got a response is another scenario.
    headers = [e for s in (held_s, plain_s) for e in s["wire"] if e.get("answered") == "tools/call"]
    facts = (f"proxy: {len(resets)} tools/call reset by disconnect, {len(pings_in)} pings received, "
             f"{len(pings_out)} answered")
    if len(resets) != 2 or headers:
        return COULD_NOT_RUN, f"could not decide: not the scenario ({facts}; responses to tools/call {headers})"
    held_words = (f"held session: the reset call {held_s.get('call', 'never returned')}, then the ping "
                  f"{held_s.get('ping', 'never returned')}, POSTs after the call {after_call(held_s['wire'])}, "
                  f"leaving the context: {held_s.get('close')}")
    plain_call = plain_s.get("call", "neither returned nor raised (the block was cancelled)")
    plain_words = (f"plain session: the call {plain_call}, the ping {plain_s.get('ping', 'never sent')}, "
                   f"leaving the context: {plain_s.get('close')}")
    escaped = all("ExceptionGroup" in s.get("close", "") and "httpx2.RemoteProtocolError" in s.get("close", "")
                  for s in (held_s, plain_s))
    held_dead = ("Connection closed" in held_s.get("ping", "") and not after_call(held_s["wire"])
                 and "raised" in held_s.get("call", ""))
    plain_cancelled = "call" not in plain_s and "ping" not in plain_s
    if escaped and held_dead and plain_cancelled and not pings_in:
        return REPRODUCED, (f"the reset POST's RemoteProtocolError escaped the transport's task group and ended the "
                            f"client: {held_words}; {plain_words}; {facts}")
    both_fine = all(s.get("call", "").startswith("raised") and s.get("ping") == "ok" and s.get("close") == "clean"
                    for s in (held_s, plain_s))
    if both_fine and len(pings_in) == 2 and len(pings_out) == 2:
        return FIXED, f"the reset call failed alone and the ping on the same session succeeded: {held_words}; " \
                      f"{plain_words}; {facts}"
    return COULD_NOT_RUN, f"could not decide: {held_words}; {plain_words}; {facts}"


if __name__ == "__main__":
    sys.exit(run_proxied(lambda url: anyio.run(observe_both, url), judge, RULE))
