"""What every Python reproduction shares: `faultlab serve` (FAULTLAB_BIN) on a loopback port of its own, its URL read
from its "listening at" line, killed on every path; `faultlab proxy` in front of it when a check needs faultlab's
side of the wire (the proxy's trajectory: every frame it received and what it did with it); and the verdict as the
exit code scripts/known-client-bugs.sh reads (0 reproduced, 3 fixed upstream, 1 could not run)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import tempfile
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

REPRODUCED = 0
COULD_NOT_RUN = 1
FIXED = 3
URL_RE = re.compile(r"listening at (http://\S+)")
PROXY_STOP_S = 5  # seconds the proxy gets to write its trajectory's last lines after SIGTERM


def _binary() -> str:
    binary = os.environ.get("FAULTLAB_BIN")
    if not binary:
        raise RuntimeError("FAULTLAB_BIN is not set")
    return binary


@contextmanager
def _listening(argv: list[str], what: str, on_line: Callable[[str], None] | None = None,
               stop_s: float = 0) -> Iterator[str]:
    """Starts `argv` (a faultlab command that prints "listening at URL" on stderr) and yields the URL (15 s at most);
    every stderr line also goes to `on_line`. At the end it is stopped: SIGTERM and `stop_s` seconds to end (so it
    can write what it records), else killed."""
    proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            text=True, errors="replace")
    found: list[str] = []
    ready = threading.Event()

    def pump() -> None:
        assert proc.stderr is not None
        for line in proc.stderr:
            if not found and (m := URL_RE.search(line)):
                found.append(m.group(1))
                ready.set()
            if on_line is not None:
                on_line(line)
        ready.set()

    threading.Thread(target=pump, daemon=True).start()
    try:
        if not ready.wait(15) or not found:
            raise RuntimeError(f"faultlab {what} printed no 'listening at' URL within 15 s")
        yield found[0]
    finally:
        if stop_s > 0:
            proc.terminate()
            try:
                proc.wait(timeout=stop_s)
            except subprocess.TimeoutExpired:
                pass
        if proc.poll() is None:
            proc.kill()
        proc.wait(timeout=5)


@contextmanager
def serve(*extra: str, auth_events: list[dict] | None = None) -> Iterator[str]:
    """`faultlab serve --transport http --port 0 *extra`, yielding its URL once it listens (15 s at most). With
    `--auth` among `extra`, `auth_events` (when given) receives each auth event the server prints (a JSON line with
    an `auth` member: `authorization_started`, `token_issued` with its `grant`, `token_refused` with its reason)."""

    def auth_event(line: str) -> None:
        if auth_events is None or not line.startswith("{"):
            return
        try:
            event = json.loads(line)
        except ValueError:
            return
        if isinstance(event, dict) and "auth" in event:
            auth_events.append(event)

    argv = [_binary(), "serve", "--transport", "http", "--port", "0", *extra]
    with _listening(argv, "serve", auth_event) as url:
        yield url


def run(observe: Callable[[str], dict], judge: Callable[[dict], tuple[int, str]], *extra: str,
        auth_events: list[dict] | None = None) -> int:
    """Serves, runs `observe(url)`, prints the verdict line `judge` gives and returns its exit code."""

    def observed() -> dict:
        with serve(*extra, auth_events=auth_events) as url:
            return observe(url)

    return _verdict(observed, judge)


def _verdict(observed: Callable[[], dict], judge: Callable[[dict], tuple[int, str]]) -> int:
    """What `observed()` saw, judged: the verdict line printed and its exit code; a check that failed itself is
    never a verdict on the SDK."""
    try:
        seen = observed()
    except Exception as exc:
        print(f"could not run: {type(exc).__name__}: {exc}")
        return COULD_NOT_RUN
    code, line = judge(seen)
    print(line)
    return code


@contextmanager
def proxied(*rules: str) -> Iterator[tuple[str, list[dict]]]:
    """`faultlab serve --transport http` behind `faultlab proxy --listen 127.0.0.1:0 --upstream` with `rules` (each
    one `--fault` spec), yielding the proxy's URL (15 s at most to listen) and a list that, once the block ends, holds
    the proxy's trajectory (one dict an event, from `--record` in a temporary folder): the proxy is stopped with
    SIGTERM first, so the trajectory is whole, and killed if it has not ended within `PROXY_STOP_S`."""
    binary = _binary()
    trajectory: list[dict] = []
    with serve() as upstream, tempfile.TemporaryDirectory(prefix="faultlab-known-bug-") as tmp:
        record = Path(tmp) / "trajectory.jsonl"
        argv = [binary, "proxy", "--listen", "127.0.0.1:0", "--upstream", upstream, "--record", str(record)]
        for rule in rules:
            argv += ["--fault", rule]
        try:
            with _listening(argv, "proxy", stop_s=PROXY_STOP_S) as url:
                yield url, trajectory
        finally:
            if record.exists():
                trajectory.extend(json.loads(line) for line in record.read_text().splitlines() if line.strip())


def run_proxied(observe: Callable[[str], dict], judge: Callable[[dict], tuple[int, str]], *rules: str) -> int:
    """As `run`, with the client on `proxied(*rules)`'s URL; `judge` finds the proxy's trajectory in
    `seen["trajectory"]`."""

    def observed() -> dict:
        with proxied(*rules) as (url, trajectory):
            seen = observe(url)
        seen["trajectory"] = trajectory
        return seen

    return _verdict(observed, judge)
