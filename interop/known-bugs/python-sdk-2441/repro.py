#!/usr/bin/env python3
"""python-sdk PR #2441 (bug 2): `call_tool` looks a tool's output schema up on the first page of `tools/list` only,
so a tool listed on a later page has its `structuredContent` accepted unvalidated.

Starts `faultlab serve --transport http --port 0` (FAULTLAB_BIN) and opens two 2025-11-25 sessions with the pinned
SDK, neither listing tools itself (the SDK lists them when it validates a result):

- control: `structured_output {"fault": "output_schema_violation"}` on an unpaginated list. The SDK's own listing
  holds the tool's `outputSchema`, and the non-conforming `structuredContent` must be rejected: this shows the SDK
  validates this tool when it finds the schema.
- check: `list_pagination {"variant": "empty-end", "pageSize": 20}` first, so that every later `tools/list` reply of
  this session is paged, 20 tools a page, correct pages whose last one says `nextCursor: ""` (the end, in
  2025-11-25); `structured_output` is then listed on page 2. The same violating call follows, then a walk of the
  pages (at most 5) to show where the tool and its schema are listed.

Every POST is logged from an httpx event hook: the JSON-RPC method and, for `tools/list`, the cursor it carried.

Exit 0: the bug is still there (the control call was rejected, but in the paged session the same call returned the
non-conforming `structuredContent` without an error, after a `tools/list` with no cursor and none following page 1's
`nextCursor`); exit 3: the paged session's call was rejected too (fixed upstream); any other code: the check could
not run. Every wait is bounded (each session by 20 s); the server is killed on every path.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import anyio
import httpx2
from mcp import types

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "lib"))
from serve import COULD_NOT_RUN, FIXED, REPRODUCED, run  # noqa: E402  (the shared start-up, beside this folder)
from session import initialized_session  # noqa: E402

DEADLINE = 5.0  # seconds for one request; every answer here is immediate on loopback
PAGE_SIZE = 20  # tools a page: faultlab serve lists about 40, so `structured_output` lands on page 2
MAX_PAGES = 5  # the walk that shows where the tool is listed stops here whatever the cursors say
VIOLATE = {"fault": "output_schema_violation"}


def post_log(posts: list[dict]):
    async def on_response(response: httpx2.Response) -> None:
        request = response.request
        if request.method != "POST":
            return
        try:
            body = json.loads(request.content or b"{}")
        except ValueError:
            body = {}
        params = body.get("params") or {}
        posts.append({"method": body.get("method"), "cursor": params.get("cursor"), "tool": params.get("name"),
                      "status": response.status_code})

    return on_response


async def call(session, name: str, args: dict) -> dict:
    """What the application got from `call_tool`: the result's structured content, or the error it raised."""
    try:
        result = await session.call_tool(name, args, read_timeout_seconds=DEADLINE)
    except Exception as exc:  # the SDK refused the result: what a correct client does with a violation
        # The first line only: the verdict is one line, and jsonschema appends the schema after a blank line.
        first = (str(exc).splitlines() or [""])[0]
        return {"raised": f"{type(exc).__name__}: {first[:160]}"}
    return {"structured": result.structured_content, "is_error": result.is_error}


async def observe(url: str) -> dict:
    seen: dict = {"control_posts": [], "posts": []}
    async with initialized_session(url, DEADLINE, post_log(seen["control_posts"])) as session:
        seen["control"] = await call(session, "structured_output", VIOLATE)
    async with initialized_session(url, DEADLINE, post_log(seen["posts"])) as session:
        await call(session, "list_pagination", {"variant": "empty-end", "pageSize": PAGE_SIZE})
        seen["after_arming"] = len(seen["posts"])
        seen["call"] = await call(session, "structured_output", VIOLATE)
        seen["after_call"] = len(seen["posts"])
        cursor, page = None, 0
        while page < MAX_PAGES:
            page += 1
            listing = await session.list_tools(
                params=types.PaginatedRequestParams(cursor=cursor) if cursor is not None else None)
            tool = next((t for t in listing.tools if t.name == "structured_output"), None)
            if tool is not None:
                seen["listed_on_page"] = page
                seen["output_schema_required"] = (tool.output_schema or {}).get("required")
                break
            cursor = listing.next_cursor
            if not cursor:
                break
    return seen


def judge(seen: dict) -> tuple[int, str]:
    control, got = seen["control"], seen["call"]
    lists = [p for p in seen["posts"][seen["after_arming"]:seen["after_call"]] if p["method"] == "tools/list"]
    cursors = [p["cursor"] for p in lists]
    page = seen.get("listed_on_page")
    schema = f"outputSchema required {seen.get('output_schema_required')}"
    validated_unpaged = "raised" in control and "structured content" in control["raised"]
    if not validated_unpaged:
        return COULD_NOT_RUN, f"could not decide: the unpaged control call was not rejected: {control}"
    if "raised" in got:
        return FIXED, (f"the call to structured_output (listed on page {page}, {schema}) was rejected although the "
                       f"list is paged: tools/list cursors sent {cursors}; {got['raised']}")
    if page is not None and page > 1 and lists and all(c is None for c in cursors) and not got["is_error"]:
        return REPRODUCED, (f"structured_output is listed on page {page} ({schema}); to validate its result the "
                            f"SDK's own tools/list requests ({len(lists)}) carried no cursor: page 1's nextCursor was never followed; "
                            f"call_tool returned structuredContent {got['structured']} without an error (the same call "
                            f"on an unpaged list raised {control['raised']})")
    return COULD_NOT_RUN, f"could not decide: listed on page {page}, tools/list cursors {cursors}, call {got}"


if __name__ == "__main__":
    sys.exit(run(lambda url: anyio.run(observe, url), judge))
