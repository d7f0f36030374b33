#!/usr/bin/env python3
"""An outside agent for `faultlab eval` on the protocol-malformed-read task (Python standard library, raw JSON-RPC
over the stdio server of FAULTLAB_MCP_CONFIG, through outside_agent.py beside it): reads input.txt (at most three
times), writes the nonce it found to output.txt, and claims success.

MODE, the first argument:

  strict    rejects a reply that is not JSON-RPC 2.0 (no `jsonrpc: "2.0"`, or a result with an error) and reads again
  lenient   takes whatever content a reply has, valid JSON-RPC or not
"""

import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from outside_agent import Conn, ToolError, claim, run  # noqa: E402  (beside this script)

MODE = sys.argv[1]


def main():
    c = Conn(0.5)
    c.initialize("malformed-read-agent")
    for _ in range(3):
        try:
            text = c.call("read_file", {"path": "input.txt"}, strict=MODE == "strict")
        except ToolError:
            continue
        found = text and re.search(r"nonce: ([0-9a-f]{16})", text)
        if found:
            c.call("write_file", {"path": "output.txt", "content": found.group(1)})
            claim("success", MODE, found.group(1))
            return
    claim("failure", MODE)


if __name__ == "__main__":
    run(main, MODE)
