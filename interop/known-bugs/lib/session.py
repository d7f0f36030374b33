"""What every Python reproduction's client shares: a 2025-11-25 session of the pinned SDK on the server's URL, with
every HTTP response (and, when asked, every request as it is sent) passed to an httpx event hook (how a check sees the
wire), initialized, and (`listed_session`) its tools listed first (the SDK lists tools to validate a result: listed
now, only the check's own calls meet the fault)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any

import anyio
import httpx2
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client

WHOLE_CHECK = 20  # seconds the session may take from its first request to its close


@asynccontextmanager
async def initialized_session(
    url: str,
    deadline: float,
    on_response: Callable[[httpx2.Response], Awaitable[None]],
    on_request: Callable[[httpx2.Request], Awaitable[None]] | None = None,
    **callbacks: Any,
) -> AsyncIterator[ClientSession]:
    """The session, initialized only (nothing listed: the SDK's own listings are part of what a check watches),
    its requests each bounded by `deadline` seconds and the whole by `WHOLE_CHECK`. `on_request` sees each request
    as it is sent, one that never gets a response included. `callbacks` go to `ClientSession` as given (e.g.
    `elicitation_callback`: the SDK declares a capability for each callback it is given)."""
    hooks: dict = {"response": [on_response]}
    if on_request is not None:
        hooks["request"] = [on_request]
    http = httpx2.AsyncClient(event_hooks=hooks, timeout=deadline)
    with anyio.fail_after(WHOLE_CHECK):
        async with http, streamable_http_client(url, http_client=http, terminate_on_close=False) as (read, write):
            async with ClientSession(read, write, read_timeout_seconds=deadline, **callbacks) as session:
                await session.initialize()
                yield session


@asynccontextmanager
async def listed_session(
    url: str, deadline: float, on_response: Callable[[httpx2.Response], Awaitable[None]]
) -> AsyncIterator[ClientSession]:
    """`initialized_session` with its tools listed once, before the check's own calls."""
    async with initialized_session(url, deadline, on_response) as session:
        await session.list_tools()
        yield session
