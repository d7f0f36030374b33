#!/usr/bin/env python3
"""An outside agent for `faultlab eval` on the systemic-burst-read task (Python standard library, raw JSON-RPC over
the stdio server of FAULTLAB_MCP_CONFIG, through outside_agent.py beside it) that behaves correctly. It recorded
crates/faultlab-diagnose/tests/corpus/proxy/burst-read-*.jsonl (the trace clinic must not warn on them):

  faultlab eval examples/eval/tasks/systemic-burst-read.yaml --seed 7 --out OUT \
    --agent "python3 crates/faultlab/tests/it/backoff_agent.py MODE" --agent-name MODE

MODE, the first argument:

  backoff   reads input.txt; on a failure, retries the same read after 100, 200 then 400 ms (at most 3 retries)
  hammer    the same retries with no wait before them (the retry policy of a client that loops on a failure)
  hedged    sends the read to two places at once, input.txt and mirror/input.txt (a copy this workspace lacks),
            and takes the first that works; sends the reads that failed again after 100, 200 then 400 ms, dropping
            a place whose error is not transient (not a 503: the server said it will not work)
"""

import os
import re
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from outside_agent import Conn, ToolError, claim, run  # noqa: E402  (beside this script)

MODE = sys.argv[1]
TIMEOUT_S = 0.5  # per call
BACKOFF_S = [0.1, 0.2, 0.4]  # the waits before each retry: growing, bounded


def read_nonce(c):
    paths = ["input.txt"] if MODE in ("backoff", "hammer") else ["input.txt", "mirror/input.txt"]
    for wait in [0.0, *BACKOFF_S]:
        if MODE != "hammer":
            time.sleep(wait)  # the backoff under test, not a wait for an event
        ids = c.start_calls(*[("read_file", {"path": p}) for p in paths])
        for path, rid in list(zip(paths, ids)):
            try:
                text = c.wait(rid)
            except ToolError as e:
                if "503" not in str(e):
                    paths.remove(path)  # not transient: the server said it will not work
                continue
            found = text and re.search(r"nonce: ([0-9a-f]{16})", text)
            if found:
                return found.group(1)
        if not paths:
            return None
    return None


def main():
    c = Conn(TIMEOUT_S)
    c.initialize("backoff-agent")
    nonce = read_nonce(c)
    if nonce is None:
        claim("failure", MODE)
        return
    c.call("write_file", {"path": "output.txt", "content": nonce})
    claim("success", MODE, nonce)


if __name__ == "__main__":
    run(main, MODE)
