"""One framework against every fault of the interoperability matrix, over stdio and Streamable HTTP: one process
that imports the framework once and runs the cells concurrently (each mostly waits). Started by
scripts/frameworks-matrix.sh; interop/frameworks/report.py turns the records into docs/frameworks.{json,md}.

    python matrix.py --framework fw_pydantic_ai --bin FAULTLAB --cases interop/matrix-cases.json \
        --work DIR [--bound 3] [--retry-bound 12] [--jobs 4] [--only TOOL|model] [--cells SAMPLE.json]
    python matrix.py --framework DRIVER.mjs --node NODE ...   # a TypeScript framework (node_framework.py)

A cell: a fresh `faultlab model` whose script asks for the fault's tool (on_error: continue), then `ping`, then
answers; a fresh `faultlab serve` (stdio: the command the framework starts itself; http: a listener started
here). The framework's own agent runs against both; a run with no new model request for --bound seconds counts
as hung and is abandoned (see progressing); a hung cell is run once more with --retry-bound. Evidence, one JSON
line per cell on stdout: how the run ended, what the model's recording shows the framework passed back (the
fault's result, then ping's), and how many times the server armed the fault (a count above 1 is a retry by the
framework).

Model-hop cells (transport `model`, MODEL_FAULTS): the MCP server is `faultlab serve` over HTTP with no fault, the
script asks for `ping` and answers, and `faultlab model --rules` faults the framework's first model request (the
one with no tool results yet) once. Evidence: how the run ended (the script's answer is a recovery, another final
text hides the fault), and how many times the framework sent that first request (above 1: it retried the model).

--cells runs only the listed cells of this framework (the check mode's sample, from `report.py sample`: a JSON list
of {"framework", "case", "transport", "expect_hung"}); a cell whose committed outcome is hung runs once, with
--retry-bound, which is the run that decides it in the full matrix.
"""

import argparse
import asyncio
import importlib
import importlib.metadata
import json
import os
import re
import signal
import sys
import time

import node_framework

PROMPT = "Call the tool you are asked for, then ping."
ANSWER = "done"
TRANSPORTS = ("stdio", "http")
# What makes a tool result count as failed (case-insensitive). Not the model's default `error`: LlamaIndex passes
# the result's repr, whose `isError=False` would count every success as a failure.
# Arguments that differ from the SDK matrix's cases. The server waits livenessTimeoutMs for the client's answer
# to its ping: the SDK matrix's 800 ms is sized for a bare client, and a framework's event loop busy with other
# cells can take longer, which would make the cell depend on the machine's load.
ARGUMENTS = {"protocol_ping_liveness": {"livenessTimeoutMs": 5000}}
# The model hop's faults, each on the framework's first model request: the wire's (as the proxy has them) and the
# model APIs' own (the catalogue's model-only faults, docs/model.md). Not here: `token_quota` (its 429 asks a
# client to wait up to a minute, which only rate_limit's shorter Retry-After shows in a bounded run) and the
# schedules (burst_failure, server_outage, cascading_failure: a 503 like http_status 503, repeated).
MODEL_FAULTS = [
    {"type": "rate_limit", "retry_after_sec": 1},
    {"type": "http_status", "status": 500},
    {"type": "http_status", "status": 401},
    {"type": "malformed"},
    {"type": "truncated"},
    {"type": "disconnect"},
    {"type": "timeout"},
    {"type": "overloaded"},
    {"type": "context_length_exceeded"},
    {"type": "tool_call_cut"},
    {"type": "tool_arguments_invalid"},
    {"type": "unknown_tool_call"},
    {"type": "duplicate_call_id"},
    {"type": "refusal"},
    {"type": "slow_drip", "token_ms": 300},
]
# The process groups of the listeners started and not yet stopped: a matrix ended by a signal (the script's
# timeout) ends them too, since each runs in a session of its own and would outlive it.
LISTENERS: set[int] = set()
# A run gets this long to import, connect and send its first model request before it counts as hung (s).
STARTUP_S = 30.0
# How often a running cell's recording is looked at for progress (s).
POLL_S = 0.1
FAILURE_MARKERS = ["error:", "an error occurred", "error executing", "iserror=true", "is_error=true", "failed", "timed out", "timeout",
                   "exception", "closed", "cancelled"]


def load_cases(path: str) -> list[dict]:
    """The cases the matrix runs: those of the SDK matrix's cases file, with ARGUMENTS applied, then a model-hop
    case per MODEL_FAULTS entry (also what interop/frameworks/coverage.py expects recorded)."""
    with open(path, encoding="utf-8") as f:
        cases = json.load(f)["cases"]
    for case in cases:
        case["args"] = {**case["args"], **ARGUMENTS.get(case["tool"], {})}
    return cases + [{"tool": "ping", "args": {}, "model_fault": fault} for fault in MODEL_FAULTS]


def case_id(case: dict) -> str:
    if "model_fault" in case:
        fault = case["model_fault"]
        args = " ".join(f"{k}={v}" for k, v in sorted(fault.items()) if k != "type")
        return f"model: {fault['type']} {args}".strip()
    args = " ".join(f"{k}={v}" for k, v in sorted(case["args"].items()))
    return f"{case['tool']} {args}".strip()


def case_transports(case: dict) -> list[str]:
    if "model_fault" in case:
        return ["model"]
    wanted = case.get("transports")
    if wanted is None:
        return list(TRANSPORTS)
    out = []
    if "stdio" in wanted:
        out.append("stdio")
    if any(t.startswith("http") for t in wanted):
        out.append("http")
    return out


def normalise(text: str) -> str:
    """A text as the matrix records it: what stays the same from run to run (no addresses, ports, timestamps,
    temporary paths, long numbers), on one line, cut at 140 characters."""
    text = re.sub(r"\s+", " ", text).strip()
    text = re.sub(r"\d{4}-\d\d-\d\dT[0-9:.]+Z?", "<time>", text)
    text = re.sub(r"https?://[^\s'\"]+", "<url>", text)
    text = re.sub(r"/tmp/[^\s'\"]+", "<path>", text)
    text = re.sub(r"0x[0-9a-fA-F]+", "<hex>", text)
    # pydantic-ai names each MCP client with a random id in its errors ("[Client-c08f] Reached auto-pagination …").
    text = re.sub(r"\[Client-[0-9a-f]+\]", "[Client-<id>]", text)
    text = re.sub(r"\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b", "<uuid>", text)
    text = re.sub(r"\d{5,}", "<n>", text)
    return text[:140]


async def start(argv: list[str], pattern: str, log: str) -> tuple[asyncio.subprocess.Process, str, list[str]]:
    """Starts a faultlab listener in a process group of its own and reads its stderr until the address line;
    the rest of stderr keeps being collected (the diagnostics) until it exits."""
    proc = await asyncio.create_subprocess_exec(
        *argv, stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.PIPE, start_new_session=True)
    LISTENERS.add(proc.pid)
    lines: list[str] = []
    while True:
        raw = await proc.stderr.readline()
        if not raw:
            raise RuntimeError(f"{argv[1]} did not start: {' '.join(lines)[-400:]}")
        line = raw.decode(errors="replace").rstrip("\n")
        lines.append(line)
        found = re.search(pattern, line)
        if found:
            break

    async def drain():
        async for raw in proc.stderr:
            lines.append(raw.decode(errors="replace").rstrip("\n"))
        with open(log, "w", encoding="utf-8") as out:
            out.write("\n".join(lines) + "\n")

    proc.drain_task = asyncio.ensure_future(drain())  # type: ignore[attr-defined]
    return proc, found.group(1), lines


async def stop(proc: asyncio.subprocess.Process | None) -> None:
    if proc is None:
        return
    LISTENERS.discard(proc.pid)
    if proc.returncode is None:
        try:
            os.killpg(proc.pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
        try:
            await asyncio.wait_for(proc.wait(), 5)
        except asyncio.TimeoutError:
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            await proc.wait()
    await proc.drain_task  # type: ignore[attr-defined]


async def progressing(task: asyncio.Future, record: str, bound: float) -> bool:
    """Waits for the run to end; False when it made no progress for `bound` seconds. Progress is a new request at
    the model, so a run slowed by a loaded machine is not taken for a hung one: the bound counts only from the
    framework's last model request (from its start: STARTUP_S, importing and connecting)."""
    loop = asyncio.get_running_loop()
    seen, last = 0, loop.time()
    limit = STARTUP_S
    while True:
        done, _ = await asyncio.wait({task}, timeout=POLL_S)
        if done:
            return True
        try:
            with open(record, "rb") as rec:
                count = rec.read().count(b"\n")
        except OSError:
            count = 0
        if count != seen:
            seen, last, limit = count, loop.time(), bound
        elif loop.time() - last > limit:
            return False


def armed(lines: list[str]) -> int:
    """How many times the server armed the fault: once per call of the fault's tool that reached it."""
    count = 0
    for line in lines:
        if not line.startswith("{"):
            continue
        try:
            event = json.loads(line)
        except ValueError:
            continue
        if event.get("event") == "fault_armed":
            count += 1
    return count


def offered(request: dict, tool: str) -> bool:
    """Whether the framework's first model request declares the tool (by name, or prefixed as frameworks do)."""
    names = []
    for spec in (request.get("request") or {}).get("tools") or []:
        name = spec.get("name") or (spec.get("function") or {}).get("name") or ""
        names.append(name)
    return any(n == tool or re.search(rf"[_./-]{re.escape(tool)}$", n) for n in names)


def observations(requests: list[dict]) -> list[dict]:
    """Tool results a framework passed back as user text (smolagents: "Observation:\n…" or "Error:\n…" after its
    "Calling tools:" message), in the recording's tool_results shape."""
    for request in reversed(requests):
        messages = (request.get("request") or {}).get("messages") or []
        called = False
        for message in messages:
            content = message.get("content")
            if isinstance(content, list):
                content = " ".join(part.get("text", "") for part in content if isinstance(part, dict))
            content = content or ""
            if message.get("role") == "assistant" and content.startswith("Calling tools:"):
                called = True
            elif called and message.get("role") == "user":
                failed = content.startswith("Error:")
                text = content.split("\n", 1)[1] if "\n" in content else ""
                return [{"text": text, "failed": failed or not text.strip()}]
    return []


def describe(error: BaseException) -> str:
    # The innermost exception of a group is the one that says what went wrong.
    while isinstance(error, BaseExceptionGroup) and error.exceptions:
        error = error.exceptions[0]
    return normalise(f"{type(error).__name__}: {error}")


async def cell(fw, args, case: dict, transport: str, index: int, bound: float) -> dict:
    name = f"{index:02d}-{case['tool']}-{transport}"
    script = os.path.join(args.work, f"{name}.script.json")
    record = os.path.join(args.work, f"{name}.model.jsonl")
    as_text = getattr(fw, "TOOL_RESULTS_AS_TEXT", False)
    on_model = transport == "model"
    steps = [{"call": case["tool"], "arguments": case["args"], "on_error": "continue"}]
    if not as_text:
        steps.append({"call": "ping"})
    with open(script, "w", encoding="utf-8") as out:
        json.dump({"steps": steps, "answer": ANSWER, "failure_markers": FAILURE_MARKERS}, out)
    model_argv = [args.bin, "model", "--script", script, "--record", record, "--port", "0"]
    if on_model:
        rules = os.path.join(args.work, f"{name}.rules.json")
        with open(rules, "w", encoding="utf-8") as out:
            # nth 1: the first model request, once; a retry of it gets the script's turn.
            json.dump({"seed": 1, "rules": [{"name": "first-request", "match": {"nth": 1},
                                             "fault": case["model_fault"]}]}, out)
        model_argv += ["--rules", rules]
    model = serve = None
    serve_lines: list[str] = []
    out = {"framework": fw.NAME, "case": case_id(case), "tool": case["tool"], "transport": transport}
    try:
        model, model_url, _ = await start(
            model_argv, r"model listening at (http://\S+)", os.path.join(args.work, f"{name}.model.log"))
        if transport in ("http", "model"):
            serve, url, serve_lines = await start(
                [args.bin, "serve", "--transport", "http", "--port", "0"],
                r"listening at (http://\S+)", os.path.join(args.work, f"{name}.serve.log"))
            server = {"transport": "http", "url": url}
        else:
            serve_log = os.path.join(args.work, f"{name}.serve.log")
            server = {"transport": "stdio",
                      "command": ["/bin/sh", "-c", 'exec "$0" serve 2>"$1"', args.bin, serve_log]}
        task = asyncio.ensure_future(fw.run(model_url, server, PROMPT))
        if not await progressing(task, record, bound):
            task.cancel()  # not awaited: a framework that ignores cancellation must not hold the matrix
            out["end"] = "hung"
        elif task.exception() is not None:
            out["end"] = "crashed"
            out["error"] = describe(task.exception())
        else:
            out["end"] = "answered" if as_text or ANSWER in task.result() else "other"
            out["output"] = normalise(task.result())
    finally:
        await stop(model)
        await stop(serve)
    if transport == "stdio":
        try:
            with open(server["command"][4], encoding="utf-8") as log:
                serve_lines = log.read().splitlines()
        except OSError:
            serve_lines = []
    requests = []
    try:
        with open(record, encoding="utf-8") as rec:
            requests = [json.loads(line) for line in rec if line.strip()]
    except OSError:
        pass
    if on_model:
        out["model_requests"] = len(requests)
        # Each request whose body is the first one's again is a retry of the faulted request (by the body, not by
        # the absence of tool results: smolagents passes its results as user text).
        out["first_request_sent"] = sum(1 for r in requests if requests and r.get("request") == requests[0].get("request"))
        out["faulted"] = sum(1 for r in requests if r.get("fault"))
        return out
    if requests and not offered(requests[0], case["tool"]):
        # The server does not list this tool over the protocol version the framework speaks (session_loss and
        # response_after_cancellation need 2025-11-25 sessions): the fault never reached the framework.
        out.update(end="not offered", seen="nothing", ping="not reached", model_requests=len(requests), armed=0)
        out.pop("error", None)
        out.pop("output", None)
        return out
    results = max((r.get("tool_results") or [] for r in requests), key=len, default=[])
    if as_text:
        results = observations(requests)
    out["model_requests"] = len(requests)
    if results:
        out["seen"] = "error" if results[0]["failed"] else "result"
        out["text"] = normalise(results[0]["text"])
    else:
        out["seen"] = "nothing"
    out["ping"] = ("error" if results[1]["failed"] else "ok") if len(results) > 1 else "not reached"
    out["armed"] = armed(serve_lines)
    return out


async def main_async(args) -> None:
    if args.framework.endswith(".mjs"):
        fw = node_framework.NodeFramework(args.framework, args.node, os.path.join(args.work, "node"))
        version = fw.VERSION
    else:
        fw = importlib.import_module(args.framework)
        version = importlib.metadata.version(fw.PACKAGE)
    cases = load_cases(args.cases)
    cells = [(case, t) for case in cases for t in case_transports(case)
             if not args.only or (case["tool"] == args.only and "model_fault" not in case)
             or (args.only == "model" and "model_fault" in case)]
    if args.missing_from:
        with open(args.missing_from, encoding="utf-8") as f:
            committed = next((other["cells"] for other in json.load(f)["frameworks"]
                              if other["framework"] == fw.NAME), {})
        cells = [(c, t) for c, t in cells if t not in committed.get(case_id(c), {})]
    expect_hung = {}
    if args.cells:
        with open(args.cells, encoding="utf-8") as f:
            expect_hung = {(c["case"], c["transport"]): c["expect_hung"] for c in json.load(f)
                           if c["framework"] == fw.NAME}
        # The expected hangs first: they only wait out the bound, beside the others.
        cells = sorted(((c, t) for c, t in cells if (case_id(c), t) in expect_hung),
                       key=lambda cell: not expect_hung[(case_id(cell[0]), cell[1])])
    bounds = [args.retry_bound if expect_hung.get((case_id(c), t)) else args.bound for c, t in cells]
    os.makedirs(args.work, exist_ok=True)
    gate = asyncio.Semaphore(args.jobs)
    started = time.monotonic()

    async def one(i, case, transport, bound):
        async with gate:
            try:
                return await cell(fw, args, case, transport, i, bound)
            except Exception as error:  # the lab itself failed: recorded, and the report fails the cell
                return {"framework": fw.NAME, "case": case_id(case), "tool": case["tool"], "transport": transport,
                        "end": "lab-error", "error": describe(error)}

    records = await asyncio.gather(*(one(i, c, t, bounds[i]) for i, (c, t) in enumerate(cells)))
    # A cell that hung while every other cell competed for the processor gets a second run with the machine
    # quieter (only the hung ones) and a longer bound (--retry-bound, well past the 5 s deadline of the framework
    # with the shortest one and the server's 5 s late response, so those show as what they lead to): what hangs twice is taken as hung.
    again = [i for i, r in enumerate(records) if r["end"] == "hung" and bounds[i] < args.retry_bound]
    retried = await asyncio.gather(*(one(i, *cells[i], args.retry_bound) for i in again))
    for i, record in zip(again, retried):
        records[i] = record
    meta = {"framework": fw.NAME, "package": fw.PACKAGE,
            "version": version, "api": fw.API,
            "default_deadline": fw.DEFAULT_DEADLINE, "bound_s": args.bound, "retry_bound_s": args.retry_bound}
    print(json.dumps({"meta": meta}), flush=True)
    for record in records:
        print(json.dumps(record), flush=True)
    print(f"{fw.NAME}: {len(records)} cells in {time.monotonic() - started:.1f} s", file=sys.stderr, flush=True)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--framework", required=True)
    parser.add_argument("--bin", required=True)
    parser.add_argument("--cases", required=True)
    parser.add_argument("--work", required=True)
    parser.add_argument("--bound", type=float, default=3.0)
    parser.add_argument("--retry-bound", type=float, default=12.0)
    parser.add_argument("--jobs", type=int, default=4)
    parser.add_argument("--only")
    parser.add_argument("--cells")
    # Only the cells this framework has none of in a committed matrix (the cases added since it was recorded).
    parser.add_argument("--missing-from")
    parser.add_argument("--node", default="node")
    args = parser.parse_args()
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    def end_listeners(signum, _frame):
        node_framework.stop_all()
        for pid in list(LISTENERS):
            try:
                os.killpg(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        os._exit(128 + signum)

    signal.signal(signal.SIGTERM, end_listeners)
    signal.signal(signal.SIGINT, end_listeners)
    # Not asyncio.run: its shutdown would wait on the runs abandoned as hung, which may never end.
    loop = asyncio.new_event_loop()
    loop.run_until_complete(main_async(args))
    # Abandoned runs (hung frameworks, their threads and children) end with the process; Node runs (a process
    # group each) are ended here.
    node_framework.stop_all()
    sys.stdout.flush()
    os._exit(0)


if __name__ == "__main__":
    main()
