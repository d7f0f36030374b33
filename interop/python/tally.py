#!/usr/bin/env python3
"""Counts the checks a check client printed, one JSON line each (`"ok": true` passed, anything else failed), for
the scripts that run the clients (scripts/interop-python.sh, scripts/proxy-filesystem.sh).

    tally.py [--show] CHECKS.jsonl CLIENT_EXIT_CODE

The last line printed is `PASSED FAILED`. A client that exited non-zero without a failed check still counts one
failure (a crash, the outer timeout). With --show, one line per check comes first, and a line that is not JSON is a
failed check (without it, such a line is skipped: the client's own output passes through the same file).
"""

from __future__ import annotations

import json
import sys
from typing import Any


def describe(record: dict[str, Any]) -> str:
    """`ok    CHECK [CATEGORY/FAULT]: what was observed`, on one line."""
    detail = record.get("detail") if isinstance(record.get("detail"), dict) else {}
    where = "/".join(x for x in (record.get("category"), record.get("fault")) if x) or record.get("session", "")
    said = detail.get("observed")
    if said is None:
        said = json.dumps(detail, default=str)
    said = " ".join(str(said).split())
    after = detail.get("thenUnrelatedCall")
    if isinstance(after, dict):
        said += f" | then {after.get('call')}: {'ok' if after.get('ok') else 'FAILED'}"
    return f"{'ok  ' if record.get('ok') is True else 'FAIL'}  {record.get('check')} [{where}]: {said[:300]}"


def main(argv: list[str]) -> None:
    show = argv[:1] == ["--show"]
    path, exit_code = argv[1:] if show else argv
    passed = failed = 0
    with open(path, encoding="utf-8") as lines:
        for line in lines:
            try:
                record = json.loads(line)
            except ValueError:
                if show:
                    print(f"FAIL  client printed a line that is not JSON: {line.strip()[:200]}")
                    failed += 1
                continue
            if show:
                print(describe(record))
            if record.get("ok") is True:
                passed += 1
            else:
                failed += 1
    if exit_code != "0" and failed == 0:
        if show:
            print(f"FAIL  client exited {exit_code} without a failed check (crash or outer timeout); see its log")
        failed = 1
    print(passed, failed)


if __name__ == "__main__":
    main(sys.argv[1:])
