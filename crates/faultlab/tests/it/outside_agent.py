"""What the outside agents of these tests share (Python standard library only): a raw JSON-RPC connection to the
stdio server of FAULTLAB_MCP_CONFIG, and the claim written to FAULTLAB_RESULT. An agent script imports it from
beside itself."""

import json
import os
import subprocess
import sys
import threading


class ToolError(Exception):
    """An error reply, or a result with isError; its text is the reply, cut to 200 characters."""


class Conn:
    def __init__(self, timeout_s):
        server = json.load(open(os.environ["FAULTLAB_MCP_CONFIG"]))["mcpServers"]["workspace"]
        self.proc = subprocess.Popen([server["command"], *server.get("args", [])], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE)
        self.timeout_s = timeout_s  # per call
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
        """Sends every (method, params) in one write to the pipe: in flight together, however loaded the machine."""
        ids = list(range(self.next_id, self.next_id + len(requests)))
        self.next_id += len(requests)
        self.write_lines([json.dumps({"jsonrpc": "2.0", "id": rid, "method": method, "params": params}) + "\n"
                          for rid, (method, params) in zip(ids, requests)])
        return ids

    def initialize(self, name):
        self.wait(self.start("initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                            "clientInfo": {"name": name, "version": "0"}}))
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def wait(self, rid, strict=False):
        """The reply's text, or None when no reply came in time (after telling the server it was given up);
        ToolError for an error reply, and with `strict` for a reply that is not JSON-RPC 2.0 (as the protocol
        asks: without it, whatever content the message has is taken)."""
        with self.cv:
            if not self.cv.wait_for(lambda: rid in self.replies, self.timeout_s):
                self.send({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": rid}})
                return None
            msg = self.replies.pop(rid)
        result = msg.get("result") or {}
        if strict and (msg.get("jsonrpc") != "2.0" or ("error" in msg and "result" in msg)):
            raise ToolError("invalid JSON-RPC: " + json.dumps(msg)[:180])
        if "error" in msg or result.get("isError"):
            raise ToolError(json.dumps(msg)[:200])
        return "".join(c.get("text", "") for c in result.get("content", []))

    def start_calls(self, *calls):
        """Each (tool, arguments) as a tools/call, in flight together."""
        return self.start_together(*[("tools/call", {"name": tool, "arguments": args}) for tool, args in calls])

    def call(self, tool, arguments, strict=False):
        return self.wait(self.start_calls((tool, arguments))[0], strict)


def claim(status, message, answer=None):
    with open(os.environ["FAULTLAB_RESULT"], "w") as f:
        json.dump({"status": status, "message": message, **({"answer": answer} if answer else {})}, f)


def run(main, message):
    """Runs main; anything unexpected is an honest failure claim. Ends the process at once (the reader thread and
    the server child do not hold it)."""
    try:
        main()
    except Exception as e:  # noqa: BLE001 - an honest failure claim on anything unexpected
        claim("failure", message)
        print(repr(e), file=sys.stderr)
    os._exit(0)
