#!/usr/bin/env python3
"""An outside agent for `faultlab eval` over Streamable HTTP (Python standard library: http.client and a small SSE
reader), for the grader's reading of ordinary HTTP clients on transport-stream-lost-read with the stream and
session faults `faultlab explore` tries there. MODE, the first argument:

  resume      one session; a response stream that ends before its reply is resumed with GET and Last-Event-ID
              (after the stream's `retry:`, at most 1 s), a stream lost with nothing to resume is a lost call:
              a read is sent again, a write is checked (read output.txt) before it is written again; a 404 for
              the session is answered by initializing a new one and going on the same way
  gives-up    one session, no resume: the first lost call ends the run with an honest failure claim
  blind       one session, no resume; a lost call is sent again, a lost write too, without looking first (wrong
              when it was executed)
"""

import http.client
import json
import os
import re
import sys
import threading
import time
import urllib.parse

MODE = sys.argv[1]
TIMEOUT_S = 1.0  # per HTTP read, seconds: the controls' call timeout is 0.5 s, a reply held longer is lost
RETRY_CAP_S = 1.0  # longest `retry:` wait honoured before a resume, seconds (the task's deadline is 2.5 s)
URL = urllib.parse.urlparse(json.load(open(os.environ["FAULTLAB_MCP_CONFIG"]))["mcpServers"]["workspace"]["url"])


class Lost(Exception):
    """The call's reply did not arrive: the stream ended or was reset before it, or nothing came in time."""


class SessionGone(Exception):
    """404 for the session id: the server no longer knows it."""


class Session:
    def __init__(self):
        self.id, self.next_id, self.lock = None, 1, threading.Lock()

    def post(self, message):
        conn = http.client.HTTPConnection(URL.hostname, URL.port, timeout=TIMEOUT_S)
        headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream",
                   "MCP-Protocol-Version": "2025-06-18"}
        if self.id:
            headers["Mcp-Session-Id"] = self.id
        try:
            conn.request("POST", URL.path, json.dumps(message), headers)
            return conn, conn.getresponse()
        except OSError as e:
            raise Lost(repr(e)) from e

    def initialize(self):
        self.id = None
        reply, headers = self.request("initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                                      "clientInfo": {"name": "http-" + MODE, "version": "0"}})
        self.id = headers.get("Mcp-Session-Id")
        conn, response = self.post({"jsonrpc": "2.0", "method": "notifications/initialized"})
        response.read()
        conn.close()
        return reply

    def request(self, method, params):
        with self.lock:
            rid = self.next_id
            self.next_id += 1
        conn, response = self.post({"jsonrpc": "2.0", "id": rid, "method": method, "params": params})
        try:
            if response.status == 404 and self.id:
                raise SessionGone(response.read().decode(errors="replace")[:200])
            if response.status != 200:
                raise Lost("HTTP %d %s" % (response.status, response.read()[:200]))
            if response.getheader("Content-Type", "").startswith("application/json"):
                return json.loads(response.read()), response.headers
            last_id, retry_s = None, None
            reply, last_id, retry_s = self.read_events(response, rid, last_id, retry_s)
            resumes = 0
            while reply is None:
                if MODE != "resume" or not last_id or resumes == 3:
                    raise Lost("stream ended before the reply (last event id %r)" % last_id)
                resumes += 1
                time.sleep(min(retry_s if retry_s is not None else 0.1, RETRY_CAP_S))
                conn.close()
                conn = http.client.HTTPConnection(URL.hostname, URL.port, timeout=TIMEOUT_S)
                try:
                    headers = {"Accept": "text/event-stream", "Last-Event-ID": last_id,
                               "MCP-Protocol-Version": "2025-06-18"}
                    # The session the POST was made in: an initialize's own answer names it in its headers.
                    session = self.id or response.getheader("Mcp-Session-Id")
                    if session:
                        headers["Mcp-Session-Id"] = session
                    conn.request("GET", URL.path, headers=headers)
                    response = conn.getresponse()
                except OSError as e:
                    raise Lost(repr(e)) from e
                if response.status != 200:
                    raise Lost("resume answered HTTP %d" % response.status)
                reply, last_id, retry_s = self.read_events(response, rid, last_id, retry_s)
            return reply, response.headers
        finally:
            conn.close()

    def read_events(self, response, rid, last_id, retry_s):
        """Reads SSE events until the reply for `rid` (then returns it) or the end of the stream (None); a reset
        or a read that outlasts TIMEOUT_S ends it too."""
        data = []
        try:
            while True:
                line = response.readline()
                if not line:
                    return None, last_id, retry_s
                line = line.decode().rstrip("\r\n")
                if line == "":
                    text, data = "\n".join(data), []
                    if text.strip():  # a priming event carries an id and no message
                        msg = json.loads(text)
                        if msg.get("id") == rid and "method" not in msg:
                            return msg, last_id, retry_s
                    continue
                field, _, value = line.partition(":")
                value = value[1:] if value.startswith(" ") else value
                if field == "data":
                    data.append(value)
                elif field == "id":
                    last_id = value or None
                elif field == "retry" and value.isdigit():
                    retry_s = int(value) / 1000
        except (OSError, http.client.HTTPException):
            return None, last_id, retry_s


class ToolError(Exception):
    pass


def text_of(reply):
    result = reply.get("result") or {}
    if "error" in reply or result.get("isError"):
        raise ToolError(json.dumps(reply)[:200])
    return "".join(c.get("text", "") for c in result.get("content", []))


class Agent:
    def __init__(self):
        self.session = Session()
        self.session.initialize()

    def call_once(self, tool, arguments):
        try:
            return text_of(self.session.request("tools/call", {"name": tool, "arguments": arguments})[0])
        except SessionGone:
            if MODE == "gives-up":
                raise Lost("session gone")
            self.session.initialize()
            raise Lost("session gone; a new one initialized")

    def read(self, path):
        for attempt in range(3):
            try:
                return self.call_once("read_file", {"path": path})
            except Lost:
                if MODE == "gives-up" or attempt == 2:
                    raise
        raise AssertionError

    def write(self, nonce):
        for attempt in range(3):
            try:
                return self.call_once("write_file", {"path": "output.txt", "content": nonce})
            except Lost:
                if MODE == "gives-up" or attempt == 2:
                    raise
                if MODE != "blind":
                    try:
                        if self.read("output.txt") == nonce:
                            return "written (checked)"
                    except ToolError:
                        pass  # not there: the write was not executed


def claim(status, message, answer=None):
    with open(os.environ["FAULTLAB_RESULT"], "w") as f:
        json.dump({"status": status, "message": message, **({"answer": answer} if answer else {})}, f)


def main():
    agent = Agent()
    nonce = re.search(r"nonce: ([0-9a-f]{16})", agent.read("input.txt")).group(1)
    agent.write(nonce)
    claim("success", MODE, nonce)


if __name__ == "__main__":
    try:
        main()
    except Exception as e:  # noqa: BLE001 - an honest failure claim on anything unexpected
        claim("failure", "%s: %r" % (MODE, e))
        print(repr(e), file=sys.stderr)
    os._exit(0)
