#!/usr/bin/env python3
"""python-sdk #3250: an OAuthClientProvider built again over stored tokens never refreshes: it re-authorizes.

Starts `faultlab serve --transport http --port 0 --auth --auth-token-ttl 1` (FAULTLAB_BIN): access tokens live 1 s,
refresh tokens longer. A first provider authorizes headlessly (faultlab approves at once; the redirect handler reads
the code from the redirect) and lists the tools; its tokens and client registration stay in a token storage. The
access token is then let expire (the 1.5 s the process would be down: the scenario, not a wait for an event), and a
second provider is built over the same storage, as after a restart, and lists the tools again. faultlab's auth events
show which grant the second provider used.

Exit 0: the bug is still there (the restarted client sent its expired token, got 401, and ran a whole new
authorization although it held a valid refresh token: an `authorization_started` and an authorization-code grant, no
refresh grant); exit 3: it used its refresh token (a `refresh_token` grant, no new authorization: fixed upstream);
any other code: the check could not run. Every wait is bounded (the whole check by 20 s); the server is killed on
every path.
"""

from __future__ import annotations

import sys
from pathlib import Path

import anyio
from mcp.client.auth import OAuthClientProvider
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "lib"))
sys.path.insert(0, str(HERE.parent.parent / "python"))
from headless_oauth import Memory, provider  # noqa: E402  (the SDK's OAuth client, headless: interop/python)
from serve import COULD_NOT_RUN, FIXED, REPRODUCED, run  # noqa: E402  (the shared start-up, beside this folder)

TOKEN_TTL_S = 1  # faultlab's access-token lifetime here (--auth-token-ttl)
DOWN_S = 1.5  # how long the client process is "down" between its two providers: past the access token's life


async def list_tools(url: str, auth: OAuthClientProvider) -> None:
    async with create_mcp_http_client(auth=auth) as http:
        async with streamable_http_client(url, http_client=http) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                await session.list_tools()


def observe_with(events: list[dict]):
    async def observe(url: str) -> dict:
        seen: dict = {"redirects": 0}
        storage = Memory()

        def redirected() -> None:
            seen["redirects"] += 1  # a browser would open here: the user is asked to authorize

        with anyio.fail_after(20):
            await list_tools(url, provider(url, storage, "faultlab-known-bug-3250", redirected))
            seen["first"] = len(events)
            seen["first_redirects"] = seen["redirects"]
            if storage.tokens is None or not storage.tokens.refresh_token:
                raise RuntimeError("the first authorization stored no refresh token")
            await anyio.sleep(DOWN_S)  # the scenario: the access token expires while the client is down
            await list_tools(url, provider(url, storage, "faultlab-known-bug-3250", redirected))
        return seen

    return observe


def judge_with(events: list[dict]):
    def judge(seen: dict) -> tuple[int, str]:
        after = events[seen["first"]:]
        grants = [e.get("grant") for e in after if e["auth"] == "token_issued"]
        started = sum(1 for e in after if e["auth"] == "authorization_started")
        refused = [e.get("reason") for e in after if e["auth"] == "token_refused"]
        redirects = seen["redirects"] - seen["first_redirects"]
        words = f"after the restart: tokens refused {refused}, grants {grants}, new authorizations {started}, " \
                f"redirects to the browser {redirects}"
        if started >= 1 and "authorization_code" in grants and "refresh_token" not in grants:
            return REPRODUCED, f"the restarted client re-authorized instead of refreshing; {words}"
        if "refresh_token" in grants and started == 0:
            return FIXED, f"the restarted client used its refresh token; {words}"
        return COULD_NOT_RUN, f"could not decide; {words}; every event after the first provider: {after}"

    return judge


if __name__ == "__main__":
    auth_events: list[dict] = []
    sys.exit(run(lambda url: anyio.run(observe_with(auth_events), url), judge_with(auth_events), "--auth",
                 "--auth-token-ttl", str(TOKEN_TTL_S), auth_events=auth_events))
