#!/usr/bin/env python3
"""An outside agent for `faultlab eval` on the systemic-burst-read task (Python standard library, raw JSON-RPC over
the stdio server of FAULTLAB_MCP_CONFIG) that behaves correctly. It recorded `tests/corpus/proxy/burst-read-*.jsonl`
(the trace clinic must not warn on them):

  faultlab eval examples/eval/tasks/systemic-burst-read.yaml --seed 7 --out OUT \
    --agent "python3 crates/faultlab-diagnose/tests/agents/backoff_agent.py MODE" --agent-name MODE

MODE, the first argument:

  backoff   reads input.txt; on a failure, retries the same read after 100, 200 then 400 ms (at most 3 retries)
  hedged    sends the read to two places at once, input.txt and mirror/input.txt (a copy this workspace lacks),
            and takes the first that works; sends the reads that failed again after 100, 200 then 400 ms, dropping
            a place whose error is not transient (not a 503: the server said it will not work)
"""

import json
import os
import re
import subprocess
import sys
import threading
import time

MODE = sys.argv[1]
TIMEOUT_S = 0.5  # per call
BACKOFF_S = [0.1, 0.2, 0.4]  # the waits before each retry: growing, bounded


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
        with self.writing:
            self.proc.stdin.write((json.dumps(msg) + "\n").encode())
            self.proc.stdin.flush()

    def start_together(self, *calls):
        """Sends every call in one write to the pipe: in flight together, however loaded the machine."""
        ids = list(range(self.next_id, self.next_id + len(calls)))
        self.next_id += len(calls)
        lines = "".join(json.dumps({"jsonrpc": "2.0", "id": rid, "method": "tools/call",
                                    "params": {"name": tool, "arguments": args}}) + "\n"
                        for rid, (tool, args) in zip(ids, calls))
        with self.writing:
            self.proc.stdin.write(lines.encode())
            self.proc.stdin.flush()
        return ids

    def wait(self, rid):
        """The call's text, or None when no reply came in time, or "" for a transient error (a 503), or an
        exception for any other error."""
        with self.cv:
            if not self.cv.wait_for(lambda: rid in self.replies, TIMEOUT_S):
                self.send({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": rid}})
                return None
            msg = self.replies.pop(rid)
        result = msg.get("result") or {}
        if "error" in msg or result.get("isError"):
            if "503" in json.dumps(msg):
                return None
            raise LookupError(json.dumps(msg)[:200])
        return "".join(c.get("text", "") for c in result.get("content", []))


def claim(status, answer=None):
    with open(os.environ["FAULTLAB_RESULT"], "w") as f:
        json.dump({"status": status, "message": MODE, **({"answer": answer} if answer else {})}, f)


def read_nonce(c):
    paths = ["input.txt"] if MODE == "backoff" else ["input.txt", "mirror/input.txt"]
    for wait in [0.0, *BACKOFF_S]:
        time.sleep(wait)
        ids = c.start_together(*[("read_file", {"path": p}) for p in paths])
        for path, rid in list(zip(paths, ids)):
            try:
                text = c.wait(rid)
            except LookupError:
                paths.remove(path)
                continue
            found = text and re.search(r"nonce: ([0-9a-f]{16})", text)
            if found:
                return found.group(1)
        if not paths:
            return None
    return None


def main():
    c = Conn()
    c.send({"jsonrpc": "2.0", "id": 0, "method": "initialize",
            "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                       "clientInfo": {"name": "backoff-agent", "version": "0"}}})
    c.wait(0)
    c.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
    nonce = read_nonce(c)
    if nonce is None:
        claim("failure")
        return
    c.wait(c.start_together(("write_file", {"path": "output.txt", "content": nonce}))[0])
    claim("success", nonce)


if __name__ == "__main__":
    try:
        main()
    except Exception as e:  # noqa: BLE001 - an honest failure claim on anything unexpected
        claim("failure")
        print(repr(e), file=sys.stderr)
    os._exit(0)
