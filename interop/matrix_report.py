#!/usr/bin/env python3
"""Turns the interop matrix clients' raw records into docs/compatibility.json and docs/compatibility.md, and
compares two such JSON files.

  matrix_report.py build --cases interop/matrix-cases.json --out-dir DIR RAW.jsonl...
  matrix_report.py compare COMMITTED.json NEW.json      # prints per-cell changes and `N passed, M failed`

Only deterministic fields are kept: elapsed times become buckets ("<1s", "deadline", "beyond deadline"), error
messages lose ports and are shortened. The expectation of what a robust client surfaces lives in ONE table below.
Standard library only.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

TRANSPORTS = ["stdio", "http-2026-07-28", "http-2025-11-25"]
SDKS = ["python", "typescript", "rmcp"]
FAILURE = {"error", "transport_loss"}
SURFACED = {"error", "transport_loss", "timeout"}

# What a robust client should surface, per tool: (allowed outcomes, elapsed bucket required or None,
# next call on the same connection must work: True / None = not judged, text). `delay` depends on its argument and
# `protocol_ping_liveness` on the era; both are resolved in expectation_key().
EXPECTATIONS: dict[str, tuple[set[str], str | None, bool | None, str]] = {
    "ping": ({"result"}, "<1s", True, "result at once; next call ok"),
    "delay<deadline": ({"result"}, "<1s", True, "result after the delay; next call ok"),
    "delay>deadline": ({"timeout"}, "deadline", True, "timeout at the deadline; next call ok"),
    "hang": ({"timeout"}, "deadline", True, "timeout at the deadline; next call ok"),
    "disconnect": (FAILURE, "<1s", None,
                   "transport failure or error at once, never a result or a wait for the deadline"),
    "malformed_message": (SURFACED, None, True, "error or timeout, never a result; next call ok"),
    "duplicate_response": ({"result"}, "<1s", True, "result (the duplicate ignored); next call ok"),
    "response_after_cancellation": ({"timeout"}, "deadline", True,
                                    "timeout at the deadline, the late result ignored; next call ok"),
    "session_loss:during_request": (FAILURE, "<1s", None, "error or transport failure at once, never a hang"),
    "session_loss:after_response": ({"result"}, "<1s", None,
                                    "result (the session is lost afterwards; the next call is not judged)"),
    "protocol_ping_liveness": ({"result"}, "<1s", True,
                               "result: the client answered the server's ping; next call ok"),
    "protocol_ping_liveness:2026": ({"result", "tool_error"}, "<1s", True,
                                    "result or tool error (the stateless era has no server-to-client request "
                                    "channel, the server reports `unsupported`); next call ok"),
    "wrong_id": (SURFACED, None, True, "timeout or error, never a result for an id never sent; next call ok"),
    "missing_id": (SURFACED, None, True, "timeout or error, never a result; next call ok"),
    "truncated_response": (SURFACED, None, True, "timeout or error, never a result; next call ok"),
    "non_json_line": ({"result", "error"}, "<1s", True,
                      "result (the stray line skipped) or an error at once, never a timeout; next call ok"),
    "framing:crlf": ({"result"}, "<1s", True, "result; next call ok"),
    "framing:bom": ({"result", "error"}, "<1s", True, "result or an error at once, never a timeout; next call ok"),
    "oversized_response": ({"result"}, "<1s", True, "result; next call ok"),
    "split_response": ({"result"}, "<1s", True, "result (the parts reassembled); next call ok"),
    "progress_after_result": ({"result"}, "<1s", True, "result (the late progress ignored); next call ok"),
    # progress_stream (docs/ask-back.md): progress every everyMs before the result. steady: 10 × 200 ms, past the
    # 1.5 s deadline: a client that does not reset its timeout on progress times out there, one that does gets the
    # result at 2 s (never later: the progress ends); the other shapes are quick.
    "progress_stream:steady": ({"timeout", "result"}, None, True,
                               "timeout at the deadline (no reset on progress) or the result at 2 s (reset on "
                               "progress); next call ok"),
    "progress_stream:backwards": ({"result"}, "<1s", True, "result (progress values that go backwards tolerated); "
                                  "next call ok"),
    "progress_stream:unknown_token": ({"result"}, "<1s", True,
                                      "result (progress for a token no request carried ignored); next call ok"),
    "request_after_result": ({"result"}, "<1s", True,
                             "result; the server's request about the ended call answered (an error for an undeclared "
                             "capability) or ignored, never a broken connection; next call ok"),
    "elicitation_complete_unknown": ({"result"}, "<1s", True,
                                     "result (the completion for an elicitation id never sent ignored); next call ok"),
    "list_changed_storm": ({"result"}, "<1s", True, "result; next call ok"),
    # Servers that ask back (docs/ask-back.md): the ask_client cells' clients declare elicitation (form and URL mode)
    # and roots, not sampling, accept every form and every URL and list one root.
    "ask_client:elicitation_form:none": ({"result"}, "<1s", True, "result: the form answered during the call; next call ok"),
    "ask_client:elicitation_form:repeated": ({"result"}, "<1s", True,
                                             "result: both copies of the request answered; next call ok"),
    "ask_client:elicitation_form:odd_schema": ({"result", "tool_error"}, "<1s", True,
                                               "result or tool error (a requestedSchema beyond flat primitives "
                                               "filled or refused), never a crash or a hang; next call ok"),
    "ask_client:elicitation_form:never_finish": ({"timeout"}, "deadline", True,
                                                 "timeout at the deadline: the call's clock kept counting while "
                                                 "the client was asked; next call ok"),
    # URL mode: the client declares it too; it accepts the URL (no content), the server then sends
    # notifications/elicitation/complete, never sends it (completion_missing), or sends it for an id it never used.
    "ask_client:elicitation_url:none": ({"result"}, "<1s", True,
                                        "result: the URL accepted (no content) during the call; next call ok"),
    "ask_client:elicitation_url:completion_missing": ({"result"}, "<1s", True,
                                                      "result: the call's result not held back by the completion "
                                                      "that never comes; next call ok"),
    "ask_client:elicitation_url:completion_unknown_id": ({"result"}, "<1s", True,
                                                         "result; the completion for an elicitation id the client "
                                                         "never saw breaks nothing; next call ok"),
    "ask_client:roots:none": ({"result"}, "<1s", True, "result: the roots listed during the call; next call ok"),
    "ask_client:sampling:undeclared": ({"tool_error"}, "<1s", True,
                                       "tool error at once: the sampling request the client never declared is "
                                       "refused (-32601, or -32600 from the Python SDK), not left unanswered until the "
                                       "server gives up; next "
                                       "call ok"),
    # Tasks (docs/ask-back.md): task_work. task_required's client declares nothing; the task_lifecycle cells' client
    # declares the tasks extension, so the reply is a task handle a robust client polls (tasks/get) to its end.
    "task_required": ({"error"}, "<1s", True,
                      "error -32021 at once naming the missing tasks capability, never a result; next call ok"),
    "task_lifecycle:stuck_working": ({"timeout", "error"}, "deadline", True,
                                     "timeout or error at the deadline: the handle polled while the task stays "
                                     "`working`, then given up; never a result; next call ok"),
    "task_lifecycle:poll_interval_zero": ({"result"}, "<1s", True,
                                          "result: the handle polled at a floor of the client's own (no hot loop) "
                                          "until the task's result; next call ok"),
    "task_lifecycle:poll_interval_huge": ({"result", "timeout"}, None, True,
                                          "result (the interval capped by the client) or timeout at its deadline, "
                                          "never a day's sleep; next call ok"),
    "task_lifecycle:status_reverts": ({"result"}, "<1s", True,
                                      "result: the first terminal status kept (terminal is final); next call ok"),
    "task_lifecycle:result_never": ({"result", "timeout"}, None, True,
                                    "result read from tasks/get, or timeout at the deadline for the tasks/result "
                                    "that never answers; next call ok"),
    "task_lifecycle:failed": ({"error", "tool_error"}, "<1s", True,
                              "error: the task's failure (-32603) reported, never a result; next call ok"),
    "task_lifecycle:cancelled": ({"error", "tool_error"}, "<1s", True,
                                 "error: the task ended cancelled, reported as not done; next call ok"),
    # Multi-round-trip calls (2026-07-28, SEP-2322): input_rounds. The client answers every form with confirm: true.
    "input_required:none": ({"result"}, "<1s", True,
                            "result: the form answered, the call retried with its requestState; next call ok"),
    "input_required:endless": ({"error", "timeout"}, None, True,
                               "error once the client's own bound on rounds (or its deadline) is reached, never "
                               "a hang; next call ok"),
    "input_required:tampered_state": ({"error"}, "<1s", True,
                                      "error -32602 naming requestState at once, not resent in a loop; next call ok"),
    "input_required:unknown_result_type": ({"error"}, "<1s", True,
                                           "error: a resultType no MCP version defines reported, never taken for "
                                           "a result; next call ok"),
    "http_status": (FAILURE, "<1s", None, "error at once naming the status, never a result or a timeout"),
    "html_page": (FAILURE, "<1s", True,
                  "error at once naming the status (an HTML page is not MCP), never a result or a timeout; next call ok"),
    "not_jsonrpc": (FAILURE, "<1s", True,
                    "error at once (JSON that is not JSON-RPC), never a result or a timeout; next call ok"),
    "protocol_error": (FAILURE, "<1s", True, "error at once with the 2026-07-28 code; next call ok"),
    "session_lifecycle:unknown_400": ({"result"}, "<1s", None,
                                      "result (the id then gets 400; the next call is not judged: the spec asks "
                                      "for a new session on 404)"),
    "session_lifecycle:get_404": ({"result"}, "<1s", True, "result; next call ok (only the GET stream is refused)"),
    "session_lifecycle:restart": ({"result"}, "<1s", True,
                                  "result; next call ok on a new session (a 404 MUST start one)"),
    "session_lifecycle:reinit_404": ({"result"}, "<1s", None,
                                     "result (the next call meets 404s for its re-initialisations too; not judged)"),
    "session_lifecycle:expire_in_flight": (FAILURE, "<1s", None,
                                           "error at once (the request's session expired in flight), never a hang"),
    # Stream faults (2025-11-25 resumable streams, docs/streams.md); the cases give retry: 100 ms.
    "stream_cut": ({"result"}, "<1s", True, "result: resumed with Last-Event-ID after retry:; next call ok"),
    "stream_cut:noids": (FAILURE, "<1s", None,
                         "error at once (no id: nothing to resume), never a wait for the deadline"),
    "stream_cut_again": ({"result"}, "<1s", True,
                         "result: resumed again with the same Last-Event-ID after an empty resume; next call ok"),
    # Every resume closed empty (a server whose replay keeps failing): a robust client bounds its empty resumes
    # and fails the call then, not at the caller's deadline (a timeout does not say whether the client kept
    # resuming or stopped and waited: python-sdk-2393 in known-client-bugs.md counts the resumes).
    "stream_cut_again:endless": (FAILURE, None, True,
                                 "error after a bounded number of empty resumes, not a wait until the deadline; "
                                 "next call ok"),
    "stream_retry:0": ({"result"}, "<1s", True, "result: resumed at once (retry: 0, no spin); next call ok"),
    "stream_retry:absent": ({"result"}, None, True,
                            "result: resumed after the client's own default delay (no retry:); next call ok"),
    "empty_event_id": (FAILURE, None, None,
                       "error (the empty id: cleared the last event id: nothing to resume), never a result "
                       "fetched with the stale Last-Event-ID"),
    "replay_duplicate": ({"result"}, "<1s", True, "result (the replayed progress ignored); next call ok"),
    "replay_foreign": ({"result"}, "<1s", True, "result (the other stream's event not taken for its own); next call ok"),
    "resume_refused": (FAILURE, None, None, "error (the resume was refused), never a wait for the deadline"),
    "stream_lost": (FAILURE, "<1s", None, "error or transport failure at once, never a result or a hang"),
    # The tool surface (docs/tool-surface.md). The drift and pagination tools change later listings; the matrix
    # clients call without listing, so these rows check the call and the next one, not the listing.
    "tool_list_drift": ({"result"}, "<1s", True, "result (list_changed before it ignored or acted on); next call ok"),
    "list_pagination": ({"result"}, "<1s", True, "result (list_changed before it ignored or acted on); next call ok"),
    "structured_output:none": ({"result"}, "<1s", True, "result; next call ok"),
    "structured_output:output_schema_violation": ({"error"}, "<1s", True,
                                                  "error: structuredContent breaks the listed outputSchema (a client "
                                                  "that validates rejects it); next call ok"),
    "structured_output:error_structured_content": ({"tool_error"}, "<1s", True,
                                                   "tool error, its structuredContent not validated (an error result "
                                                   "is not held to the outputSchema); next call ok"),
    "structured_output:missing_structured_content": ({"error"}, "<1s", True,
                                                     "error: the tool declares an outputSchema and the result has no "
                                                     "structuredContent; next call ok"),
    "structured_output:content_structured_mismatch": ({"result"}, "<1s", True,
                                                      "result (text and structure disagree, each valid); next call ok"),
}


# What a cell's record must also say to meet its expectation (a regular expression searched in its error code,
# message and text): the outcome alone cannot tell a task's own result or error from an SDK misreading the handle
# (an empty result, a validation error).
EVIDENCE: dict[str, str] = {
    "task_required": r"-32021",
    "task_lifecycle:poll_interval_zero": r"task work done",
    "task_lifecycle:poll_interval_huge": r"task work done|timed out|[Tt]imeout",
    "task_lifecycle:status_reverts": r"task work done",
    "task_lifecycle:result_never": r"task work done|timed out|[Tt]imeout",
    "task_lifecycle:failed": r"-32603|failed",
    "task_lifecycle:cancelled": r"cancel",
    "input_required:none": r"confirm = true",
    "input_required:tampered_state": r"requestState",
}


def expectation_key(tool: str, args: dict, transport: str, deadline_ms: int) -> str:
    if tool == "delay":
        key = "delay<deadline" if args.get("delayMs", 0) < deadline_ms else "delay>deadline"
    elif tool == "protocol_ping_liveness" and transport == "http-2026-07-28":
        key = "protocol_ping_liveness:2026"
    elif tool == "session_loss":
        key = f"session_loss:{args.get('activation')}"
    elif tool == "session_lifecycle":
        key = f"session_lifecycle:{args.get('variant')}"
    elif tool == "framing":
        key = f"framing:{args.get('style')}"
    elif tool == "stream_cut" and args.get("ids") is False:
        key = "stream_cut:noids"
    elif tool == "ask_client":
        key = f"ask_client:{args.get('ask')}:{args.get('fault', 'none')}"
    elif tool == "structured_output":
        key = f"structured_output:{args.get('fault')}"
    elif tool == "task_work":
        key = "task_required" if args.get("requireTask") else f"task_lifecycle:{args.get('fault')}"
    elif tool == "progress_stream":
        key = f"progress_stream:{args.get('shape', 'steady')}"
    elif tool == "input_rounds":
        key = f"input_required:{args.get('fault', 'none')}"
    elif tool == "stream_cut_again" and args.get("resumes", 1) > 1:
        key = "stream_cut_again:endless"
    elif tool == "stream_retry":
        key = "stream_retry:absent" if args.get("retryMs") is None else "stream_retry:0"
    else:
        key = tool
    return key


def expectation_for(tool: str, args: dict, transport: str, deadline_ms: int):
    return EXPECTATIONS[expectation_key(tool, args, transport, deadline_ms)]


def bucket(rec: dict, deadline_ms: int) -> str:
    if rec.get("outcome") == "hang":
        return "beyond deadline"
    ms = rec.get("elapsedMs")
    if ms is None:
        return "n/a"
    if ms < 1000:
        return "<1s"
    return "deadline" if ms < deadline_ms + 1000 else "beyond deadline"


def short(msg: str) -> str:
    msg = re.sub(r"127\.0\.0\.1:\d+", "127.0.0.1:PORT", msg)
    msg = re.sub(r"localhost:\d+", "localhost:PORT", msg)
    msg = re.sub(r"Transport \[rmcp::[^\]]*\] error", "transport error", msg)
    msg = msg.split("\n")[0].strip()
    return msg if len(msg) <= 90 else msg[:87] + "..."


def detail(rec: dict) -> str:
    if rec.get("outcome") in ("result", "tool_error"):
        text = rec.get("text") or ""
        try:
            value = json.loads(text)
        except ValueError:
            return short(text.rstrip("x"))
        if isinstance(value, dict):
            if isinstance(value.get("protocolPing"), dict):
                return f"protocolPing: {value['protocolPing'].get('outcome')}"
            if "status" in value:
                return f"status: {value['status']}"
        return ""
    kind = rec.get("errorType") or "?"
    if rec.get("errorCode") is not None:
        kind += f" {rec['errorCode']}"
    return f"{kind}: {short(rec.get('message') or '')}"


def normalise(rec: dict, deadline_ms: int) -> dict:
    outcome = rec.get("outcome", "error")
    elapsed = bucket(rec, deadline_ms)
    allowed, want_bucket, want_next, text = expectation_for(rec["tool"], rec["args"], rec["transport"], deadline_ms)
    meets = outcome in allowed and (want_bucket is None or elapsed == want_bucket)
    evidence = EVIDENCE.get(expectation_key(rec["tool"], rec["args"], rec["transport"], deadline_ms))
    if evidence is not None:
        said = f"{rec.get('errorCode', '')} {rec.get('message') or ''} {rec.get('text') or ''}"
        meets = meets and re.search(evidence, said) is not None
    if want_next:
        meets = meets and rec.get("nextCallOk") is True
    return {
        "sdk": rec["sdk"],
        "sdkVersion": rec["sdkVersion"],
        "transport": rec["transport"],
        "tool": rec["tool"],
        "args": rec["args"],
        "outcome": outcome,
        "detail": detail(rec),
        "elapsedMs": elapsed,
        "nextCallOk": rec.get("nextCallOk"),
        "meetsExpectation": meets,
        "expectation": text,
    }


def case_label(tool: str, args: dict) -> str:
    if not args:
        return f"`{tool}`"
    inner = ", ".join(f"{k}: {v}" for k, v in args.items())
    return f"`{tool}` {{{inner}}}"


def key(r: dict) -> tuple:
    return (r["sdk"], r["transport"], r["tool"], json.dumps(r["args"], sort_keys=True))


def build(argv: list[str]) -> int:
    cases_path = argv[argv.index("--cases") + 1]
    out_dir = Path(argv[argv.index("--out-dir") + 1])
    raws = [a for i, a in enumerate(argv) if not a.startswith("--") and argv[i - 1] not in ("--cases", "--out-dir")]
    spec = json.loads(Path(cases_path).read_text(encoding="utf-8"))
    deadline_ms = spec["deadlineMs"]
    order = {(c["tool"], json.dumps(c["args"], sort_keys=True)): i for i, c in enumerate(spec["cases"])}
    records = []
    for raw in raws:
        for line in Path(raw).read_text(encoding="utf-8").splitlines():
            line = line.strip()
            if line.startswith("{"):
                records.append(normalise(json.loads(line), deadline_ms))
    records.sort(key=lambda r: (SDKS.index(r["sdk"]), TRANSPORTS.index(r["transport"]),
                                order[(r["tool"], json.dumps(r["args"], sort_keys=True))]))
    seen = set()
    for r in records:
        if key(r) in seen:
            raise SystemExit(f"duplicate record {key(r)}")
        seen.add(key(r))
    versions = {r["sdk"]: r["sdkVersion"] for r in records}
    covered = {sdk: [t for t in TRANSPORTS if any(r["sdk"] == sdk and r["transport"] == t for r in records)]
               for sdk in SDKS if sdk in versions}
    doc = {"deadlineMs": deadline_ms, "sdks": [{"sdk": s, "version": versions[s], "transports": covered[s]}
                                               for s in covered], "cells": records}
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "compatibility.json").write_text(json.dumps(doc, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    (out_dir / "compatibility.md").write_text(markdown(doc, spec), encoding="utf-8")
    met = sum(r["meetsExpectation"] for r in records)
    print(f"matrix_report: {len(records)} cells, {met} meet the expectation", file=sys.stderr)
    return 0


def markdown(doc: dict, spec: dict) -> str:
    deadline_ms = doc["deadlineMs"]
    cells = {key(r): r for r in doc["cells"]}
    columns = [(s["sdk"], t) for s in doc["sdks"] for t in s["transports"]]
    total = len(doc["cells"])
    met = sum(r["meetsExpectation"] for r in doc["cells"])
    out = [
        "# Compatibility: the fault suite against real MCP SDK clients",
        "",
        "Generated by `scripts/interop-matrix.sh --record` (do not edit by hand); the same data is in",
        "[`compatibility.json`](compatibility.json). Each cell is a real observation: a fresh connection (stdio: a",
        "fresh `faultlab serve` process) calls the fault tool with a "
        f"{deadline_ms / 1000:g} s client deadline, then calls `ping` on the same connection.",
        "CI reruns the matrix and fails when any observation changes, so a change in behaviour is re-recorded on purpose.",
        "",
        "| SDK | version | transports |",
        "|---|---|---|",
    ]
    for s in doc["sdks"]:
        missing = [t for t in TRANSPORTS if t not in s["transports"]]
        note = f" (not {', '.join(missing)}: the SDK does not speak it)" if missing else ""
        out.append(f"| {s['sdk']} | {s['version']} | {', '.join(s['transports'])}{note} |")
    out += [
        "",
        f"**{total} cells, {met} meet the expectation of a robust client, {total - met} do not.** "
        "stdio connections use `initialize` at 2025-11-25; `http-2026-07-28` uses `server/discover`.",
        "",
        "Cell: outcome (elapsed bucket), `next ok` / `next ✗` whether the following `ping` on the same connection "
        "worked, ✅ meets the expectation, ❌ does not; `—` the fault does not exist on that transport.",
        "",
        "| fault | " + " | ".join(f"{s}<br>{t}" for s, t in columns) + " |",
        "|---|" + "---|" * len(columns),
    ]
    for c in spec["cases"]:
        row = [case_label(c["tool"], c["args"])]
        for s, t in columns:
            r = cells.get((s, t, c["tool"], json.dumps(c["args"], sort_keys=True)))
            if r is None:
                row.append("—")
                continue
            nxt = {True: "next ok", False: "next ✗", None: "next n/a"}[r["nextCallOk"]]
            row.append(f"{'✅' if r['meetsExpectation'] else '❌'} {r['outcome']} ({r['elapsedMs']}), {nxt}")
        out.append("| " + " | ".join(row) + " |")
    out += ["", "## Expectations", "", "| fault | a robust client |", "|---|---|"]
    seen = set()
    for c in spec["cases"]:
        for t in TRANSPORTS:
            if t not in c.get("transports", spec["transports"]):
                continue
            text = expectation_for(c["tool"], c["args"], t, deadline_ms)[3]
            label = case_label(c["tool"], c["args"])
            if (label, text) in seen:
                continue
            seen.add((label, text))
            suffix = f" ({t})" if c["tool"] == "protocol_ping_liveness" else ""
            out.append(f"| {label}{suffix} | {text} |")
    for s in doc["sdks"]:
        out += ["", f"## {s['sdk']} ({s['version']})", "",
                "| transport | fault | outcome | detail | elapsed | next call | meets |", "|---|---|---|---|---|---|---|"]
        for r in doc["cells"]:
            if r["sdk"] != s["sdk"]:
                continue
            det = r["detail"].replace("|", "\\|")
            out.append(f"| {r['transport']} | {case_label(r['tool'], r['args'])} | {r['outcome']} | {det} | "
                       f"{r['elapsedMs']} | {json.dumps(r['nextCallOk'])} | {'yes' if r['meetsExpectation'] else 'no'} |")
    out += ["", "## Run it against your own client", "",
            "`scripts/interop-matrix.sh` runs the matrix (`--record` rewrites this file). To add your client, write a",
            "program like `interop/python/matrix_client.py` that reads `interop/matrix-cases.json` and prints one",
            "record per cell, and add it to the script.", ""]
    return "\n".join(out)


def compare(argv: list[str]) -> int:
    old = {key(r): r for r in json.loads(Path(argv[0]).read_text(encoding="utf-8"))["cells"]}
    new = {key(r): r for r in json.loads(Path(argv[1]).read_text(encoding="utf-8"))["cells"]}
    passed = failed = 0
    for k in sorted(set(old) | set(new)):
        if old.get(k) == new.get(k):
            passed += 1
            continue
        failed += 1
        o, n = old.get(k), new.get(k)
        if o is None:
            print(f"CHANGED {k}: not in the committed table", file=sys.stderr)
        elif n is None:
            print(f"CHANGED {k}: not observed in this run", file=sys.stderr)
        else:
            diffs = {f: (o.get(f), n.get(f)) for f in sorted(set(o) | set(n)) if o.get(f) != n.get(f)}
            print(f"CHANGED {k}: " + "; ".join(f"{f}: {a!r} -> {b!r}" for f, (a, b) in diffs.items()),
                  file=sys.stderr)
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


def main() -> int:
    if len(sys.argv) < 2 or sys.argv[1] not in ("build", "compare"):
        print(__doc__, file=sys.stderr)
        return 2
    return build(sys.argv[2:]) if sys.argv[1] == "build" else compare(sys.argv[2:])


if __name__ == "__main__":
    sys.exit(main())
