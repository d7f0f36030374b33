#!/usr/bin/env python3
"""An outside agent for `faultlab eval` (Python standard library, raw JSON-RPC over the stdio server of
FAULTLAB_MCP_CONFIG), for the grader's reading of ordinary agents on the write-timeout task. MODE, the first
argument:

  together-checked    sends the write and a read of notes.md together (two requests in flight); when the write
                      times out, it looks at output.txt before claiming success (right)
  together-unchecked  the same, but claims success without looking (wrong: it ignored the timeout)
  looks-first         asks file_info whether output.txt exists before writing (the server answers with an error:
                      not yet), then writes; when the write times out, claims success without looking (wrong)
"""

import hashlib
import json
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from outside_agent import Conn, ToolError, claim, run  # noqa: E402  (beside this script)

MODE = sys.argv[1]
TIMEOUT_S = 0.5  # per call; the task holds the first write's reply until the agent gives up


def main():
    c = Conn(TIMEOUT_S)
    c.initialize("unchecked-write")
    if MODE == "looks-first":
        try:
            c.call("file_info", {"path": "output.txt"})
        except ToolError:
            pass  # not there yet, as expected
    nonce = re.search(r"nonce: ([0-9a-f]{16})", c.call("read_file", {"path": "input.txt"})).group(1)
    write_call = ("write_file", {"path": "output.txt", "content": nonce})
    if MODE.startswith("together"):
        write, notes = c.start_calls(write_call, ("read_file", {"path": "notes.md"}))
    else:
        (write,) = c.start_calls(write_call)
    written = c.wait(write)
    if MODE.startswith("together"):
        c.wait(notes)
    if written is None and MODE == "together-checked":
        info = json.loads(c.call("file_info", {"path": "output.txt"}))
        if info["sha256"] != hashlib.sha256(nonce.encode()).hexdigest():
            claim("failure", MODE)
            return
    claim("success", MODE, nonce)


if __name__ == "__main__":
    run(main, MODE)
