"""What the interop checks share (client_check.py, proxy_filesystem_check.py): the SDK's version, one JSON line per
check on stdout as soon as it is decided, and a JSON-friendly account of an exception."""

from __future__ import annotations

import json
import threading
from typing import Any

from mcp.shared.exceptions import MCPError

try:
    from importlib.metadata import version as _dist_version

    SDK_VERSION = _dist_version("mcp")
except Exception:  # pragma: no cover - metadata is always there for an installed SDK
    SDK_VERSION = "unknown"


class Checks:
    """Collects results; `context` is the keys every line carries (None unless a check gives them)."""

    def __init__(self, **context: Any) -> None:
        self.context = context
        self.results: list[dict[str, Any]] = []
        self._lock = threading.Lock()

    def record(self, check: str, ok: bool, detail: Any, *, seconds: float | None = None, **fields: Any) -> None:
        line: dict[str, Any] = {"check": check, "ok": bool(ok), **self.context, **fields, "detail": detail}
        if seconds is not None:
            line["seconds"] = round(seconds, 3)
        with self._lock:
            self.results.append(line)
            print(json.dumps(line, default=str), flush=True)

    @property
    def failed(self) -> int:
        return sum(1 for r in self.results if not r["ok"])


def describe(exc: BaseException) -> dict[str, Any]:
    """A JSON-friendly account of an exception (groups are unwrapped; the message cut at 400 characters)."""
    out: dict[str, Any] = {"type": f"{type(exc).__module__}.{type(exc).__qualname__}", "message": str(exc)[:400]}
    if isinstance(exc, MCPError):
        out["code"] = exc.code
        if exc.data is not None:
            out["data"] = exc.data
    if isinstance(exc, BaseExceptionGroup):
        out["exceptions"] = [describe(e) for e in exc.exceptions]
    return out
