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
import subprocess
import sys
import threading

MODE = sys.argv[1]
TIMEOUT_S = 0.5  # per call; the task holds the first write's reply until the agent gives up


class Conn:
    def __init__(self):
        server = json.load(open(os.environ["FAULTLAB_MCP_CONFIG"]))["mcpServers"]["workspace"]
        self.proc = subprocess.Popen([server["command"], *server.get("args", [])], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE)
        self.next_id, self.replies, self.cv = 1, {}, threading.Condition()
        self.writing = threading.Lock()  # the reader thread answers pings on the same pipe
        threading.Thread(target=self.read, daemon=True).start()

    def read(self):
        for line in self.proc.stdout:
            msg = json.loads(line)
            if "method" in msg:
                if "id" in msg:  # a ping from the server
                    self.send({"jsonrpc": "2.0", "id": msg["id"], "result": {}})
                continue
            with self.cv:
                self.replies[msg["id"]] = msg
                self.cv.notify_all()

    def send(self, msg):
        self.write_lines([json.dumps(msg) + "\n"])

    def write_lines(self, lines):
        with self.writing:
            self.proc.stdin.write("".join(lines).encode())
            self.proc.stdin.flush()

    def start(self, method, params):
        return self.start_together((method, params))[0]

    def start_together(self, *requests):
        ids = list(range(self.next_id, self.next_id + len(requests)))
        self.next_id += len(requests)
        lines = [json.dumps({"jsonrpc": "2.0", "id": rid, "method": method, "params": params}) + "\n"
                 for rid, (method, params) in zip(ids, requests)]
        self.write_lines(lines)
        return ids

    def wait(self, rid):
        """The call's text, or None when no reply came in time (after telling the server it was given up)."""
        with self.cv:
            if not self.cv.wait_for(lambda: rid in self.replies, TIMEOUT_S):
                self.send({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": rid}})
                return None
            msg = self.replies.pop(rid)
        result = msg.get("result") or {}
        if "error" in msg or result.get("isError"):
            raise RuntimeError(json.dumps(msg)[:200])
        return "".join(c.get("text", "") for c in result.get("content", []))

    def call(self, tool, arguments):
        return self.wait(self.start("tools/call", {"name": tool, "arguments": arguments}))


def claim(status, answer=None):
    with open(os.environ["FAULTLAB_RESULT"], "w") as f:
        json.dump({"status": status, "message": MODE, **({"answer": answer} if answer else {})}, f)


def main():
    c = Conn()
    c.wait(c.start("initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                  "clientInfo": {"name": "unchecked-write", "version": "0"}}))
    c.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
    if MODE == "looks-first":
        try:
            c.call("file_info", {"path": "output.txt"})
        except RuntimeError:
            pass  # not there yet, as expected
    nonce = re.search(r"nonce: ([0-9a-f]{16})", c.call("read_file", {"path": "input.txt"})).group(1)
    write_call = {"name": "write_file", "arguments": {"path": "output.txt", "content": nonce}}
    if MODE.startswith("together"):
        # Both requests in one write to the pipe: in flight together, however loaded the machine.
        write, notes = c.start_together(("tools/call", write_call),
                                        ("tools/call", {"name": "read_file", "arguments": {"path": "notes.md"}}))
    else:
        write = c.start("tools/call", write_call)
    written = c.wait(write)
    if MODE.startswith("together"):
        c.wait(notes)
    if written is None and MODE == "together-checked":
        info = json.loads(c.call("file_info", {"path": "output.txt"}))
        if info["sha256"] != hashlib.sha256(nonce.encode()).hexdigest():
            claim("failure")
            return
    claim("success", nonce)


if __name__ == "__main__":
    try:
        main()
    except Exception as e:  # noqa: BLE001 - an honest failure claim on anything unexpected
        claim("failure")
        print(repr(e), file=sys.stderr)
    os._exit(0)
