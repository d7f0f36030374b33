"""What every Python reproduction shares: `faultlab serve` (FAULTLAB_BIN) on a loopback port of its own, its URL read
from its "listening at" line, killed on every path; and the verdict as the exit code scripts/known-client-bugs.sh
reads (0 reproduced, 3 fixed upstream, 1 could not run)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager

REPRODUCED = 0
COULD_NOT_RUN = 1
FIXED = 3
URL_RE = re.compile(r"listening at (http://\S+)")


@contextmanager
def serve(*extra: str, auth_events: list[dict] | None = None) -> Iterator[str]:
    """`faultlab serve --transport http --port 0 *extra`, yielding its URL once it listens (15 s at most). With
    `--auth` among `extra`, `auth_events` (when given) receives each auth event the server prints (a JSON line with
    an `auth` member: `authorization_started`, `token_issued` with its `grant`, `token_refused` with its reason)."""
    binary = os.environ.get("FAULTLAB_BIN")
    if not binary:
        raise RuntimeError("FAULTLAB_BIN is not set")
    proc = subprocess.Popen([binary, "serve", "--transport", "http", "--port", "0", *extra], stdin=subprocess.DEVNULL,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, errors="replace")
    found: list[str] = []
    ready = threading.Event()

    def pump() -> None:
        assert proc.stderr is not None
        for line in proc.stderr:
            if not found and (m := URL_RE.search(line)):
                found.append(m.group(1))
                ready.set()
            if auth_events is not None and line.startswith("{"):
                try:
                    event = json.loads(line)
                except ValueError:
                    continue
                if isinstance(event, dict) and "auth" in event:
                    auth_events.append(event)
        ready.set()

    threading.Thread(target=pump, daemon=True).start()
    try:
        if not ready.wait(15) or not found:
            raise RuntimeError("faultlab serve printed no 'listening at' URL within 15 s")
        yield found[0]
    finally:
        proc.kill()
        proc.wait(timeout=5)


def run(observe: Callable[[str], dict], judge: Callable[[dict], tuple[int, str]], *extra: str,
        auth_events: list[dict] | None = None) -> int:
    """Serves, runs `observe(url)`, prints the verdict line `judge` gives and returns its exit code."""
    try:
        with serve(*extra, auth_events=auth_events) as url:
            seen = observe(url)
    except Exception as exc:  # the check itself failed: never a verdict on the SDK
        print(f"could not run: {type(exc).__name__}: {exc}")
        return COULD_NOT_RUN
    code, line = judge(seen)
    print(line)
    return code
