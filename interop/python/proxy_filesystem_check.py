#!/usr/bin/env python3
"""`faultlab proxy` in front of a real stdio server, seen by a real client.

The official MCP Python SDK (`mcp` on PyPI, pinned in requirements.txt) talks through
`faultlab proxy --rules R --record T -- node server-filesystem/dist/index.js WORKDIR`
to the reference server @modelcontextprotocol/server-filesystem, rooted at a fresh folder. Three proxy sessions,
each a new proxy and a new server, each with its own rules file and trajectory in --out-dir:

  categories   one session; for each fault category (transport, protocol, data, authorization, temporal) a few
               rules, each on one filesystem tool and one file (matched by `argument: {pointer: /path, regex}`).
               Each check makes the SDK call the rule matches, records what the SDK surfaced (the exception, or the
               result whose content shows the corruption) and then makes an unrelated call on the same session
               (read_text_file of control.txt), which must still answer the file's real content.
  disconnect   the transport fault that ends a stdio session: the SDK must see a transport failure; a new
               session (new proxy) then works.
  idempotency  `mode: after` + `timeout` on the first write_file of report.txt and on the first edit_file of
               ledger.txt: the upstream executes, the client sees a timeout; the folder shows the write happened
               once; a client that retries blindly executes again: write_file (idempotentHint true) leaves the same
               content, edit_file (idempotentHint false, an append-style edit) leaves the line twice.

Each check prints one JSON line {"check", "ok", "category", "fault", "session", "detail", "seconds"} on stdout.
Exit status: 0 if every check passed, 1 if any failed, 2 on a usage or setup error. Every wait is bounded: per
request (read timeouts), per session (--session-timeout) and by a watchdog thread that ends the process.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Awaitable, Callable, Iterator

import anyio
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.shared.exceptions import MCPError
from mcp_types import CONNECTION_CLOSED, REQUEST_TIMEOUT

from checklog import SDK_VERSION, Checks, describe

CONTROL_TEXT = "control: the unrelated call still sees the real file\n"
LEDGER_START = "# ledger\nEND\n"
LEDGER_LINE = "entry: pay invoice 42"
REPORT_TEXT = "report v1: written once, or twice, the same\n"
REQUIRED_TOOLS = ("read_text_file", "write_file", "edit_file", "list_directory", "get_file_info")

# Stdio JSON-RPC codes the proxy answers with (schemas/fault.schema.json).
RATE_LIMIT_CODE = -32029
# JSON-RPC code of the systemic faults (burst_failure, server_outage, cascading_failure): 503.
UNAVAILABLE_CODE = -32030
AUTH_EXPIRED_CODE = -32001  # the same number as the Python SDK's own REQUEST_TIMEOUT: told apart by message/time
FORBIDDEN_CODE = -32003


# ---------------------------------------------------------------------------------------------------- reporting
def brief(exc: BaseException | None) -> str:
    if exc is None:
        return "no exception"
    code = f" {exc.code}" if isinstance(exc, MCPError) else ""
    return f"{type(exc).__name__}{code}: {str(exc)[:160]}"


def texts(result: Any) -> list[str]:
    return [getattr(c, "text", None) for c in (result.content or [])]


def summarize(result: Any) -> dict[str, Any]:
    return {"isError": result.is_error, "content": [c.model_dump(exclude_none=True) for c in (result.content or [])],
            "structuredContent": result.structured_content}


class SdkLog(logging.Handler):
    """Keeps the SDK's own log records (the dispatcher logs dropped replies and unparsable lines at DEBUG)."""

    def __init__(self) -> None:
        super().__init__(level=logging.DEBUG)
        self.records: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(f"{record.levelname} {record.name}: {record.getMessage()}"[:300])


SDK_LOG = SdkLog()


@dataclass
class Observation:
    """What one SDK call surfaced."""

    result: Any = None
    exc: BaseException | None = None
    elapsed: float = 0.0
    stream_exceptions: list[str] = field(default_factory=list)
    sdk_log: list[str] = field(default_factory=list)

    def detail(self) -> dict[str, Any]:
        out: dict[str, Any] = {"elapsedMs": round(self.elapsed * 1000, 1)}
        if self.exc is not None:
            out["raised"] = describe(self.exc)
        else:
            out["result"] = summarize(self.result)
        if self.stream_exceptions:
            out["streamExceptions"] = self.stream_exceptions
        interesting = [r for r in self.sdk_log if "drop" in r or "parse" in r.lower() or "exception" in r]
        if interesting:
            out["sdkLog"] = interesting[:6]
        return out

    def code(self) -> int | None:
        return self.exc.code if isinstance(self.exc, MCPError) else None


class Session:
    """One ClientSession through one proxy, with the helpers the checks use."""

    def __init__(self, session: ClientSession, stream_exceptions: list[str], workdir: str) -> None:
        self.s = session
        self.stream_exceptions = stream_exceptions
        self.workdir = workdir

    def path(self, name: str) -> str:
        return os.path.join(self.workdir, name)

    async def call(self, tool: str, arguments: dict[str, Any], timeout: float) -> Observation:
        obs = Observation()
        seen_stream, seen_log = len(self.stream_exceptions), len(SDK_LOG.records)
        started = time.monotonic()
        try:
            obs.result = await self.s.call_tool(tool, arguments, read_timeout_seconds=timeout)
        except Exception as exc:  # a failed call is an observation; cancellation propagates
            obs.exc = exc
        obs.elapsed = time.monotonic() - started
        await self.barrier()
        obs.stream_exceptions = self.stream_exceptions[seen_stream:]
        obs.sdk_log = SDK_LOG.records[seen_log:]
        return obs

    async def barrier(self) -> None:
        """Waits until the SDK has read every frame the proxy wrote after the reply (a replayed or late frame): a
        `ping` round trip, which no rule matches, answers on the same pipe after them. A dead session has nothing
        more to read, so its failure ends the wait too."""
        with anyio.move_on_after(5.0):
            try:
                await self.s.send_ping()
            except Exception:  # the session is gone: nothing more can arrive
                pass

    async def control(self) -> tuple[bool, dict[str, Any]]:
        """The unrelated call: read control.txt; it must answer the file's real content."""
        obs = await self.call("read_text_file", {"path": self.path("control.txt")}, timeout=5.0)
        ok = obs.exc is None and not obs.result.is_error and texts(obs.result) == [CONTROL_TEXT]
        detail: dict[str, Any] = {"call": "read_text_file control.txt", "ok": ok,
                                  "elapsedMs": round(obs.elapsed * 1000, 1)}
        if not ok:
            detail["observed"] = obs.detail()
        return ok, detail


# ---------------------------------------------------------------------------------------------------- checks
@dataclass
class FaultCheck:
    """One rule on one tool and one file, the SDK call it matches, and what the SDK must surface."""

    name: str
    category: str
    rule: dict[str, Any]
    tool: str
    arguments: Callable[[Session], dict[str, Any]]
    expect: Callable[[Observation, Session], tuple[bool, str]]
    timeout: float = 5.0
    before: Callable[[Session], Awaitable[dict[str, Any]]] | None = None


def path_rule(name: str, tool: str, file: str, fault: dict[str, Any], mode: str = "after") -> dict[str, Any]:
    regex = "/" + file.replace(".", "\\.") + "$"
    return {"name": name, "match": {"tool": tool, "argument": {"pointer": "/path", "regex": regex}},
            "mode": mode, "fault": fault}


def raised_code(code: int, *, max_elapsed: float | None = None) -> Callable[[Observation, Session], tuple[bool, str]]:
    def expect(obs: Observation, _s: Session) -> tuple[bool, str]:
        if not isinstance(obs.exc, MCPError):
            got = "a result" if obs.exc is None else type(obs.exc).__name__
            return False, f"expected MCPError code {code}, got {got}"
        if obs.exc.code != code:
            return False, f"expected code {code}, got {obs.exc.code}"
        if max_elapsed is not None and obs.elapsed > max_elapsed:
            return False, f"took {obs.elapsed:.2f} s (> {max_elapsed} s): looks like the SDK's own timeout"
        return True, f"MCPError {code}: {obs.exc.message}"
    return expect


def client_timeout(read_timeout: float) -> Callable[[Observation, Session], tuple[bool, str]]:
    def expect(obs: Observation, _s: Session) -> tuple[bool, str]:
        if not (isinstance(obs.exc, MCPError) and obs.exc.code == REQUEST_TIMEOUT):
            return False, f"expected the SDK's read timeout, got {describe(obs.exc) if obs.exc else 'a result'}"
        if obs.elapsed < read_timeout * 0.9:
            return False, f"raised after {obs.elapsed:.2f} s, before the {read_timeout} s read timeout"
        return True, f"no reply; the SDK timed out after {obs.elapsed:.2f} s"
    return expect


def categories_checks() -> list[FaultCheck]:
    def read(file: str) -> Callable[[Session], dict[str, Any]]:
        return lambda s: {"path": s.path(file)}

    def result_ok(pred: Callable[[Any], tuple[bool, str]]) -> Callable[[Observation, Session], tuple[bool, str]]:
        def expect(obs: Observation, _s: Session) -> tuple[bool, str]:
            if obs.exc is not None:
                return False, f"raised {type(obs.exc).__name__}: {obs.exc}"
            return pred(obs.result)
        return expect

    def lacks(obs: Observation, want_text: str) -> str | None:
        """Why `obs` is not a result whose text holds `want_text`; None when it is."""
        if obs.exc is not None:
            return f"raised {type(obs.exc).__name__}: {obs.exc}"
        body = "".join(t or "" for t in texts(obs.result))
        return None if want_text in body else f"content {body!r} lacks {want_text!r}"

    def slow(min_s: float, want_text: str) -> Callable[[Observation, Session], tuple[bool, str]]:
        def expect(obs: Observation, _s: Session) -> tuple[bool, str]:
            if (why := lacks(obs, want_text)) is not None:
                return False, why
            if obs.elapsed < min_s * 0.98:
                return False, f"answered after {obs.elapsed:.3f} s, before the {min_s} s delay"
            return True, f"the real content, {obs.elapsed:.2f} s late"
        return expect

    def partial(result: Any) -> tuple[bool, str]:
        full = PARTIAL_TEXT
        got = "".join(t or "" for t in texts(result))
        if got and len(got) < len(full) and full.startswith(got):
            return True, f"a prefix of {len(got)} of the file's {len(full)} characters: {got!r}"
        return False, f"content {got!r} is not a proper prefix of the file"

    def stale(result: Any) -> tuple[bool, str]:
        got = "".join(t or "" for t in texts(result))
        if "alpha.txt" in got and "bravo.txt" not in got:
            return True, f"listing of dir-b answered with dir-a's listing: {got!r}"
        return False, f"listing {got!r} is not dir-a's (stale)"

    def contradictory(result: Any) -> tuple[bool, str]:
        t = texts(result)
        if len(t) >= 2 and t[0] == CONTRADICT_TEXT and t[1] != CONTRADICT_TEXT:
            return True, f"{len(t)} text blocks that disagree: {t[0]!r} vs {t[1]!r}"
        return False, f"text blocks {t!r}"

    def wrong_value(result: Any) -> tuple[bool, str]:
        t = texts(result)
        sc = result.structured_content or {}
        if t and t[0] == "balance: 0" and sc.get("content") == WRONG_VALUE_TEXT:
            return True, (f"content[0].text says {t[0]!r} while the file (and structuredContent) says "
                          f"{WRONG_VALUE_TEXT!r}")
        return False, f"text {t!r}, structuredContent {sc!r}"

    def empty(obs: Observation, _s: Session) -> tuple[bool, str]:
        # server-filesystem declares outputSchema {content: string} (required): the SDK validates the structured
        # content of a result and rejects `{}`; a client without that validation sees content [] instead.
        if isinstance(obs.exc, RuntimeError) and "structured content" in str(obs.exc):
            return True, f"RuntimeError: {obs.exc}"
        if obs.exc is None and not obs.result.content:
            return True, "a successful result with no content at all"
        got = brief(obs.exc) if obs.exc else f"content {texts(obs.result)!r}"
        return False, f"neither an empty result nor the SDK's schema error: {got}"

    def invalid_schema(obs: Observation, _s: Session) -> tuple[bool, str]:
        if obs.exc is not None and not (isinstance(obs.exc, MCPError) and obs.exc.code == REQUEST_TIMEOUT):
            return True, f"{type(obs.exc).__name__}: {str(obs.exc)[:200]}"
        if obs.exc is None:
            return False, "the SDK accepted content that is an object"
        return False, "only the SDK's timeout: the invalid reply was dropped silently"

    def missing_field(obs: Observation, _s: Session) -> tuple[bool, str]:
        if obs.exc is not None and not (isinstance(obs.exc, MCPError) and obs.exc.code == REQUEST_TIMEOUT):
            return True, f"{type(obs.exc).__name__}: {str(obs.exc)[:200]}"
        if obs.exc is None:
            got = texts(obs.result)
            if not got:
                return True, "a result without its content (the SDK defaulted content to [])"
            return False, f"content still there: {got!r}"
        return False, "only the SDK's timeout: the reply was dropped"

    def malformed(obs: Observation, _s: Session) -> tuple[bool, str]:
        # A frame that is not JSON-RPC cannot be matched to its request by the SDK: it reports it to the
        # message_handler (a stream exception) and the call itself ends in the read timeout.
        if obs.exc is None:
            return False, f"the SDK accepted a reply without `jsonrpc`: {summarize(obs.result)}"
        if obs.stream_exceptions:
            return True, (f"the SDK rejected the frame ({obs.stream_exceptions[0][:160]}) and the call raised "
                          f"{type(obs.exc).__name__} {obs.code()}: {obs.exc}")
        return True, f"the call raised {type(obs.exc).__name__} {obs.code()}: {obs.exc}"

    def replayed(obs: Observation, _s: Session) -> tuple[bool, str]:
        if (why := lacks(obs, REPLAYED_TEXT)) is not None:
            return False, why
        dropped = [r for r in obs.sdk_log if "unknown/late request id" in r]
        if not dropped:
            return False, "the SDK's log shows no dropped replayed reply"
        return True, f"the real result, then the replayed earlier reply, which the SDK dropped: {dropped[0]!r}"

    def absent(file: str, inner: Callable[[Observation, Session], tuple[bool, str]]):
        def expect(obs: Observation, s: Session) -> tuple[bool, str]:
            ok, why = inner(obs, s)
            if os.path.exists(s.path(file)):
                return False, f"{why}; but {file} exists: mode instead must not reach the server"
            return ok, f"{why}; {file} not created (the server never saw the call)"
        return expect

    async def list_dir_a(s: Session) -> dict[str, Any]:
        obs = await s.call("list_directory", {"path": s.path("dir-a")}, timeout=5.0)
        return {"earlierCall": "list_directory dir-a", "texts": texts(obs.result) if obs.result else describe(obs.exc)}

    async def read_for_replay(s: Session) -> dict[str, Any]:
        obs = await s.call("get_file_info", {"path": s.path("control.txt")}, timeout=5.0)
        return {"earlierCall": "get_file_info control.txt", "isError": obs.result.is_error if obs.result else None}

    return [
        # transport
        FaultCheck("transport_timeout", "transport",
                   path_rule("read-times-out", "read_text_file", "transport-timeout.txt", {"type": "timeout"}),
                   "read_text_file", read("transport-timeout.txt"), client_timeout(1.0), timeout=1.0),
        FaultCheck("transport_latency", "transport",
                   path_rule("list-is-slow", "list_directory", "latency-dir", {"type": "latency", "delay_ms": 700}),
                   "list_directory", read("latency-dir"), slow(0.7, "[FILE] inside.txt")),
        FaultCheck("transport_rate_limit", "transport",
                   path_rule("info-rate-limited", "get_file_info", "rate-limited.txt",
                             {"type": "rate_limit", "retry_after_sec": 7}, mode="instead"),
                   "get_file_info", read("rate-limited.txt"), raised_code(RATE_LIMIT_CODE, max_elapsed=3.0)),
        # systemic: a burst of 503s (count 1 keeps the unrelated call after it untouched)
        FaultCheck("systemic_burst_failure", "systemic",
                   path_rule("read-burst", "read_text_file", "systemic-burst.txt",
                             {"type": "burst_failure", "count": 1}, mode="instead"),
                   "read_text_file", read("systemic-burst.txt"), raised_code(UNAVAILABLE_CODE, max_elapsed=3.0)),
        # protocol
        FaultCheck("protocol_malformed", "protocol",
                   path_rule("read-malformed", "read_text_file", "protocol-malformed.txt",
                             {"type": "malformed", "variant": "missing-jsonrpc"}),
                   "read_text_file", read("protocol-malformed.txt"), malformed, timeout=1.5),
        FaultCheck("protocol_invalid_schema", "protocol",
                   path_rule("read-invalid-schema", "read_text_file", "protocol-invalid-schema.txt",
                             {"type": "invalid_schema"}),
                   "read_text_file", read("protocol-invalid-schema.txt"), invalid_schema, timeout=1.5),
        FaultCheck("protocol_missing_field", "protocol",
                   path_rule("read-missing-content", "read_text_file", "protocol-missing-field.txt",
                             {"type": "missing_field", "pointer": "/result/content"}),
                   "read_text_file", read("protocol-missing-field.txt"), missing_field, timeout=1.5),
        # data
        FaultCheck("data_empty", "data",
                   path_rule("list-empty", "list_directory", "data-empty-dir", {"type": "empty"}),
                   "list_directory", read("data-empty-dir"), empty),
        FaultCheck("data_partial_result", "data",
                   path_rule("read-partial", "read_text_file", "data-partial.txt", {"type": "partial_result"}),
                   "read_text_file", read("data-partial.txt"), result_ok(partial)),
        FaultCheck("data_stale", "data",
                   path_rule("list-stale", "list_directory", "dir-b", {"type": "stale"}),
                   "list_directory", read("dir-b"), result_ok(stale), before=list_dir_a),
        FaultCheck("data_contradictory", "data",
                   path_rule("read-contradictory", "read_text_file", "data-contradictory.txt",
                             {"type": "contradictory"}),
                   "read_text_file", read("data-contradictory.txt"), result_ok(contradictory)),
        FaultCheck("data_wrong_value", "data",
                   path_rule("read-wrong-value", "read_text_file", "data-wrong-value.txt",
                             {"type": "wrong_value", "pointer": "/content/0/text", "value": "balance: 0"}),
                   "read_text_file", read("data-wrong-value.txt"), result_ok(wrong_value)),
        # authorization (mode instead: the server never executes the write)
        FaultCheck("authorization_auth_expired", "authorization",
                   path_rule("write-auth-expired", "write_file", "auth-expired.txt", {"type": "auth_expired"},
                             mode="instead"),
                   "write_file", lambda s: {"path": s.path("auth-expired.txt"), "content": "must not be written\n"},
                   absent("auth-expired.txt", raised_code(AUTH_EXPIRED_CODE, max_elapsed=3.0))),
        FaultCheck("authorization_forbidden", "authorization",
                   path_rule("write-forbidden", "write_file", "forbidden.txt", {"type": "forbidden"}, mode="instead"),
                   "write_file", lambda s: {"path": s.path("forbidden.txt"), "content": "must not be written\n"},
                   absent("forbidden.txt", raised_code(FORBIDDEN_CODE, max_elapsed=3.0))),
        # temporal
        FaultCheck("temporal_delayed", "temporal",
                   path_rule("read-delayed", "read_text_file", "temporal-delayed.txt",
                             {"type": "delayed", "delay_ms": 800}),
                   "read_text_file", read("temporal-delayed.txt"), slow(0.8, DELAYED_TEXT)),
        FaultCheck("temporal_replayed", "temporal",
                   path_rule("read-replayed", "read_text_file", "temporal-replayed.txt", {"type": "replayed"}),
                   "read_text_file", read("temporal-replayed.txt"), replayed, before=read_for_replay),
    ]


PARTIAL_TEXT = "ALPHA BRAVO CHARLIE DELTA ECHO FOXTROT GOLF HOTEL INDIA JULIETT\n"
CONTRADICT_TEXT = "status: green\n"
WRONG_VALUE_TEXT = "balance: 100\n"
DELAYED_TEXT = "delayed but intact\n"
REPLAYED_TEXT = "replayed: this reply is the real one\n"


def make_fixtures(workdir: str) -> None:
    files = {
        "control.txt": CONTROL_TEXT,
        "transport-timeout.txt": "never seen by the client\n",
        "rate-limited.txt": "rate limited\n",
        "protocol-malformed.txt": "malformed\n",
        "protocol-invalid-schema.txt": "invalid schema\n",
        "protocol-missing-field.txt": "missing field\n",
        "data-partial.txt": PARTIAL_TEXT,
        "data-contradictory.txt": CONTRADICT_TEXT,
        "data-wrong-value.txt": WRONG_VALUE_TEXT,
        "temporal-delayed.txt": DELAYED_TEXT,
        "temporal-replayed.txt": REPLAYED_TEXT,
        "transport-disconnect.txt": "the connection closes instead\n",
        "latency-dir/inside.txt": "x\n",
        "data-empty-dir/not-empty.txt": "x\n",
        "dir-a/alpha.txt": "a\n",
        "dir-b/bravo.txt": "b\n",
    }
    for name, text in files.items():
        path = os.path.join(workdir, name)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)


# ---------------------------------------------------------------------------------------------------- sessions
class Runner:
    def __init__(self, args: argparse.Namespace, checks: Checks) -> None:
        self.a = args
        self.checks = checks

    def params(self, session: str, rules: list[dict[str, Any]]) -> tuple[StdioServerParameters, str]:
        rules_path = os.path.join(self.a.out_dir, f"{session}.rules.json")
        trajectory = os.path.join(self.a.out_dir, f"{session}.trajectory.jsonl")
        with open(rules_path, "w", encoding="utf-8") as f:
            json.dump({"seed": 7, "rules": rules}, f, indent=2)
        if os.path.exists(trajectory):
            os.remove(trajectory)
        cmd = ["proxy", "--rules", rules_path, "--record", trajectory, "--", self.a.node, self.a.server_js,
               self.a.workdir]
        return StdioServerParameters(command=self.a.bin, args=cmd, cwd=self.a.workdir), trajectory

    @contextmanager
    def errlog(self, session: str) -> Iterator[Any]:
        with open(os.path.join(self.a.out_dir, f"{session}.stderr.log"), "w", encoding="utf-8") as f:
            yield f

    async def open(self, session: str, rules: list[dict[str, Any]], body: Callable[[Session], Awaitable[None]],
                   on_transport_error: Callable[[BaseException], None] | None = None) -> None:
        params, _ = self.params(session, rules)
        stream_exceptions: list[str] = []

        async def handler(message: Any) -> None:
            if isinstance(message, Exception):
                stream_exceptions.append(f"{type(message).__module__}.{type(message).__qualname__}: "
                                         f"{str(message).splitlines()[0] if str(message) else ''}")

        started = time.monotonic()
        try:
            with self.errlog(session) as errlog, anyio.fail_after(self.a.session_timeout):
                async with stdio_client(params, errlog=errlog) as (read, write):
                    async with ClientSession(read, write, read_timeout_seconds=self.a.request_timeout,
                                             message_handler=handler) as cs:
                        await body(Session(cs, stream_exceptions, self.a.workdir))
        except Exception as exc:
            if on_transport_error is not None:
                on_transport_error(exc)
            else:
                self.checks.record(f"{session}_session", False,
                                   {"exception": describe(exc), "afterSeconds": round(time.monotonic() - started, 2)},
                                   session=session)

    async def connect(self, s: Session, session: str) -> dict[str, Any] | None:
        started = time.monotonic()
        try:
            init = await s.s.initialize()
            tools = await s.s.list_tools()
        except Exception as exc:
            self.checks.record(f"{session}_connect", False, {"exception": describe(exc)}, session=session,
                               seconds=time.monotonic() - started)
            return None
        names = sorted(t.name for t in tools.tools)
        missing = [n for n in REQUIRED_TOOLS if n not in names]
        hints = {t.name: (t.annotations.idempotent_hint if t.annotations else None)
                 for t in tools.tools if t.name in ("write_file", "edit_file")}
        ok = not missing and init.server_info.name == "secure-filesystem-server"
        info = init.server_info
        detail = {"observed": (f"protocol {s.s.protocol_version}, {info.name} {info.version}, {len(names)} tools"
                               f"{'' if not missing else f', missing {missing}'}; idempotentHint "
                               + ", ".join(f"{k}={v}" for k, v in sorted(hints.items()))),
                  "protocol": s.s.protocol_version, "server": info.model_dump(exclude_none=True),
                  "tools": names, "missing": missing, "idempotentHint": hints}
        self.checks.record(f"{session}_connect", ok, detail, session=session, seconds=time.monotonic() - started)
        return detail if ok else None

    # ---- session 1: one fault per category (several per category), each followed by an unrelated call
    async def categories(self) -> None:
        plan = categories_checks()
        rules = [c.rule for c in plan]

        async def body(s: Session) -> None:
            if await self.connect(s, "categories") is None:
                return
            ok, detail = await s.control()
            detail["observed"] = f"{detail['call']} through the proxy without a matching rule: " + (
                "the file's content, unchanged" if ok else "NOT the file's content")
            self.checks.record("baseline_control", ok, detail, session="categories")
            for c in plan:
                started = time.monotonic()
                pre = await c.before(s) if c.before else None
                obs = await s.call(c.tool, c.arguments(s), timeout=c.timeout)
                ok, why = c.expect(obs, s)
                after_ok, after = await s.control()
                detail = {"rule": c.rule, "call": f"{c.tool} {os.path.basename(c.arguments(s)['path'])}",
                          "observed": why, "sdk": obs.detail(), "thenUnrelatedCall": after}
                if pre is not None:
                    detail["before"] = pre
                self.checks.record(c.name, ok and after_ok, detail, session="categories", category=c.category,
                                   fault=c.rule["fault"]["type"], seconds=time.monotonic() - started)

        await self.open("categories", rules, body)

    # ---- session 2: disconnect ends the stdio session; a new session works
    async def disconnect(self) -> None:
        rule = path_rule("read-disconnects", "read_text_file", "transport-disconnect.txt", {"type": "disconnect"})
        state: dict[str, Any] = {"started": None, "connected": False}

        def decide(raised: BaseException | None, obs: Observation | None) -> None:
            elapsed = time.monotonic() - state["started"] if state["started"] else None
            if obs is not None:
                raised = obs.exc
                detail: dict[str, Any] = {"rule": rule, "call": "read_text_file transport-disconnect.txt",
                                          "sdk": obs.detail()}
            else:
                detail = {"rule": rule, "call": "read_text_file transport-disconnect.txt",
                          "sdk": {"transportRaised": describe(raised) if raised else None}}
            if raised is None:
                ok, why = False, "the call returned a result"
            elif isinstance(raised, MCPError) and raised.code == REQUEST_TIMEOUT:
                ok, why = False, "only the SDK's read timeout: the closed connection was not seen"
            else:
                code = raised.code if isinstance(raised, MCPError) else None
                ok = True
                why = (f"{type(raised).__name__}"
                       + (f" {code} (CONNECTION_CLOSED)" if code == CONNECTION_CLOSED else "")
                       + f": {str(raised)[:160]}")
            detail["observed"] = why
            state["detail"], state["ok"], state["elapsed"] = detail, ok, elapsed

        async def body(s: Session) -> None:
            if await self.connect(s, "disconnect") is None:
                return
            state["connected"] = True
            state["started"] = time.monotonic()
            obs = await s.call("read_text_file", {"path": s.path("transport-disconnect.txt")},
                               timeout=self.a.disconnect_timeout)
            decide(None, obs)

        def transport_error(exc: BaseException) -> None:
            if state["connected"] and "ok" not in state:
                decide(exc, None)
            elif "ok" not in state:
                self.checks.record("disconnect_session", False, {"exception": describe(exc)}, session="disconnect")

        await self.open("disconnect", [rule], body, on_transport_error=transport_error)
        if "ok" not in state:
            if state["connected"]:
                self.checks.record("transport_disconnect", False, {"problem": "no outcome recorded"},
                                   session="disconnect", category="transport", fault="disconnect")
            return

        # The stdio session is gone with its proxy; the unrelated call runs on a new session (new proxy + server).
        after: dict[str, Any] = {"ok": False}

        async def fresh(s: Session) -> None:
            await s.s.initialize()
            ok, detail = await s.control()
            after.update(detail, ok=ok, note="a new session: a stdio connection that closed cannot be reused")

        await self.open("disconnect-after", [], fresh,
                        on_transport_error=lambda exc: after.update(ok=False, exception=describe(exc)))
        state["detail"]["thenUnrelatedCall"] = after
        self.checks.record("transport_disconnect", state["ok"] and after["ok"], state["detail"], session="disconnect",
                           category="transport", fault="disconnect", seconds=state["elapsed"])

    # ---- session 3: idempotency of a write the client saw time out
    async def idempotency(self) -> None:
        ledger, report = "ledger.txt", "report.txt"
        rules = [
            {"name": "first-report-write-times-out-after-executing",
             "match": {"tool": "write_file", "argument": {"pointer": "/path", "regex": "/report\\.txt$"}, "nth": 1},
             "mode": "after", "fault": {"type": "timeout"}},
            {"name": "first-edit-times-out-after-executing",
             "match": {"tool": "edit_file", "nth": 1}, "mode": "after", "fault": {"type": "timeout"}},
        ]
        t = self.a.idempotency_timeout

        def content(name: str) -> str | None:
            try:
                with open(os.path.join(self.a.workdir, name), encoding="utf-8") as f:
                    return f.read()
            except FileNotFoundError:
                return None

        async def body(s: Session) -> None:
            if await self.connect(s, "idempotency") is None:
                return
            # Set up the ledger through the server (no rule matches this write).
            obs = await s.call("write_file", {"path": s.path(ledger), "content": LEDGER_START}, timeout=5.0)
            ok = obs.exc is None and not obs.result.is_error and content(ledger) == LEDGER_START
            self.checks.record("idempotency_setup", ok, {
                "call": "write_file ledger.txt", "sdk": obs.detail(), "folder": {ledger: content(ledger)},
                "observed": f"write_file ledger.txt (no rule matches): ledger.txt = {content(ledger)!r}"},
                session="idempotency")

            # write_file report.txt: timeout after executing; then a blind retry.
            args = {"path": s.path(report), "content": REPORT_TEXT}
            first = await s.call("write_file", args, timeout=t)
            on_disk = content(report)
            ok = (isinstance(first.exc, MCPError) and first.exc.code == REQUEST_TIMEOUT and on_disk == REPORT_TEXT)
            self.checks.record("write_file_timeout_but_written", ok, {
                "rule": rules[0], "call": "write_file report.txt", "sdk": first.detail(),
                "observed": (f"the SDK raised {brief(first.exc)}; report.txt = {on_disk!r}"
                             + (": the write was executed although the client saw a timeout" if ok else "")),
                "folder": {report: on_disk}}, session="idempotency", category="transport", fault="timeout")
            retry = await s.call("write_file", args, timeout=5.0)
            on_disk = content(report)
            ok = retry.exc is None and not retry.result.is_error and on_disk == REPORT_TEXT
            self.checks.record("write_file_blind_retry_idempotent", ok, {
                "call": "write_file report.txt (retry)", "sdk": retry.detail(), "folder": {report: on_disk},
                "observed": (f"the retry succeeded; report.txt = {on_disk!r}: executed twice (see the trajectory), "
                             "the same content: write_file is idempotent")},
                session="idempotency", category="transport", fault="timeout")

            # edit_file ledger.txt: an append-style edit (END -> line + END) that is not idempotent.
            edit = {"path": s.path(ledger), "edits": [{"oldText": "END", "newText": f"{LEDGER_LINE}\nEND"}]}
            first = await s.call("edit_file", edit, timeout=t)
            on_disk = content(ledger) or ""
            n = on_disk.splitlines().count(LEDGER_LINE)
            ok = isinstance(first.exc, MCPError) and first.exc.code == REQUEST_TIMEOUT and n == 1
            self.checks.record("edit_file_timeout_but_applied_once", ok, {
                "rule": rules[1], "call": "edit_file ledger.txt END -> line+END", "sdk": first.detail(),
                "observed": (f"the SDK raised {brief(first.exc)}; ledger.txt has the line "
                             f"{n} time(s): {on_disk!r}"), "folder": {ledger: on_disk}},
                session="idempotency", category="transport", fault="timeout")
            retry = await s.call("edit_file", edit, timeout=5.0)
            on_disk = content(ledger) or ""
            n = on_disk.splitlines().count(LEDGER_LINE)
            ok = retry.exc is None and not retry.result.is_error and n == 2
            self.checks.record("edit_file_blind_retry_applied_twice", ok, {
                "call": "edit_file ledger.txt (blind retry)", "sdk": retry.detail(),
                "observed": f"the blind retry succeeded; ledger.txt now has the line {n} times: {on_disk!r}",
                "folder": {ledger: on_disk}},
                session="idempotency", category="transport", fault="timeout")

        await self.open("idempotency", rules, body)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--bin", required=True, help="the faultlab binary")
    parser.add_argument("--node", required=True, help="the node binary that runs the server")
    parser.add_argument("--server-js", required=True, help="server-filesystem's dist/index.js")
    parser.add_argument("--workdir", required=True, help="a fresh, empty folder: the server's only allowed root")
    parser.add_argument("--out-dir", required=True, help="where rules, trajectories and stderr logs are written")
    parser.add_argument("--request-timeout", type=float, default=10.0, help="default read timeout per request, s")
    parser.add_argument("--idempotency-timeout", type=float, default=1.5,
                        help="read timeout of the first (faulted) write calls, s")
    parser.add_argument("--disconnect-timeout", type=float, default=5.0,
                        help="how long a disconnect may take to surface as a failure, s")
    parser.add_argument("--session-timeout", type=float, default=60.0, help="bound on one proxy session, s")
    parser.add_argument("--overall-timeout", type=float, default=150.0,
                        help="watchdog: the process exits with a failure after this many seconds")
    args = parser.parse_args()

    for what in ("bin", "node"):
        p = getattr(args, what)
        if not (os.path.isfile(p) and os.access(p, os.X_OK)):
            print(f"proxy_filesystem_check: --{what} is not an executable file: {p}", file=sys.stderr)
            return 2
    if not os.path.isfile(args.server_js):
        print(f"proxy_filesystem_check: --server-js not found: {args.server_js}", file=sys.stderr)
        return 2
    if not os.path.isdir(args.workdir) or os.listdir(args.workdir):
        print(f"proxy_filesystem_check: --workdir must be an existing empty folder: {args.workdir}", file=sys.stderr)
        return 2
    args.bin, args.node = os.path.abspath(args.bin), os.path.abspath(args.node)
    args.server_js, args.workdir = os.path.abspath(args.server_js), os.path.realpath(args.workdir)
    os.makedirs(args.out_dir, exist_ok=True)
    args.out_dir = os.path.abspath(args.out_dir)

    mcp_logger = logging.getLogger("mcp")
    mcp_logger.setLevel(logging.DEBUG)
    mcp_logger.addHandler(SDK_LOG)
    mcp_logger.propagate = False  # the records go into check details, not onto stderr

    checks = Checks(category=None, fault=None)
    print(f"proxy_filesystem_check: mcp {SDK_VERSION}, workdir {args.workdir}", file=sys.stderr, flush=True)

    def watchdog_fired() -> None:
        checks.record("overall_timeout", False, {"problem": f"run exceeded {args.overall_timeout} s"}, session="all")
        os._exit(1)

    watchdog = threading.Timer(args.overall_timeout, watchdog_fired)
    watchdog.daemon = True
    watchdog.start()
    try:
        make_fixtures(args.workdir)
        runner = Runner(args, checks)
        anyio.run(runner.categories)
        anyio.run(runner.disconnect)
        anyio.run(runner.idempotency)
    finally:
        watchdog.cancel()
    return 1 if checks.failed or not checks.results else 0


if __name__ == "__main__":
    sys.exit(main())
